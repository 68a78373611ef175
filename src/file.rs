//! An open ukue file and its steps (FORMAT.md §5), each one transaction.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{named_params, Connection, OptionalExtension, Row};

use crate::busy::Waiter;
use crate::clock::{Clock, Millis};
use crate::error::{Error, Invalid, Result};
use crate::job::{Claim, Claimed, Failed, Job, JobId, ListFilter, NewJob, QueueStats, Retry, State};
use crate::open::{Access, OpenOptions};
use crate::spec::{Spec, Stmt};
use crate::{fault, token, validate};

/// A connection to a ukue file.
#[derive(Debug)]
pub struct Ukue {
    conn: Connection,
    path: PathBuf,
    clock: Arc<dyn Clock>,
    spec: Arc<Spec>,
    /// How long a step waits for a busy file (FORMAT.md §4.1).
    busy_ms: i64,
    /// The busy handler's state; after `conn`, so that it is dropped after
    /// the connection that calls it.
    waiter: Option<Box<Waiter>>,
}

impl Ukue {
    /// Opens an existing ukue file; refuses anything else, unchanged.
    pub fn open(path: impl AsRef<Path>) -> Result<Ukue> {
        OpenOptions::default().open(path)
    }

    /// Opens a ukue file, creating it when the path does not exist.
    pub fn create(path: impl AsRef<Path>) -> Result<Ukue> {
        OpenOptions::default().access(Access::Create).open(path)
    }

    /// Uses an application's connection, adding the tables to its database
    /// when they are not there (the application's id is kept).
    pub fn attach(conn: Connection) -> Result<Ukue> {
        OpenOptions::default().access(Access::AddTables).attach(conn)
    }

    /// Options for opening another way (another clock, say).
    pub fn options() -> OpenOptions {
        OpenOptions::default()
    }

    pub(crate) fn new(
        conn: Connection,
        path: PathBuf,
        clock: Arc<dyn Clock>,
        spec: Arc<Spec>,
        busy_ms: i64,
        waiter: Option<Box<Waiter>>,
    ) -> Ukue {
        Ukue { conn, path, clock, spec, busy_ms, waiter }
    }

