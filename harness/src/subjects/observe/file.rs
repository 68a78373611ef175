//! The file as any program sees it: a ukue file opened with SQLite, read
//! without writing ([`open_read_only`], [`read`]), its jobs as [`Row`]s of
//! every column, and a connection that writes rows behind the subject's
//! back ([`write`](fn@write); the format is the contract, so cases may write rows as
//! any program may). Cases, checkers, the probe and the model-based runs
//! all read files here.

use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use crate::shown::text;
use crate::subjects::Failure;

/// How long a reader or writer waits for a file other programs hold. The
/// runner only looks, so it waits out any busy file but a stuck one: with
/// `--processes 32` a hundred writers take turns on two cores, and
/// SQLite's lock is not fair to the one that waits longest.
pub const BUSY_WAIT: Duration = Duration::from_secs(60);

thread_local! {
    /// When the wait under way on this thread began: SQLite calls the busy
    /// handler on the thread that runs the statement.
    static WAIT_STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// SQLite's own handler sleeps up to 100 ms between tries and so sleeps
/// through the moments the lock is free; this one tries every millisecond,
/// as the reference does (FORMAT.md §4.1), for [`BUSY_WAIT`] at most.
fn poll_busy(tries: i32) -> bool {
    let now = Instant::now();
    let started = WAIT_STARTED.with(|cell| {
        let started = if tries == 0 { now } else { cell.get().unwrap_or(now) };
        cell.set(Some(started));
        started
    });
    if now.duration_since(started) >= BUSY_WAIT {
        return false;
    }
    std::thread::sleep(Duration::from_millis(1));
    true
}

fn wait_while_busy(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_handler(Some(poll_busy))
}

/// A connection that reads `path` and never writes it.
pub fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    wait_while_busy(&conn)?;
    Ok(conn)
}

/// [`open_read_only`] for a case: a file that does not open fails it.
pub fn read(path: &Path) -> Result<Connection, Failure> {
    open_read_only(path)
        .map_err(|e| Failure::fail(format!("{} to be a SQLite file", path.display()), e.to_string()))
}

/// A read-write connection for setting a file up behind the subject's back.
pub fn write(path: &Path) -> Result<Connection, Failure> {
    let conn = Connection::open(path)?;
    wait_while_busy(&conn)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

/// One row of `ukue_jobs`, every column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub id: i64,
    pub queue: String,
    pub state: String,
    pub priority: i64,
    pub attempts: i64,
    pub max_attempts: i64,
    pub run_at: i64,
    pub lease_until: Option<i64>,
    pub token: Option<String>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The payload's bytes, whatever its SQLite type (BLOB or TEXT).
    pub payload: Vec<u8>,
}

/// Every column but the payload, in [`Row`]'s order.
const COLUMNS: &str = "id, queue, state, priority, attempts, max_attempts, run_at, lease_until, token, \
                       last_error, created_at, updated_at";

fn row_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        id: r.get(0)?,
        queue: r.get(1)?,
        state: r.get(2)?,
        priority: r.get(3)?,
        attempts: r.get(4)?,
        max_attempts: r.get(5)?,
        run_at: r.get(6)?,
        lease_until: r.get(7)?,
        token: r.get(8)?,
        last_error: r.get(9)?,
        created_at: r.get(10)?,
        updated_at: r.get(11)?,
        payload: r.get::<_, Option<Vec<u8>>>(12)?.unwrap_or_default(),
    })
}

/// Every job of the file, in id order.
pub fn read_rows(conn: &Connection) -> rusqlite::Result<Vec<Row>> {
    let mut st =
        conn.prepare_cached(&format!("SELECT {COLUMNS}, CAST(payload AS BLOB) FROM ukue_jobs ORDER BY id"))?;
    let rows = st.query_map([], row_of)?;
    rows.collect()
}

/// One job, or None when it is not in the file.
pub fn read_row(conn: &Connection, id: i64) -> rusqlite::Result<Option<Row>> {
    let mut st = conn
        .prepare_cached(&format!("SELECT {COLUMNS}, CAST(payload AS BLOB) FROM ukue_jobs WHERE id = ?1"))?;
    match st.query_row([id], row_of) {
        Ok(row) => Ok(Some(row)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(e),
    }
}

/// [`read_rows`] of the file at `path`, for a case.
pub fn rows(path: &Path) -> Result<Vec<Row>, Failure> {
    Ok(read_rows(&read(path)?)?)
}

/// [`read_row`] of the file at `path`, for a case.
pub fn row(path: &Path, id: i64) -> Result<Option<Row>, Failure> {
    Ok(read_row(&read(path)?, id)?)
}

/// Every job of the file, a line each in id order, each column as SQLite
/// holds it, whatever its type (the payload in hex): for comparing a file
/// before and after a command that must not change its jobs.
pub fn rows_as_text(path: &Path) -> Result<Vec<String>, Failure> {
    let conn = read(path)?;
    let mut st = conn.prepare(&format!("SELECT {COLUMNS}, hex(payload) FROM ukue_jobs ORDER BY id"))?;
    let rows = st.query_map([], |r| {
        let cells: Vec<String> = (0..13).map(|i| r.get_ref(i).map(cell)).collect::<Result<_, _>>()?;
        Ok(cells.join(" "))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A column as SQLite holds it, in the contract's terms but keeping its
/// type, so that two cells are equal only when SQLite's are: a number bare
/// (a REAL with its point), TEXT as a JSON string (`text x'…'` when it is
/// not UTF-8), NULL as `null`, a BLOB as `x'…'`.
pub fn cell(value: ValueRef<'_>) -> String {
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    match value {
        ValueRef::Null => "null".to_string(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(r) => format!("{r:?}"),
        ValueRef::Text(t) => std::str::from_utf8(t).map_or_else(|_| format!("text x'{}'", hex(t)), text),
        ValueRef::Blob(b) => format!("x'{}'", hex(b)),
    }
}

/// Makes the ready jobs that wait out a backoff (a failed or reaped
/// attempt, so `attempts > 0`) due now, all of them or job `only`; returns
/// how many. Each program picks its own backoff (FORMAT.md §5.6), so a case
/// that needs a job to run again must not wait on any one program's; a
/// ready job's `run_at` is no running job's, and any program may set it.
pub fn end_backoffs(path: &Path, only: Option<i64>) -> Result<usize, Failure> {
    Ok(write(path)?.execute(
        "UPDATE ukue_jobs SET run_at = ?1
         WHERE state = 'ready' AND attempts > 0 AND run_at > ?1 AND (?2 IS NULL OR id = ?2)",
        rusqlite::params![crate::subjects::probe::now_ms(), only],
    )?)
}

/// The number of jobs in the file, in any state.
pub fn job_count(path: &Path) -> Result<i64, Failure> {
    Ok(read(path)?.query_row("SELECT count(*) FROM ukue_jobs", [], |r| r.get(0))?)
}

/// One job's state and attempts, or None when it is gone.
pub fn state_and_attempts(conn: &Connection, id: i64) -> rusqlite::Result<Option<(String, i64)>> {
    match conn.query_row("SELECT state, attempts FROM ukue_jobs WHERE id = ?1", [id], |r| {
        Ok((r.get(0)?, r.get(1)?))
    }) {
        Ok(row) => Ok(Some(row)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(e),
    }
}
