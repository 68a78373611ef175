//! ioerror: a disk that fills up or fails. The subject runs under strace,
//! which makes its N-th write (or fsync) to the file, its `-wal`, `-shm`
//! or `-journal` fail with ENOSPC or EIO, once (`when=N`) or from then on
//! (`when=N+`), for each N up to the number of such calls a clean run
//! makes, as SQLite's own fault loops do. Each run must either succeed as
//! usual or fail cleanly (exit non-zero, a message on stderr, no id
//! printed); afterwards, without faults, the subject's `list` shows every
//! job acknowledged so far (FORMAT.md §6.1) and the file passes
//! `integrity_check` and the invariants (§7).
//!
//! Each case writes what the subject did to `ioerror.txt` in its directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::check::file::invariants;
use crate::shown::text;
use crate::subjects::ctx::{clip, expect_success, path_str, Ctx};
use crate::subjects::observe::file::job_count;
use crate::subjects::observe::strace::{self, Invocation, SYNCS, WRITES};
use crate::subjects::worker::probe_log;
use crate::subjects::Failure;
use crate::subjects::Subject;

use super::common;

/// The most N a case tries (SQLite's add makes about 22 writes).
const MAX_N: usize = 30;

pub fn cases() -> Vec<Case> {
    let strace = Needs { strace: true, ..Needs::default() };
    vec![
        Case {
            id: "ioerror/add-disk-full",
            rule: "6.1",
            summary: "add with ENOSPC at its N-th write (once, and from then on) prints an id or fails cleanly; nothing acknowledged is lost, the file stays sound",
            needs: strace,
            level: Level::Must,
            run: add_disk_full,
        },
        Case {
            id: "ioerror/add-write-eio",
            rule: "6.1",
            summary: "add with EIO at its N-th write (once, and from then on) prints an id or fails cleanly; nothing acknowledged is lost, the file stays sound",
            needs: strace,
            level: Level::Must,
            run: add_write_eio,
        },
        Case {
            id: "ioerror/add-sync-eio",
            rule: "6.1",
            summary: "add with EIO at its N-th fsync (once, and from then on) prints an id or fails cleanly; nothing acknowledged is lost, the file stays sound",
            needs: strace,
            level: Level::Must,
            run: add_sync_eio,
        },
        Case {
            id: "ioerror/work-disk-full",
            rule: "6.1",
            summary: "work with ENOSPC at its N-th write: a job is gone only after its command ended well; the file stays sound",
            needs: strace,
            level: Level::Must,
            run: work_disk_full,
        },
    ]
}

/// The calls to fail and how.
#[derive(Debug, Clone, Copy)]
struct Fault {
    calls: &'static str,
    error: &'static str,
}

impl Fault {
    /// strace on the file and its companions, failing the `n`-th call
    /// (and every one after it, when `persistent`) if `n` is given.
    fn strace(self, file: &Path, n: Option<(usize, bool)>) -> Invocation {
        let files = ["", "-wal", "-shm", "-journal"].map(|suffix| format!("{}{suffix}", path_str(file)));
        let traced = Invocation::calls_on(self.calls, files);
        match n {
            Some((n, persistent)) => traced.inject(self.error, n, persistent),
            None => traced,
        }
    }

