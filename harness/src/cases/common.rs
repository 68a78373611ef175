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
    let conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
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
pub fn start_worker(
    ctx: &Ctx,
    who: &Subject,
    file: &Path,
    queue: &str,
    options: &[&str],
) -> Result<Worker, Failure> {
    let log = probe_log(ctx);
    let probe = ctx.subjects.probe.clone();
    start_command_worker(ctx, who, file, queue, options, &[path_str(&probe), path_str(&log)])
}

/// Starts `who work FILE QUEUE OPTIONS -- COMMAND...`, with its stderr in
/// the case's directory.
pub fn start_command_worker(
    ctx: &Ctx,
    who: &Subject,
    file: &Path,
    queue: &str,
    options: &[&str],
    command: &[&str],
) -> Result<Worker, Failure> {
    let n = std::fs::read_dir(&ctx.dir).map(|d| d.count()).unwrap_or(0);
    let stderr_path = ctx.path(&format!("worker-{n}.stderr"));
    let stderr = std::fs::File::create(&stderr_path)?;
    let mut args: Vec<&str> = who.args.iter().map(String::as_str).collect();
    args.extend(["work", path_str(file), queue]);
    args.extend_from_slice(options);
    args.push("--");
    args.extend_from_slice(command);
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
    let history = History {
        added,
        executions: executions(ctx)?,
        killed_workers: Default::default(),
        final_jobs: history::final_jobs(file)?,
    };
    // Kept with the case's directory when it fails (--keep).
    history.save(&ctx.path("history.jsonl"))?;
    Ok(history)
}

/// The number of jobs in the file, in any state.
pub fn job_count(file: &Path) -> Result<i64, Failure> {
    Ok(read(file)?.query_row("SELECT count(*) FROM ukue_jobs", [], |r| r.get(0))?)
}

