//! The reference `ukue` command (spec/COMMAND.md), built with the runner
//! so that the runner always has its reference beside it, however it was
//! installed: the same command line as the root crate's `ukue`.

fn main() -> std::process::ExitCode {
    ukue::cli::main()
}