    fn what(self, n: usize, persistent: bool) -> String {
        let call = if self.calls == SYNCS { "fsync/fdatasync" } else { "write" };
        let when = if persistent { " and every one after it" } else { " (once)" };
        format!("{} at the {} {call}{when}", self.error, ordinal(n))
    }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn add_disk_full(ctx: &mut Ctx) -> CaseResult {
    add_faults(ctx, Fault { calls: WRITES, error: "ENOSPC" })
}

fn add_write_eio(ctx: &mut Ctx) -> CaseResult {
    add_faults(ctx, Fault { calls: WRITES, error: "EIO" })
}

fn add_sync_eio(ctx: &mut Ctx) -> CaseResult {
    add_faults(ctx, Fault { calls: SYNCS, error: "EIO" })
}

fn strace_subject(ctx: &Ctx) -> Result<Subject, Failure> {
    Ok(Subject { name: "strace".into(), program: strace::program(ctx)?, args: Vec::new() })
}

/// strace's arguments to run `who ARGS…`.
fn traced(strace: &Invocation, trace: &Path, who: &Subject, args: &[&str]) -> Vec<String> {
    strace.args(trace, &strace::command(who, args))
}

/// The calls a trace shows, and how many of them strace failed.
fn counted(trace: &Path) -> Result<(usize, usize), Failure> {
    let text = std::fs::read_to_string(trace).map_err(|e| Failure::error("an strace log", e.to_string()))?;
    let calls = strace::calls(&text);
    Ok((calls.len(), calls.iter().filter(|c| c.injected()).count()))
}

/// stderr without strace's own lines.
fn subject_stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.starts_with("strace: "))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// Ids and payloads of the file's jobs, as the subject's `list` shows
/// them (without faults).
fn listed(ctx: &Ctx, who: &Subject, file: &Path, after: &str) -> Result<Vec<(i64, String)>, Failure> {
    let out = ctx.run(who, &["list", path_str(file), "--json", "--limit", "1000"])?;
    if !out.status.success() {
        return Err(Failure::fail(
            format!("`list` (without faults) to open the file after {after}"),
            common::outcome(&out),
        ));
    }
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        Failure::error(
            "`list --json` to print JSON",
            format!("{e}: {}", clip(&String::from_utf8_lossy(&out.stdout))),
        )
    })?;
    Ok(value["jobs"]
        .as_array()
        .map(|jobs| {
            jobs.iter()
                .filter_map(|j| {
                    Some((j["id"].as_i64()?, j["payload"].as_str().unwrap_or_default().to_string()))
                })
                .collect()
        })
        .unwrap_or_default())
}

/// What the subject did under one kind of fault, for `ioerror.txt`.
#[derive(Default)]
struct Tally {
    runs: usize,
    fired: usize,
    succeeded: usize,
    failed: usize,
    /// Failed, yet the job was in the file afterwards (allowed: it was
    /// never acknowledged, so whoever added it may add it again).
    failed_but_stored: usize,
    messages: BTreeSet<String>,
}