/// Every job of the file, a line each in id order, every column shown.
pub fn job_rows(file: &Path) -> Result<Vec<String>, Failure> {
    let conn = read(file)?;
    let mut st = conn.prepare(
        "SELECT id, queue, state, priority, attempts, max_attempts, run_at, lease_until, token, \
         last_error, created_at, updated_at, hex(payload) FROM ukue_jobs ORDER BY id",
    )?;
    let rows = st.query_map([], |r| {
        let cells: Vec<String> = (0..13)
            .map(|i| r.get::<_, rusqlite::types::Value>(i).map(|v| format!("{v:?}")))
            .collect::<Result<_, _>>()?;
        Ok(cells.join(" "))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// One job's state and attempts, or None when it is gone.
pub fn job_row(file: &Path, id: i64) -> Result<Option<(String, i64)>, Failure> {
    let conn = read(file)?;
    match conn.query_row("SELECT state, attempts FROM ukue_jobs WHERE id = ?1", [id], |r| {
        Ok((r.get(0)?, r.get(1)?))
    }) {
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

// ---- Helpers of the refusal, compat, bad-input and interop families. ----

/// The names in a directory, sorted (to show that a command made no file).
pub fn listing(dir: &Path) -> Result<std::collections::BTreeSet<String>, Failure> {
    let mut names = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(dir)? {
        names.insert(entry?.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

/// What a finished command did, for a report: `exit status 1` or
/// `killed by signal 9`, then its stderr (clipped), or `nothing on stderr`.
pub fn outcome(out: &std::process::Output) -> String {
    use std::os::unix::process::ExitStatusExt;
    let status = match (out.status.code(), out.status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => out.status.to_string(),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.trim().is_empty() {
        format!("{status}, nothing on stderr")
    } else {
        format!("{status}: {}", crate::ctx::clip(stderr.trim()))
    }
}

/// How `before` became `after`, in bytes: for a report.
pub fn bytes_diff(before: &[u8], after: &[u8]) -> String {
    let first = before.iter().zip(after).position(|(a, b)| a != b).unwrap_or(before.len().min(after.len()));
    format!("{} bytes before, {} after, first difference at byte {first}", before.len(), after.len())
}

/// The file's jobs, in id order, as the [`history::Added`] of a history
/// (payloads as their UTF-8 text, whatever their SQLite type).
pub fn jobs_as_added(file: &Path, by: &str) -> Result<Vec<history::Added>, Failure> {
    let conn = read(file)?;
    let mut st = conn.prepare("SELECT id, CAST(payload AS BLOB) FROM ukue_jobs ORDER BY id")?;
    let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))?;
    let mut added = Vec::new();
    for row in rows {
        let (job, payload) = row?;
        added.push(history::Added {
            job,
            payload: String::from_utf8_lossy(&payload).into_owned(),
            by: by.to_string(),
        });
    }
    Ok(added)
}

/// Starts `who work FILE QUEUE OPTIONS -- probe`, waits (up to `limit`)
/// until the file holds no job at all, and stops the worker with SIGTERM.
/// A worker that exits by itself meanwhile fails the case.
pub fn drain(
    ctx: &Ctx,
    who: &Subject,
    file: &Path,
    queue: &str,
    options: &[&str],
    limit: Duration,
) -> Result<(), Failure> {
    let mut worker = start_worker(ctx, who, file, queue, options)?;
    let what = format!("`{} work {} {queue}` to run every job of the file", who.name, path_str(file));
    ctx.wait_for(&what, limit, || {
        if let Some(status) = worker.process.child.try_wait()? {
            return Err(Failure::fail(
                format!("{what} and keep running until stopped"),
                format!("it exited by itself ({status}): {}", crate::ctx::clip(&worker.stderr())),
            ));
        }
        Ok(job_count(file)? == 0)
    })?;
    worker.stop(Duration::from_secs(30))
}

/// Executions whose payload (as the probe read it on stdin) is not the
/// payload the job was added with.
pub fn payload_findings(history: &History) -> Vec<crate::check::Finding> {
    let added: std::collections::HashMap<i64, &str> =
        history.added.iter().map(|a| (a.job, a.payload.as_str())).collect();
    history
        .executions
        .iter()
        .filter_map(|e| {
            let want = added.get(&e.job)?;
            // The probe keeps the first 200 characters.
            let want: String = want.chars().take(200).collect();
            (e.payload != want).then(|| crate::check::Finding {
                check: "payload",
                job: Some(e.job),
                message: format!(
                    "attempt {} read {:?} on stdin, but the job holds {want:?}",
                    e.attempt, e.payload
                ),
            })
        })
        .collect()
}

/// After a drain without crashes: every job of `added` ran exactly once,
/// with its payload.
pub fn ran_exactly_once(ctx: &Ctx, file: &Path, added: Vec<history::Added>) -> Result<(), Failure> {
    let history = history(ctx, file, added)?;
    let mut findings = crate::check::exactly_once(&history);
    findings.extend(payload_findings(&history));
    let jobs = history.added.len();
    no_findings(
        &format!("each of the {jobs} jobs to run exactly once, with its payload on stdin (FORMAT.md §6.3)"),
        findings,
    )
}

/// `args` with the case's directory taken off the front of each path, for
/// a report (the subject runs in that directory, so the line still works).
pub fn relative<'a>(ctx: &Ctx, args: &[&'a str]) -> Vec<&'a str> {
    let prefix = format!("{}/", path_str(&ctx.dir));
    args.iter().map(|a| a.strip_prefix(&prefix).unwrap_or(a)).collect()
}

/// Arguments as one line for a report: empty ones and ones with spaces
/// quoted, long ones cut to their start and their length.
pub fn show_args(args: &[&str]) -> String {
    args.iter()
        .map(|a| {
            let n = a.chars().count();
            let a = if n > 40 {
                format!("{}…({n} characters)", a.chars().take(12).collect::<String>())
            } else {
                a.to_string()
            };
            if a.is_empty() || a.contains(char::is_whitespace) {
                format!("'{a}'")
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
