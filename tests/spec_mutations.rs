//! An edit to spec/FORMAT.md that changes what a step does is caught.
//!
//! [`suite`] runs behavioural checks on a file that the library drives with
//! a given [`Spec`]. The builtin spec passes; each mutation of one
//! statement's text below must make some check fail.

mod common;
#[path = "common/mutations.rs"]
mod mutations;

use std::fmt::Display;
use std::sync::Arc;

use common::{check_invariants, check_invariants_of, create_with, ms, TempPath, T0};
use rusqlite::Connection;
use ukue::{
    Access, Claim, Claimed, Error, Failed, Job, JobId, ListFilter, ListState, ManualClock, Millis, NewJob,
    QueueStats, Retry, Spec, State, Ukue,
};

type Check = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

macro_rules! ensure_eq {
    ($got:expr, $want:expr, $what:expr) => {{
        let (got, want) = (&$got, &$want);
        if got != want {
            return Err(format!("{}: got {:?}, expected {:?}", $what, got, want));
        }
    }};
}

trait Ctx<T> {
    fn ctx(self, what: &str) -> Result<T, String>;
}

impl<T, E: Display> Ctx<T> for Result<T, E> {
    fn ctx(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: {e}"))
    }
}

/// A fresh file driven by the spec under test, on a manual clock at T0.
struct F {
    file: Ukue,
    clock: ManualClock,
    spec: Arc<Spec>,
    tmp: TempPath,
}

impl F {
    fn new(spec: &Arc<Spec>) -> Result<F, String> {
        let tmp = TempPath::new("mutant.ukue");
        let clock = ManualClock::new(T0);
        let file = create_with(&tmp.path, spec.clone(), &clock).ctx("create")?;
        Ok(F { file, clock, spec: spec.clone(), tmp })
    }

    fn now(&self) -> Millis {
        self.file.now()
    }

    fn set(&self, at: Millis) {
        self.clock.set(at);
    }

    fn add(&mut self, job: NewJob) -> Result<JobId, String> {
        self.file.add(&job).ctx("add")
    }

    fn job(&self, id: JobId) -> Result<Job, String> {
        self.file.get(id).ctx("get")?.ok_or_else(|| format!("job {id} is gone"))
    }

    fn gone(&self, id: JobId) -> Check {
        ensure!(self.file.get(id).ctx("get")?.is_none(), "job {id} is still there");
        Ok(())
    }

    fn claim(&mut self, queue: &str, lease: std::time::Duration) -> Result<Option<Claimed>, String> {
        self.file.claim(queue, lease).ctx("claim")
    }

    fn claim_some(&mut self, queue: &str) -> Result<Claimed, String> {
        let now = self.now();
        self.claim(queue, ms(60_000))?
            .ok_or_else(|| format!("nothing to claim in {queue:?} at T0+{}", now - T0))
    }

    fn claim_next(&mut self, queue: &str) -> Result<Claim, String> {
        self.file.claim_next(queue, ms(60_000)).ctx("claim_next")
    }

    fn make_dead(&mut self, queue: &str) -> Result<JobId, String> {
        let id = self.add(NewJob::new(queue, b"dead".to_vec()).run_at(T0 - 1_000_000))?;
        let c = self.claim_some(queue)?;
        ensure_eq!(c.id, id, "make_dead claimed");
        ensure_eq!(
            self.file.fail(id, &c.token, "broken", Retry::Never).ctx("fail")?,
            Failed::Dead,
            "fail Never"
        );
        Ok(id)
    }

    fn make_done(&mut self, queue: &str) -> Result<JobId, String> {
        let id = self.add(NewJob::new(queue, b"done".to_vec()).run_at(T0 - 1_000_000))?;
        let c = self.claim_some(queue)?;
        ensure_eq!(c.id, id, "make_done claimed");
        self.file.finish(id, &c.token, true).ctx("finish keep")?;
        Ok(id)
    }

    fn token_of(&self, id: JobId) -> Result<Option<String>, String> {
        self.file
            .connection()
            .query_row("SELECT token FROM ukue_jobs WHERE id = ?1", [id], |r| r.get(0))
            .ctx("token")
    }

    fn query_i64(&self, sql: &str) -> Result<i64, String> {
        self.file.connection().query_row(sql, [], |r| r.get(0)).ctx(sql)
    }

    fn query_string(&self, sql: &str) -> Result<String, String> {
        self.file.connection().query_row(sql, [], |r| r.get(0)).ctx(sql)
    }

    /// FORMAT.md §7 on the way out.
    fn done(self) -> Check {
        check_invariants(self.file.connection()).map_err(|e| format!("invariant: {e}"))
    }
}

fn lease_lost<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) -> Check {
    match result {
        Err(Error::LeaseLost { .. }) => Ok(()),
        other => Err(format!("{what}: expected lease lost, got {other:?}")),
    }
}

fn backoff_base(attempt: i64) -> Millis {
    (10_000i64 << (attempt - 1).clamp(0, 20)).min(3_600_000)
}

fn in_backoff(run_at: Millis, now: Millis, attempt: i64, what: &str) -> Check {
    let base = backoff_base(attempt);
    ensure!(
        (now + base..=now + base + base / 10).contains(&run_at),
        "{what}: after attempt {attempt} run_at is now+{} ms, expected {base}..={}",
        run_at - now,
        base + base / 10
    );
    Ok(())
}

// ---------------------------------------------------------------- the checks