fn add_faults(ctx: &mut Ctx, fault: Fault) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let subject = ctx.subject().clone();
    let mut acknowledged = vec![ctx.add(&subject, &file, "q", "before", &[])?];
    let strace = strace_subject(ctx)?;
    let trace = ctx.path("add.strace");
    // A clean run counts the calls.
    let file_arg = path_str(&file).to_string();
    let args = traced(&fault.strace(&file, None), &trace, &subject, &["add", &file_arg, "q", "count"]);
    let shown: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ctx.run(&strace, &shown)?;
    expect_success(&subject, &["add", "(traced)", "q", "count"], &out)?;
    acknowledged
        .push(parse_id(&out).ok_or_else(|| Failure::error("add to print its id", common::outcome(&out)))?);
    let (calls, _) = counted(&trace)?;
    if calls == 0 {
        return Err(Failure::error(format!("calls of {} on the file in the trace", fault.calls), "none"));
    }
    let last = calls.min(MAX_N);
    let mut report = vec![format!("a clean add makes {calls} of {}; faults at 1..={last}", fault.calls)];
    for persistent in [false, true] {
        let mut tally = Tally::default();
        for n in 1..=last {
            let what = fault.what(n, persistent);
            let payload = format!("n{n}{}", if persistent { "+" } else { "" });
            let args = traced(
                &fault.strace(&file, Some((n, persistent))),
                &trace,
                &subject,
                &["add", &file_arg, "q", &payload],
            );
            let shown: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = ctx.run(&strace, &shown)?;
            tally.runs += 1;
            tally.fired += usize::from(counted(&trace)?.1 > 0);
            let stderr = subject_stderr(&out);
            let id = parse_id(&out);
            let printed = !String::from_utf8_lossy(&out.stdout).trim().is_empty();
            match (out.status.code(), id) {
                (Some(0), Some(id)) => {
                    tally.succeeded += 1;
                    acknowledged.push(id);
                }
                (Some(code), None) if code != 0 && !printed && !stderr.is_empty() => {
                    tally.failed += 1;
                    tally.messages.insert(clip(stderr.lines().next().unwrap_or_default()));
                }
                _ => {
                    return Err(Failure::fail(
                        format!("add with {what} to print its id and exit 0, or to print nothing and exit non-zero with a message on stderr"),
                        format!("{}; stdout {}", common::outcome(&out), text(&clip(&String::from_utf8_lossy(&out.stdout)))),
                    ))
                }
            }
            let after = format!("an add with {what}");
            let jobs = listed(ctx, &subject, &file, &after)?;
            let ids: BTreeSet<i64> = jobs.iter().map(|(id, _)| *id).collect();
            let missing: Vec<i64> = acknowledged.iter().copied().filter(|id| !ids.contains(id)).collect();
            if !missing.is_empty() {
                return Err(Failure::fail(
                    format!("after {after}, every acknowledged job (ids {acknowledged:?}) in the file"),
                    format!("`list` does not show {missing:?}"),
                ));
            }
            if id.is_none() && jobs.iter().any(|(_, p)| *p == payload) {
                tally.failed_but_stored += 1;
            }
            common::no_findings(
                &format!("the file to pass integrity_check and the invariants (FORMAT.md §7) after {after}"),
                invariants(&file),
            )?;
        }
        report.push(format!(
            "{} {}: {} runs, the fault fired in {}; {} printed an id, {} failed cleanly ({} of them stored the job anyway); messages: {}",
            fault.error,
            if persistent { "from the N-th call on" } else { "at the N-th call once" },
            tally.runs,
            tally.fired,
            tally.succeeded,
            tally.failed,
            tally.failed_but_stored,
            tally.messages.iter().cloned().collect::<Vec<_>>().join(" | ")
        ));
    }
    std::fs::write(ctx.path("ioerror.txt"), report.join("\n") + "\n")?;
    Ok(())
}

fn parse_id(out: &Output) -> Option<i64> {
    strace::printed_id(&String::from_utf8_lossy(&out.stdout))
}

/// A worker whose N-th write fails (once) runs one job. Then, without
/// faults, the job is gone only if its command ended with exit 0 (the
/// finish may have committed); else it is still in the file, to run again.
fn work_disk_full(ctx: &mut Ctx) -> CaseResult {
    let subject = ctx.subject().clone();
    let fault = Fault { calls: WRITES, error: "ENOSPC" };
    let probe = ctx.subjects.probe.clone();
    // A clean run counts the writes of one claim and finish.
    let (count_file, _) = one_job(ctx, &subject, "count")?;
    let trace = ctx.path("work.strace");
    run_worker(ctx, &subject, &probe, &fault.strace(&count_file, None), &count_file, &trace, "count")?;
    let (calls, _) = counted(&trace)?;
    if calls == 0 {
        return Err(Failure::error(format!("calls of {} on the file in the trace", fault.calls), "none"));
    }
    let last = calls.min(MAX_N);
    let mut tally = Tally::default();
    for n in 1..=last {
        let name = format!("n{n}");
        let (file, id) = one_job(ctx, &subject, &name)?;
        let what = fault.what(n, false);
        let errors =
            run_worker(ctx, &subject, &probe, &fault.strace(&file, Some((n, false))), &file, &trace, &name)?;
        tally.runs += 1;
        tally.fired += usize::from(counted(&trace)?.1 > 0);
        if errors.is_empty() {
            tally.succeeded += 1;
        } else {
            tally.failed += 1;
            tally.messages.insert(clip(errors.lines().next().unwrap_or_default()));
        }
        let after = format!("a worker with {what}");
        let ended_well = common::executions(ctx)?
            .iter()
            .any(|e| e.payload == name && e.exit == Some(0) && e.end_ms.is_some());
        let jobs = listed(ctx, &subject, &file, &after)?;
        if !jobs.iter().any(|(j, _)| *j == id) && !ended_well {
            return Err(Failure::fail(
                format!("after {after}, job {id} still in the file, since its command never ended well"),
                "it is gone",
            ));
        }
        common::no_findings(
            &format!("the file to pass integrity_check and the invariants (FORMAT.md §7) after {after}"),
            invariants(&file),
        )?;
    }
    std::fs::write(
        ctx.path("ioerror.txt"),
        format!(
            "a clean claim and finish make {calls} writes; ENOSPC once at 1..={last}: the fault fired in {} runs; the worker reported no error in {}, an error in {}: {}\n",
            tally.fired,
            tally.succeeded,
            tally.failed,
            tally.messages.iter().cloned().collect::<Vec<_>>().join(" | ")
        ),
    )?;
    Ok(())
}

