//! Every step of the library (FORMAT.md §5), on a manual clock. Each test
//! ends by checking the file invariants of FORMAT.md §7.

mod common;

use std::collections::HashSet;

use common::{assert_invariants, create_manual, ms, query_i64, query_string, TempPath, T0};
use rusqlite::{named_params, Connection};
use ukue::{
    add_in, Access, Claim, Claimed, Error, Failed, Invalid, Job, JobId, ListFilter, ListState, ManualClock,
    Millis, NewJob, QueueStats, Retry, Spec, State, Stmt, Ukue,
};

/// A fresh file on a manual clock at [`T0`]; checks the invariants when
/// the test is done with it.
struct Fx {
    file: Ukue,
    clock: ManualClock,
    _tmp: TempPath,
}

impl Fx {
    fn new() -> Fx {
        let tmp = TempPath::new("steps.ukue");
        let (file, clock) = create_manual(&tmp.path, T0);
        Fx { file, clock, _tmp: tmp }
    }

    fn now(&self) -> Millis {
        self.file.now()
    }

    fn set(&self, at: Millis) {
        self.clock.set(at);
    }

    fn add(&mut self, job: NewJob) -> JobId {
        self.file.add(&job).expect("add")
    }

    fn job(&self, id: JobId) -> Job {
        self.file.get(id).expect("get").unwrap_or_else(|| panic!("job {id} is gone"))
    }

    fn claim(&mut self, queue: &str) -> Option<Claimed> {
        self.file.claim(queue, ms(60_000)).expect("claim")
    }

    fn claim_some(&mut self, queue: &str) -> Claimed {
        self.claim(queue).unwrap_or_else(|| panic!("nothing to claim in {queue:?} at {}", self.now()))
    }

    fn claim_next(&mut self, queue: &str) -> Claim {
        self.file.claim_next(queue, ms(60_000)).expect("claim_next")
    }

    fn count(&self) -> i64 {
        query_i64(self.file.connection(), "SELECT count(*) FROM ukue_jobs")
    }

    fn token_of(&self, id: JobId) -> Option<String> {
        self.file
            .connection()
            .query_row("SELECT token FROM ukue_jobs WHERE id = ?1", [id], |r| r.get(0))
            .expect("token")
    }

    fn list(&self, filter: ListFilter) -> Vec<JobId> {
        self.file.list(&filter).expect("list").iter().map(|j| j.id).collect()
    }

    fn stats_of(&self, queue: &str) -> QueueStats {
        self.file
            .stats()
            .expect("stats")
            .into_iter()
            .find(|s| s.queue == queue)
            .unwrap_or_else(|| panic!("no stats for {queue:?}"))
    }

    /// Claims and fails a job of `queue` for good, leaving it dead.
    fn make_dead(&mut self, queue: &str) -> JobId {
        let id = self.add(NewJob::new(queue, b"d".to_vec()));
        let c = self.claim_until(queue, id);
        assert_eq!(self.file.fail(id, &c.token, "broken", Retry::Never).expect("fail"), Failed::Dead);
        id
    }

    /// Claims `queue` until job `id` comes out (others are released).
    fn claim_until(&mut self, queue: &str, id: JobId) -> Claimed {
        let mut released = Vec::new();
        let found = loop {
            let c = self.claim_some(queue);
            if c.id == id {
                break c;
            }
            released.push(c);
        };
        for c in released {
            self.file.release(c.id, &c.token).expect("release");
        }
        found
    }

    fn make_done(&mut self, queue: &str) -> JobId {
        let id = self.add(NewJob::new(queue, b"k".to_vec()));
        let c = self.claim_until(queue, id);
        self.file.finish(c.id, &c.token, true).expect("finish keep");
        id
    }
}

impl Drop for Fx {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            assert_invariants(self.file.connection());
        }
    }
}

fn lease_lost(result: Result<impl std::fmt::Debug, Error>, id: JobId) {
    match result {
        Err(Error::LeaseLost { id: got }) => assert_eq!(got, id),
        other => panic!("expected LeaseLost for job {id}, got {other:?}"),
    }
}

/// The backoff of FORMAT.md §5.6 after attempt `n`, without the random tenth.
fn backoff_base(n: i64) -> Millis {
    let shift = (n - 1).clamp(0, 20);
    (10_000i64 << shift).min(3_600_000)
}

fn assert_backoff(run_at: Millis, now: Millis, attempt: i64) {
    let base = backoff_base(attempt);
    let (low, high) = (now + base, now + base + base / 10);
    assert!(
        (low..=high).contains(&run_at),
        "attempt {attempt}: run_at {run_at} is {} ms after now, expected {base}..={} ms",
        run_at - now,
        base + base / 10
    );
}

// ---------------------------------------------------------------- add

#[test]
fn add_takes_the_defaults() {
    let mut fx = Fx::new();
    let id = fx.add(NewJob::new("emails", b"hello".to_vec()));
    let job = fx.job(id);
    assert_eq!(job.queue, "emails");
    assert_eq!(job.payload, b"hello");
    assert_eq!(job.state, State::Ready);
    assert_eq!(job.priority, 0);
    assert_eq!(job.attempts, 0);
    assert_eq!(job.max_attempts, 10);
    assert_eq!(job.run_at, T0);
    assert_eq!(job.created_at, T0);
    assert_eq!(job.updated_at, T0);
    assert_eq!(job.lease_until, None);
    assert_eq!(job.last_error, None);
    assert_eq!(fx.token_of(id), None);
    let second = fx.add(NewJob::new("emails", Vec::new()));
    assert!(second > id, "ids grow: {id} then {second}");
    assert_eq!(fx.job(second).payload, b"");
}

#[test]
fn add_stores_priority_attempts_delay_and_run_at() {
    let mut fx = Fx::new();
    let a = fx.add(NewJob::new("q", b"a".to_vec()).priority(7).max_attempts(3));
    let b = fx.add(NewJob::new("q", b"b".to_vec()).delay(ms(1_500)));
    let c = fx.add(NewJob::new("q", b"c".to_vec()).run_at(T0 + 99));
    let d = fx.add(NewJob::new("q", b"d".to_vec()).run_at(T0 - 5_000));
    let lo = fx.add(NewJob::new("q", b"e".to_vec()).priority(-100).max_attempts(1));
    let hi = fx.add(NewJob::new("q", b"f".to_vec()).priority(100));
    assert_eq!((fx.job(a).priority, fx.job(a).max_attempts), (7, 3));
    assert_eq!(fx.job(b).run_at, T0 + 1_500);
    assert_eq!(fx.job(c).run_at, T0 + 99);
    assert_eq!(fx.job(d).run_at, T0 - 5_000);
    assert_eq!((fx.job(lo).priority, fx.job(lo).max_attempts), (-100, 1));
    assert_eq!(fx.job(hi).priority, 100);
    // created_at is the add's time, not the run_at
    assert_eq!(fx.job(b).created_at, T0);
    // 200 characters is the longest queue name, counted in characters
    let long = "x".repeat(200);
    let wide = "é".repeat(200);
    let l = fx.add(NewJob::new(long.clone(), b"l".to_vec()));
    let w = fx.add(NewJob::new(wide.clone(), b"w".to_vec()));
    assert_eq!(fx.job(l).queue, long);
    assert_eq!(fx.job(w).queue, wide);
    assert_eq!(fx.claim_some(&wide).id, w);
}

