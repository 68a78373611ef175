//! The `ukue` command (spec/COMMAND.md).

fn main() -> std::process::ExitCode {
    ukue::cli::main()
}
