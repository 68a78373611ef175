//! The conformance runner; see `ukue-conformance --help`, spec/CONFORMANCE.md
//! and ukue_harness::commands::conformance.

fn main() -> std::process::ExitCode {
    ukue_harness::commands::conformance::main()
}
