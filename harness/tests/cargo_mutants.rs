//! cargo-mutants in the gate: a seeded sample (of one) of the reference's
//! mutants (src/), judged by the conformance cases run against the mutated
//! `ukue` (.ci/mutants, tests/conformance.rs, .cargo/mutants.toml). A
//! mutant that the cases miss must be one that docs/mutation-score.md
//! explains, by its file and its description; a new survivor fails the
//! test until a case kills it or the page says why none can.
//!
//! The runner is this build's (debug), so that the gate builds no release;
//! the mutants are built in `target/mutants-ci`, seeded with hard links to
//! target/debug, so that only the `ukue` package is built again. Skips,
//! and says so, without cargo-mutants (`.ci/run` installs it; under CI a
//! missing one fails). The copy's first build of the ukue package, then
//! the mutant's rebuild and the cases until the first `must` case that
//! fails (docs/mutation-score.md has the measured time).

mod support;

use std::path::Path;
use std::process::Command;

use support::*;

/// The sample: one mutant, the one at SEED's place (modulo their number)
/// in cargo-mutants' listing, run as the one mutant of round-robin shard
/// `SEED % N` of N (N the number of mutants). Not .ci/mutants' `--sample`,
/// whose exact-name filters cargo-mutants 27.1.0 does not apply to its
/// struct-field deletions (sourcefrog/cargo-mutants#632): two more
/// mutants, minutes more. The seed picks one that the quick families kill
/// in seconds (`insert` made `Ok(Default::default())`: no add stores a
/// job), so that the gate pays for little more than the build; a change of
/// src/ moves the pick, and the check holds whatever it picks (a survivor
/// costs a whole run of the suite, three minutes on two loaded cores).
const SEED: usize = 121;

/// The mutants of one of mutants.out's lists (caught.txt, missed.txt…).
fn listed(out: &Path, list: &str) -> Vec<String> {
    std::fs::read_to_string(out.join("mutants.out").join(list))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// `src/busy.rs:59:9: replace X with Y` as (`src/busy.rs`, `replace X with Y`).
fn file_and_what(name: &str) -> (&str, &str) {
    let (file, rest) = name.split_once(':').unwrap_or((name, ""));
    let what = rest.splitn(3, ':').nth(2).unwrap_or(rest).trim();
    (file, what)
}

#[test]
fn heavy_a_seeded_sample_of_cargo_mutants_is_killed_or_explained() {
    if !have("cargo-mutants") {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let target = conformance().parent().and_then(Path::parent).unwrap().join("mutants-ci");
    let list =
        Command::new("cargo").args(["mutants", "--package", "ukue", "--list"]).current_dir(repo()).output();
    let count = String::from_utf8_lossy(&list.expect("cargo mutants --list runs").stdout).lines().count();
    assert!(count > 100, "cargo-mutants lists {count} mutants of src/");
    let shard = format!("{}/{count}", SEED % count);
    let run = Command::new(repo().join(".ci/mutants"))
        .args(["--shard", &shard, "--sharding", "round-robin", "--baseline", "skip"])
        .args(["--timeout", "600", "--build-timeout", "600", "--output"])
        .arg(out.path())
        .env("UKUE_MUTANTS_RUNNER", conformance())
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(repo())
        .output()
        .expect(".ci/mutants runs");
    let text = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    let [caught, missed, timeout, unviable] =
        ["caught.txt", "missed.txt", "timeout.txt", "unviable.txt"].map(|l| listed(out.path(), l));
    let judged: Vec<&String> = caught.iter().chain(&missed).chain(&timeout).chain(&unviable).collect();
    assert_eq!(judged.len(), 1, "the one mutant of shard {shard} judged: {judged:?}\n{text}");
    assert!(timeout.is_empty(), "a mutant ran past 600 s: {timeout:?}\n{text}");
    // cargo-mutants exits 2 when a mutant was missed; 1, 3 or 4 are its own
    // trouble (a baseline that failed, a timeout, bad arguments).
    let code = run.status.code();
    assert!(code == Some(0) || code == Some(2) && !missed.is_empty(), "cargo-mutants ended {code:?}: {text}");
    let page = std::fs::read_to_string(repo().join("docs/mutation-score.md")).unwrap();
    for name in &missed {
        let (file, what) = file_and_what(name);
        // A table's cell writes a `|` of the name as `\|`.
        let row = page
            .lines()
            .map(|l| l.replace("\\|", "|"))
            .find(|l| l.contains(&format!("`{file}`")) && l.contains(&format!("`{what}`")));
        assert!(
            row.is_some(),
            "{name}: the cases miss it and docs/mutation-score.md does not say why (a row with `{file}` and `{what}`); \
             replay: .ci/mutants --shard {shard} --sharding round-robin\n{text}"
        );
    }
}

#[test]
fn names_are_split_into_file_and_description() {
    assert_eq!(
        file_and_what("src/busy.rs:59:9: replace Waiter::install -> Option<Box<Waiter>> with None"),
        ("src/busy.rs", "replace Waiter::install -> Option<Box<Waiter>> with None")
    );
    assert_eq!(
        file_and_what("src/cli/mod.rs:97:18: replace % with / in Waiter::again"),
        ("src/cli/mod.rs", "replace % with / in Waiter::again")
    );
}
