//! Helpers the case families share: reading a file read-only, starting and
//! stopping a subject's workers with the probe, building a history.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;
use rusqlite::{Connection, OpenFlags};

use crate::case::Failure;
use crate::ctx::{path_str, Ctx};
use crate::history::{self, Execution, History};
use crate::process::Spawned;
use crate::subject::Subject;

/// A read-only connection for looking at a file a subject made.
pub fn read(path: &Path) -> Result<Connection, Failure> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| Failure::fail(format!("{} to be a SQLite file", path.display()), e.to_string()))?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

/// A read-write connection for setting a file up behind the subject's back
/// (the format is the contract, so cases may write rows as any program may).
pub fn write(path: &Path) -> Result<Connection, Failure> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

/// A running `work` process of a subject, with the probe as its command.
pub struct Worker {
    pub process: Spawned,
    pub stderr_path: PathBuf,
}

/// The probe log of a case.
pub fn probe_log(ctx: &Ctx) -> PathBuf {
    ctx.path("probe.log")
}

/// Starts `who work FILE QUEUE OPTIONS -- ukue-probe LOG`.
pub fn start_worker(ctx: &Ctx, who: &Subject, file: &Path, queue: &str, options: &[&str]) -> Result<Worker, Failure> {
    let log = probe_log(ctx);
    let probe = ctx.subjects.probe.clone();
    let n = std::fs::read_dir(&ctx.dir).map(|d| d.count()).unwrap_or(0);
    let stderr_path = ctx.path(&format!("worker-{n}.stderr"));
    let stderr = std::fs::File::create(&stderr_path)?;
    let mut args: Vec<&str> = who.args.iter().map(String::as_str).collect();
    args.extend(["work", path_str(file), queue]);
    args.extend_from_slice(options);
    args.extend(["--", path_str(&probe), path_str(&log)]);
    let process = ctx.spawn(&who.program, &args, Stdio::null(), Stdio::from(stderr))?;
    Ok(Worker { process, stderr_path })
}

impl Worker {
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// SIGTERM, then waits (up to `limit`) for it to end.
    pub fn stop(mut self, limit: Duration) -> Result<(), Failure> {
        self.process.signal(Signal::SIGTERM);
        match self.process.wait_timeout(limit)? {
            Some(status) if status.success() => Ok(()),
            Some(status) => Err(Failure::fail(
                "the worker to exit 0 after SIGTERM",
                format!("{status}: {}", crate::ctx::clip(&self.stderr())),
            )),
            None => Err(Failure::timeout(
                format!("the worker to stop within {} s of SIGTERM", limit.as_secs()),
                "it was still running",
            )),
        }
    }
}

/// The probe's executions so far.
pub fn executions(ctx: &Ctx) -> Result<Vec<Execution>, Failure> {
    history::read_log(&probe_log(ctx)).map_err(|e| Failure::error("a readable probe log", e))
}

/// The history of the case: the probe's log and the file at the end.
pub fn history(ctx: &Ctx, file: &Path, added: Vec<history::Added>) -> Result<History, Failure> {
    Ok(History {
        added,
        executions: executions(ctx)?,
        killed_workers: Default::default(),
        final_jobs: history::final_jobs(file)?,
    })
}

/// The number of jobs in the file, in any state.
pub fn job_count(file: &Path) -> Result<i64, Failure> {
    Ok(read(file)?.query_row("SELECT count(*) FROM ukue_jobs", [], |r| r.get(0))?)
}

/// One job's state and attempts, or None when it is gone.
pub fn job_row(file: &Path, id: i64) -> Result<Option<(String, i64)>, Failure> {
    let conn = read(file)?;
    match conn.query_row("SELECT state, attempts FROM ukue_jobs WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?))) {
        Ok(row) => Ok(Some(row)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Fails with the checkers' findings, if any.
pub fn no_findings(what: &str, findings: Vec<crate::check::Finding>) -> Result<(), Failure> {
    if findings.is_empty() {
        Ok(())
    } else {
        Err(Failure::fail(what.to_string(), crate::check::describe(&findings)))
    }
}
