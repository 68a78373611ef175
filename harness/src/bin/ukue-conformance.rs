//! The conformance runner; see `ukue-conformance --help` and spec/CONFORMANCE.md.

fn main() -> std::process::ExitCode {
    ukue_harness::conformance::main()
}