/// A new file holding one job whose payload is `name`.
fn one_job(ctx: &mut Ctx, who: &Subject, name: &str) -> Result<(PathBuf, i64), Failure> {
    let file = ctx.tracked_file(&format!("{name}.ukue"));
    ctx.ok(who, &["init", path_str(&file)])?;
    let id = ctx.add(who, &file, "q", name, &[])?;
    Ok((file, id))
}

/// Runs `who work FILE q` under strace as `tracing` says until the job
/// `name` has ended and the file shows it finished, or the worker has
/// reported an error; stops it with SIGTERM. Returns the worker's stderr.
fn run_worker(
    ctx: &Ctx,
    who: &Subject,
    probe: &Path,
    tracing: &Invocation,
    file: &Path,
    trace: &Path,
    name: &str,
) -> Result<String, Failure> {
    let log = probe_log(ctx);
    let file_arg = path_str(file).to_string();
    let args = traced(
        tracing,
        trace,
        who,
        &["work", &file_arg, "q", "--quiet", "--poll", "20ms", "--", path_str(probe), path_str(&log)],
    );
    let shown: Vec<&str> = args.iter().map(String::as_str).collect();
    let stderr_path = ctx.path(&format!("{name}.stderr"));
    let stderr = std::fs::File::create(&stderr_path)?;
    let mut worker = ctx.spawn(&strace::program(ctx)?, &shown, Stdio::null(), Stdio::from(stderr))?;
    let errors = || {
        std::fs::read_to_string(&stderr_path)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.starts_with("strace: ") && !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let settled = ctx.wait_for(
        &format!("the traced worker to run job {name} to its end, or to report an error"),
        Duration::from_secs(20),
        || {
            if let Some(status) = worker.child.try_wait()? {
                // Giving up with a message (a fault while opening) is a
                // clean failure; ending quietly is not.
                if status.success() || errors().is_empty() {
                    return Err(Failure::fail(
                        "the worker to keep running until stopped, or to exit non-zero with a message",
                        format!("it ended ({status}): {}", clip(&errors())),
                    ));
                }
                return Ok(true);
            }
            let ended = common::executions(ctx)?.iter().any(|e| e.payload == name && e.end_ms.is_some());
            Ok((ended && job_count(file)? == 0) || !errors().is_empty())
        },
    );
    // SIGTERM to the worker alone (strace follows it out); the worker
    // waits for nothing, since its job has ended or never started.
    let pid = child_of(worker.pid());
    match pid {
        Some(pid) => {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGTERM);
        }
        None => worker.signal_group(Signal::SIGTERM),
    }
    let status = worker.wait_timeout(Duration::from_secs(20))?;
    settled?;
    match status {
        Some(_) => Ok(errors()),
        None => Err(Failure::timeout("the worker to stop within 20 s of SIGTERM", "it was still running")),
    }
}

/// The first child of `pid` (the program strace runs).
fn child_of(pid: i32) -> Option<i32> {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}