#[test]
fn add_refuses_invalid_jobs_and_stores_nothing() {
    let mut fx = Fx::new();
    let cases: Vec<(NewJob, Invalid)> = vec![
        (NewJob::new("", b"x".to_vec()), Invalid::QueueLength(0)),
        (NewJob::new("q".repeat(201), b"x".to_vec()), Invalid::QueueLength(201)),
        (NewJob::new("é".repeat(201), b"x".to_vec()), Invalid::QueueLength(201)),
        (NewJob::new("a\0b", b"x".to_vec()), Invalid::QueueNul),
        (NewJob::new("q", b"x".to_vec()).priority(101), Invalid::Priority(101)),
        (NewJob::new("q", b"x".to_vec()).priority(-101), Invalid::Priority(-101)),
        (NewJob::new("q", b"x".to_vec()).max_attempts(0), Invalid::MaxAttempts(0)),
        (NewJob::new("q", b"x".to_vec()).max_attempts(-3), Invalid::MaxAttempts(-3)),
    ];
    for (job, expected) in &cases {
        match fx.file.add(job) {
            Err(Error::Invalid(e)) => assert_eq!(&e, expected, "{job:?}"),
            other => panic!("{job:?}: expected Error::Invalid, got {other:?}"),
        }
        match fx.file.add_batch(std::slice::from_ref(job)) {
            Err(Error::Invalid(e)) => assert_eq!(&e, expected, "batch {job:?}"),
            other => panic!("batch {job:?}: expected Error::Invalid, got {other:?}"),
        }
    }
    assert_eq!(fx.count(), 0);
    // no id was used up either
    assert_eq!(query_i64(fx.file.connection(), "SELECT count(*) FROM sqlite_sequence"), 0);
}

#[test]
fn steps_refuse_invalid_arguments() {
    let mut fx = Fx::new();
    let id = fx.add(NewJob::new("q", b"x".to_vec()));
    assert!(matches!(fx.file.claim("q", ms(0)), Err(Error::Invalid(Invalid::Lease(d))) if d.is_zero()));
    // the file holds whole milliseconds: less than one is no lease
    let short = std::time::Duration::from_micros(999);
    assert!(matches!(fx.file.claim("q", short), Err(Error::Invalid(Invalid::Lease(d))) if d == short));
    assert!(matches!(fx.file.claim_next("", ms(1_000)), Err(Error::Invalid(Invalid::QueueLength(0)))));
    assert!(matches!(fx.file.claim("a\0", ms(1_000)), Err(Error::Invalid(Invalid::QueueNul))));
    assert_eq!(fx.job(id).state, State::Ready, "a refused claim takes nothing");
    let c = fx.claim_some("q");
    assert!(matches!(fx.file.renew(c.id, &c.token, short), Err(Error::Invalid(Invalid::Lease(_)))));
    let job = fx.job(id);
    assert_eq!((job.state, job.lease_until), (State::Running, Some(c.lease_until)));
    fx.file.finish(c.id, &c.token, false).expect("the holder still holds it");
}

#[test]
fn add_batch_is_all_or_nothing() {
    let mut fx = Fx::new();
    let batch = vec![
        NewJob::new("q", b"1".to_vec()),
        NewJob::new("q", b"2".to_vec()),
        NewJob::new("q", b"3".to_vec()).priority(101),
        NewJob::new("q", b"4".to_vec()),
    ];
    assert!(matches!(fx.file.add_batch(&batch), Err(Error::Invalid(Invalid::Priority(101)))));
    assert_eq!(fx.count(), 0);

    // A failure inside the transaction (here an application's trigger)
    // rolls back the jobs already inserted.
    {
        let other = Connection::open(fx.file.path()).expect("second connection");
        other
            .execute_batch(
                "CREATE TRIGGER test_boom BEFORE INSERT ON ukue_jobs WHEN NEW.queue = 'boom'
                 BEGIN SELECT RAISE(ABORT, 'boom refused'); END",
            )
            .expect("trigger");
    }
    let batch = vec![NewJob::new("q", b"1".to_vec()), NewJob::new("boom", b"2".to_vec())];
    match fx.file.add_batch(&batch) {
        Err(Error::Sqlite(e)) => assert!(e.to_string().contains("boom refused"), "{e}"),
        other => panic!("expected the trigger's error, got {other:?}"),
    }
    assert_eq!(fx.count(), 0);
    assert!(fx.file.connection().is_autocommit(), "the failed batch left a transaction open");
    fx.file.connection().execute_batch("DROP TRIGGER test_boom").expect("drop trigger");

    let ids = fx
        .file
        .add_batch(&[NewJob::new("q", b"a".to_vec()), NewJob::new("r", b"b".to_vec())])
        .expect("batch");
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[1], ids[0] + 1);
    assert_eq!(fx.job(ids[0]).payload, b"a");
    assert_eq!(fx.job(ids[1]).queue, "r");
    assert_eq!(fx.file.add_batch(&[]).expect("empty batch"), Vec::<JobId>::new());
    assert_eq!(fx.count(), 2);
}

// ---------------------------------------------------------------- claim

#[test]
fn claim_order_is_priority_then_run_at_then_id() {
    let mut fx = Fx::new();
    let j = |p: i64, at: Millis| NewJob::new("q", b"x".to_vec()).priority(p).run_at(at);
    let late = fx.add(j(0, T0 - 10)); // smaller id, later run_at
    let early = fx.add(j(0, T0 - 20));
    let urgent = fx.add(j(5, T0));
    let early_twin = fx.add(j(0, T0 - 20)); // same run_at as `early`, larger id
    let low = fx.add(j(-3, T0 - 100_000));
    let _delayed = fx.add(j(100, T0 + 1));
    let _elsewhere = fx.add(NewJob::new("other", b"x".to_vec()).priority(100).run_at(T0 - 1_000));
    let order: Vec<JobId> = std::iter::from_fn(|| fx.claim("q").map(|c| c.id)).collect();
    assert_eq!(order, vec![urgent, early, early_twin, late, low]);
    assert_eq!(fx.claim_next("q"), Claim::Empty { next_due: Some(T0 + 1) });
}

