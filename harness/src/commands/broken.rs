//! `ukue-broken`: a deliberately broken `ukue`: the reference command line
//! running an edited FORMAT.md, chosen by `UKUE_BROKEN=NAME`
//! (crate::subjects::broken), with a flawed `serve`
//! (crate::subjects::broken_serve), with an `add` of its own
//! (`ADD_BUGS`), or with an edit of the command line (`CLI_BUGS`). The
//! conformance tests show that the suite fails each one.

use std::ffi::OsString;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ukue::cli::args::{AddArgs, Cli, Cmd};
use ukue::cli::work::CommandHandler;
use ukue::worker::{Handler, JobControl, Outcome};
use ukue::{Claimed, OpenOptions};

use crate::subjects::broken::{self, CliEdit, ServeFlaw};
use crate::subjects::broken_serve::serve_flawed;
use crate::subjects::mutants;

pub fn main() -> ExitCode {
    let name = std::env::var("UKUE_BROKEN").unwrap_or_default();
    if let Some(bug) = broken::cli_bug(&name) {
        let edit = bug.edit;
        let mut words: Vec<OsString> = std::env::args_os().collect();
        if let CliEdit::Argv(change) = edit {
            words = change(words);
        }
        if let CliEdit::Unreadable(end) = edit {
            if let Err(e) = Cli::try_parse_from(&words) {
                return ExitCode::from(end(e));
            }
        }
        let options = OpenOptions::default();
        return main_from(words, move |command, out| run_edited(command, edit, &options, out));
    }
    if broken::ADD_BUGS.iter().any(|(bug, _)| *bug == name) {
        // `split-add`: `add` writes its row in two transactions.
        return main_with(|command, out| match command {
            Cmd::Add(args) => split_add(args, out),
            command => ukue::cli::run(command, &OpenOptions::default(), out),
        });
    }
    if let Some(mutant) = mutants::named(&name) {
        return ukue::cli::main_with(OpenOptions::default().spec(mutant.spec()));
    }
    let Some(bug) = broken::bug(&name) else {
        eprintln!("ukue-broken: set UKUE_BROKEN to one of {}", broken::names());
        return ExitCode::from(3);
    };
    let spec = match broken::spec(bug) {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("ukue-broken: {e}");
            return ExitCode::from(3);
        }
    };
    let options = OpenOptions::default().spec(spec);
    if bug.serve == ServeFlaw::None {
        return ukue::cli::main_with(options);
    }
    let flaw = bug.serve;
    main_with(move |command, out| match command {
        Cmd::Serve(args) => serve_flawed(options, args, flaw),
        command => ukue::cli::run(command, &options, out),
    })
}

/// The reference's command line, each command run by `run` (which hands
/// the ones it leaves alone to `ukue::cli::run`).
fn main_with(run: impl FnOnce(Cmd, &mut dyn Write) -> anyhow::Result<()>) -> ExitCode {
    main_from(std::env::args_os().collect(), run)
}

/// [`main_with`] on the command line `words`.
fn main_from(words: Vec<OsString>, run: impl FnOnce(Cmd, &mut dyn Write) -> anyhow::Result<()>) -> ExitCode {
    let cli = Cli::parse_from(words);
    let name = cli.command.name();
    let mut out = std::io::stdout().lock();
    let result = run(cli.command, &mut out);
    match result.and_then(|()| Ok(out.flush()?)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ukue {name}: {e:#}");
            ExitCode::from(ukue::cli::exit_status(&e))
        }
    }
}

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

fn split_add(args: AddArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let payload = args.payload.map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let file = OpenOptions::default().access(ukue::Access::AddTables).open(&args.file)?;
    let conn = file.connection();
    let now = file.now();
    conn.execute(
        "INSERT INTO ukue_jobs (queue, payload, run_at, created_at, updated_at) VALUES (?1, X'', ?2, ?3, ?3)",
        rusqlite::params![args.queue, i64::MAX / 2, now],
    )?;
    let id = conn.last_insert_rowid();
    // The bug: other work between the two halves of one row.
    std::thread::sleep(Duration::from_millis(50));
    conn.execute(
        "UPDATE ukue_jobs SET payload = CAST(?1 AS BLOB), run_at = ?2, updated_at = ?2 WHERE id = ?3",
        rusqlite::params![payload, file.now(), id],
    )?;
    writeln!(out, "{id}")?;
    Ok(())
}