    /// How long a step waits for a busy file before it fails (FORMAT.md
    /// §4.1's `busy_timeout`, polled every millisecond).
    pub fn busy_timeout(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.busy_ms).unwrap_or(0))
    }

    /// The file's path (`:memory:` for an attached in-memory database).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for an application that keeps its own tables here.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Gives the connection back.
    pub fn into_connection(self) -> Connection {
        let Ukue { conn, waiter, busy_ms, .. } = self;
        if waiter.is_some() {
            // SQLite's own wait, for the same time, in place of the handler
            // whose state goes with this Ukue.
            Waiter::remove(&conn);
            let _ = conn.busy_timeout(Duration::from_millis(u64::try_from(busy_ms).unwrap_or(0)));
        }
        conn
    }

    /// The time on this file's clock.
    pub fn now(&self) -> Millis {
        self.clock.now_ms()
    }

    fn sql(&self, stmt: Stmt) -> &str {
        self.spec.sql(stmt)
    }

    /// Runs `body` between `begin_immediate` and `commit`, rolling back on error.
    fn write<T>(&mut self, body: impl FnOnce(&Connection, &Spec) -> Result<T>) -> Result<T> {
        self.conn.prepare_cached(self.spec.sql(Stmt::BeginImmediate))?.execute([])?;
        match body(&self.conn, &self.spec) {
            Ok(value) => {
                if let Err(e) =
                    self.conn.prepare_cached(self.spec.sql(Stmt::Commit)).and_then(|mut s| s.execute([]))
                {
                    self.rollback();
                    return Err(e.into());
                }
                Ok(value)
            }
            Err(e) => {
                self.rollback();
                Err(e)
            }
        }
    }

    fn rollback(&self) {
        if !self.conn.is_autocommit() {
            let _ = self.conn.prepare_cached(self.spec.sql(Stmt::Rollback)).and_then(|mut s| s.execute([]));
        }
    }

    /// Adds a job (FORMAT.md §5.3) and returns its id.
    pub fn add(&mut self, job: &NewJob) -> Result<JobId> {
        let now = self.now();
        insert(&self.conn, &self.spec, job, now)
    }

    /// Adds jobs in one transaction: all of them or none.
    pub fn add_batch(&mut self, jobs: &[NewJob]) -> Result<Vec<JobId>> {
        for job in jobs {
            job.validate()?;
        }
        let now = self.now();
        self.write(|conn, spec| jobs.iter().map(|job| insert(conn, spec, job, now)).collect())
    }

    /// Claims the next due job of `queue` (FORMAT.md §5.4).
    /// The lease counts in whole milliseconds, rounded down.
    pub fn claim(&mut self, queue: &str, lease: Duration) -> Result<Option<Claimed>> {
        Ok(match self.claim_next(queue, lease)? {
            Claim::Job(job) => Some(job),
            Claim::Empty { .. } => None,
        })
    }

    /// Like [`Ukue::claim`], and when nothing is due, tells when the
    /// queue's next job will be.
    pub fn claim_next(&mut self, queue: &str, lease: Duration) -> Result<Claim> {
        validate::queue(queue)?;
        validate::lease(lease)?;
        let now = self.now();
        let lease_for = lease;
        let lease = within_range(now, lease)?;
        // A look without the write lock first (FORMAT.md §5.4), so that idle
        // workers do not hold up the programs that add jobs.
        let (next, lease_ends): (Option<Millis>, Option<Millis>) = self
            .conn
            .prepare_cached(self.sql(Stmt::Look))?
            .query_row(named_params! {":queue": queue}, |r| Ok((r.get(0)?, r.get(1)?)))?;
        let due = |at: Option<Millis>| at.is_some_and(|at| at <= now);
        if !due(next) && !due(lease_ends) {
            return Ok(Claim::Empty { next_due: next });
        }
        let token = token::new()?;
        let clock = Arc::clone(&self.clock);
        self.write(|conn, spec| {
            // The time once the write lock is held: a claim that waited for
            // it neither gives a lease that has partly run out nor misses
            // the leases that ran out meanwhile.
            let now = clock.now_ms();
            within_range(now, lease_for)?;
            conn.prepare_cached(spec.sql(Stmt::ExpireUnleased))?.execute(named_params! {":now": now})?;
            conn.prepare_cached(spec.sql(Stmt::ReapDead))?.execute(named_params! {":now": now})?;
            conn.prepare_cached(spec.sql(Stmt::ReapReady))?.execute(named_params! {":now": now})?;
            let next: Option<Millis> = conn
                .prepare_cached(spec.sql(Stmt::NextRunAt))?
                .query_row(named_params! {":queue": queue}, |r| r.get(0))
                .optional()?;
            if next.is_none_or(|at| at > now) {
                return Ok(Claim::Empty { next_due: next });
            }
            let id: Option<JobId> = conn
                .prepare_cached(spec.sql(Stmt::Pick))?
                .query_row(named_params! {":queue": queue, ":now": now}, |r| r.get(0))
                .optional()?;
            let Some(id) = id else {
                return Ok(Claim::Empty { next_due: next });
            };
            let job = conn
                .prepare_cached(spec.sql(Stmt::Take))?
                .query_row(named_params! {":id": id, ":token": token, ":now": now, ":lease": lease}, |row| {
                    claimed_from_row(row, token.clone())
                })
                .optional()?;
            let job =
                job.ok_or_else(|| Error::Corrupt(format!("job {id} was picked but could not be taken")))?;
            // Test-only: a crash with the job taken but the claim not committed.
            fault::point(fault::CLAIM_BEFORE_COMMIT);
            Ok(Claim::Job(job))
        })
    }

    /// Finishes a held job: deleted, or kept as done (FORMAT.md §5.5).
    pub fn finish(&mut self, id: JobId, token: &str, keep_done: bool) -> Result<()> {
        let now = self.now();
        let changed = fault::in_commit(&self.conn, fault::INSIDE_FINISH, || {
            if keep_done {
                self.conn
                    .prepare_cached(self.sql(Stmt::FinishKeep))?
                    .execute(named_params! {":id": id, ":token": token, ":now": now})
            } else {
                self.conn
                    .prepare_cached(self.sql(Stmt::FinishDelete))?
                    .execute(named_params! {":id": id, ":token": token})
            }
        })?;
        held(changed, id)
    }

    /// Fails a held job (FORMAT.md §5.6).
    pub fn fail(&mut self, id: JobId, token: &str, error: &str, retry: Retry) -> Result<Failed> {
        let now = self.now();
        let (permanent, retry_in) = match retry {
            Retry::Backoff => (false, None),
            Retry::After(delay) => (false, Some(within_range(now, delay)?)),
            Retry::Never => (true, None),
        };
        let row: Option<(String, Millis)> = fault::in_commit(&self.conn, fault::INSIDE_FAIL, || {
            self.conn
                .prepare_cached(self.sql(Stmt::Fail))?
                .query_row(
                    named_params! {
                        ":id": id, ":token": token, ":now": now, ":error": error,
                        ":permanent": permanent, ":retry_in": retry_in,
                    },
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
        })?;
        match row {
            None => Err(Error::LeaseLost { id }),
            Some((state, _)) if state == "dead" => Ok(Failed::Dead),
            Some((_, run_at)) => Ok(Failed::Ready { run_at }),
        }
    }

    /// Extends a held job's lease to `lease` from now (FORMAT.md §5.7);
    /// returns the new lease_until.
    pub fn renew(&mut self, id: JobId, token: &str, lease: Duration) -> Result<Millis> {
        validate::lease(lease)?;
        let now = self.now();
        let lease = within_range(now, lease)?;
        self.conn
            .prepare_cached(self.sql(Stmt::Renew))?
            .query_row(named_params! {":id": id, ":token": token, ":now": now, ":lease": lease}, |r| r.get(0))
            .optional()?
            .ok_or(Error::LeaseLost { id })
    }

    /// Gives a held job back without counting the attempt (FORMAT.md §5.8).
    pub fn release(&mut self, id: JobId, token: &str) -> Result<()> {
        let now = self.now();
        let changed = self
            .conn
            .prepare_cached(self.sql(Stmt::Release))?
            .execute(named_params! {":id": id, ":token": token, ":now": now})?;
        held(changed, id)
    }

    /// Sends a dead job back to ready with its attempts reset.
    pub fn retry(&mut self, id: JobId) -> Result<()> {
        let now = self.now();
        let changed = self
            .conn
            .prepare_cached(self.sql(Stmt::Retry))?
            .execute(named_params! {":id": id, ":now": now})?;
        if changed == 1 {
            return Ok(());
        }
        match self.get(id)? {
            None => Err(Error::JobNotFound { id }),
            Some(job) => Err(Error::NotDead { id, state: job.state.to_string() }),
        }
    }

    /// Sends every dead job (of one queue, or of all) back to ready.
    pub fn retry_all(&mut self, queue: Option<&str>) -> Result<usize> {
        let now = self.now();
        Ok(self
            .conn
            .prepare_cached(self.sql(Stmt::RetryAll))?
            .execute(named_params! {":queue": queue, ":now": now})?)
    }

    /// Deletes a job in any state.
    pub fn delete(&mut self, id: JobId) -> Result<()> {
        let changed = self.conn.prepare_cached(self.sql(Stmt::Delete))?.execute(named_params! {":id": id})?;
        if changed == 1 {
            Ok(())
        } else {
            Err(Error::JobNotFound { id })
        }
    }

    /// Deletes every dead or every done job (of one queue, or of all).
    pub fn purge(&mut self, state: State, queue: Option<&str>) -> Result<usize> {
        if !matches!(state, State::Dead | State::Done) {
            return Err(Invalid::PurgeState(state.to_string()).into());
        }
        Ok(self
            .conn
            .prepare_cached(self.sql(Stmt::Purge))?
            .execute(named_params! {":state": state.as_str(), ":queue": queue})?)
    }

    /// One job, in any state.
    pub fn get(&self, id: JobId) -> Result<Option<Job>> {
        Ok(self
            .conn
            .prepare_cached(self.sql(Stmt::Get))?
            .query_row(named_params! {":id": id}, job_from_row)
            .optional()?)
    }

    /// Jobs in id order (FORMAT.md §5.10).
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<Job>> {
        validate::limit(filter.limit)?;
        let now = self.now();
        let mut st = self.conn.prepare_cached(self.sql(Stmt::List))?;
        let rows = st.query_map(
            named_params! {
                ":after": filter.after, ":queue": filter.queue, ":now": now,
                ":state": filter.state.map(|s| s.as_str()), ":limit": filter.limit,
            },
            job_from_row,
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Counts per queue, in queue order.
    pub fn stats(&self) -> Result<Vec<QueueStats>> {
        let now = self.now();
        let mut st = self.conn.prepare_cached(self.sql(Stmt::Stats))?;
        let rows = st.query_map(named_params! {":now": now}, |r| {
            Ok(QueueStats {
                queue: r.get(0)?,
                ready: r.get(1)?,
                delayed: r.get(2)?,
                running: r.get(3)?,
                expired: r.get(4)?,
                dead: r.get(5)?,
                done: r.get(6)?,
                oldest_due: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

/// Adds a job on any connection to a ukue database, inside whatever
/// transaction the caller has open, so the job exists exactly when the
/// caller's own change does.
pub fn add_in(conn: &Connection, job: &NewJob, now: Millis) -> Result<JobId> {
    insert(conn, &Spec::builtin(), job, now)
}

fn insert(conn: &Connection, spec: &Spec, job: &NewJob, now: Millis) -> Result<JobId> {
    job.validate()?;
    conn.prepare_cached(spec.sql(Stmt::Add))?.execute(named_params! {
        ":queue": job.queue, ":payload": job.payload, ":priority": job.priority,
        ":max_attempts": job.max_attempts, ":run_at": job.due_at(now), ":now": now,
    })?;
    Ok(conn.last_insert_rowid())
}

/// SQLite turns an INTEGER sum past i64::MAX into a REAL, and a REAL time
/// is one that no reader accepts: `now + duration` must stay in range.
/// Returns the duration in the file's unit.
fn within_range(now: Millis, duration: Duration) -> Result<Millis, Invalid> {
    let ms = Millis::try_from(duration.as_millis()).map_err(|_| Invalid::TooLong(duration))?;
    match now.checked_add(ms) {
        Some(_) => Ok(ms),
        None => Err(Invalid::TooLong(duration)),
    }
}

fn held(changed: usize, id: JobId) -> Result<()> {
    if changed == 1 {
        Ok(())
    } else {
        Err(Error::LeaseLost { id })
    }
}

/// Payloads are bytes; programs that add jobs with plain SQL may store TEXT.
fn payload(row: &Row, index: usize) -> rusqlite::Result<Vec<u8>> {
    match row.get_ref(index)? {
        ValueRef::Blob(b) | ValueRef::Text(b) => Ok(b.to_vec()),
        ValueRef::Integer(i) => Ok(i.to_string().into_bytes()),
        ValueRef::Real(r) => Ok(r.to_string().into_bytes()),
        ValueRef::Null => Ok(Vec::new()),
    }
}

fn claimed_from_row(row: &Row, token: String) -> rusqlite::Result<Claimed> {
    Ok(Claimed {
        id: row.get(0)?,
        queue: row.get(1)?,
        payload: payload(row, 2)?,
        priority: row.get(3)?,
        attempt: row.get(4)?,
        max_attempts: row.get(5)?,
        run_at: row.get(6)?,
        lease_until: row.get(7)?,
        created_at: row.get(8)?,
        last_error: row.get(9)?,
        token,
    })
}

fn job_from_row(row: &Row) -> rusqlite::Result<Job> {
    let state: String = row.get(2)?;
    Ok(Job {
        id: row.get(0)?,
        queue: row.get(1)?,
        state: state.parse().map_err(|e: String| {
            rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, e.into())
        })?,
        priority: row.get(3)?,
        attempts: row.get(4)?,
        max_attempts: row.get(5)?,
        run_at: row.get(6)?,
        lease_until: row.get(7)?,
        last_error: row.get(8)?,
        created_at: row.get(9)?,
        updated_at: row.get(10)?,
        payload: payload(row, 11)?,
    })
}
