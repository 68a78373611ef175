//! `ukue-conformance mutants --run-cases`: the cases kill a seeded sample
//! of the mutants (a survivor is explained by the score's own list, or the
//! run fails), a known bug, and a resumed run skips what it has done; a
//! survivor without a reason fails the run, and `--table` counts each.

mod support;

use std::path::Path;
use std::process::Command;

use support::*;

/// The sample's seed and size: three mutants that the cases kill in
/// seconds (`fail/ror-3`, `list/ror-17`, `stats/ror-2`), so that the test
/// stays near a minute. A new mutant or bug in the listing changes what
/// the seed picks (`mutants --run-cases --dry-run --sample 3 --seed S`
/// shows it): the check holds whatever it picks, but a survivor costs a
/// whole run of the suite (two minutes) and the model run.
const SEED: &str = "2343";
const SAMPLE: &str = "3";

/// Runs `mutants --run-cases` with `args`, its results in `results`;
/// returns the exit code, stdout and the results' lines.
fn score(results: &Path, args: &[&str]) -> (i32, String, Vec<serde_json::Value>) {
    let out = Command::new(conformance())
        .args(["mutants", "--run-cases", "--jobs", "2", "--results"])
        .arg(results)
        .args(args)
        .output()
        .expect("ukue-conformance runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let text = std::fs::read_to_string(results).unwrap_or_default();
    let lines =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    (out.status.code().unwrap_or(-1), format!("{stdout}\n{stderr}"), lines)
}

#[test]
fn heavy_a_sample_of_mutants_is_killed_by_must_cases() {
    let _ = reference();
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let (code, out, lines) = score(&results, &["--sample", SAMPLE, "--seed", SEED]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(lines.len(), SAMPLE.parse::<usize>().unwrap(), "{out}");
    for line in &lines {
        assert_ne!(line["kind"], "equivalent", "{line}");
        if line["killed"] == true {
            let by = line["killed_by"].as_str().unwrap();
            assert!(line["replay"].as_str().unwrap().contains(by), "{line}");
        }
    }
    // Exit 0: every survivor has its reason in the score's list, and none
    // of the listed is killed now.
    assert!(!out.contains("a `must` case should kill"), "{out}");
    assert!(!out.contains("take it off the list"), "{out}");
}

#[test]
fn heavy_a_known_bug_is_killed_and_a_resumed_run_skips_it() {
    let _ = reference();
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let only = ["--only", "reversed-priority", "--seed", "3"];
    let (code, out, lines) = score(&results, &only);
    assert_eq!(code, 0, "{out}");
    assert_eq!(lines.len(), 1, "{out}");
    let line = &lines[0];
    assert_eq!(line["name"], "reversed-priority");
    assert_eq!(line["kind"], "bug");
    assert_eq!(line["killed"], true, "{line}");
    // The quick families run first: a step's case kills it.
    assert!(line["killed_by"].as_str().unwrap().starts_with("steps/"), "{line}");
    assert!(line["replay"].as_str().unwrap().starts_with("UKUE_BROKEN=reversed-priority "), "{line}");
    assert!(out.contains("killed by steps/"), "{out}");

    // Again, with a second bug: the first is done and not run again.
    let (code, out, lines) =
        score(&results, &["--only", "reversed-priority", "--only", "purge-dead-every-queue", "--seed", "3"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2 mutants selected, 1 already in the results, 1 to run"), "{out}");
    let names: Vec<&str> = lines.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["reversed-priority", "purge-dead-every-queue"], "{out}");
    assert_eq!(lines[1]["killed"], true, "{out}");
    // The summary counts both.
    assert!(out.contains("2 of 2 selected mutants judged: 2 killed, 0 survived"), "{out}");
}

#[test]
fn a_survivor_without_a_reason_fails_the_run_and_the_table_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let line = |name: &str, killed: bool| {
        serde_json::json!({"name": name, "kind": "generated", "killed": killed, "seconds": 1.0, "seed": 1, "replay": "r"})
            .to_string()
    };
    let text = [line("pick/cmp-17", true), line("fail/const-1", false)].join("\n") + "\n";
    std::fs::write(&results, text).unwrap();
    let out = Command::new(conformance())
        .args(["mutants", "--run-cases", "--table", "--results"])
        .arg(&results)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let table = String::from_utf8_lossy(&out.stdout);
    // pick: 1 killed by a case, the rest not run; fail/const-1: beyond the cases.
    let pick = table.lines().find(|l| l.starts_with("| `pick` |")).unwrap();
    let cells: Vec<&str> = pick.split('|').map(str::trim).collect();
    assert_eq!(cells[4], "1", "{pick}");
    let fail = table.lines().find(|l| l.starts_with("| `fail` |")).unwrap();
    let cells: Vec<&str> = fail.split('|').map(str::trim).collect();
    assert_eq!((cells[4], cells[6], cells[7]), ("0", "1", "0"), "{fail}");

    // A command-line bug (no model run) against one case that cannot see
    // it: a survivor with no reason listed, as the whole suite kills it.
    let (code, out, lines) =
        score(&results, &["--only", "version-without-format", "--cases", "steps/stats-json", "--seed", "5"]);
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(lines[2]["killed"], false, "{out}");
    assert_eq!(code, 1, "a survivor without a reason fails the run: {out}");
    assert!(
        out.contains("survivors that a `must` case should kill (1)")
            && out.contains("version-without-format"),
        "{out}"
    );
}

/// A kill counts only when the killing case fails the mutant again: a
/// "broken" program that fails its first `stats` and is the reference after
/// fails steps/stats-json once, by chance. The score runs the case again,
/// sees it pass, and counts no kill: the mutant survives (a gap, as nothing
/// explains it), with the case named as a kill by chance.
#[test]
fn a_kill_that_does_not_fail_again_is_by_chance_and_not_counted() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    symlink(reference(), bin.join("ukue-reference")).unwrap();
    let once = bin.join("ukue-broken");
    std::fs::write(
        &once,
        "#!/bin/sh\n\
         here=$(dirname \"$0\")\n\
         case \" $* \" in *\" stats \"*) mkdir \"$here/failed-once\" 2>/dev/null && { echo 'stats: failed once' >&2; exit 1; } ;; esac\n\
         exec \"$here/ukue-reference\" \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&once, std::fs::Permissions::from_mode(0o755)).unwrap();
    let results = dir.path().join("results.jsonl");
    let broken = once.to_str().unwrap();
    let args = [
        "--only",
        "version-without-format",
        "--cases",
        "steps/stats-json",
        "--seed",
        "5",
        "--broken",
        broken,
    ];
    let (code, out, lines) = score(&results, &args);
    assert!(bin.join("failed-once").exists(), "the first stats failed: {out}");
    assert_eq!(lines.len(), 1, "{out}");
    let line = &lines[0];
    assert_eq!(line["killed"], false, "{line}");
    assert_eq!(line["chance_kills"], serde_json::json!(["steps/stats-json"]), "{line}");
    assert_eq!(code, 1, "an unexplained survivor: {out}");
    assert!(out.contains("a kill by chance, not counted"), "{out}");
}
