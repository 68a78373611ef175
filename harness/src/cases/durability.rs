//! durability: every acknowledgement comes after the commit it
//! acknowledges reached the disk (FORMAT.md §6.1). The subject runs under
//! `strace -f -y`; the id that `add` prints, and the start of a job's
//! command by `work`, must each follow an fsync/fdatasync of the file that
//! holds the commit (the -wal in WAL mode) after the last write to it.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::check::durability::{self, Seen, Sighting};
use crate::shown::text;
use crate::subjects::ctx::{clip, expect_success, path_str, Ctx};
use crate::subjects::observe::strace::{self, command, Invocation};
use crate::subjects::worker::probe_log;
use crate::subjects::Failure;

use super::common;

pub fn cases() -> Vec<Case> {
    let needs = Needs { strace: true, ..Needs::default() };
    vec![
        Case {
            id: "durability/add-acknowledged-after-sync",
            rule: "6.1",
            summary: "add prints the new id only after fsync of the -wal that holds the insert",
            needs,
            level: Level::Must,
            run: add_acknowledged_after_sync,
        },
        Case {
            id: "durability/work-starts-after-sync",
            rule: "6.1",
            summary: "work starts a job's command only after fsync of the -wal that holds its claim",
            needs,
            level: Level::Must,
            run: work_starts_after_sync,
        },
    ]
}

/// The file and its -wal, as strace -y names them (absolute, resolved).
fn commit_files(file: &Path) -> Result<Vec<String>, Failure> {
    let main = strace::traced_path(file)?;
    Ok(vec![format!("{main}-wal"), main])
}

/// The sightings of the trace, with acknowledgements on `stdout`.
fn read_trace(trace: &Path, stdout: Option<&str>) -> Result<Vec<Sighting>, Failure> {
    let text = std::fs::read_to_string(trace).map_err(|e| Failure::error("an strace log", e.to_string()))?;
    Ok(durability::sightings(&text, stdout))
}

fn add_acknowledged_after_sync(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let subject = ctx.subject().clone();
    let trace = ctx.path("add.strace");
    let args = ["add", path_str(&file), "q", "payload"];
    let run = Invocation::record().run(ctx, &trace, &command(&subject, &args))?;
    expect_success(&subject, &["add", "(traced)", "q", "payload"], &run.out)?;
    let stdout = String::from_utf8_lossy(&run.out.stdout);
    let id = strace::printed_id(&stdout).ok_or_else(|| {
        Failure::error(
            format!("{} add to print the new id alone on a line", subject.name),
            text(&clip(&stdout)),
        )
    })?;
    let sightings = read_trace(&trace, Some(&run.stdout))?;
    let ack = sightings.iter().position(|s| s.seen == Seen::Acknowledged { id }).ok_or_else(|| {
        Failure::error(format!("the line with the id {id} written to stdout in the trace"), "none found")
    })?;
    match durability::unsynced_before(&sightings, ack, &commit_files(&file)?) {
        None => Ok(()),
        Some(problem) => {
            Err(Failure::fail("the id printed only after the commit was synced to disk", problem))
        }
    }
}

fn work_starts_after_sync(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let subject = ctx.subject().clone();
    ctx.add(&subject, &file, "q", "traced", &[])?;
    let trace = ctx.path("work.strace");
    let log = probe_log(ctx);
    let probe = ctx.subjects.probe.clone();
    let work = ["work", path_str(&file), "q", "--poll", "20ms", "--", path_str(&probe), path_str(&log)];
    let args = Invocation::record().args(&trace, &command(&subject, &work));
    let shown: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut traced = ctx.spawn(&strace::program(ctx)?, &shown, Stdio::null(), Stdio::null())?;
    let ran = ctx.wait_for("the traced worker to run the job", Duration::from_secs(30), || {
        Ok(common::executions(ctx)?.iter().any(|e| e.end_ms.is_some()))
    });
    // strace and the worker share a process group: SIGTERM stops both.
    traced.signal_group(Signal::SIGTERM);
    ran?;
    let probe_path = std::fs::canonicalize(&probe)?.display().to_string();
    let sightings = read_trace(&trace, None)?;
    let start = sightings
        .iter()
        .position(|s| matches!(&s.seen, Seen::Exec { program } if *program == probe_path || program.ends_with("/ukue-probe")))
        .ok_or_else(|| Failure::error("the probe's execve in the trace", "none found"))?;
    match durability::unsynced_before(&sightings, start, &commit_files(&file)?) {
        None => Ok(()),
        Some(problem) => {
            Err(Failure::fail("the job's command started only after its claim was synced to disk", problem))
        }
    }
}
