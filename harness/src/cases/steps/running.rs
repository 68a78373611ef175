//! Running the subject: its `work` with the probe, commands that must be
//! refused, and waits for jobs to settle.

use std::path::Path;
use std::time::Duration;

use crate::cases::common;
use crate::cases::CaseResult;
use crate::history::Execution;
use crate::subjects::ctx::{clip, Ctx};
use crate::subjects::observe::file::{row, rows};
use crate::subjects::probe::now_ms;
use crate::subjects::worker::{start_worker, WorkerProcess};
use crate::subjects::Failure;
use crate::subjects::Subject;

use super::rows::brief_all;
use super::POLL;

pub(super) fn probe_worker(
    ctx: &Ctx,
    file: &Path,
    queue: &str,
    extra: &[&str],
) -> Result<WorkerProcess, Failure> {
    let who = ctx.subject().clone();
    let mut options: Vec<&str> = POLL.to_vec();
    options.extend_from_slice(extra);
    start_worker(ctx, &who, file, queue, &options)
}

/// Runs `who args`, which must fail (exit non-zero, not crash).
pub(super) fn expect_refused(ctx: &Ctx, who: &Subject, args: &[&str]) -> CaseResult {
    let out = ctx.run(who, args)?;
    let shown = format!("`{} {}`", who.name, args.join(" "));
    match out.status.code() {
        Some(0) => Err(Failure::fail(
            format!("{shown} to exit non-zero"),
            format!("exit status 0: {}", clip(&String::from_utf8_lossy(&out.stdout))),
        )),
        Some(_) => Ok(()),
        None => Err(Failure::error(
            format!("{shown} to exit non-zero"),
            format!("it crashed ({}): {}", out.status, clip(&String::from_utf8_lossy(&out.stderr))),
        )),
    }
}

pub(super) fn runs_of(runs: &[Execution], id: i64) -> Vec<&Execution> {
    runs.iter().filter(|e| e.job == id).collect()
}

/// Waits until every job of `ids` has started under the probe and no longer
/// runs in the file (finished, failed or given back); returns when the
/// harness saw that (ms), an upper bound of the subject's last step.
pub(crate) fn wait_settled(
    ctx: &Ctx,
    file: &Path,
    ids: &[i64],
    limit: Duration,
    workers: &mut [&mut WorkerProcess],
) -> Result<i64, Failure> {
    let mut seen_at = 0;
    let result = ctx.wait_for(&format!("jobs {ids:?} to run and leave the running state"), limit, || {
        still_working(workers)?;
        let runs = common::executions(ctx)?;
        if !ids.iter().all(|id| runs.iter().any(|e| e.job == *id)) {
            return Ok(false);
        }
        for &id in ids {
            if row(file, id)?.is_some_and(|r| r.state == "running") {
                return Ok(false);
            }
        }
        seen_at = now_ms();
        Ok(true)
    });
    match result {
        Ok(()) => Ok(seen_at),
        Err(mut f) => {
            let ran: Vec<i64> = common::executions(ctx)?.iter().map(|e| e.job).collect();
            f.seen = format!("{}; probe runs of jobs {ran:?}; file: {}", f.seen, brief_all(&rows(file)?));
            Err(f)
        }
    }
}

/// Fails when a worker ended by itself (it must run until stopped).
pub(crate) fn still_working(workers: &mut [&mut WorkerProcess]) -> CaseResult {
    for worker in workers.iter_mut() {
        worker.still_running("the worker to keep running until stopped")?;
    }
    Ok(())
}

/// Whether a process is alive (a zombie is not).
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').is_none_or(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}
