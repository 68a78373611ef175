//! durability: every acknowledgement comes after the commit it
//! acknowledges reached the disk (FORMAT.md §6.1). The subject runs under
//! `strace -f -y`; the id that `add` prints, and the start of a job's
//! command by `work`, must each follow an fsync/fdatasync of the file that
//! holds the commit (the -wal in WAL mode) after the last write to it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::case::{Case, CaseResult, Failure, Needs};
use crate::ctx::{path_str, Ctx};
use crate::syscalls::{self, Call};

use super::common;

pub fn cases() -> Vec<Case> {
    let needs = Needs { strace: true, ..Needs::default() };
    vec![
        Case {
            id: "durability/add-acknowledged-after-sync",
            rule: "6.1",
            summary: "add prints the new id only after fsync of the -wal that holds the insert",
            needs,
            run: add_acknowledged_after_sync,
        },
        Case {
            id: "durability/work-starts-after-sync",
            rule: "6.1",
            summary: "work starts a job's command only after fsync of the -wal that holds its claim",
            needs,
            run: work_starts_after_sync,
        },
    ]
}

const TRACED: &str = "trace=write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync,execve";

/// `strace -f -y -qq -e TRACED -o TRACE -- WHO ARGS…`, as arguments.
fn strace_args<'a>(trace: &'a Path, who: &'a crate::subject::Subject, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec![
        "-f",
        "-y",
        "-qq",
        "-s",
        "64",
        "-e",
        TRACED,
        "-o",
        path_str(trace),
        "--",
        path_str(&who.program),
    ];
    all.extend(who.args.iter().map(String::as_str));
    all.extend_from_slice(args);
    all
}

fn strace(ctx: &Ctx) -> Result<PathBuf, Failure> {
    ctx.subjects
        .strace
        .clone()
        .ok_or_else(|| Failure::error("strace", "not found (the case should be skipped)"))
}

/// The file and its -wal, as strace -y names them (absolute, resolved).
fn commit_files(file: &Path) -> Result<Vec<String>, Failure> {
    let dir = std::fs::canonicalize(file.parent().unwrap_or(Path::new(".")))?;
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let main = dir.join(name).display().to_string();
    Ok(vec![format!("{main}-wal"), main])
}

fn read_trace(trace: &Path) -> Result<Vec<Call>, Failure> {
    let text = std::fs::read_to_string(trace).map_err(|e| Failure::error("an strace log", e.to_string()))?;
    Ok(syscalls::parse(&text))
}

fn add_acknowledged_after_sync(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.tracked_file("jobs.ukue");
    let subject = ctx.subject().clone();
    ctx.ok(&subject, &["init", path_str(&file)])?;
    let trace = ctx.path("add.strace");
    let strace = crate::subject::Subject { name: "strace".into(), program: strace(ctx)?, args: Vec::new() };
    let out = ctx.run(&strace, &strace_args(&trace, &subject, &["add", path_str(&file), "q", "payload"]))?;
    crate::ctx::expect_success(&strace, &["add"], &out)?;
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let calls = read_trace(&trace)?;
    let needle = format!("\"{id}\\n\"");
    let ack = calls
        .iter()
        .position(|c| matches!(c, Call::Write { path, data, .. } if !path.ends_with(".ukue") && !path.ends_with("-wal") && data.starts_with(&needle)))
        .ok_or_else(|| Failure::error(format!("a write of the id {id} to stdout in the trace"), "none found"))?;
    match syscalls::unsynced_before(&calls, ack, &commit_files(&file)?) {
        None => Ok(()),
        Some(problem) => {
            Err(Failure::fail("the id printed only after the commit was synced to disk", problem))
        }
    }
}

fn work_starts_after_sync(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.tracked_file("jobs.ukue");
    let subject = ctx.subject().clone();
    ctx.ok(&subject, &["init", path_str(&file)])?;
    ctx.add(&subject, &file, "q", "traced", &[])?;
    let trace = ctx.path("work.strace");
    let log = common::probe_log(ctx);
    let probe = ctx.subjects.probe.clone();
    let args = strace_args(
        &trace,
        &subject,
        &["work", path_str(&file), "q", "--poll", "20ms", "--", path_str(&probe), path_str(&log)],
    );
    let strace = strace(ctx)?;
    let traced = ctx.spawn(&strace, &args, Stdio::null(), Stdio::null())?;
    let ran = ctx.wait_for("the traced worker to run the job", Duration::from_secs(30), || {
        Ok(common::executions(ctx)?.iter().any(|e| e.end_ms.is_some()))
    });
    // strace and the worker share a process group: SIGTERM stops both.
    traced.signal_group(Signal::SIGTERM);
    ran?;
    let probe_path = std::fs::canonicalize(&probe)?.display().to_string();
    let calls = read_trace(&trace)?;
    let start = calls
        .iter()
        .position(|c| matches!(c, Call::Exec { program, .. } if *program == probe_path || program.ends_with("/ukue-probe")))
        .ok_or_else(|| Failure::error("the probe's execve in the trace", "none found"))?;
    match syscalls::unsynced_before(&calls, start, &commit_files(&file)?) {
        None => Ok(()),
        Some(problem) => {
            Err(Failure::fail("the job's command started only after its claim was synced to disk", problem))
        }
    }
}
