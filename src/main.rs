//! The `ukue` command (shared/ukue-contract.md).

fn main() -> std::process::ExitCode {
    ukue::cli::main()
}