fn schema(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    ensure_eq!(f.query_i64("PRAGMA application_id")?, 1_969_976_677, "application_id");
    ensure_eq!(f.query_string("PRAGMA journal_mode")?, "wal", "journal_mode");
    ensure_eq!(f.query_i64("PRAGMA synchronous")?, 2, "synchronous (FULL)");
    ensure_eq!(f.file.busy_timeout(), ms(5_000), "busy_timeout");
    ensure_eq!(
        f.query_string("SELECT group_concat(key || '=' || value, ' ') FROM (SELECT * FROM ukue_meta WHERE key != 'created_by' ORDER BY key)")?,
        format!("created_at={T0} format_version=1"),
        "ukue_meta"
    );
    ensure_eq!(
        f.query_string(
            "SELECT group_concat(name || ' ' || type || ' ' || \"notnull\" || ' ' || ifnull(dflt_value, '-') || ' ' || pk, '; ')
             FROM (SELECT * FROM pragma_table_xinfo('ukue_jobs') ORDER BY cid)"
        )?,
        "id INTEGER 0 - 1; queue TEXT 1 - 0; payload BLOB 1 - 0; state TEXT 1 'ready' 0; \
         priority INTEGER 1 0 0; attempts INTEGER 1 0 0; max_attempts INTEGER 1 10 0; \
         run_at INTEGER 1 CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) 0; \
         lease_until INTEGER 0 - 0; token TEXT 0 - 0; last_error TEXT 0 - 0; \
         created_at INTEGER 1 CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) 0; \
         updated_at INTEGER 1 CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) 0",
        "ukue_jobs columns"
    );
    ensure_eq!(
        f.query_string(
            "SELECT group_concat(name || ' ' || type || ' ' || \"notnull\" || ' ' || pk, '; ')
             FROM (SELECT * FROM pragma_table_xinfo('ukue_meta') ORDER BY cid)"
        )?,
        "key TEXT 1 1; value TEXT 1 0",
        "ukue_meta columns"
    );
    ensure_eq!(
        f.query_string(
            "SELECT group_concat(i.name || ' partial=' || i.partial || ' (' ||
                (SELECT group_concat(x.name || CASE x.desc WHEN 1 THEN ' DESC' ELSE '' END, ', ')
                 FROM (SELECT * FROM pragma_index_xinfo(i.name) WHERE key ORDER BY seqno) AS x) || ')', '; ')
             FROM (SELECT * FROM pragma_index_list('ukue_jobs') ORDER BY name) AS i"
        )?,
        "ukue_jobs_due partial=1 (queue, priority, run_at, id); \
         ukue_jobs_leases partial=1 (lease_until); \
         ukue_jobs_next partial=1 (queue, run_at); \
         ukue_jobs_state partial=0 (state, queue, id)",
        "ukue_jobs indexes"
    );
    ensure_eq!(
        f.query_string(
            "SELECT group_concat(name || ': ' || substr(sql, instr(sql, ' WHERE ') + 7), '; ')
             FROM (SELECT * FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %' ORDER BY name)"
        )?,
        "ukue_jobs_due: state = 'ready'; ukue_jobs_leases: state = 'running'; ukue_jobs_next: state = 'ready'",
        "partial index conditions"
    );
    ensure_eq!(
        f.query_i64("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'")?,
        1,
        "AUTOINCREMENT (sqlite_sequence)"
    );
    ensure!(f.file.connection().prepare("SELECT rowid FROM ukue_meta").is_err(), "ukue_meta has a rowid");
    for bad in [
        "INSERT INTO ukue_jobs (queue, payload) VALUES ('', x'')",
        "INSERT INTO ukue_jobs (queue, payload) VALUES (printf('%.201c', 'q'), x'')",
        "INSERT INTO ukue_jobs (queue, payload, state) VALUES ('q', x'', 'delayed')",
        "INSERT INTO ukue_jobs (queue, payload, priority) VALUES ('q', x'', 101)",
        "INSERT INTO ukue_jobs (queue, payload, attempts) VALUES ('q', x'', -1)",
        "INSERT INTO ukue_jobs (queue, payload, max_attempts) VALUES ('q', x'', 0)",
    ] {
        ensure!(f.file.connection().execute(bad, []).is_err(), "the schema accepts {bad}");
    }

    // The short form takes its defaults from the schema.
    f.file
        .connection()
        .execute("INSERT INTO ukue_jobs (queue, payload) VALUES ('emails', 'hello')", [])
        .ctx("short insert")?;
    let id = f.query_i64("SELECT max(id) FROM ukue_jobs")?;
    let job = f.job(id)?;
    ensure_eq!(
        (job.state, job.priority, job.attempts, job.max_attempts),
        (State::Ready, 0, 0, 10),
        "short insert defaults"
    );
    f.set(job.run_at.max(T0));
    let c = f.claim_some("emails")?;
    ensure_eq!((c.id, c.payload.as_slice()), (id, &b"hello"[..]), "TEXT payload claimed");

    // The file opens again with the same spec.
    let again = Ukue::options()
        .spec(f.spec.clone())
        .clock(f.clock.clone())
        .access(Access::Existing)
        .open(&f.tmp.path)
        .ctx("reopen")?;
    ensure_eq!(again.get(id).ctx("get")?.map(|j| j.state), Some(State::Running), "reopened job");
    drop(again);

    // An application's database keeps its id.
    let app_path = f.tmp.dir.path().join("app.db");
    let app = Connection::open(&app_path).ctx("app db")?;
    app.execute_batch("PRAGMA application_id = 305419896; CREATE TABLE accounts (id INTEGER PRIMARY KEY);")
        .ctx("app schema")?;
    let app = Ukue::options()
        .spec(f.spec.clone())
        .clock(f.clock.clone())
        .access(Access::AddTables)
        .attach(app)
        .ctx("attach")?;
    let app_id: i64 = app.connection().query_row("PRAGMA application_id", [], |r| r.get(0)).ctx("app id")?;
    ensure_eq!(app_id, 305_419_896, "an application's id");
    // An application's database with tables but no id of its own is not
    // taken over: it keeps id 0.
    let plain_path = f.tmp.dir.path().join("plain.db");
    let plain = Connection::open(&plain_path).ctx("plain db")?;
    plain.execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY);").ctx("plain schema")?;
    let plain = Ukue::options()
        .spec(f.spec.clone())
        .clock(f.clock.clone())
        .access(Access::AddTables)
        .attach(plain)
        .ctx("attach plain")?;
    let plain_id: i64 =
        plain.connection().query_row("PRAGMA application_id", [], |r| r.get(0)).ctx("plain id")?;
    ensure_eq!(plain_id, 0, "the id of an application's database that had none");
    f.file.finish(c.id, &c.token, false).ctx("finish")?;
    f.done()
}