#[test]
fn delayed_jobs_wait_for_their_run_at() {
    let mut fx = Fx::new();
    assert_eq!(fx.claim_next("q"), Claim::Empty { next_due: None });
    let id = fx.add(NewJob::new("q", b"later".to_vec()).delay(ms(5_000)));
    let later = fx.add(NewJob::new("q", b"even later".to_vec()).delay(ms(9_000)));
    assert_eq!(fx.claim_next("q"), Claim::Empty { next_due: Some(T0 + 5_000) });
    fx.set(T0 + 4_999);
    assert_eq!(fx.claim_next("q"), Claim::Empty { next_due: Some(T0 + 5_000) });
    assert_eq!(fx.job(id).state, State::Ready);
    fx.set(T0 + 5_000);
    match fx.claim_next("q") {
        Claim::Job(c) => {
            assert_eq!(c.id, id);
            assert_eq!(c.run_at, T0 + 5_000);
        }
        other => panic!("expected the job at its run_at, got {other:?}"),
    }
    assert_eq!(fx.claim_next("q"), Claim::Empty { next_due: Some(T0 + 9_000) });
    assert_eq!(fx.job(later).state, State::Ready);

    // A delayed job of higher priority does not jump ahead of a due one.
    let mut fx = Fx::new();
    let soon = fx.add(NewJob::new("q", b"soon".to_vec()).priority(50).delay(ms(1)));
    let due = fx.add(NewJob::new("q", b"due".to_vec()).priority(-50));
    assert_eq!(fx.claim_some("q").id, due);
    assert!(fx.claim("q").is_none());
    fx.set(T0 + 1);
    assert_eq!(fx.claim_some("q").id, soon);
}

