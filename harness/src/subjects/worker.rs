//! A subject's `work` process: started with the probe (or another command)
//! as the command it runs for each job, stopped with SIGTERM as a user
//! would. It is a [`WorkerProcess`], not to be confused with the
//! reference library's thread pool (`ukue::worker::Worker`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;

use super::ctx::{clip, path_str, Ctx};
use super::observe::file::job_count;
use super::process::Spawned;
use super::Subject;
use crate::history::{WorkerEventKind, WorkerEvents};
use crate::subjects::Failure;

/// A running `work` process of a subject.
pub struct WorkerProcess {
    pub process: Spawned,
    pub stdout_path: PathBuf,
    pub stderr_path: PathBuf,
    /// The case's record of what was done to its workers.
    events: WorkerEvents,
}

/// The name of a case's probe log, in its directory.
pub const PROBE_LOG: &str = "probe.log";

/// The probe log of a case.
pub fn probe_log(ctx: &Ctx) -> PathBuf {
    ctx.path(PROBE_LOG)
}

/// Starts `who work FILE QUEUE OPTIONS -- ukue-probe LOG`.
pub fn start_worker(
    ctx: &Ctx,
    who: &Subject,
    file: &Path,
    queue: &str,
    options: &[&str],
) -> Result<WorkerProcess, Failure> {
    let log = probe_log(ctx);
    let probe = ctx.subjects.probe.clone();
    start_command_worker(ctx, who, file, queue, options, &[path_str(&probe), path_str(&log)])
}

/// Starts `who work FILE QUEUE OPTIONS -- COMMAND...`, with its stdout and
/// stderr in files of the case's directory.
pub fn start_command_worker(
    ctx: &Ctx,
    who: &Subject,
    file: &Path,
    queue: &str,
    options: &[&str],
    command: &[&str],
) -> Result<WorkerProcess, Failure> {
    let n = std::fs::read_dir(&ctx.dir).map(|d| d.count()).unwrap_or(0);
    let stdout_path = ctx.path(&format!("worker-{n}.stdout"));
    let stderr_path = ctx.path(&format!("worker-{n}.stderr"));
    let stdout = std::fs::File::create(&stdout_path)?;
    let stderr = std::fs::File::create(&stderr_path)?;
    let mut args: Vec<&str> = who.args.iter().map(String::as_str).collect();
    args.extend(["work", path_str(file), queue]);
    args.extend_from_slice(options);
    args.push("--");
    args.extend_from_slice(command);
    let process = ctx.spawn(&who.program, &args, Stdio::from(stdout), Stdio::from(stderr))?;
    let mut worker = WorkerProcess::started(ctx, process, stderr_path);
    worker.stdout_path = stdout_path;
    Ok(worker)
}

impl WorkerProcess {
    /// A worker process just spawned, noted in the case's record of what
    /// was done to its workers.
    pub fn started(ctx: &Ctx, process: Spawned, stderr_path: PathBuf) -> WorkerProcess {
        let stdout_path = PathBuf::new();
        let worker = WorkerProcess { process, stdout_path, stderr_path, events: ctx.events.clone() };
        worker.note(WorkerEventKind::Started);
        worker
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// What the worker wrote on stdout (nothing, when it was not kept).
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.stdout_path).unwrap_or_default()
    }

    /// Fails when the worker has ended by itself: `what` is what it should
    /// have kept doing meanwhile.
    pub fn still_running(&mut self, what: &str) -> Result<(), Failure> {
        match self.process.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(Failure::fail(
                what.to_string(),
                format!("it exited by itself ({status}): {}", clip(&self.stderr())),
            )),
        }
    }

    /// Records, for the history, what was just done to the worker.
    pub fn note(&self, kind: WorkerEventKind) {
        self.events.record(self.process.pid() as u32, kind);
    }

    /// SIGSTOP: the worker does nothing until [`resume`](Self::resume)
    /// (its commands go on).
    pub fn suspend(&self) {
        self.process.signal(Signal::SIGSTOP);
        self.note(WorkerEventKind::Suspended);
    }

    /// SIGCONT.
    pub fn resume(&self) {
        self.process.signal(Signal::SIGCONT);
        self.note(WorkerEventKind::Resumed);
    }

    /// SIGTERM, then waits (up to `limit`) for it to end.
    pub fn stop(self, limit: Duration) -> Result<(), Failure> {
        self.stop_by(Signal::SIGTERM, limit)
    }

    /// Sends `signal` (SIGTERM or SIGINT), then waits (up to `limit`) for
    /// the worker to exit 0.
    pub fn stop_by(mut self, signal: Signal, limit: Duration) -> Result<(), Failure> {
        self.process.signal(signal);
        self.note(WorkerEventKind::Stopped);
        match self.process.wait_timeout(limit)? {
            Some(status) if status.success() => Ok(()),
            Some(status) => Err(Failure::fail(
                format!("the worker to exit 0 after {signal}"),
                format!("{status}: {}", clip(&self.stderr())),
            )),
            None => Err(Failure::timeout(
                format!("the worker to stop within {} s of {signal}", limit.as_secs()),
                "it was still running",
            )),
        }
    }
}

/// Starts `workers` processes of `who work FILE QUEUE OPTIONS -- probe`,
/// waits (up to `limit`) until the file holds no job at all, and stops
/// them with SIGTERM. A worker that exits by itself meanwhile fails the
/// case.
pub fn drain(
    ctx: &Ctx,
    who: &Subject,
    file: &Path,
    queue: &str,
    options: &[&str],
    workers: usize,
    limit: Duration,
) -> Result<(), Failure> {
    let mut started = (0..workers.max(1))
        .map(|_| start_worker(ctx, who, file, queue, options))
        .collect::<Result<Vec<_>, _>>()?;
    let what = format!("`{} work {} {queue}` to run every job of the file", who.name, path_str(file));
    ctx.wait_for(&what, limit, || {
        for worker in &mut started {
            worker.still_running(&format!("{what} and keep running until stopped"))?;
        }
        Ok(job_count(file)? == 0)
    })?;
    started.into_iter().try_for_each(|worker| worker.stop(Duration::from_secs(30)))
}