fn claim_order(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    let j = |p: i64, at: Millis| NewJob::new("q", b"x".to_vec()).priority(p).run_at(at);
    let late = f.add(j(0, T0 - 10))?; // smaller id, later run_at
    let early = f.add(j(0, T0 - 20))?;
    let urgent = f.add(j(5, T0))?;
    let early_twin = f.add(j(0, T0 - 20))?;
    let low = f.add(j(-3, T0 - 100_000))?;
    let _delayed = f.add(j(100, T0 + 1))?;
    let elsewhere = f.add(NewJob::new("other", b"x".to_vec()).priority(100).run_at(T0 - 1_000))?;
    let mut order = Vec::new();
    while let Some(c) = f.claim("q", ms(60_000))? {
        order.push(c.id);
        ensure!(order.len() <= 5, "claimed more than the 5 due jobs: {order:?}");
    }
    ensure_eq!(order, vec![urgent, early, early_twin, late, low], "claim order");
    ensure_eq!(
        f.claim_next("q")?,
        Claim::Empty { next_due: Some(T0 + 1) },
        "claim of a queue with nothing due"
    );
    ensure_eq!(f.claim_next("none")?, Claim::Empty { next_due: None }, "claim of an empty queue");
    ensure_eq!(f.claim_some("other")?.id, elsewhere, "claim of the other queue");
    f.done()
}

fn delayed_not_early(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    let soon = f.add(NewJob::new("q", b"soon".to_vec()).priority(50).delay(ms(500)))?;
    let due = f.add(NewJob::new("q", b"due".to_vec()).priority(-50))?;
    ensure_eq!(f.job(soon)?.run_at, T0 + 500, "a delayed job's run_at");
    ensure_eq!(f.claim_some("q")?.id, due, "the due job goes before a delayed one");
    ensure_eq!(f.claim_next("q")?, Claim::Empty { next_due: Some(T0 + 500) }, "claim before run_at");
    // A lease of another queue runs out: the claim goes past its look to
    // reap it, and still tells the queue's next run_at.
    f.add(NewJob::new("x", b"x".to_vec()))?;
    f.claim("x", ms(100))?.ok_or("nothing claimed in x")?;
    f.set(T0 + 499);
    ensure_eq!(
        f.claim_next("q")?,
        Claim::Empty { next_due: Some(T0 + 500) },
        "claim at run_at - 1, reaping another queue's lease"
    );
    f.set(T0 + 500);
    ensure_eq!(f.claim_some("q")?.id, soon, "claim at run_at");
    f.done()
}

fn claim_fields(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    let id = f.add(NewJob::new("q", b"payload".to_vec()).priority(3).max_attempts(4))?;
    let c = f.claim("q", ms(30_000))?.ok_or("nothing claimed")?;
    ensure_eq!((c.id, c.attempt, c.priority, c.max_attempts), (id, 1, 3, 4), "first claim");
    ensure_eq!(
        (c.payload.as_slice(), c.run_at, c.lease_until),
        (&b"payload"[..], T0, T0 + 30_000),
        "claimed job"
    );
    ensure!(
        c.token.len() == 32 && c.token.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "token {:?}",
        c.token
    );
    let job = f.job(id)?;
    ensure_eq!(
        (job.state, job.attempts, job.lease_until),
        (State::Running, 1, Some(T0 + 30_000)),
        "stored claim"
    );
    ensure!(f.claim("q", ms(1_000))?.is_none(), "a running job was claimed again");
    f.set(T0 + 10);
    ensure_eq!(
        f.file.fail(id, &c.token, "try again", Retry::After(ms(0))).ctx("fail")?,
        Failed::Ready { run_at: T0 + 10 },
        "fail with retry 0"
    );
    let c2 = f.claim_some("q")?;
    ensure_eq!((c2.id, c2.attempt, c2.last_error.as_deref()), (id, 2, Some("try again")), "second claim");
    ensure!(c2.token != c.token, "the second claim reused the token");
    f.done()
}