fn is_token(token: &str) -> bool {
    token.len() == 32 && token.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[test]
fn claim_counts_attempts_and_hands_out_fresh_tokens() {
    let mut fx = Fx::new();
    let id = fx.add(NewJob::new("q", b"payload".to_vec()).priority(3).max_attempts(4));
    let first = fx.file.claim("q", ms(30_000)).expect("claim").expect("a job");
    assert_eq!(first.id, id);
    assert_eq!(first.attempt, 1);
    assert_eq!(first.queue, "q");
    assert_eq!(first.payload, b"payload");
    assert_eq!((first.priority, first.max_attempts), (3, 4));
    assert_eq!((first.run_at, first.created_at), (T0, T0));
    assert_eq!(first.lease_until, T0 + 30_000);
    assert_eq!(first.last_error, None);
    assert!(is_token(&first.token), "token {:?} is not 32 lowercase hex digits", first.token);
    let stored = fx.job(id);
    assert_eq!((stored.state, stored.attempts, stored.lease_until), (State::Running, 1, Some(T0 + 30_000)));
    assert_eq!(fx.token_of(id).as_deref(), Some(first.token.as_str()));
    assert!(fx.claim("q").is_none(), "a running job is not claimed twice");

    fx.set(T0 + 10);
    assert_eq!(
        fx.file.fail(id, &first.token, "try again", Retry::After(ms(0))).expect("fail"),
        Failed::Ready { run_at: T0 + 10 }
    );
    let second = fx.claim_some("q");
    assert_eq!((second.id, second.attempt), (id, 2));
    assert_eq!(second.last_error.as_deref(), Some("try again"));
    assert!(is_token(&second.token));
    assert_ne!(second.token, first.token);
    assert_eq!(second.lease_until, T0 + 10 + 60_000);

    let mut tokens = HashSet::new();
    for n in 0..20 {
        fx.add(NewJob::new("t", vec![n]));
        let c = fx.claim_some("t");
        assert!(is_token(&c.token));
        assert!(tokens.insert(c.token), "a token came twice");
    }
}

// ---------------------------------------------------------------- finish

#[test]
fn finish_deletes_or_keeps_done() {
    let mut fx = Fx::new();
    let gone = fx.add(NewJob::new("q", b"1".to_vec()));
    let kept = fx.add(NewJob::new("q", b"2".to_vec()));
    let c = fx.claim_some("q");
    assert_eq!(c.id, gone);
    fx.set(T0 + 7);
    fx.file.finish(c.id, &c.token, false).expect("finish");
    assert_eq!(fx.file.get(gone).expect("get"), None);
    lease_lost(fx.file.finish(c.id, &c.token, false), gone);

    let c = fx.claim_some("q");
    assert_eq!(c.id, kept);
    fx.set(T0 + 9);
    fx.file.finish(c.id, &c.token, true).expect("finish keep");
    let job = fx.job(kept);
    assert_eq!((job.state, job.lease_until, job.updated_at, job.attempts), (State::Done, None, T0 + 9, 1));
    assert_eq!(fx.token_of(kept), None);
    lease_lost(fx.file.finish(c.id, &c.token, true), kept);
    lease_lost(fx.file.finish(c.id, &c.token, false), kept);
    assert_eq!(fx.job(kept).state, State::Done, "a done job stays done");
    assert!(fx.claim("q").is_none(), "a done job is not claimed");
    assert_eq!(fx.stats_of("q").done, 1);
}

/// Every holder step with `token`, each expected to be refused.
fn all_refused(fx: &mut Fx, id: JobId, token: &str) {
    let before = fx.file.get(id).expect("get");
    lease_lost(fx.file.finish(id, token, false), id);
    lease_lost(fx.file.finish(id, token, true), id);
    lease_lost(fx.file.fail(id, token, "stale", Retry::Backoff), id);
    lease_lost(fx.file.fail(id, token, "stale", Retry::Never), id);
    lease_lost(fx.file.renew(id, token, ms(1_000_000)), id);
    lease_lost(fx.file.release(id, token), id);
    assert_eq!(fx.file.get(id).expect("get"), before, "a refused step changed the job");
}

#[test]
fn stale_tokens_are_refused() {
    let mut fx = Fx::new();
    let id = fx.add(NewJob::new("q", b"x".to_vec()));
    let old = fx.file.claim("q", ms(1_000)).expect("claim").expect("job");

    // a token that was never handed out
    all_refused(&mut fx, id, "00000000000000000000000000000000");
    all_refused(&mut fx, id, "");
    if old.token.to_uppercase() != old.token {
        all_refused(&mut fx, id, &old.token.to_uppercase());
    }
    // the right token on the wrong id
    let other = fx.add(NewJob::new("r", b"y".to_vec()));
    let other_claim = fx.file.claim("r", ms(1_000)).expect("claim").expect("job");
    assert_eq!(other_claim.id, other);
    all_refused(&mut fx, other, &old.token);
    all_refused(&mut fx, 9_999, &old.token);

    // after the lease ran out and the job was reaped and claimed again
    fx.set(T0 + 1_000);
    assert!(fx.claim("q").is_none(), "the reaped job waits out its backoff");
    assert_eq!(fx.job(id).state, State::Ready);
    all_refused(&mut fx, id, &old.token);
    fx.set(fx.job(id).run_at);
    let new = fx.claim_some("q");
    assert_eq!((new.id, new.attempt), (id, 2));
    all_refused(&mut fx, id, &old.token);
    assert_eq!(fx.file.renew(id, &new.token, ms(5_000)).expect("new holder renews"), fx.now() + 5_000);

    // after the job was deleted
    fx.file.delete(id).expect("delete");
    all_refused(&mut fx, id, &new.token);
}

// ---------------------------------------------------------------- fail

#[test]
fn fail_backs_off_exponentially_up_to_an_hour() {
    let mut fx = Fx::new();
    let id = fx.add(NewJob::new("q", b"x".to_vec()).max_attempts(30));
    let mut bases = Vec::new();
    for attempt in 1..=29 {
        let c = fx.claim_some("q");
        assert_eq!((c.id, c.attempt), (id, attempt));
        fx.clock.advance(ms(123));
        let now = fx.now();
        let error = format!("failure {attempt}");
        let Failed::Ready { run_at } = fx.file.fail(id, &c.token, &error, Retry::Backoff).expect("fail")
        else {
            panic!("attempt {attempt} of 30 went dead");
        };
        assert_backoff(run_at, now, attempt);
        bases.push(backoff_base(attempt));
        let job = fx.job(id);
        assert_eq!((job.state, job.run_at, job.attempts), (State::Ready, run_at, attempt));
        assert_eq!(job.last_error.as_deref(), Some(error.as_str()));
        assert_eq!(job.lease_until, None);
        fx.set(run_at - 1);
        assert_eq!(fx.claim_next("q"), Claim::Empty { next_due: Some(run_at) });
        fx.set(run_at);
    }
    assert_eq!(&bases[..4], &[10_000, 20_000, 40_000, 80_000]);
    assert!(bases[9..].iter().all(|b| *b == 3_600_000), "capped from attempt 10: {bases:?}");
    let c = fx.claim_some("q");
    assert_eq!(c.attempt, 30);
    assert_eq!(fx.file.fail(id, &c.token, "last", Retry::Backoff).expect("fail"), Failed::Dead);
    let job = fx.job(id);
    assert_eq!((job.state, job.attempts, job.last_error.as_deref()), (State::Dead, 30, Some("last")));
    assert!(fx.claim("q").is_none(), "a dead job is not claimed");
}

#[test]
fn fail_retry_after_never_and_last_attempt() {
    let mut fx = Fx::new();
    let id = fx.add(NewJob::new("q", b"x".to_vec()).max_attempts(3).run_at(T0 - 500));
    let c = fx.claim_some("q");
    fx.set(T0 + 40);
    assert_eq!(
        fx.file.fail(id, &c.token, "wait", Retry::After(ms(1_234))).expect("fail"),
        Failed::Ready { run_at: T0 + 40 + 1_234 }
    );
    assert_eq!(fx.job(id).run_at, T0 + 40 + 1_234);
    fx.set(T0 + 40 + 1_234);
    let c = fx.claim_some("q");
    assert_eq!(c.attempt, 2);
    assert_eq!(
        fx.file.fail(id, &c.token, "at once", Retry::After(ms(0))).expect("fail"),
        Failed::Ready { run_at: fx.now() }
    );
    let c = fx.claim_some("q");
    assert_eq!(c.attempt, 3);
    // the last attempt goes dead even when the caller asks for a retry
    assert_eq!(
        fx.file.fail(id, &c.token, "out of attempts", Retry::After(ms(5))).expect("fail"),
        Failed::Dead
    );
    let job = fx.job(id);
    assert_eq!((job.state, job.attempts), (State::Dead, 3));
    assert_eq!(job.run_at, T0 + 40 + 1_234, "a dead job keeps its run_at");
    assert_eq!(job.last_error.as_deref(), Some("out of attempts"));

    // Retry::Never: dead on the first attempt
    let added_at = fx.now();
    let id = fx.add(NewJob::new("q", b"y".to_vec()));
    let c = fx.claim_some("q");
    fx.clock.advance(ms(10));
    assert_eq!(fx.file.fail(id, &c.token, "permanent", Retry::Never).expect("fail"), Failed::Dead);
    let job = fx.job(id);
    assert_eq!((job.state, job.attempts, job.max_attempts), (State::Dead, 1, 10));
    assert_eq!(job.run_at, added_at, "Never keeps the run_at the job had");
    assert_eq!(job.last_error.as_deref(), Some("permanent"));
    assert_eq!(fx.token_of(id), None);
}

// ---------------------------------------------------------------- reaping

#[test]
fn a_claim_of_any_queue_reaps_expired_leases() {
    let mut fx = Fx::new();
    let id = fx.add(NewJob::new("q", b"x".to_vec()).max_attempts(3));
    let c = fx.file.claim("q", ms(1_000)).expect("claim").expect("job");
    assert_eq!(c.lease_until, T0 + 1_000);

    fx.set(T0 + 999);
    assert!(fx.claim("other").is_none());
    assert_eq!(fx.job(id).state, State::Running, "reaped before its lease ran out");
    assert_eq!(fx.stats_of("q").running, 1);

    fx.set(T0 + 1_000);
    let s = fx.stats_of("q");
    assert_eq!((s.running, s.expired), (0, 1), "stats count the expired lease but do not reap it");
    assert_eq!(fx.job(id).state, State::Running);
    assert!(fx.claim("other").is_none());
    let job = fx.job(id);
    assert_eq!(job.state, State::Ready);
    assert_eq!(job.attempts, 1, "the expired attempt counts");
    assert_eq!(job.lease_until, None);
    assert_eq!(fx.token_of(id), None);
    assert_eq!(job.last_error.as_deref(), Some("lease expired (attempt 1 of 3)"));
    assert_eq!(job.updated_at, T0 + 1_000);
    assert_backoff(job.run_at, T0 + 1_000, 1);
    lease_lost(fx.file.finish(id, &c.token, false), id);

    fx.set(job.run_at);
    let c = fx.file.claim("q", ms(1_000)).expect("claim").expect("job");
    assert_eq!(c.attempt, 2);
    assert!(c.last_error.as_deref().is_some_and(|e| e.contains("lease expired")));
    fx.set(c.lease_until + 5);
    assert!(fx.claim("yet another").is_none());
    let job = fx.job(id);
    assert_eq!((job.state, job.attempts), (State::Ready, 2));
    assert_backoff(job.run_at, c.lease_until + 5, 2);

    fx.set(job.run_at);
    let c = fx.file.claim("q", ms(1_000)).expect("claim").expect("job");
    assert_eq!(c.attempt, 3);
    fx.set(c.lease_until);
    assert!(fx.claim("other").is_none());
    let job = fx.job(id);
    assert_eq!((job.state, job.attempts), (State::Dead, 3), "the last attempt's expiry is final");
    assert_eq!(job.last_error.as_deref(), Some("lease expired (attempt 3 of 3)"));
    assert_eq!(job.lease_until, None);
    assert_eq!(fx.token_of(id), None);
    assert_eq!(fx.stats_of("q").dead, 1);
}

#[test]
fn reaping_a_single_attempt_job_kills_it() {
    let mut fx = Fx::new();
    let id = fx.add(NewJob::new("q", b"x".to_vec()).max_attempts(1));
    let keep = fx.add(NewJob::new("q", b"y".to_vec()).max_attempts(1));
    let c = fx.file.claim("q", ms(10)).expect("claim").expect("job");
    assert_eq!(c.id, id);
    fx.set(T0 + 10);
    // the same queue's claim reaps first, then takes the other job
    assert_eq!(fx.claim_some("q").id, keep);
    let job = fx.job(id);
    assert_eq!((job.state, job.attempts), (State::Dead, 1));
    assert_eq!(job.last_error.as_deref(), Some("lease expired (attempt 1 of 1)"));
    assert_eq!(job.run_at, T0, "a reaped dead job keeps its run_at");
}

#[test]
fn an_expired_holder_nobody_reaped_still_holds_the_job() {
    let mut fx = Fx::new();
    let a = fx.add(NewJob::new("q", b"a".to_vec()));
    let b = fx.add(NewJob::new("q", b"b".to_vec()));
    let c = fx.add(NewJob::new("q", b"c".to_vec()));
    let ca = fx.file.claim("q", ms(1_000)).expect("claim").expect("a");
    let cb = fx.file.claim("q", ms(1_000)).expect("claim").expect("b");
    let cc = fx.file.claim("q", ms(1_000)).expect("claim").expect("c");
    assert_eq!((ca.id, cb.id, cc.id), (a, b, c));
    fx.set(T0 + 50_000);
    fx.file.finish(a, &ca.token, false).expect("finish after the lease ran out");
    assert_eq!(fx.file.get(a).expect("get"), None);
    assert_eq!(fx.file.renew(b, &cb.token, ms(1_000)).expect("renew after the lease ran out"), T0 + 51_000);
    fx.file.release(c, &cc.token).expect("release after the lease ran out");
    assert_eq!(fx.job(c).attempts, 0);
    // b's renewed lease now protects it from a claim's reaping
    fx.set(T0 + 50_999);
    assert_eq!(fx.claim_some("q").id, c);
    assert_eq!(fx.job(b).state, State::Running);
    fx.file.finish(b, &cb.token, true).expect("finish keep");
}

#[test]
fn renew_extends_the_lease_and_prevents_reaping() {
    let mut fx = Fx::new();
    let id = fx.add(NewJob::new("q", b"x".to_vec()));
    let c = fx.file.claim("q", ms(1_000)).expect("claim").expect("job");
    fx.set(T0 + 900);
    assert_eq!(fx.file.renew(id, &c.token, ms(1_000)).expect("renew"), T0 + 1_900);
    let job = fx.job(id);
    assert_eq!((job.lease_until, job.updated_at, job.attempts), (Some(T0 + 1_900), T0 + 900, 1));
    fx.set(T0 + 1_500);
    assert!(fx.claim("other").is_none());
    assert_eq!(fx.job(id).state, State::Running);
    assert_eq!(fx.token_of(id).as_deref(), Some(c.token.as_str()));
    // a renew may also shorten the lease: it is always now + lease
    assert_eq!(fx.file.renew(id, &c.token, ms(1)).expect("renew"), T0 + 1_501);
    fx.set(T0 + 1_501);
    assert!(fx.claim("other").is_none());
    assert_eq!(fx.job(id).state, State::Ready, "reaped at the renewed lease_until");
    lease_lost(fx.file.renew(id, &c.token, ms(1_000)), id);
}

#[test]
fn durations_past_the_largest_time_are_refused() {
    // SQLite turns `:now + :lease` past i64::MAX into a REAL; stored, it
    // made the job unreadable and wedged its queue's claims.
    let mut fx = Fx::new();
    let id = fx.add(NewJob::new("q", b"x".to_vec()));
    let forever = std::time::Duration::MAX;
    assert!(matches!(fx.file.claim("q", forever), Err(Error::Invalid(Invalid::TooLong(d))) if d == forever));
    let to_the_end = (Millis::MAX - T0) as u64;
    assert!(matches!(fx.file.claim("q", ms(to_the_end + 1)), Err(Error::Invalid(Invalid::TooLong(_)))));
    let c = fx.claim_some("q");
    let before = fx.job(id);
    assert!(matches!(fx.file.renew(id, &c.token, forever), Err(Error::Invalid(Invalid::TooLong(_)))));
    assert!(matches!(
        fx.file.fail(id, &c.token, "e", Retry::After(ms(to_the_end + 1))),
        Err(Error::Invalid(Invalid::TooLong(_)))
    ));
    assert_eq!(fx.job(id), before, "a refused step changed the job");
    // the largest time itself is fine
    assert_eq!(fx.file.renew(id, &c.token, ms(to_the_end)).expect("renew"), Millis::MAX);
    assert_eq!(
        fx.file.fail(id, &c.token, "e", Retry::After(ms(to_the_end))).expect("fail"),
        Failed::Ready { run_at: Millis::MAX }
    );
    assert_eq!(fx.claim_next("q"), Claim::Empty { next_due: Some(Millis::MAX) });
    let far = fx.add(NewJob::new("q", b"y".to_vec()).delay(forever));
    assert_eq!(fx.job(far).run_at, Millis::MAX, "a delay saturates");
    assert_eq!(
        fx.list(ListFilter { state: Some(ListState::Delayed), ..ListFilter::default() }),
        vec![id, far]
    );
}

// ---------------------------------------------------------------- release

#[test]
fn release_gives_back_the_attempt_and_keeps_the_place() {
    let mut fx = Fx::new();
    let first = fx.add(NewJob::new("q", b"1".to_vec()).run_at(T0 - 50));
    let second = fx.add(NewJob::new("q", b"2".to_vec()).run_at(T0 - 40));
    let c = fx.claim_some("q");
    assert_eq!(c.id, first);
    fx.set(T0 + 5);
    fx.file.release(first, &c.token).expect("release");
    let job = fx.job(first);
    assert_eq!((job.state, job.attempts, job.run_at), (State::Ready, 0, T0 - 50));
    assert_eq!((job.lease_until, job.updated_at), (None, T0 + 5));
    assert_eq!(fx.token_of(first), None);
    lease_lost(fx.file.release(first, &c.token), first);
    let c = fx.claim_some("q");
    assert_eq!((c.id, c.attempt), (first, 1), "the released job keeps its place and its attempt");

    fx.file.finish(first, &c.token, false).expect("finish");
    assert_eq!(fx.job(second).state, State::Ready);

    // a second attempt released goes back to one counted attempt
    let again = fx.add(NewJob::new("r", b"3".to_vec()).max_attempts(2));
    let c = fx.claim_some("r");
    fx.file.fail(again, &c.token, "once", Retry::After(ms(0))).expect("fail");
    let c = fx.claim_some("r");
    assert_eq!((c.id, c.attempt), (again, 2));
    fx.file.release(again, &c.token).expect("release");
    let job = fx.job(again);
    assert_eq!((job.state, job.attempts), (State::Ready, 1));
    assert_eq!(job.last_error.as_deref(), Some("once"));
    let c = fx.claim_some("r");
    assert_eq!((c.id, c.attempt), (again, 2));
    // and with the attempt given back, its last attempt is still to come
    assert_eq!(fx.file.fail(again, &c.token, "twice", Retry::Backoff).expect("fail"), Failed::Dead);
}

// ---------------------------------------------------------------- retry, delete, purge

#[test]
fn retry_sends_a_dead_job_back() {
    let mut fx = Fx::new();
    let dead = fx.make_dead("q");
    fx.set(T0 + 77);
    fx.file.retry(dead).expect("retry");
    let job = fx.job(dead);
    assert_eq!((job.state, job.attempts, job.run_at, job.updated_at), (State::Ready, 0, T0 + 77, T0 + 77));
    assert!(
        matches!(fx.file.retry(dead), Err(Error::NotDead { id, ref state }) if id == dead && state == "ready")
    );
    let c = fx.claim_some("q");
    assert_eq!((c.id, c.attempt), (dead, 1));
    assert!(matches!(fx.file.retry(dead), Err(Error::NotDead { ref state, .. }) if state == "running"));
    fx.file.finish(dead, &c.token, true).expect("finish");
    assert!(matches!(fx.file.retry(dead), Err(Error::NotDead { ref state, .. }) if state == "done"));
    assert!(matches!(fx.file.retry(4_242), Err(Error::JobNotFound { id: 4_242 })));
    assert_eq!(fx.job(dead).state, State::Done);
}

#[test]
fn retry_all_with_and_without_a_queue() {
    let mut fx = Fx::new();
    let q1 = fx.make_dead("q");
    let q2 = fx.make_dead("q");
    let r1 = fx.make_dead("r");
    let ready = fx.add(NewJob::new("q", b"ready".to_vec()).delay(ms(100_000)));
    let done = fx.make_done("r");
    fx.set(T0 + 3);
    assert_eq!(fx.file.retry_all(Some("q")).expect("retry_all q"), 2);
    for id in [q1, q2] {
        let job = fx.job(id);
        assert_eq!((job.state, job.attempts, job.run_at), (State::Ready, 0, T0 + 3));
    }
    assert_eq!(fx.job(r1).state, State::Dead);
    assert_eq!(fx.file.retry_all(Some("nothing here")).expect("retry_all"), 0);
    assert_eq!(fx.file.retry_all(None).expect("retry_all"), 1);
    assert_eq!(fx.job(r1).state, State::Ready);
    assert_eq!(fx.file.retry_all(None).expect("retry_all"), 0);
    assert_eq!(fx.job(ready).run_at, T0 + 100_000, "retry_all leaves ready jobs alone");
    assert_eq!(fx.job(done).state, State::Done, "retry_all leaves done jobs alone");
}

#[test]
fn delete_takes_a_job_in_any_state() {
    let mut fx = Fx::new();
    let ready = fx.add(NewJob::new("q", b"r".to_vec()));
    let delayed = fx.add(NewJob::new("q", b"l".to_vec()).delay(ms(60_000)));
    let dead = fx.make_dead("q");
    let done = fx.make_done("q");
    let running = fx.add(NewJob::new("q", b"n".to_vec()));
    let c = fx.claim_until("q", running);
    for id in [ready, delayed, dead, done, running] {
        fx.file.delete(id).expect("delete");
        assert_eq!(fx.file.get(id).expect("get"), None);
        assert!(matches!(fx.file.delete(id), Err(Error::JobNotFound { id: got }) if got == id));
    }
    lease_lost(fx.file.finish(running, &c.token, false), running);
    assert!(matches!(fx.file.delete(123_456), Err(Error::JobNotFound { id: 123_456 })));
    assert_eq!(fx.count(), 0);
    // ids are never reused, even after the largest was deleted
    let next = fx.add(NewJob::new("q", b"new".to_vec()));
    assert!(next > running, "id {next} reused (largest ever was {running})");
}

#[test]
fn purge_takes_only_the_given_state() {
    let mut fx = Fx::new();
    let dead_q = [fx.make_dead("q"), fx.make_dead("q")];
    let dead_r = fx.make_dead("r");
    let done_q = fx.make_done("q");
    let done_r = fx.make_done("r");
    let ready = fx.add(NewJob::new("q", b"ready".to_vec()));
    let delayed = fx.add(NewJob::new("q", b"delayed".to_vec()).delay(ms(1_000)));
    let running = fx.add(NewJob::new("r", b"running".to_vec()));
    let c = fx.claim_until("r", running);

    assert!(matches!(fx.file.purge(State::Ready, None), Err(Error::Invalid(Invalid::PurgeState(_)))));
    assert!(matches!(fx.file.purge(State::Running, Some("r")), Err(Error::Invalid(Invalid::PurgeState(_)))));
    assert_eq!(fx.count(), 8);

    assert_eq!(fx.file.purge(State::Dead, Some("q")).expect("purge"), 2);
    for id in dead_q {
        assert_eq!(fx.file.get(id).expect("get"), None);
    }
    assert_eq!(fx.job(dead_r).state, State::Dead);
    assert_eq!(fx.job(done_q).state, State::Done);
    assert_eq!(fx.file.purge(State::Done, None).expect("purge"), 2);
    assert_eq!(fx.file.get(done_q).expect("get"), None);
    assert_eq!(fx.file.get(done_r).expect("get"), None);
    assert_eq!(fx.job(dead_r).state, State::Dead);
    assert_eq!(fx.file.purge(State::Dead, Some("q")).expect("purge"), 0);
    assert_eq!(fx.file.purge(State::Dead, None).expect("purge"), 1);
    let left: Vec<JobId> = fx.list(ListFilter::default());
    assert_eq!(left, vec![ready, delayed, running]);
    fx.file.finish(running, &c.token, false).expect("the running job was untouched");
}

// ---------------------------------------------------------------- reading

#[test]
fn get_and_list_filter_and_page() {
    let mut fx = Fx::new();
    let due = fx.add(NewJob::new("a", b"due".to_vec()));
    let at_now = fx.add(NewJob::new("b", b"at now".to_vec()).run_at(T0 + 10));
    let delayed = fx.add(NewJob::new("a", b"delayed".to_vec()).run_at(T0 + 11));
    let dead = fx.make_dead("b");
    let done = fx.make_done("a");
    let running = fx.add(NewJob::new("a", b"running".to_vec()));
    fx.claim_until("a", running);
    fx.set(T0 + 10);

    assert_eq!(fx.file.get(999).expect("get"), None);
    let job = fx.job(delayed);
    assert_eq!((job.queue.as_str(), job.payload.as_slice(), job.run_at), ("a", &b"delayed"[..], T0 + 11));

    let all = vec![due, at_now, delayed, dead, done, running];
    assert_eq!(fx.list(ListFilter::default()), all);
    let by = |queue: Option<&str>, state: Option<ListState>| ListFilter {
        queue: queue.map(String::from),
        state,
        ..ListFilter::default()
    };
    assert_eq!(fx.list(by(Some("a"), None)), vec![due, delayed, done, running]);
    assert_eq!(fx.list(by(Some("b"), None)), vec![at_now, dead]);
    assert_eq!(fx.list(by(Some("c"), None)), Vec::<JobId>::new());
    assert_eq!(fx.list(by(None, Some(ListState::Ready))), vec![due, at_now], "run_at == now is due");
    assert_eq!(fx.list(by(None, Some(ListState::Delayed))), vec![delayed]);
    assert_eq!(fx.list(by(None, Some(ListState::Running))), vec![running]);
    assert_eq!(fx.list(by(None, Some(ListState::Dead))), vec![dead]);
    assert_eq!(fx.list(by(None, Some(ListState::Done))), vec![done]);
    assert_eq!(fx.list(by(Some("a"), Some(ListState::Ready))), vec![due]);
    assert_eq!(fx.list(by(Some("b"), Some(ListState::Delayed))), Vec::<JobId>::new());
    fx.set(T0 + 11);
    assert_eq!(fx.list(by(None, Some(ListState::Delayed))), Vec::<JobId>::new());
    assert_eq!(fx.list(by(None, Some(ListState::Ready))), vec![due, at_now, delayed]);

    // paging
    let page = |after: JobId, limit: i64| fx.list(ListFilter { after, limit, ..ListFilter::default() });
    assert_eq!(page(0, 4), all[..4].to_vec());
    assert_eq!(page(all[3], 4), all[4..].to_vec());
    assert_eq!(page(all[5], 4), Vec::<JobId>::new());
    assert_eq!(page(0, 1), vec![due]);
    assert_eq!(page(due, 1), vec![at_now]);
    assert_eq!(page(0, 1000), all);
    for bad in [0, -1, 1001] {
        let filter = ListFilter { limit: bad, ..ListFilter::default() };
        assert!(
            matches!(fx.file.list(&filter), Err(Error::Invalid(Invalid::Limit(l))) if l == bad),
            "limit {bad}"
        );
    }
    // list returns the same jobs get does
    let listed = fx.file.list(&ListFilter::default()).expect("list");
    for job in listed {
        assert_eq!(fx.job(job.id), job);
    }
}

#[test]
fn stats_counts_do_not_overlap() {
    let mut fx = Fx::new();
    // queue "a": 1 ready, 2 delayed, 3 running, 4 expired, 5 dead, 6 done
    for _ in 0..5 {
        fx.make_dead("a");
    }
    for _ in 0..6 {
        fx.make_done("a");
    }
    for n in 0..7u8 {
        fx.add(NewJob::new("a", vec![n]));
    }
    for _ in 0..4 {
        fx.file.claim("a", ms(100)).expect("claim").expect("job");
    }
    for _ in 0..3 {
        fx.file.claim("a", ms(100_000)).expect("claim").expect("job");
    }
    let oldest = fx.add(NewJob::new("a", b"ready".to_vec()).run_at(T0 - 3));
    fx.add(NewJob::new("a", b"delayed".to_vec()).run_at(T0 + 200));
    fx.add(NewJob::new("a", b"delayed".to_vec()).run_at(T0 + 300));
    // queue "b": only delayed; queue "0" sorts first
    fx.add(NewJob::new("b", b"later".to_vec()).delay(ms(1_000)));
    fx.add(NewJob::new("0", b"x".to_vec()).run_at(T0 + 100));
    fx.set(T0 + 100);

    let stats = fx.file.stats().expect("stats");
    let queues: Vec<&str> = stats.iter().map(|s| s.queue.as_str()).collect();
    assert_eq!(queues, ["0", "a", "b"]);
    assert_eq!(
        stats[1],
        QueueStats {
            queue: "a".into(),
            ready: 1,
            delayed: 2,
            running: 3,
            expired: 4,
            dead: 5,
            done: 6,
            oldest_due: Some(T0 - 3),
        }
    );
    assert_eq!(
        stats[0],
        QueueStats { queue: "0".into(), ready: 1, oldest_due: Some(T0 + 100), ..QueueStats::default() }
    );
    assert_eq!(stats[2], QueueStats { queue: "b".into(), delayed: 1, ..QueueStats::default() });
    assert_eq!(fx.job(oldest).state, State::Ready);
    // stats only read: the expired jobs are still running
    assert_eq!(query_i64(fx.file.connection(), "SELECT count(*) FROM ukue_jobs WHERE state = 'running'"), 7);
}

// ---------------------------------------------------------------- other programs

#[test]
fn a_text_payload_added_by_plain_sql_is_claimed_as_bytes() {
    let mut fx = Fx::new();
    fx.file
        .connection()
        .execute("INSERT INTO ukue_jobs (queue, payload) VALUES ('q','hello')", [])
        .expect("plain insert");
    let (id, run_at): (JobId, Millis) = fx
        .file
        .connection()
        .query_row("SELECT id, run_at FROM ukue_jobs", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("row");
    assert_eq!(query_string(fx.file.connection(), "SELECT typeof(payload) FROM ukue_jobs"), "text");
    // the short form takes run_at from SQLite's clock; catch up with it
    fx.set(run_at.max(T0));
    let c = fx.claim_some("q");
    assert_eq!((c.id, c.payload.as_slice(), c.attempt, c.max_attempts), (id, &b"hello"[..], 1, 10));
    assert_eq!(fx.job(id).payload, b"hello");
    fx.file.finish(id, &c.token, false).expect("finish");
}

#[test]
fn add_in_follows_the_callers_transaction() {
    let mut fx = Fx::new();
    let mut app = Connection::open(fx.file.path()).expect("app connection");
    app.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL)").expect("app table");

    let tx = app.transaction().expect("begin");
    tx.execute("INSERT INTO orders (item) VALUES ('lost')", []).expect("app insert");
    let rolled = add_in(&tx, &NewJob::new("orders", b"lost".to_vec()), T0).expect("add_in");
    tx.rollback().expect("rollback");
    assert_eq!(fx.file.get(rolled).expect("get"), None);
    assert_eq!(fx.count(), 0);

    let tx = app.transaction().expect("begin");
    tx.execute("INSERT INTO orders (item) VALUES ('kept')", []).expect("app insert");
    let kept = add_in(&tx, &NewJob::new("orders", b"kept".to_vec()).priority(2), T0 + 1).expect("add_in");
    assert!(matches!(
        add_in(&tx, &NewJob::new("", b"bad".to_vec()), T0),
        Err(Error::Invalid(Invalid::QueueLength(0)))
    ));
    tx.commit().expect("commit");
    let job = fx.job(kept);
    assert_eq!(
        (job.payload.as_slice(), job.priority, job.created_at, job.run_at),
        (&b"kept"[..], 2, T0 + 1, T0 + 1)
    );
    assert_eq!(query_i64(&app, "SELECT count(*) FROM orders"), 1);
    assert_eq!(fx.count(), 1);
    fx.set(T0 + 1);
    assert_eq!(fx.claim_some("orders").id, kept);
}

#[test]
fn attach_keeps_the_applications_database() {
    let tmp = TempPath::new("app.db");
    let app = Connection::open(&tmp.path).expect("app db");
    app.execute_batch(
        "PRAGMA application_id = 305419896;
         CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
         INSERT INTO accounts (name) VALUES ('ada'), ('grace');",
    )
    .expect("app schema");
    let clock = ManualClock::new(T0);
    let mut file =
        Ukue::options().clock(clock.clone()).access(Access::AddTables).attach(app).expect("attach");
    let conn = file.connection();
    assert_eq!(query_i64(conn, "PRAGMA application_id"), 305_419_896);
    assert_eq!(query_string(conn, "PRAGMA journal_mode"), "wal");
    assert_eq!(query_i64(conn, "SELECT count(*) FROM accounts"), 2);
    assert_eq!(
        query_string(conn, "SELECT group_concat(name, ',') FROM (SELECT name FROM accounts ORDER BY id)"),
        "ada,grace"
    );
    assert_eq!(query_string(conn, "SELECT value FROM ukue_meta WHERE key = 'format_version'"), "1");
    assert_eq!(query_string(conn, "SELECT value FROM ukue_meta WHERE key = 'created_at'"), T0.to_string());
    let id = file.add(&NewJob::new("q", b"x".to_vec())).expect("add");
    let c = file.claim("q", ms(1_000)).expect("claim").expect("job");
    assert_eq!(c.id, id);
    file.finish(c.id, &c.token, true).expect("finish");
    assert_invariants(file.connection());
    drop(file);

    // attaching again adds nothing, and a plain open accepts the file
    clock.set(T0 + 1);
    let app = Connection::open(&tmp.path).expect("reopen");
    let file =
        Ukue::options().clock(clock.clone()).access(Access::AddTables).attach(app).expect("attach again");
    let conn = file.connection();
    assert_eq!(query_i64(conn, "SELECT count(*) FROM ukue_meta"), 3);
    assert_eq!(query_string(conn, "SELECT value FROM ukue_meta WHERE key = 'created_at'"), T0.to_string());
    assert_eq!(query_i64(conn, "PRAGMA application_id"), 305_419_896);
    assert_eq!(query_i64(conn, "SELECT count(*) FROM accounts"), 2);
    assert_invariants(conn);
    drop(file);
    let file = Ukue::open(&tmp.path).expect("open");
    assert_eq!(file.get(id).expect("get").map(|j| j.state), Some(State::Done));
}

#[test]
fn a_new_file_is_stamped_and_in_wal_mode() {
    let fx = Fx::new();
    let conn = fx.file.connection();
    assert_eq!(query_i64(conn, "PRAGMA application_id"), 1_969_976_677);
    assert_eq!(query_string(conn, "PRAGMA journal_mode"), "wal");
    assert_eq!(query_i64(conn, "PRAGMA synchronous"), 2, "synchronous = FULL");
    assert_eq!(fx.file.busy_timeout(), ms(5_000), "FORMAT.md's busy timeout, polled");
    let meta: Vec<(String, String)> = conn
        .prepare("SELECT key, value FROM ukue_meta ORDER BY key")
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .expect("meta");
    assert_eq!(meta.len(), 3);
    assert_eq!(meta[0], ("created_at".into(), T0.to_string()));
    assert_eq!(meta[1].0, "created_by");
    assert!(meta[1].1.starts_with("ukue ") && meta[1].1.ends_with("(Rust)"), "{:?}", meta[1].1);
    assert_eq!(meta[2], ("format_version".into(), "1".into()));
    // and a plain open of it works
    let again = Ukue::open(fx.file.path()).expect("open");
    assert_eq!(query_string(again.connection(), "PRAGMA journal_mode"), "wal");
}

// ---------------------------------------------------------------- scale

/// The query plan of `sql`, one detail line a step.
fn query_plan(conn: &Connection, sql: &str, params: &[(&str, &dyn rusqlite::ToSql)]) -> Vec<String> {
    let mut st = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).expect("explain");
    let rows = st.query_map(params, |r| r.get::<_, String>(3)).expect("plan");
    rows.collect::<rusqlite::Result<_>>().expect("plan rows")
}

