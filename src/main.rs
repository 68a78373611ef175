//! The `ukue` command (shared/ukue-contract.md). Exit status: 0 success,
//! 1 an error (message on stderr, starting `ukue COMMAND: `), 2 a usage
//! error.

mod cli;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::args::Cli::parse();
    let name = args.command.name();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // Returning (rather than exiting) drops every connection first, so
    // SQLite removes the -wal and -shm files it made for a refused file.
    match cli::run(args.command, &mut out).and_then(|()| Ok(out.flush()?)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let message = format!("{e:#}");
            eprintln!("ukue {name}: {}", cli::output::escape(&message));
            ExitCode::from(1)
        }
    }
}