fn holder_steps(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    let wrong = "0123456789abcdef0123456789abcdef";
    let mut held = Vec::new();
    for n in 0..5u8 {
        f.add(NewJob::new("q", vec![n]))?;
        held.push(f.claim("q", ms(1_000))?.ok_or("nothing claimed")?);
    }
    // a token that is not the job's is refused, and changes nothing
    for c in &held {
        let before = f.job(c.id)?;
        lease_lost(f.file.finish(c.id, wrong, false), "finish (delete) with a wrong token")?;
        lease_lost(f.file.finish(c.id, wrong, true), "finish (keep) with a wrong token")?;
        lease_lost(f.file.fail(c.id, wrong, "x", Retry::Backoff), "fail with a wrong token")?;
        lease_lost(f.file.renew(c.id, wrong, ms(99_000)), "renew with a wrong token")?;
        lease_lost(f.file.release(c.id, wrong), "release with a wrong token")?;
        ensure_eq!(f.job(c.id)?, before, "a job after steps with a wrong token");
    }
    // the holder's own token works, even once the lease has run out
    f.set(T0 + 5_000);
    f.file.finish(held[0].id, &held[0].token, false).ctx("finish (delete)")?;
    f.gone(held[0].id)?;
    f.file.finish(held[1].id, &held[1].token, true).ctx("finish (keep)")?;
    let kept = f.job(held[1].id)?;
    ensure_eq!((kept.state, kept.lease_until, kept.updated_at), (State::Done, None, T0 + 5_000), "kept job");
    let failed = f.file.fail(held[2].id, &held[2].token, "x", Retry::Backoff).ctx("fail")?;
    ensure!(matches!(failed, Failed::Ready { .. }), "fail gave {failed:?}");
    ensure_eq!(
        f.file.renew(held[3].id, &held[3].token, ms(7_000)).ctx("renew")?,
        T0 + 12_000,
        "renewed lease_until"
    );
    ensure_eq!(f.job(held[3].id)?.lease_until, Some(T0 + 12_000), "stored lease_until");
    f.file.release(held[4].id, &held[4].token).ctx("release")?;
    // and each step of a holder that no longer holds the job is refused
    for c in &held {
        if c.id == held[3].id {
            continue;
        }
        lease_lost(f.file.finish(c.id, &c.token, false), "a second finish")?;
        lease_lost(f.file.fail(c.id, &c.token, "x", Retry::Never), "fail after the job was given back")?;
        lease_lost(f.file.renew(c.id, &c.token, ms(1_000)), "renew after the job was given back")?;
        lease_lost(f.file.release(c.id, &c.token), "release after the job was given back")?;
    }
    // after the job was deleted
    f.file.delete(held[3].id).ctx("delete")?;
    lease_lost(f.file.renew(held[3].id, &held[3].token, ms(1_000)), "renew of a deleted job")?;
    lease_lost(f.file.finish(held[3].id, &held[3].token, true), "finish of a deleted job")?;

    // after the lease ran out, the job was reaped and claimed again
    let id = f.add(NewJob::new("r", b"r".to_vec()))?;
    let old = f.claim("r", ms(100))?.ok_or("nothing claimed")?;
    f.set(T0 + 5_100);
    ensure!(f.claim("r", ms(100))?.is_none(), "a reaped job was claimed before its backoff");
    ensure_eq!(f.job(id)?.state, State::Ready, "a job whose lease ran out, after a claim");
    f.set(f.job(id)?.run_at);
    let new = f.claim_some("r")?;
    ensure_eq!(new.id, id, "the reaped job claimed again");
    let before = f.job(id)?;
    lease_lost(f.file.finish(id, &old.token, false), "finish by the reaped holder")?;
    lease_lost(f.file.finish(id, &old.token, true), "finish (keep) by the reaped holder")?;
    lease_lost(f.file.fail(id, &old.token, "x", Retry::After(ms(0))), "fail by the reaped holder")?;
    lease_lost(f.file.renew(id, &old.token, ms(1_000)), "renew by the reaped holder")?;
    lease_lost(f.file.release(id, &old.token), "release by the reaped holder")?;
    ensure_eq!(f.job(id)?, before, "the job after the reaped holder's steps");
    f.file.finish(id, &new.token, false).ctx("finish by the new holder")?;
    f.done()
}

fn backoff(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    let id = f.add(NewJob::new("q", b"x".to_vec()).max_attempts(30))?;
    for attempt in 1..=12 {
        let c = f.claim_some("q")?;
        ensure_eq!(c.attempt, attempt, "attempt");
        f.clock.advance(ms(7));
        let now = f.now();
        let error = format!("failure {attempt}");
        let Failed::Ready { run_at } = f.file.fail(id, &c.token, &error, Retry::Backoff).ctx("fail")? else {
            return Err(format!("attempt {attempt} of 30 went dead"));
        };
        in_backoff(run_at, now, attempt, "fail")?;
        let job = f.job(id)?;
        ensure_eq!(
            (job.state, job.run_at, job.last_error.as_deref()),
            (State::Ready, run_at, Some(error.as_str())),
            "failed job"
        );
        f.set(run_at);
    }
    let c = f.claim_some("q")?;
    let now = f.now();
    ensure_eq!(
        f.file.fail(id, &c.token, "later", Retry::After(ms(1_234))).ctx("fail")?,
        Failed::Ready { run_at: now + 1_234 },
        "fail with a retry after 1234 ms"
    );
    f.set(now + 1_234);
    let c = f.claim_some("q")?;
    let run_at = f.job(id)?.run_at;
    f.clock.advance(ms(3));
    ensure_eq!(f.file.fail(id, &c.token, "never", Retry::Never).ctx("fail")?, Failed::Dead, "fail for good");
    let job = f.job(id)?;
    ensure_eq!((job.state, job.run_at, job.attempts), (State::Dead, run_at, 14), "a job failed for good");
    f.done()
}

fn dead_after_max_attempts(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    let id = f.add(NewJob::new("q", b"x".to_vec()).max_attempts(3))?;
    for attempt in 1..=2 {
        let c = f.claim_some("q")?;
        let failed = f.file.fail(id, &c.token, "again", Retry::After(ms(0))).ctx("fail")?;
        ensure_eq!(failed, Failed::Ready { run_at: f.now() }, format!("fail on attempt {attempt} of 3"));
    }
    let c = f.claim_some("q")?;
    ensure_eq!(c.attempt, 3, "last attempt");
    ensure_eq!(
        f.file.fail(id, &c.token, "last", Retry::After(ms(0))).ctx("fail")?,
        Failed::Dead,
        "fail on the last attempt"
    );
    let job = f.job(id)?;
    ensure_eq!(
        (job.state, job.attempts, job.last_error.as_deref()),
        (State::Dead, 3, Some("last")),
        "dead job"
    );
    ensure!(f.claim("q", ms(1_000))?.is_none(), "a dead job was claimed");
    f.done()
}