fn assert_searches(plan: &[String], what: &str) {
    assert!(!plan.is_empty(), "{what}: empty plan");
    for line in plan {
        // `SCAN level` walks pick's own list of priorities, not the table.
        assert!(!line.contains("SCAN") || line == "SCAN level", "{what} scans: {plan:?}");
        assert!(!line.contains("TEMP B-TREE"), "{what} sorts: {plan:?}");
    }
    assert!(
        plan.iter().any(|l| l.starts_with("SEARCH")
            && (l.contains("INDEX ukue_jobs_next") || l.contains("INDEX ukue_jobs_due"))),
        "{what} does not search a ukue index: {plan:?}"
    );
}

#[test]
fn many_delayed_jobs_do_not_slow_an_empty_claim() {
    let mut fx = Fx::new();
    let total = 100_000;
    let chunk = 10_000;
    for start in (0..total).step_by(chunk) {
        let batch: Vec<NewJob> = (start..start + chunk)
            .map(|n| NewJob::new("q", Vec::new()).run_at(T0 + 1_000 + (n as Millis * 7919) % 1_000_003))
            .collect();
        assert_eq!(fx.file.add_batch(&batch).expect("batch").len(), chunk);
    }
    let earliest = query_i64(fx.file.connection(), "SELECT min(run_at) FROM ukue_jobs");
    assert_eq!(fx.claim_next("q"), Claim::Empty { next_due: Some(earliest) });

    let spec = Spec::builtin();
    let conn = fx.file.connection();
    let next = spec.sql(Stmt::NextRunAt);
    let pick = spec.sql(Stmt::Pick);
    let plan = query_plan(conn, next, &[(":queue", &"q")]);
    assert_searches(&plan, "next_run_at");
    assert!(plan.iter().any(|l| l.contains("ukue_jobs_next")), "next_run_at: {plan:?}");
    let plan = query_plan(conn, pick, &[(":queue", &"q"), (":now", &T0)]);
    assert_searches(&plan, "pick");
    assert!(plan.iter().any(|l| l.contains("ukue_jobs_due")), "pick: {plan:?}");
    // Reaping seeks the expired leases only, however many jobs run.
    for stmt in [Stmt::ReapDead, Stmt::ReapReady] {
        let plan = query_plan(conn, spec.sql(stmt), &[(":now", &T0)]);
        assert!(
            plan.len() == 1 && plan[0].starts_with("SEARCH") && plan[0].contains("ukue_jobs_leases"),
            "{}: {plan:?}",
            stmt.name()
        );
    }

    // and the empty claim's look reads a handful of rows, not 100,000
    let mut st = conn.prepare(next).expect("prepare");
    let got: Millis = st.query_row(named_params! {":queue": "q"}, |r| r.get(0)).expect("next");
    assert_eq!(got, earliest);
    let steps = st.get_status(rusqlite::StatementStatus::VmStep);
    assert!(steps < 100, "next_run_at took {steps} VM steps");
    assert_eq!(st.get_status(rusqlite::StatementStatus::FullscanStep), 0);
    assert_eq!(st.get_status(rusqlite::StatementStatus::Sort), 0);
}

