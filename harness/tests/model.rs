//! Model-based property tests: generated sequences of steps by several
//! workers, each on its own connection (or driver process) to one file,
//! checked step by step against the model (ukue_harness::check::model): the
//! answer, the file's integrity and invariants, and every row.
//!
//! Every random choice comes from one seed: UKUE_MODEL_SEED, else a fixed
//! one. A failure prints the shrunk sequence, saves it as a script and
//! prints the commands that run it again.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::have;

use ukue_harness::check::model::op::{parse_script, script_text};
use ukue_harness::explore::run::{run_ops, search, Found, SearchConfig, Target};
use ukue_harness::subjects::driver::client::DriverCommand;

const DEFAULT_SEED: u64 = 0x756b_7565;

fn seed() -> u64 {
    std::env::var("UKUE_MODEL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_SEED)
}

fn driver_binary() -> String {
    env!("CARGO_BIN_EXE_ukue-driver").to_string()
}

/// The Python driver; None (said on stderr, and a failure with `CI` set)
/// without python3.
fn python_driver() -> Option<DriverCommand> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients/python/ukue_driver.py");
    have("python3").then(|| DriverCommand::parse(&format!("python3 {}", script.display())).unwrap())
}

/// Saves a found sequence and describes it with the ways to run it again.
fn describe(test: &str, seed: u64, found: &Found) -> String {
    let path = std::env::temp_dir().join(format!("ukue-model-{test}-{seed}.jsonl"));
    let _ = std::fs::write(&path, script_text(&[found.failure.to_string()], &found.ops));
    format!(
        "{}\nshrunk from {} to {} steps:\n{}\nsaved to {}; replay: ukue-conformance replay {}\n\
         search again: UKUE_MODEL_SEED={seed} cargo test -p ukue-harness --test model {test}",
        found.failure,
        found.original_len,
        found.ops.len(),
        script_text(&[], &found.ops),
        path.display(),
        path.display(),
    )
}

fn assert_passes(test: &str, target: Target, cases: u32) {
    let seed = seed();
    let report = search(&SearchConfig::new(target.clone(), cases, seed));
    eprintln!(
        "{test}: {} cases in {:?} against {} (seed {seed})",
        report.cases,
        report.elapsed,
        target.describe()
    );
    if let Some(found) = &report.found {
        panic!(
            "seed {seed}: {} does not match the model:\n{}",
            target.describe(),
            describe(test, seed, found)
        );
    }
}

#[test]
fn the_in_process_reference_matches_the_model() {
    assert_passes("the_in_process_reference_matches_the_model", Target::reference(), 400);
}

/// The fuzzer's subject: the same reference on one in-memory connection.
#[test]
fn the_in_memory_reference_matches_the_model() {
    let target = Target::InMemory(ukue::Spec::builtin());
    assert_passes("the_in_memory_reference_matches_the_model", target, 200);
}

#[test]
fn the_rust_driver_matches_the_model() {
    let cmd = DriverCommand::parse(&driver_binary()).unwrap();
    assert_passes("the_rust_driver_matches_the_model", Target::Driver(cmd), 150);
}

#[test]
fn the_python_driver_matches_the_model() {
    let Some(cmd) = python_driver() else { return };
    assert_passes("the_python_driver_matches_the_model", Target::Driver(cmd), 100);
}

/// A driver with a backoff of its own (none at all, here: FORMAT.md §5.6
/// lets a program pick its own) matches the model as long as its hello does
/// not claim the published one; claiming it, it is held to that span.
#[test]
fn a_driver_with_its_own_backoff_is_held_to_what_its_hello_claims() {
    if python_driver().is_none() {
        return;
    }
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients/python");
    // A folder of its own for each variant: drivers are pooled by command.
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let own = "def backoff_ms(attempt):\n    return 0\n\n\ndef published_backoff_ms(attempt):";
    let hello = "\"capabilities\": [\"now_ms\", \"published_backoff\"]";
    let claims = |claimed: bool| {
        let dir = dirs[usize::from(claimed)].path();
        let copy = |name: &str, from: &str, to: &str| {
            let text = std::fs::read_to_string(python.join(name)).unwrap();
            assert_eq!(text.matches(from).count(), 1, "{name} no longer holds {from:?} once");
            std::fs::write(dir.join(name), text.replacen(from, to, 1)).unwrap();
        };
        copy("ukue_steps.py", "def backoff_ms(attempt):", own);
        copy("ukue_driver.py", hello, if claimed { hello } else { "\"capabilities\": [\"now_ms\"]" });
        let cmd = format!("python3 {}", dir.join("ukue_driver.py").display());
        Target::Driver(DriverCommand::parse(&cmd).unwrap())
    };
    let test = "a_driver_with_its_own_backoff_is_held_to_what_its_hello_claims";
    assert_passes(test, claims(false), 100);
    assert_caught(test, claims(true), 200, 8);
}