fn reaping(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    let id = f.add(NewJob::new("q", b"x".to_vec()).max_attempts(2))?;
    let c = f.claim("q", ms(1_000))?.ok_or("nothing claimed")?;
    f.set(T0 + 999);
    ensure!(f.claim("other", ms(1_000))?.is_none(), "claimed from an empty queue");
    ensure_eq!(f.job(id)?.state, State::Running, "a job reaped before its lease ran out");
    f.set(T0 + 1_000);
    ensure!(f.claim("other", ms(1_000))?.is_none(), "claimed from an empty queue");
    let job = f.job(id)?;
    ensure_eq!((job.state, job.attempts, job.lease_until), (State::Ready, 1, None), "a reaped job");
    ensure_eq!(f.token_of(id)?, None, "a reaped job's token");
    ensure_eq!(
        job.last_error.as_deref(),
        Some("lease expired (attempt 1 of 2)"),
        "a reaped job's last_error"
    );
    in_backoff(job.run_at, T0 + 1_000, 1, "reap")?;
    lease_lost(f.file.finish(id, &c.token, false), "finish by the reaped holder")?;

    f.set(job.run_at);
    let c = f.claim("q", ms(1_000))?.ok_or("the reaped job was not claimed at its run_at")?;
    ensure_eq!(c.attempt, 2, "the attempt after a reap");
    f.set(c.lease_until);
    ensure!(f.claim("other", ms(1_000))?.is_none(), "claimed from an empty queue");
    let dead = f.job(id)?;
    ensure_eq!(
        (dead.state, dead.attempts, dead.lease_until),
        (State::Dead, 2, None),
        "a reaped last attempt"
    );
    ensure_eq!(f.token_of(id)?, None, "a dead job's token");
    ensure_eq!(dead.last_error.as_deref(), Some("lease expired (attempt 2 of 2)"), "last_error");
    ensure_eq!(dead.run_at, job.run_at, "a reaped dead job's run_at");

    // a renewed lease is not reaped
    let id = f.add(NewJob::new("r", b"r".to_vec()))?;
    let c = f.claim("r", ms(1_000))?.ok_or("nothing claimed")?;
    let start = f.now();
    f.set(start + 900);
    ensure_eq!(f.file.renew(id, &c.token, ms(1_000)).ctx("renew")?, start + 1_900, "renew");
    f.set(start + 1_500);
    ensure!(f.claim("other", ms(1_000))?.is_none(), "claimed from an empty queue");
    ensure_eq!(f.job(id)?.state, State::Running, "a renewed job after its first lease");
    f.file.finish(id, &c.token, false).ctx("finish")?;
    f.done()
}

fn release(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    let first = f.add(NewJob::new("q", b"1".to_vec()).run_at(T0 - 50).max_attempts(2))?;
    let second = f.add(NewJob::new("q", b"2".to_vec()).run_at(T0 - 40))?;
    let c = f.claim_some("q")?;
    ensure_eq!(c.id, first, "claim");
    f.set(T0 + 5);
    f.file.release(first, &c.token).ctx("release")?;
    let job = f.job(first)?;
    ensure_eq!(
        (job.state, job.attempts, job.run_at, job.lease_until, job.updated_at),
        (State::Ready, 0, T0 - 50, None, T0 + 5),
        "a released job"
    );
    let c = f.claim_some("q")?;
    ensure_eq!((c.id, c.attempt), (first, 1), "the released job, claimed again");
    f.file.fail(first, &c.token, "once", Retry::After(ms(0))).ctx("fail")?;
    f.set(T0 + 6);
    let c = f.claim_some("q")?;
    ensure_eq!(c.id, second, "claim");
    f.file.finish(second, &c.token, false).ctx("finish")?;
    let c = f.claim_some("q")?;
    ensure_eq!((c.id, c.attempt), (first, 2), "second attempt");
    f.file.release(first, &c.token).ctx("release")?;
    ensure_eq!(f.job(first)?.attempts, 1, "attempts after releasing the second attempt");
    let c = f.claim_some("q")?;
    ensure_eq!(c.attempt, 2, "the attempt after a release");
    let failed = f.file.fail(first, &c.token, "x", Retry::After(ms(0))).ctx("fail")?;
    ensure_eq!(failed, Failed::Dead, "failing the last attempt");
    f.done()
}

fn retry(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    let q1 = f.make_dead("q")?;
    let q2 = f.make_dead("q")?;
    let r1 = f.make_dead("r")?;
    let done = f.make_done("r")?;
    let ready = f.add(NewJob::new("q", b"ready".to_vec()).delay(ms(100_000)))?;
    f.set(T0 + 3);
    f.file.retry(q1).ctx("retry")?;
    let job = f.job(q1)?;
    ensure_eq!((job.state, job.attempts, job.run_at), (State::Ready, 0, T0 + 3), "a retried job");
    match f.file.retry(ready) {
        Err(Error::NotDead { state, .. }) if state == "ready" => {}
        other => return Err(format!("retry of a ready job: {other:?}")),
    }
    match f.file.retry(done) {
        Err(Error::NotDead { state, .. }) if state == "done" => {}
        other => return Err(format!("retry of a done job: {other:?}")),
    }
    match f.file.retry(9_999) {
        Err(Error::JobNotFound { id: 9_999 }) => {}
        other => return Err(format!("retry of a missing job: {other:?}")),
    }
    ensure_eq!(f.job(ready)?.run_at, T0 + 100_000, "a ready job after a refused retry");
    f.set(T0 + 4);
    ensure_eq!(f.file.retry_all(Some("q")).ctx("retry_all q")?, 1, "retry_all of queue q");
    let job = f.job(q2)?;
    ensure_eq!(
        (job.state, job.attempts, job.run_at),
        (State::Ready, 0, T0 + 4),
        "a job retried by retry_all"
    );
    ensure_eq!(f.job(r1)?.state, State::Dead, "a dead job of another queue");
    ensure_eq!(f.file.retry_all(None).ctx("retry_all")?, 1, "retry_all of every queue");
    ensure_eq!(f.job(r1)?.state, State::Ready, "after retry_all");
    ensure_eq!(f.file.retry_all(None).ctx("retry_all")?, 0, "retry_all with no dead jobs");
    ensure_eq!(
        (f.job(done)?.state, f.job(ready)?.run_at),
        (State::Done, T0 + 100_000),
        "retry_all's bystanders"
    );
    f.done()
}

