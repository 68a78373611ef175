//! What the work cases share: a worker that runs the probe with a log of
//! its own, the probe's records, processes watched until they are gone,
//! and `work` command lines that must be refused before any claim.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use crate::cases::common;
use crate::cases::steps::rows::brief_all;
use crate::cases::steps::running::still_working;
use crate::cases::CaseResult;
use crate::history;
use crate::subjects::ctx::{clip, path_str, Ctx, COMMAND_TIMEOUT};
use crate::subjects::observe::file::{rows, rows_as_text};
use crate::subjects::probe::{Record, RecordKind};
use crate::subjects::worker::{start_command_worker, WorkerProcess};
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

pub(super) fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A short poll, so that the cases do not wait for the default second.
pub(super) const POLL: [&str; 2] = ["--poll", "20ms"];

/// Starts the subject's `work FILE QUEUE OPTIONS -- ukue-probe LOG ARGS…`,
/// with LOG the case's file named `log`; returns the worker and LOG.
pub(super) fn probe_worker(
    ctx: &Ctx,
    file: &Path,
    queue: &str,
    options: &[&str],
    log: &str,
    args: &[&str],
) -> Result<(WorkerProcess, PathBuf), Failure> {
    let log = ctx.path(log);
    let probe = ctx.subjects.probe.clone();
    let mut command = vec![path_str(&probe), path_str(&log)];
    command.extend_from_slice(args);
    let who = ctx.subject().clone();
    Ok((start_command_worker(ctx, &who, file, queue, options, &command)?, log))
}

/// The probe's records in `log`, in the order they were written.
pub(super) fn records(log: &Path) -> Result<Vec<Record>, Failure> {
    history::read_records(log).map_err(|e| Failure::error("a readable probe log", e))
}

/// The first start record of `job` in `records`.
pub(super) fn start_of(records: &[Record], job: i64) -> Option<&Record> {
    records.iter().find(|r| r.event == RecordKind::Start && r.job == job)
}

/// Waits (up to `limit`) until every job of `jobs` has a start record in
/// `log`, while the workers keep running; returns those records, in the
/// order of `jobs`.
pub(super) fn wait_started(
    ctx: &Ctx,
    log: &Path,
    jobs: &[i64],
    limit: Duration,
    workers: &mut [&mut WorkerProcess],
) -> Result<Vec<Record>, Failure> {
    let mut seen = Vec::new();
    ctx.wait_for(&format!("the commands of jobs {jobs:?} to start"), limit, || {
        still_working(workers)?;
        seen = records(log)?;
        Ok(jobs.iter().all(|&job| start_of(&seen, job).is_some()))
    })?;
    Ok(jobs.iter().filter_map(|&job| start_of(&seen, job).cloned()).collect())
}

/// The most runs in `records` that had started and not yet ended at once,
/// in the order the records were written (a run's end is written before
/// its process exits, so the order never shows more at once than ran),
/// and the jobs of those runs.
pub(super) fn most_at_once(records: &[Record]) -> (usize, Vec<i64>) {
    let mut running: Vec<(u32, i64)> = Vec::new();
    let mut most: (usize, Vec<i64>) = (0, Vec::new());
    for r in records {
        match r.event {
            RecordKind::Start => {
                running.push((r.pid, r.job));
                if running.len() > most.0 {
                    most = (running.len(), running.iter().map(|&(_, job)| job).collect());
                }
            }
            RecordKind::End => running.retain(|&(pid, _)| pid != r.pid),
        }
    }
    most
}

/// How a process ended, in the contract's terms.
pub(super) fn ended(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => status.to_string(),
    }
}

/// Waits up to `limit` for the worker to end by itself; its status, or
/// None when it still runs.
pub(super) fn wait_exit(worker: &mut WorkerProcess, limit: Duration) -> Result<Option<ExitStatus>, Failure> {
    Ok(worker.process.wait_timeout(limit)?)
}

/// A `work` command line that must be refused: `work FILE q OPTIONS --
/// COMMAND`, ending with one of `statuses`, its message naming `names`
/// when given.
pub(super) struct Refusal {
    /// The COMMAND.md item it shows, for the report.
    pub item: &'static str,
    pub options: Vec<String>,
    pub command: Vec<String>,
    pub statuses: &'static [i32],
    pub names: Option<String>,
}

/// How long a refused `work` may take to end (a Python program on a
/// loaded machine takes seconds to start).
const REFUSAL_LIMIT: Duration = COMMAND_TIMEOUT;

/// Runs each of `lines` on `file`, which holds due jobs: each must end
/// (within 30 s; one that claims a job fails at once) with one of its
/// statuses and a message on stderr, having claimed nothing (the file's
/// rows as they were, the probe never run).
pub(super) fn expect_refused(ctx: &Ctx, file: &Path, log: &Path, lines: &[Refusal]) -> CaseResult {
    let who = ctx.subject().clone();
    for line in lines {
        let before = rows_as_text(file)?;
        let options: Vec<&str> = line.options.iter().map(String::as_str).collect();
        let command: Vec<&str> = line.command.iter().map(String::as_str).collect();
        let mut args = vec!["work", path_str(file), "q"];
        args.extend_from_slice(&options);
        args.push("--");
        args.extend_from_slice(&command);
        let shown = format!("`{} {}`", who.name, common::show_args(&common::relative(ctx, &args)));
        let statuses: Vec<String> = line.statuses.iter().map(|s| format!("exit status {s}")).collect();
        let expected = format!(
            "{shown} ({}) to be refused before any claim: {}, a message on stderr{}, no job claimed",
            line.item,
            statuses.join(" or "),
            line.names.as_ref().map(|n| format!(" naming {n:?}")).unwrap_or_default(),
        );
        let mut worker = start_command_worker(ctx, &who, file, "q", &options, &command)?;
        let deadline = Instant::now() + REFUSAL_LIMIT;
        let status = loop {
            if let Some(status) = worker.process.child.try_wait()? {
                break status;
            }
            let claimed = !records(log)?.is_empty() || rows_as_text(file)? != before;
            if claimed || Instant::now() >= deadline {
                let what = if claimed { "it claimed a job" } else { "it was still running after 30 s" };
                return Err(Failure::fail(
                    expected,
                    format!("{what}; file: {}; stderr: {}", brief_all(&rows(file)?), clip(&worker.stderr())),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = worker.stderr();
        let seen = format!("{}: {}", ended(status), clip(stderr.trim()));
        ensure!(status.code().is_some_and(|c| line.statuses.contains(&c)), expected.clone(), seen);
        ensure!(!stderr.trim().is_empty(), expected.clone(), seen);
        if let Some(name) = &line.names {
            ensure!(stderr.contains(name.as_str()), expected.clone(), seen);
        }
        ensure_eq!(rows_as_text(file)?, before, format!("{shown}: the file's jobs"));
        ensure!(records(log)?.is_empty(), expected, "the probe ran".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(event: RecordKind, pid: u32, job: i64) -> Record {
        Record { event, pid, ..Record::start(job, 1) }
    }

    #[test]
    fn most_at_once_follows_the_order_of_the_records() {
        use RecordKind::{End, Start};
        let log = [
            record(Start, 1, 1),
            record(Start, 2, 2),
            record(End, 1, 1),
            record(Start, 3, 3),
            record(Start, 4, 4),
            record(End, 2, 2),
        ];
        assert_eq!(most_at_once(&log), (3, vec![2, 3, 4]));
        assert_eq!(most_at_once(&log[..2]), (2, vec![1, 2]));
        assert_eq!(most_at_once(&[]), (0, vec![]));
    }
}
