//! Replays every seed of fixtures/fuzz/<target>/ through the fuzz
//! targets' functions (ukue_harness::explore::fuzzing), on stable Rust, so that CI
//! runs the corpus that fuzz/run.sh starts from (and any crash input
//! saved there as a regression).

use std::path::Path;

#[test]
fn every_seed_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/fuzz");
    let mut failures = Vec::new();
    for (name, target) in ukue_harness::explore::fuzzing::TARGETS {
        let dir = root.join(name);
        let mut seeds: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        seeds.sort();
        assert!(seeds.len() >= 4, "{}: too few seeds ({})", dir.display(), seeds.len());
        for seed in seeds {
            let data = std::fs::read(&seed).unwrap();
            if let Err(panic) = std::panic::catch_unwind(|| target(&data)) {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!(
                    "{name} {}: {message}\nreplay: cargo test -p ukue-harness --test fuzz_corpus \
                     (or: cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run {name} {})",
                    seed.display(),
                    seed.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "seeds that fail their target:\n{}", failures.join("\n"));
}

/// The step bugs that the ops seeds must catch, as the fuzzer runs them
/// (the in-memory reference, ukue_harness::explore::run::Target::InMemory).
const STEP_BUGS: &[&str] = &[
    "renew-without-token",
    "finish-without-token",
    "no-reaping",
    "reversed-priority",
    "uncounted-attempts",
    "no-renew",
];

/// The properties can fail: for each step bug some ops seed fails the
/// reference running it, a line that is no request is answered `invalid`,
/// and a bad argument vector is a usage error.
#[test]
fn the_targets_catch_what_they_look_for() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/fuzz/ops_vs_model");
    let seeds: Vec<Vec<u8>> =
        std::fs::read_dir(&root).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap()).collect();
    for name in STEP_BUGS {
        let bug = ukue_harness::subjects::broken::bug(name).unwrap();
        let spec = ukue_harness::subjects::broken::spec(bug).unwrap();
        let broken = ukue_harness::explore::run::Target::InMemory(spec);
        let caught = seeds
            .iter()
            .filter(|data| {
                std::panic::catch_unwind(|| ukue_harness::explore::fuzzing::ops_vs_model_on(&broken, data))
                    .is_err()
            })
            .count();
        assert!(caught >= 1, "no ops_vs_model seed catches {name}");
    }

    let mut driver = ukue_harness::subjects::driver::ReferenceDriver::new(ukue::Spec::builtin());
    let reply = driver.handle_line("{\"op\": \"claim\"}");
    let answer: ukue_harness::subjects::driver::Answer = serde_json::from_str(&reply).unwrap();
    assert_eq!(answer.error, Some(ukue_harness::subjects::driver::ErrorKind::Invalid), "{reply}");

    use clap::Parser;
    let e = ukue::cli::args::Cli::try_parse_from(["ukue", "add", "f", "q", "x", "--priority", "101"])
        .unwrap_err();
    assert_eq!(e.exit_code(), 2);
}