fn purge_and_delete(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    let dead_q = f.make_dead("q")?;
    let dead_r = f.make_dead("r")?;
    let done_q = f.make_done("q")?;
    let done_r = f.make_done("r")?;
    let ready = f.add(NewJob::new("q", b"ready".to_vec()))?;
    let delayed = f.add(NewJob::new("q", b"delayed".to_vec()).delay(ms(1_000)))?;
    let running = f.add(NewJob::new("r", b"running".to_vec()))?;
    let c = f.claim_some("r")?;
    ensure_eq!(c.id, running, "claim");
    ensure!(
        matches!(f.file.purge(State::Ready, None), Err(Error::Invalid(_))),
        "purge of ready jobs was accepted"
    );
    ensure_eq!(f.file.purge(State::Dead, Some("q")).ctx("purge")?, 1, "purge dead of q");
    f.gone(dead_q)?;
    ensure_eq!(f.file.purge(State::Done, None).ctx("purge")?, 2, "purge done");
    f.gone(done_q)?;
    f.gone(done_r)?;
    ensure_eq!(f.job(dead_r)?.state, State::Dead, "a dead job of r after purging q");
    ensure_eq!(f.file.purge(State::Dead, None).ctx("purge")?, 1, "purge dead");
    let left: Vec<JobId> = f.file.list(&ListFilter::default()).ctx("list")?.iter().map(|j| j.id).collect();
    ensure_eq!(left, vec![ready, delayed, running], "the jobs purge leaves");
    f.file.delete(running).ctx("delete a running job")?;
    f.gone(running)?;
    lease_lost(f.file.finish(running, &c.token, false), "finish of a deleted job")?;
    ensure!(matches!(f.file.delete(running), Err(Error::JobNotFound { .. })), "a second delete");
    f.file.delete(delayed).ctx("delete")?;
    ensure_eq!(f.query_i64("SELECT count(*) FROM ukue_jobs")?, 1, "jobs left");
    f.done()
}

fn stats(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    // queue "a": 1 ready, 2 delayed, 3 running, 4 expired, 5 dead, 6 done
    for _ in 0..5 {
        f.make_dead("a")?;
    }
    for _ in 0..6 {
        f.make_done("a")?;
    }
    for n in 0..7u8 {
        f.add(NewJob::new("a", vec![n]))?;
    }
    for n in 0..7 {
        let lease = ms(if n < 4 { 100 } else { 100_000 });
        f.claim("a", lease)?.ok_or("nothing claimed")?;
    }
    f.add(NewJob::new("a", b"ready".to_vec()).run_at(T0 - 3))?;
    f.add(NewJob::new("a", b"delayed".to_vec()).run_at(T0 + 200))?;
    f.add(NewJob::new("a", b"delayed".to_vec()).run_at(T0 + 300))?;
    f.add(NewJob::new("b", b"now".to_vec()).run_at(T0 + 100))?;
    f.add(NewJob::new("b", b"later".to_vec()).run_at(T0 + 101))?;
    f.set(T0 + 100);
    let stats = f.file.stats().ctx("stats")?;
    ensure_eq!(
        stats,
        vec![
            QueueStats {
                queue: "a".into(),
                ready: 1,
                delayed: 2,
                running: 3,
                expired: 4,
                dead: 5,
                done: 6,
                oldest_due: Some(T0 - 3)
            },
            QueueStats {
                queue: "b".into(),
                ready: 1,
                delayed: 1,
                oldest_due: Some(T0 + 100),
                ..QueueStats::default()
            },
        ],
        "stats"
    );
    f.done()
}

fn list(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    let dead = f.make_dead("b")?;
    let done = f.make_done("a")?;
    let due = f.add(NewJob::new("a", b"due".to_vec()))?;
    let at_now = f.add(NewJob::new("b", b"at now".to_vec()).run_at(T0 + 10))?;
    let delayed = f.add(NewJob::new("a", b"delayed".to_vec()).run_at(T0 + 11))?;
    let running = f.add(NewJob::new("c", b"running".to_vec()))?;
    ensure_eq!(f.claim_some("c")?.id, running, "claim");
    f.set(T0 + 10);
    let ids = |f: &F, queue: Option<&str>, state: Option<ListState>, after: JobId, limit: i64| {
        let filter = ListFilter { queue: queue.map(String::from), state, after, limit };
        f.file.list(&filter).ctx("list").map(|jobs| jobs.iter().map(|j| j.id).collect::<Vec<_>>())
    };
    ensure_eq!(ids(&f, None, None, 0, 50)?, vec![dead, done, due, at_now, delayed, running], "list");
    ensure_eq!(ids(&f, Some("a"), None, 0, 50)?, vec![done, due, delayed], "list of queue a");
    ensure_eq!(ids(&f, None, Some(ListState::Ready), 0, 50)?, vec![due, at_now], "list ready (due)");
    ensure_eq!(ids(&f, None, Some(ListState::Delayed), 0, 50)?, vec![delayed], "list delayed");
    ensure_eq!(ids(&f, None, Some(ListState::Running), 0, 50)?, vec![running], "list running");
    ensure_eq!(ids(&f, None, Some(ListState::Dead), 0, 50)?, vec![dead], "list dead");
    ensure_eq!(ids(&f, None, Some(ListState::Done), 0, 50)?, vec![done], "list done");
    ensure_eq!(ids(&f, Some("b"), Some(ListState::Ready), 0, 50)?, vec![at_now], "list ready of queue b");
    ensure_eq!(ids(&f, None, None, 0, 2)?, vec![dead, done], "first page");
    ensure_eq!(ids(&f, None, None, done, 2)?, vec![due, at_now], "second page");
    ensure_eq!(ids(&f, None, None, running, 2)?, Vec::<JobId>::new(), "past the last page");
    let job = f.job(delayed)?;
    ensure_eq!(
        (job.queue.as_str(), job.payload.as_slice(), job.run_at, job.created_at, job.updated_at),
        ("a", &b"delayed"[..], T0 + 11, T0, T0),
        "get"
    );
    let listed = f.file.list(&ListFilter::default()).ctx("list")?;
    for job in listed {
        ensure_eq!(f.job(job.id)?, job, "list and get");
    }
    f.done()
}

