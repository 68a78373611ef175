//! `ukue-broken`: a deliberately broken `ukue`: the reference command line
//! running an edited FORMAT.md, chosen by `UKUE_BROKEN=NAME`
//! (crate::subjects::broken), with a flawed `serve`
//! (crate::subjects::broken_serve), with an `add` of its own
//! (`ADD_BUGS`), or with an edit of the command line (`CLI_BUGS`). The
//! conformance tests show that the suite fails each one. With
//! `UKUE_BROKEN_PAGE=FORMAT.md` instead it runs that page whole
//! (crate::subjects::page), as a release built from it would.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ukue::cli::args::{AddArgs, Cli, Cmd};
use ukue::OpenOptions;

use crate::subjects::broken::{self, CliEdit, ServeFlaw};
use crate::subjects::broken_cli::run_edited;
use crate::subjects::broken_serve::serve_flawed;
use crate::subjects::{mutants, page};

pub fn main() -> ExitCode {
    if let Some(path) = std::env::var_os(page::PAGE) {
        return run_page(std::path::Path::new(&path));
    }
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

/// The reference's command line running the FORMAT.md at `path`, adding
/// its columns to older files first when `UKUE_BROKEN_UPGRADE` says so.
fn run_page(path: &std::path::Path) -> ExitCode {
    let (spec, columns) = match page::spec(path) {
        Ok(page) => page,
        Err(e) => {
            eprintln!("ukue-broken: {e}");
            return ExitCode::from(3);
        }
    };
    let options = OpenOptions::default().spec(spec.clone());
    if !page::upgrading() {
        return ukue::cli::main_with(options);
    }
    main_with(move |command, out| {
        if let Some(file) = page::file_of(&command) {
            page::add_missing_columns(file, spec.version(), &columns).map_err(anyhow::Error::msg)?;
        }
        ukue::cli::run(command, &options, out)
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
