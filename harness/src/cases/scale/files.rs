//! The files of a scale case: each made by the subject's own `init` (so
//! that a program that makes no indexes has none), then filled behind its
//! back with one INSERT … SELECT of many rows, and given due jobs by
//! FORMAT.md's own add statement. The format is the contract: any program
//! may write rows, and these keep every invariant of FORMAT.md §7.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{named_params, Connection};
use ukue::{Spec, Stmt};

use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::file::{read, write};
use crate::subjects::probe::now_ms;
use crate::subjects::Failure;

/// The queue every scale case works, as an SQL literal too.
pub const QUEUE: &str = "q";
const QUEUE_SQL: &str = "'q'";

/// What fills a file: rows that are in the way of a step, never its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// Jobs of the queue due a day from now and later, at this priority.
    Delayed { priority: i64 },
    /// Jobs of the queue finished and kept (`done`) and `dead`, half each.
    DoneAndDead,
    /// Jobs of another queue, running under leases that end a day from now.
    Running,
}

impl Rows {
    /// The columns of each of the `?1` rows, numbered `i` from 1, at `?2`
    /// (now, in ms).
    fn select(self) -> String {
        let (queue, state, priority, attempts, max_attempts, run_at, lease_until, token) = match self {
            Rows::Delayed { priority } => {
                (QUEUE_SQL, "'ready'", priority.to_string(), "0", "10", "?2 + 86400000 + i", "NULL", "NULL")
            }
            Rows::DoneAndDead => (
                QUEUE_SQL,
                "CASE i % 2 WHEN 0 THEN 'done' ELSE 'dead' END",
                "0".to_string(),
                "1",
                "1",
                "?2 - i",
                "NULL",
                "NULL",
            ),
            Rows::Running => (
                "'held'",
                "'running'",
                "0".to_string(),
                "1",
                "10",
                "?2 - 1000",
                "?2 + 86400000 + i",
                "lower(hex(randomblob(16)))",
            ),
        };
        format!(
            "SELECT {queue}, X'', {state}, {priority}, {attempts}, {max_attempts}, {run_at}, {lease_until}, {token}, ?2, ?2 FROM n"
        )
    }
}

/// A file of `count` rows of `rows` (and nothing else), made by the
/// subject's `init`. A tracked file's invariants are checked after the
/// case (FORMAT.md §7): the small files are; a large one would cost its
/// integrity check (a second or so for a million rows), and the subject
/// does the same to both.
pub fn make(ctx: &mut Ctx, name: &str, rows: Rows, count: u64, tracked: bool) -> Result<PathBuf, Failure> {
    let file = if tracked { ctx.tracked_file(name) } else { ctx.path(name) };
    let subject = ctx.subject().clone();
    ctx.ok(&subject, &["init", path_str(&file)])?;
    let conn = writer(&file)?;
    // The harness's own fill: nothing in it needs to survive a power cut,
    // and a large cache keeps a million rows from spilling mid-way.
    conn.pragma_update(None, "synchronous", "OFF")?;
    conn.pragma_update(None, "cache_size", -262_144)?;
    conn.pragma_update(None, "ignore_check_constraints", "ON")?;
    fill(&conn, rows, count)?;
    Ok(file)
}

/// Inserts `count` rows of `rows` with one INSERT … SELECT.
fn fill(conn: &Connection, rows: Rows, count: u64) -> rusqlite::Result<usize> {
    let sql = format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) \
         INSERT INTO ukue_jobs (queue, payload, state, priority, attempts, max_attempts, run_at, lease_until, token, \
                                created_at, updated_at) {}",
        rows.select()
    );
    conn.execute(&sql, rusqlite::params![count as i64, now_ms()])
}

/// A connection that writes `file` beside a subject that may hold its
/// write lock for long (a scan in every claim): it tries again every
/// millisecond for up to a minute, where SQLite's own wait sleeps up to
/// 100 ms between tries and misses the short gaps between such claims.
fn writer(file: &Path) -> Result<Connection, Failure> {
    let conn = write(file)?;
    conn.busy_handler(Some(|tries: i32| {
        std::thread::sleep(Duration::from_millis(1));
        tries < 60_000
    }))?;
    Ok(conn)
}

/// Adds `count` due jobs to the queue with FORMAT.md's add statement, in
/// one transaction; returns their ids.
pub fn add_due(file: &Path, count: usize) -> Result<Vec<i64>, Failure> {
    let mut conn = writer(file)?;
    let spec = Spec::builtin();
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut ids = Vec::with_capacity(count);
    {
        let mut add = tx.prepare(spec.sql(Stmt::Add))?;
        for _ in 0..count {
            let now = now_ms();
            add.execute(named_params! {
                ":queue": QUEUE, ":payload": b"scale".as_slice(), ":priority": 0, ":max_attempts": 10,
                ":run_at": now, ":now": now,
            })?;
            ids.push(tx.last_insert_rowid());
        }
    }
    tx.commit()?;
    Ok(ids)
}

/// Waits (every 2 ms, up to `limit` and the case's deadline) until none of
/// `ids` is ready or running: each finished (deleted, or kept as done) or
/// dead.
pub fn wait_finished(ctx: &Ctx, file: &Path, ids: &[i64], limit: Duration) -> Result<(), Failure> {
    let conn = read(file)?;
    let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    let sql =
        format!("SELECT count(*) FROM ukue_jobs WHERE id IN ({list}) AND state IN ('ready', 'running')");
    let deadline = Instant::now() + limit.min(ctx.remaining());
    loop {
        let open: i64 = conn.query_row(&sql, [], |r| r.get(0))?;
        if open == 0 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Failure::timeout(
                format!(
                    "the worker on {} to run {} due jobs within {} s",
                    file.display(),
                    ids.len(),
                    limit.as_secs()
                ),
                format!("{open} were still ready or running"),
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_row_keeps_the_invariants() {
        let dir = tempfile::tempdir().unwrap();
        for (i, rows) in
            [Rows::Delayed { priority: 10 }, Rows::DoneAndDead, Rows::Running].into_iter().enumerate()
        {
            let file = dir.path().join(format!("{i}.ukue"));
            ukue::Ukue::create(&file).unwrap();
            let conn = writer(&file).unwrap();
            assert_eq!(fill(&conn, rows, 50).unwrap(), 50, "{rows:?}");
            drop(conn);
            assert!(crate::check::file::invariants(&file).is_empty(), "{rows:?}");
            let ids = add_due(&file, 3).unwrap();
            assert_eq!(ids.len(), 3);
        }
    }
}