fn add_batch(spec: &Arc<Spec>) -> Check {
    let mut f = F::new(spec)?;
    let bad = [NewJob::new("q", b"1".to_vec()), NewJob::new("q", b"2".to_vec()).max_attempts(0)];
    ensure!(matches!(f.file.add_batch(&bad), Err(Error::Invalid(_))), "a batch with an invalid job");
    Connection::open(&f.tmp.path)
        .ctx("second connection")?
        .execute_batch(
            "CREATE TRIGGER test_boom BEFORE INSERT ON ukue_jobs WHEN NEW.queue = 'boom'
             BEGIN SELECT RAISE(ABORT, 'boom'); END",
        )
        .ctx("trigger")?;
    let failing = [NewJob::new("q", b"1".to_vec()), NewJob::new("boom", b"2".to_vec())];
    ensure!(f.file.add_batch(&failing).is_err(), "a batch that the trigger refuses");
    ensure_eq!(f.query_i64("SELECT count(*) FROM ukue_jobs")?, 0, "jobs after failed batches");
    ensure!(f.file.connection().is_autocommit(), "a failed batch left its transaction open");
    let ids = f
        .file
        .add_batch(&[
            NewJob::new("q", b"a".to_vec()).priority(-7).max_attempts(2).run_at(T0 - 9),
            NewJob::new("r", b"b".to_vec()).delay(ms(5)),
        ])
        .ctx("add_batch")?;
    ensure_eq!(ids.len(), 2, "ids of a batch");
    let a = f.job(ids[0])?;
    ensure_eq!(
        (
            a.queue.as_str(),
            a.payload.as_slice(),
            a.priority,
            a.max_attempts,
            a.run_at,
            a.created_at,
            a.updated_at
        ),
        ("q", &b"a"[..], -7, 2, T0 - 9, T0, T0),
        "a batch's first job"
    );
    ensure_eq!((f.job(ids[1])?.run_at, f.job(ids[1])?.attempts), (T0 + 5, 0), "a batch's second job");
    f.done()
}

/// The step suite: the first check that fails, by name.
fn suite(spec: Arc<Spec>) -> Result<(), String> {
    type CheckFn = fn(&Arc<Spec>) -> Check;
    const CHECKS: &[(&str, CheckFn)] = &[
        ("schema", schema),
        ("claim order", claim_order),
        ("delayed job not early", delayed_not_early),
        ("claim fields", claim_fields),
        ("holder steps and stale tokens", holder_steps),
        ("backoff", backoff),
        ("dead after max_attempts", dead_after_max_attempts),
        ("reaping", reaping),
        ("release", release),
        ("retry", retry),
        ("purge and delete", purge_and_delete),
        ("stats", stats),
        ("list", list),
        ("add and add_batch", add_batch),
    ];
    for (name, check) in CHECKS {
        check(&spec).map_err(|e| format!("[{name}] {e}"))?;
    }
    Ok(())
}

#[test]
fn the_builtin_spec_passes_the_suite() {
    if let Err(e) = suite(Spec::builtin()) {
        panic!("the step suite fails on the builtin FORMAT.md: {e}");
    }
}

// ---------------------------------------------------------------- mutations

/// Every hand-made mutation of `group` (tests/spec_mutations.txt) must
/// fail the suite; reports which check caught each.
fn assert_all_caught(group: &str) {
    let builtin = Spec::builtin();
    let mutations = mutations::hand_made(mutations::HAND_MADE, &builtin).unwrap_or_else(|e| panic!("{e}"));
    let mutations: Vec<_> = mutations.into_iter().filter(|m| m.group == group).collect();
    assert!(mutations.len() >= 10, "too few mutations in [{group}]: {}", mutations.len());
    let mut survivors = Vec::new();
    for mutation in &mutations {
        let text = mutation.apply(&builtin).unwrap_or_else(|e| panic!("{e}"));
        let label = format!("`{}`: {:?} -> {:?}", mutation.stmt.name(), mutation.from, mutation.to);
        match suite(Arc::new(builtin.with(mutation.stmt, text))) {
            Err(caught) => println!("caught {label}\n    by {caught}"),
            Ok(()) => survivors.push(label),
        }
    }
    assert!(
        survivors.is_empty(),
        "mutations of FORMAT.md that the step suite does not catch:\n  {}",
        survivors.join("\n  ")
    );
}

#[test]
fn mutations_of_the_claim_are_caught() {
    assert_all_caught("claim");
}

#[test]
fn mutations_of_the_holders_steps_are_caught() {
    assert_all_caught("holders");
}

#[test]
fn mutations_of_the_other_steps_are_caught() {
    assert_all_caught("other");
}

#[test]
fn mutations_of_the_schema_and_connection_are_caught() {
    assert_all_caught("schema");
}

#[test]
fn an_edited_format_md_is_loaded_and_caught() {
    let page = ukue::spec::FORMAT_MD;
    assert_eq!(Spec::from_markdown(page).expect("the builtin page"), *Spec::builtin());
    assert_eq!(
        Spec::builtin().version(),
        ukue::FORMAT_VERSION,
        "the page's §2.1 and FORMAT_VERSION disagree"
    );
    for (from, to) in [
        ("ORDER BY run_at, id LIMIT 1", "ORDER BY id LIMIT 1"),
        ("max_attempts INTEGER NOT NULL DEFAULT 10", "max_attempts INTEGER NOT NULL DEFAULT 5"),
        (
            "SET state = 'ready', attempts = max(attempts - 1, 0),",
            "SET state = 'ready', attempts = attempts,",
        ),
    ] {
        let edited = page.replacen(from, to, 1);
        assert_ne!(edited, page, "{from:?} is no longer in FORMAT.md");
        let spec = Spec::from_markdown(&edited).expect("the edited page parses");
        match suite(Arc::new(spec)) {
            Err(caught) => println!("caught the edit {from:?} -> {to:?}\n    by {caught}"),
            Ok(()) => panic!("the edit {from:?} -> {to:?} of FORMAT.md is not caught"),
        }
    }
    // A page that lacks a statement, gives one twice or names an unknown
    // one is refused outright.
    for (from, to, why) in [
        ("```sql release\n", "```sql\n", "a statement without a name"),
        ("```sql release\n", "```sql example\n", "a missing statement"),
        ("```sql release\n", "```sql renew\n", "a statement given twice"),
        ("```sql release\n", "```sql give_back\n", "an unknown statement"),
    ] {
        let edited = page.replacen(from, to, 1);
        assert_ne!(edited, page, "{from:?} is no longer in FORMAT.md");
        assert!(matches!(Spec::from_markdown(&edited), Err(Error::Spec(_))), "{why} was accepted");
    }
}

