//! The command-line bugs of `ukue-broken` (crate::subjects::broken's
//! `CLI_BUGS`) applied to the reference's command: a command line read and
//! run as ukue-broken reads and runs it. The binary and the `cli_args`
//! fuzz target share them, so that both run the same broken program.

use std::ffi::OsString;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;

use clap::Parser;
use ukue::cli::args::{Cli, Cmd};
use ukue::cli::work::CommandHandler;
use ukue::worker::{Handler, JobControl, Outcome};
use ukue::{Claimed, OpenOptions};

use super::broken::CliEdit;

/// The command line `words` (the program's name first) read as
/// ukue-broken reads it with `edit` (None: as the reference does): the
/// words edited, then parsed. One that cannot be read is the exit status
/// it ends with (clap's: 2, or 0 for help and the version), printing
/// nothing but what the edit prints.
pub fn read_edited(words: Vec<OsString>, edit: Option<CliEdit>) -> Result<Cmd, u8> {
    let words = match edit {
        Some(CliEdit::Argv(change)) => change(words),
        _ => words,
    };
    match Cli::try_parse_from(words) {
        Ok(cli) => Ok(cli.command),
        Err(e) => Err(match edit {
            Some(CliEdit::Unreadable(end)) => end(e),
            _ => u8::try_from(e.exit_code()).unwrap_or(2),
        }),
    }
}

/// The reference's command, with `edit` made where it says.
pub fn run_edited(
    mut command: Cmd,
    edit: CliEdit,
    options: &OpenOptions,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let options = options.clone();
    match edit {
        CliEdit::Args(change) => {
            change(&mut command);
            ukue::cli::run(command, &options, out)
        }
        CliEdit::Job(change) => match command {
            Cmd::Work(args) => {
                let inner = CommandHandler::of(&args);
                ukue::cli::work_with(&options, args, &Edited { inner, job: change, outcome: |o| o })
            }
            command => ukue::cli::run(command, &options, out),
        },
        CliEdit::Outcome(change) => match command {
            Cmd::Work(args) => {
                let inner = CommandHandler::of(&args);
                ukue::cli::work_with(&options, args, &Edited { inner, job: |_| {}, outcome: change })
            }
            command => ukue::cli::run(command, &options, out),
        },
        CliEdit::AddStdin(change) => {
            if let Cmd::Add(args) = &command {
                if args.payload.as_deref().is_none_or(|p| p == "-") {
                    edit_stdin(change)?;
                }
            }
            ukue::cli::run(command, &options, out)
        }
        CliEdit::Stdout(change) => {
            let name = command.name();
            let mut printed = Vec::new();
            let result = ukue::cli::run(command, &options, &mut printed);
            out.write_all(&change(name, printed))?;
            result
        }
        // Made before the command line was read (main).
        CliEdit::Argv(_) | CliEdit::Unreadable(_) => ukue::cli::run(command, &options, out),
    }
}

/// Reads stdin to its end and puts `change` of it in its place, so that
/// the reference's `add` reads the edited bytes.
fn edit_stdin(change: fn(Vec<u8>) -> Vec<u8>) -> anyhow::Result<()> {
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes)?;
    let mut edited = tempfile::tempfile()?;
    edited.write_all(&change(bytes))?;
    edited.seek(SeekFrom::Start(0))?;
    nix::unistd::dup2(edited.as_raw_fd(), 0)?;
    Ok(())
}

/// The reference's handler, with each job and each outcome edited.
struct Edited {
    inner: CommandHandler,
    job: fn(&mut Claimed),
    outcome: fn(Outcome) -> Outcome,
}

impl Handler for Edited {
    fn handle(&self, job: &Claimed, control: &JobControl) -> Outcome {
        let mut edited = job.clone();
        (self.job)(&mut edited);
        (self.outcome)(self.inner.handle(&edited, control))
    }
}
