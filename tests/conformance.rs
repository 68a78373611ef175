//! The conformance cases against this package's `ukue`: the test that
//! cargo-mutants runs for each mutant of src/ (.cargo/mutants.toml names it,
//! .ci/mutants drives it, docs/mutation-score.md has the score). A mutant
//! is caught when a `must` case fails the mutated binary.
//!
//! The runner is a prebuilt `ukue-conformance`, with the unmutated
//! reference beside it, named by `UKUE_MUTANTS_RUNNER`: only the `ukue`
//! binary is rebuilt for each mutant. Without it the test skips, and says
//! so, so that `cargo test` does not run the suite a second time (the
//! harness's tests run it against the reference already).
//!
//! Three runs with `--fail-fast`, as `mutants --run-cases` batches them:
//! the quick families (steps, cli, sweep: under a second a case, where most
//! mutants die), the opening's (format, refusal, bad-input, compat), then
//! the rest. A mutant that survives costs a whole run of the suite (a
//! minute or two on two cores).

use std::process::Command;

/// The families run first, then the opening's, as `mutants --run-cases`
/// runs them.
const QUICK: &[&str] = &["steps/*", "cli/*", "sweep/*"];
const OPENING: &[&str] = &["format/*", "refusal/*", "bad-input/*", "compat/*"];

#[test]
fn the_conformance_cases_pass_this_ukue() {
    let Some(runner) = std::env::var_os("UKUE_MUTANTS_RUNNER") else {
        eprintln!("SKIPPED: UKUE_MUTANTS_RUNNER is not set (.ci/mutants sets it); the suite did not run");
        return;
    };
    let seed = std::env::var("UKUE_MUTANTS_SEED").unwrap_or_else(|_| "2026".to_string());
    let ukue = env!("CARGO_BIN_EXE_ukue");
    let flags = |flag: &str, globs: &[&[&str]]| -> Vec<String> {
        globs.iter().flat_map(|g| g.iter()).flat_map(|g| [flag.to_string(), g.to_string()]).collect()
    };
    let batches = [
        ("the quick families", flags("--cases", &[QUICK])),
        ("the opening's families", flags("--cases", &[OPENING])),
        ("the rest", flags("--skip", &[QUICK, OPENING])),
    ];
    for (batch, args) in batches {
        let status = Command::new(&runner)
            .args(["--impl", ukue, "--fail-fast", "--seed", &seed])
            .args(&args)
            .status()
            .expect("the runner named by UKUE_MUTANTS_RUNNER runs");
        assert!(
            status.success(),
            "a case of {batch} failed this ukue ({status}); the runner's report is above"
        );
    }
}