// ---------------------------------------------------------------- invariants

/// For each invariant of FORMAT.md §7, by name, an edit that breaks it on
/// a good file (and breaks no other).
const BROKEN: &[(&str, &str)] = &[
    // An index whose stored rows no longer match its definition: the
    // schema now says the partial index holds dead jobs, and it holds the
    // ready ones.
    (
        "integrity",
        "PRAGMA writable_schema = ON;
         UPDATE sqlite_master SET sql = replace(sql, 'WHERE state = ''ready''', 'WHERE state = ''dead''')
         WHERE name = 'ukue_jobs_next';
         PRAGMA writable_schema = OFF;",
    ),
    ("lease_only_while_running", "UPDATE ukue_jobs SET token = 'x' WHERE state = 'dead'"),
    ("running_holds_lease", "UPDATE ukue_jobs SET lease_until = NULL WHERE state = 'running'"),
    ("attempts_in_range", "UPDATE ukue_jobs SET attempts = max_attempts + 1 WHERE state = 'done'"),
    // One below the largest id: the least that breaks it.
    (
        "ids_not_reused",
        "UPDATE sqlite_sequence SET seq = (SELECT max(id) FROM ukue_jobs) - 1 WHERE name = 'ukue_jobs'",
    ),
];

/// A file with a job in each state, and one deleted (so the largest id is
/// not the sequence's by chance).
fn good_file(tmp: &TempPath) -> Check {
    let mut f = F::new(&Spec::builtin())?;
    f.make_dead("q")?;
    f.make_done("q")?;
    f.add(NewJob::new("q", b"ready".to_vec()))?;
    f.claim_some("q")?;
    f.add(NewJob::new("q", b"ready".to_vec()))?;
    f.add(NewJob::new("q", b"delayed".to_vec()).run_at(T0 + 60_000))?;
    let gone = f.add(NewJob::new("q", b"deleted".to_vec()).run_at(T0 + 120_000))?;
    f.file.delete(gone).ctx("delete")?;
    drop(f.file);
    std::fs::copy(&f.tmp.path, &tmp.path).ctx("copy the file")?;
    Ok(())
}

/// The invariants of `spec` pass a good file, and each catches the file
/// that breaks it; every invariant of the page has such a file.
fn invariant_suite(spec: &Spec) -> Check {
    let names: Vec<&str> = spec.invariants().iter().map(|i| i.name.as_str()).collect();
    for name in &names {
        ensure!(BROKEN.iter().any(|(n, _)| n == name), "invariant `{name}` has no file that breaks it here");
    }
    let good = TempPath::new("good.ukue");
    good_file(&good)?;
    let conn = Connection::open(&good.path).ctx("open the good file")?;
    check_invariants_of(spec, &conn).map_err(|e| format!("the good file breaks an invariant: {e}"))?;
    drop(conn);
    for (name, edit) in BROKEN {
        ensure!(names.contains(name), "FORMAT.md has no invariant `{name}`");
        let broken = TempPath::new("broken.ukue");
        std::fs::copy(&good.path, &broken.path).ctx("copy")?;
        Connection::open(&broken.path).ctx("open")?.execute_batch(edit).ctx(edit)?;
        // A new connection, which reads the edited schema.
        let conn = Connection::open(&broken.path).ctx("reopen")?;
        for invariant in spec.invariants() {
            let rows = invariant.violations(&conn).ctx(&invariant.name)?;
            if invariant.name == *name {
                ensure!(!rows.is_empty(), "invariant `{name}` does not catch {edit:?}");
            } else {
                ensure!(
                    rows.is_empty(),
                    "invariant `{}` catches {edit:?}, meant for `{name}`",
                    invariant.name
                );
            }
        }
    }
    Ok(())
}

#[test]
fn each_invariant_catches_the_file_that_breaks_it() {
    if let Err(e) = invariant_suite(&Spec::builtin()) {
        panic!("FORMAT.md §7: {e}");
    }
}

#[test]
fn an_edited_invariant_is_caught() {
    let page = ukue::spec::FORMAT_MD;
    for (from, to) in [
        ("WHERE integrity_check <> 'ok'", "WHERE integrity_check = 'ok'"),
        ("WHERE state <> 'running' AND (token IS NOT NULL OR", "WHERE state <> 'running' AND ("),
        (
            "WHERE state = 'running' AND (token IS NULL OR lease_until IS NULL)",
            "WHERE state = 'running' AND token IS NULL",
        ),
        ("attempts > max_attempts", "attempts > max_attempts + 1"),
        ("HAVING max(id) > coalesce(", "HAVING max(id) > 1 + coalesce("),
        ("```sql invariant running_holds_lease", "```sql example"),
    ] {
        let edited = page.replacen(from, to, 1);
        assert_ne!(edited, page, "{from:?} is no longer in FORMAT.md");
        match Spec::from_markdown(&edited) {
            Err(Error::Spec(e)) => println!("the edit {from:?} -> {to:?} is refused: {e}"),
            Err(e) => panic!("the edit {from:?} -> {to:?}: {e}"),
            Ok(spec) => match invariant_suite(&spec) {
                Err(caught) => println!("caught the edit {from:?} -> {to:?}\n    by {caught}"),
                Ok(()) => panic!("the edit {from:?} -> {to:?} of FORMAT.md §7 is not caught"),
            },
        }
    }
    for (from, to, why) in [
        ("```sql invariant ids_not_reused\n", "```sql invariant\n", "an invariant without a name"),
        ("```sql invariant ids_not_reused\n", "```sql invariant integrity\n", "an invariant given twice"),
    ] {
        let edited = page.replacen(from, to, 1);
        assert_ne!(edited, page, "{from:?} is no longer in FORMAT.md");
        assert!(matches!(Spec::from_markdown(&edited), Err(Error::Spec(_))), "{why} was accepted");
    }
}
