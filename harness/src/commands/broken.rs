//! `ukue-broken`: a deliberately broken `ukue`: the reference command line
//! running an edited FORMAT.md, chosen by `UKUE_BROKEN=NAME`
//! (crate::subjects::broken), or with an `add` of its own (`ADD_BUGS`).
//! The conformance tests show that the suite fails each one.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ukue::cli::args::{AddArgs, Cli, Cmd};

use crate::subjects::broken;

pub fn main() -> ExitCode {
    let name = std::env::var("UKUE_BROKEN").unwrap_or_default();
    if broken::ADD_BUGS.iter().any(|(bug, _)| *bug == name) {
        return split_add_main();
    }
    let Some(bug) = broken::bug(&name) else {
        eprintln!("ukue-broken: set UKUE_BROKEN to one of {}", broken::names());
        return ExitCode::from(3);
    };
    match broken::spec(bug) {
        Ok(spec) => ukue::cli::main_with_flaws(ukue::OpenOptions::default().spec(spec), bug.serve.clone()),
        Err(e) => {
            eprintln!("ukue-broken: {e}");
            ExitCode::from(3)
        }
    }
}

/// `split-add`: the reference, but `add` writes its row in two transactions.
fn split_add_main() -> ExitCode {
    let cli = Cli::parse();
    let name = cli.command.name();
    let mut out = std::io::stdout().lock();
    let result = match cli.command {
        Cmd::Add(args) => split_add(args, &mut out),
        command => ukue::cli::run(command, &ukue::OpenOptions::default(), &mut out),
    };
    match result.and_then(|()| Ok(out.flush()?)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ukue {name}: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn split_add(args: AddArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let payload = args.payload.map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let file = ukue::OpenOptions::default().access(ukue::Access::AddTables).open(&args.file)?;
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