#[test]
fn delayed_jobs_of_a_higher_priority_are_skipped_not_walked() {
    let mut fx = Fx::new();
    let batch: Vec<NewJob> =
        (0..20_000).map(|n| NewJob::new("q", Vec::new()).priority(50).run_at(T0 + 1_000 + n)).collect();
    fx.file.add_batch(&batch).expect("delayed jobs");
    let levels: Vec<NewJob> =
        (-100..50).map(|p| NewJob::new("q", Vec::new()).priority(p).run_at(T0 + 5)).collect();
    fx.file.add_batch(&levels).expect("a delayed job at every lower priority");
    let due = fx.file.add(&NewJob::new("q", b"due".to_vec()).run_at(T0 - 1)).expect("due job");

    let conn = fx.file.connection();
    let mut st = conn.prepare(Spec::builtin().sql(Stmt::Pick)).expect("prepare");
    let picked: JobId = st.query_row(named_params! {":queue": "q", ":now": T0}, |r| r.get(0)).expect("pick");
    assert_eq!(picked, due);
    // One seek per priority level (151 here), not one step per delayed job.
    let steps = st.get_status(rusqlite::StatementStatus::VmStep);
    assert!(steps < 10_000, "pick took {steps} VM steps past 20,000 delayed jobs");
    assert_eq!(st.get_status(rusqlite::StatementStatus::FullscanStep), 0);
}