/// The Python steps (clients/python/ukue_steps.py, which ukue_driver.py
/// prints with `--statements`) create the tables and indexes with the
/// published statements: each equals spec/FORMAT.md's block of its name
/// (`create_meta`, `create_jobs`, `create_index_*`), whitespace aside, and
/// every such block has its statement.
#[test]
fn the_python_steps_create_format_md_schema() {
    let Some(cmd) = python_driver() else { return };
    let out = Command::new(&cmd.program).args(&cmd.args).arg("--statements").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let statements: std::collections::BTreeMap<String, String> = serde_json::from_slice(&out.stdout).unwrap();
    let format_md = Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/FORMAT.md");
    let text = std::fs::read_to_string(&format_md).unwrap();
    let blocks = ukue::spec::markdown::sql_blocks(&text).unwrap();
    let schema: std::collections::BTreeMap<String, String> = blocks
        .into_iter()
        .filter(|b| b.name == "create_meta" || b.name == "create_jobs" || b.name.starts_with("create_index_"))
        .map(|b| (b.name, b.sql))
        .collect();
    assert!(schema.len() >= 6, "spec/FORMAT.md's create blocks: {:?}", schema.keys());
    let flat = |sql: &str| {
        sql.split_whitespace().collect::<Vec<_>>().join(" ").trim_end_matches(';').trim_end().to_string()
    };
    let names = |m: &std::collections::BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&statements),
        names(&schema),
        "the Python steps' statements and FORMAT.md's create blocks"
    );
    for (name, sql) in &statements {
        assert_eq!(flat(sql), flat(&schema[name]), "ukue_steps.py's {name} differs from spec/FORMAT.md's");
    }
}

/// Searches against each broken subject with a fixed seed; each must fail,
/// shrunk to at most `max_steps`.
fn assert_caught(test: &str, target: Target, cases: u32, max_steps: usize) -> Found {
    let seed = seed();
    let report = search(&SearchConfig::new(target.clone(), cases, seed));
    let found = report.found.unwrap_or_else(|| {
        panic!("seed {seed}: {} passed {cases} cases; the model-based run missed its bug", target.describe())
    });
    assert!(found.failure.step.is_some(), "{}", found.failure);
    eprintln!("{test}: {} in {:?}: {}", target.describe(), report.elapsed, describe(test, seed, &found));
    assert!(
        found.ops.len() <= max_steps,
        "seed {seed}: shrunk to {} steps, more than {max_steps}:\n{}",
        found.ops.len(),
        describe(test, seed, &found)
    );
    found
}

/// The deliberately broken driver: `ukue-driver` with UKUE_BROKEN set.
#[test]
fn a_broken_driver_fails_with_a_short_sequence() {
    let cmd = DriverCommand::parse(&driver_binary()).unwrap().env("UKUE_BROKEN", "renew-without-token");
    let found = assert_caught("a_broken_driver_fails_with_a_short_sequence", Target::Driver(cmd), 200, 6);
    let last = found.ops.last().unwrap().to_line();
    assert!(last.contains("\"renew\""), "the failing step is a renew: {last}");
}

#[test]
fn each_step_bug_fails_in_process_with_a_short_sequence() {
    for bug in ukue_harness::subjects::broken::STEP_BUGS {
        let spec =
            ukue_harness::subjects::broken::spec(ukue_harness::subjects::broken::bug(bug).unwrap()).unwrap();
        assert_caught(bug, Target::InProcess(spec), 300, 6);
    }
}

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/model");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

/// fixtures/model/*.jsonl: shrunk sequences that caught a bug. Each passes
/// the reference and fails the bug its `# bug:` line names.
#[test]
fn regression_fixtures_pass_the_reference_and_catch_their_bug() {
    let files = fixtures();
    assert!(!files.is_empty(), "no fixtures in fixtures/model");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let ops = parse_script(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if let Err(f) = run_ops(&Target::reference(), &ops) {
            panic!(
                "{}: the reference fails it:\n{f}\nreplay: ukue-conformance replay {}",
                file.display(),
                file.display()
            );
        }
        let bug = text
            .lines()
            .find_map(|l| l.strip_prefix("# bug: "))
            .unwrap_or_else(|| panic!("{}: no `# bug: NAME` line", file.display()))
            .trim();
        let spec = ukue_harness::subjects::broken::spec(
            ukue_harness::subjects::broken::bug(bug).expect("a known bug"),
        )
        .unwrap();
        assert!(
            run_ops(&Target::InProcess(spec), &ops).is_err(),
            "{}: the bug {bug} passes it",
            file.display()
        );
        if let Some(python) = python_driver() {
            if let Err(f) = run_ops(&Target::Driver(python), &ops) {
                panic!("{}: the Python driver fails it:\n{f}", file.display());
            }
        }
    }
}

fn conformance(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ukue-conformance")).args(args).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn the_model_and_replay_commands() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("found.jsonl");
    let saved = saved.to_str().unwrap();
    let (code, out) = conformance(&["model", "--cases", "20", "--seed", "5"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("passed: 20 cases"), "{out}");

    let broken = format!("UKUE_BROKEN=renew-without-token {}", driver_binary());
    let (code, out) =
        conformance(&["model", "--driver", &broken, "--cases", "100", "--seed", "5", "--save", saved]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("replay: ") && out.contains(saved) && out.contains("--seed 5"), "{out}");
    let ops = parse_script(&std::fs::read_to_string(saved).unwrap()).unwrap();
    assert!(!ops.is_empty() && ops.len() <= 6, "{out}");

    let (code, out) = conformance(&["replay", saved, "--driver", &broken]);
    assert_eq!(code, 1, "the broken driver fails the saved script again: {out}");

    // --no-shrink: the first failing sequence, cut after its failing step.
    let (code, out) =
        conformance(&["model", "--driver", &broken, "--cases", "100", "--seed", "5", "--no-shrink"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("cut after its failing step (--no-shrink)") && out.contains("--seed 5"), "{out}");
    let (code, out) = conformance(&["replay", saved]);
    assert_eq!(code, 0, "the reference passes it: {out}");
    let (code, out) = conformance(&["replay", saved, "--driver", &driver_binary()]);
    assert_eq!(code, 0, "the reference driver passes it: {out}");

    let (code, out) = conformance(&["model", "--driver", "/no/such/driver"]);
    assert_eq!(code, 3, "a driver that cannot start is the runner's trouble: {out}");
}
