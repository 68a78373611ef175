//! A pure model of the ukue file format, version 1 (spec/FORMAT.md §5):
//! jobs, queues and an explicit clock, with no I/O.
//!
//! [`Model::expect`] gives the outcomes an op may have (its *allowed
//! outcomes*); [`Model::observe`] checks what a subject answered against
//! them and moves the model on. FORMAT.md leaves two things open, and the
//! model keeps them open rather than guessing:
//!
//! - a token is any fresh value: the model names tokens by the claim that
//!   took them ([`Label`]) and maps each to the token it saw;
//! - the backoff's jitter: a job's `run_at` is a range
//!   `[now + b, now + b + b/10]` (b = min(10000·2^(attempts−1), 3600000))
//!   until an answer shows it (a claim's or a fail's `run_at`); a claim may
//!   then take any job that some choice within the ranges puts first, and
//!   what it took narrows the ranges of the others.
//!
//! The model is the oracle of every step of a model-based run
//! (crate::explore: the generator, the runs, the fuzzer and the replay
//! command all use this one model), and says in what order a worker takes
//! a file's jobs ([`Model::claim_order`], for the steps cases).

pub mod op;

use std::collections::BTreeMap;
use std::fmt;

use crate::shown::Shown;
use crate::subjects::driver::{Answer, ErrorKind, JobAnswer, Millis, Request};
use crate::subjects::observe::file::Row;
pub use op::{FailHow, Label, Op, PurgeState, FORGED_TOKEN};

/// Where every model-based run starts its clock (2023-11-14T22:13:20Z).
pub const START_MS: Millis = 1_700_000_000_000;

/// The backoff before jitter after attempt `attempts` (FORMAT.md §5.6):
/// 10 s × 2^(attempts−1), at most an hour.
pub const fn backoff_base(attempts: i64) -> Millis {
    let shift = if attempts <= 1 {
        0
    } else if attempts > 21 {
        20
    } else {
        attempts - 1
    };
    let base = 10_000i64 << shift;
    if base < 3_600_000 {
        base
    } else {
        3_600_000
    }
}

/// The run_at a backoff from `now` may give: `[now + b, now + b + b/10]`.
pub const fn backoff_span(now: Millis, attempts: i64) -> Span {
    let b = backoff_base(attempts);
    Span { lo: now.saturating_add(b), hi: now.saturating_add(b + b / 10) }
}

/// The backoff a subject is held to after a failed or reaped attempt.
/// FORMAT.md §5.6 gives the published command's and lets other programs
/// pick their own, so a step driver is held to the published one only when
/// its hello says it uses it (capability `published_backoff`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backoff {
    /// [`backoff_span`].
    #[default]
    Published,
    /// Any delay from none up to [`ANY_BACKOFF_MAX`].
    Any,
}

/// The longest backoff [`Backoff::Any`] allows: a week (the published
/// command's is at most an hour and a tenth).
pub const ANY_BACKOFF_MAX: Millis = 7 * 24 * 3_600_000;

impl Backoff {
    /// The run_at a backoff from `now` after attempt `attempts` may give.
    pub fn span(self, now: Millis, attempts: i64) -> Span {
        match self {
            Backoff::Published => backoff_span(now, attempts),
            Backoff::Any => Span { lo: now, hi: now.saturating_add(ANY_BACKOFF_MAX) },
        }
    }
}

/// A time known to lie in `lo..=hi` (one value when `lo == hi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub lo: Millis,
    pub hi: Millis,
}

impl Span {
    pub fn exact(at: Millis) -> Span {
        Span { lo: at, hi: at }
    }
    pub fn contains(self, at: Millis) -> bool {
        self.lo <= at && at <= self.hi
    }
    pub fn is_exact(self) -> bool {
        self.lo == self.hi
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_exact() {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}..={}", self.lo, self.hi)
        }
    }
}

/// A job's stored state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Ready,
    Running,
    Done,
    Dead,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Ready => "ready",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Dead => "dead",
        }
    }
}

/// A job as the model knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MJob {
    pub id: i64,
    pub queue: String,
    pub payload: String,
    pub state: JobState,
    pub priority: i64,
    pub attempts: i64,
    pub max_attempts: i64,
    pub run_at: Span,
    pub lease_until: Option<Millis>,
    /// The claim whose token holds the job (set exactly while running).
    pub holder: Option<Label>,
    pub last_error: Option<String>,
    pub created_at: Millis,
    pub updated_at: Millis,
}

/// The model: the clock, the jobs, and what the labels of a run name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    pub now: Millis,
    pub jobs: BTreeMap<i64, MJob>,
    /// The id the next add gets (AUTOINCREMENT: never reused).
    pub next_id: i64,
    /// Add label → the id of its job (absent: the add was refused).
    pub adds: BTreeMap<Label, i64>,
    /// Claim label → the job it took (None: it took nothing).
    pub claims: BTreeMap<Label, Option<i64>>,
    /// Claim label → the token it was given.
    pub tokens: BTreeMap<Label, String>,
    /// The backoff the subject is held to.
    pub backoff: Backoff,
}

impl Default for Model {
    fn default() -> Self {
        Model::new(START_MS)
    }
}

/// What an op may answer: its allowed outcomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowed {
    /// Nothing to send: the op names a claim that took no job, or an add
    /// that added none.
    Skip,
    /// The clock moved; nothing is sent.
    Clock,
    /// The step is refused with this error.
    Error(ErrorKind),
    Added {
        id: i64,
    },
    /// A claim: one of `candidates` (ids), or nothing when `empty` is allowed.
    Claimed {
        candidates: Vec<i64>,
        empty: bool,
    },
    /// Ok with no fields (finish, release, retry of one job, delete).
    Done,
    /// A fail: dead, or ready with a run_at in `run_at`.
    Failed {
        dead: bool,
        run_at: Span,
    },
    Renewed {
        lease_until: Millis,
    },
    /// Retry all and purge: how many jobs.
    Count(i64),
    /// Stats: the counts of the model after the op (with ranges).
    Stats,
}

impl fmt::Display for Allowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Allowed::Skip => write!(f, "nothing (skipped)"),
            Allowed::Clock => write!(f, "nothing (the clock moves)"),
            Allowed::Error(kind) => write!(f, "error {}", kind.as_str()),
            Allowed::Added { id } => write!(f, "ok, id {id}"),
            Allowed::Claimed { candidates, empty } => {
                let jobs: Vec<String> = candidates.iter().map(|id| format!("job {id}")).collect();
                match (jobs.is_empty(), empty) {
                    (true, _) => write!(f, "ok, no job"),
                    (false, false) => write!(f, "ok, {}", jobs.join(" or ")),
                    (false, true) => write!(f, "ok, {} or no job", jobs.join(" or ")),
                }
            }
            Allowed::Done => write!(f, "ok"),
            Allowed::Failed { dead: true, .. } => write!(f, "ok, state dead"),
            Allowed::Failed { dead: false, run_at } => write!(f, "ok, state ready, run_at {run_at}"),
            Allowed::Renewed { lease_until } => write!(f, "ok, lease_until {lease_until}"),
            Allowed::Count(n) => write!(f, "ok, count {n}"),
            Allowed::Stats => write!(f, "ok, the model's counts"),
        }
    }
}

/// The allowed outcomes of one op, and the model after it with what the
/// answer will tell still open.
#[derive(Debug, Clone)]
pub struct Expect {
    pub allowed: Allowed,
    /// The job id and token the op acts on (holder steps, retry, delete).
    pub id: Option<i64>,
    pub token: Option<String>,
    next: Model,
}

impl Expect {
    fn new(allowed: Allowed, next: Model) -> Expect {
        Expect { allowed, id: None, token: None, next }
    }

    /// The request to send for the op, or None (skipped, or the clock).
    pub fn request(&self, op: &Op, now: Millis) -> Option<Request> {
        match self.allowed {
            Allowed::Skip | Allowed::Clock => None,
            _ => op.request(now, self.id, self.token.as_deref()),
        }
    }
}

fn mismatch(what: impl Into<String>) -> Result<(), String> {
    Err(what.into())
}

/// Both sides in the contract's terms (`null`, JSON strings); times stay
/// in milliseconds, as the model's spans and op scripts give them.
fn check_eq<T: PartialEq + Shown>(what: &str, seen: T, want: T) -> Result<(), String> {
    if seen == want {
        Ok(())
    } else {
        mismatch(format!("{what}: expected {}, got {}", want.shown(), seen.shown()))
    }
}

fn valid_queue(queue: &str) -> bool {
    (1..=200).contains(&queue.chars().count()) && !queue.contains('\0')
}

impl Model {
    pub fn new(now: Millis) -> Model {
        Model {
            now,
            jobs: BTreeMap::new(),
            next_id: 1,
            adds: BTreeMap::new(),
            claims: BTreeMap::new(),
            tokens: BTreeMap::new(),
            backoff: Backoff::Published,
        }
    }

    /// The job (and token) that claim `label` took, if it took one.
    fn claimed(&self, label: Label) -> Option<(i64, Option<&String>)> {
        let id = (*self.claims.get(&label)?)?;
        Some((id, self.tokens.get(&label)))
    }

    /// Whether the holder of claim `label` holds job `id` now.
    fn holds(&self, label: Label, id: i64) -> bool {
        self.jobs.get(&id).is_some_and(|j| j.state == JobState::Running && j.holder == Some(label))
    }

    /// A step by the holder of claim `label` (finish, fail, renew,
    /// release) on the job it took, or with `job_of` on the job that claim
    /// took: skipped when a claim it names took nothing; refused as
    /// invalid when `invalid`; refused as a lost lease unless the claim,
    /// with its own token, still holds that job; else what `step` makes of
    /// the job. The expectation names the job and the token.
    fn held_step(
        &self,
        (label, job_of): (Label, Option<Label>),
        forged: bool,
        invalid: bool,
        next: Model,
        step: impl FnOnce(i64, Model) -> Expect,
    ) -> Expect {
        let Some((own, token)) = self.claimed(label) else {
            return Expect::new(Allowed::Skip, next);
        };
        let Some(id) = job_of.map_or(Some(own), |other| self.claimed(other).map(|(id, _)| id)) else {
            return Expect::new(Allowed::Skip, next);
        };
        let mut expect = if invalid {
            Expect::new(Allowed::Error(ErrorKind::Invalid), next)
        } else if !forged && self.holds(label, id) {
            step(id, next)
        } else {
            Expect::new(Allowed::Error(ErrorKind::LeaseLost), next)
        };
        expect.id = Some(id);
        expect.token = token.cloned();
        expect
    }

    /// Every running job whose lease has run out goes to dead (out of
    /// attempts) or back to ready after the backoff (FORMAT.md §5.4).
    fn reap(&mut self) {
        let (now, backoff) = (self.now, self.backoff);
        for job in self.jobs.values_mut() {
            if job.state != JobState::Running || job.lease_until.is_none_or(|l| l > now) {
                continue;
            }
            job.last_error = Some(LEASE_EXPIRED.to_string());
            job.token_cleared(now);
            if job.attempts >= job.max_attempts {
                job.state = JobState::Dead;
            } else {
                job.state = JobState::Ready;
                job.run_at = backoff.span(now, job.attempts);
            }
        }
    }

    /// The ready jobs of `queue`.
    fn ready_in<'a>(&'a self, queue: &'a str) -> impl Iterator<Item = &'a MJob> + 'a {
        self.jobs.values().filter(move |j| j.state == JobState::Ready && j.queue == queue)
    }

    /// The jobs a claim of `queue` may take now: those that some choice of
    /// run_ats within their ranges puts first (priority desc, run_at, id)
    /// among the due ones; and whether it may take none.
    fn candidates(&self, queue: &str) -> (Vec<i64>, bool) {
        let now = self.now;
        let ready: Vec<&MJob> = self.ready_in(queue).collect();
        let empty = ready.iter().all(|j| j.run_at.hi > now);
        let mut possible = Vec::new();
        for x in ready.iter().filter(|x| x.run_at.lo <= now) {
            let first = ready.iter().filter(|y| y.id != x.id).all(|y| {
                if y.priority > x.priority {
                    y.run_at.hi > now
                } else if y.priority == x.priority {
                    y.run_at.hi > x.run_at.lo || (y.run_at.hi == x.run_at.lo && y.id > x.id)
                } else {
                    true
                }
            });
            if first {
                possible.push(x.id);
            }
        }
        (possible, empty)
    }

    /// The model of a file's jobs as read from it
    /// ([`read_rows`](crate::subjects::observe::file::read_rows)) at `now`:
    /// the steps cases use it to say what the one model expects of a
    /// history.
    pub fn from_rows(rows: &[Row], now: Millis) -> Model {
        let mut model = Model::new(now);
        for row in rows {
            let state = match row.state.as_str() {
                "running" => JobState::Running,
                "done" => JobState::Done,
                "dead" => JobState::Dead,
                _ => JobState::Ready,
            };
            model.jobs.insert(
                row.id,
                MJob {
                    id: row.id,
                    queue: row.queue.clone(),
                    payload: String::from_utf8_lossy(&row.payload).into_owned(),
                    state,
                    priority: row.priority,
                    attempts: row.attempts,
                    max_attempts: row.max_attempts,
                    run_at: Span::exact(row.run_at),
                    lease_until: row.lease_until,
                    holder: None,
                    last_error: row.last_error.clone(),
                    created_at: row.created_at,
                    updated_at: row.updated_at,
                },
            );
            model.next_id = model.next_id.max(row.id + 1);
        }
        model
    }

    /// The order in which one worker that claims `queue` again and again
    /// (finishing each job before the next claim) takes the jobs due now
    /// (FORMAT.md §5.4); None when the model allows more than one order.
    pub fn claim_order(&self, queue: &str) -> Option<Vec<i64>> {
        let mut model = self.clone();
        let mut order = Vec::new();
        loop {
            let (candidates, _) = model.candidates(queue);
            match candidates.as_slice() {
                [] => return Some(order),
                [id] => {
                    order.push(*id);
                    model.jobs.remove(id);
                }
                _ => return None,
            }
        }
    }

    /// The allowed outcomes of `op` (nothing changes): the model's
    /// `apply(op) -> allowed outcomes`; [`Model::observe`] then takes the
    /// subject's answer.
    #[doc(alias = "apply")]
    pub fn expect(&self, op: &Op) -> Expect {
        let now = self.now;
        let mut next = self.clone();
        match op {
            Op::Advance { ms } => {
                next.now = now.saturating_add((*ms).max(0));
                Expect::new(Allowed::Clock, next)
            }
            Op::Add { label, queue, priority, max_attempts, delay_ms, .. } => {
                if !valid_queue(queue)
                    || !(-100..=100).contains(priority)
                    || *max_attempts < 1
                    || *delay_ms < 0
                {
                    return Expect::new(Allowed::Error(ErrorKind::Invalid), next);
                }
                let id = next.next_id;
                next.next_id += 1;
                next.adds.insert(*label, id);
                next.jobs.insert(
                    id,
                    MJob {
                        id,
                        queue: queue.clone(),
                        payload: Op::payload(*label),
                        state: JobState::Ready,
                        priority: *priority,
                        attempts: 0,
                        max_attempts: *max_attempts,
                        run_at: Span::exact(now.saturating_add(*delay_ms)),
                        lease_until: None,
                        holder: None,
                        last_error: None,
                        created_at: now,
                        updated_at: now,
                    },
                );
                Expect::new(Allowed::Added { id }, next)
            }
            Op::Claim { queue, lease_ms, .. } => {
                if !valid_queue(queue) || *lease_ms < 1 || now.checked_add(*lease_ms).is_none() {
                    return Expect::new(Allowed::Error(ErrorKind::Invalid), next);
                }
                next.reap();
                let (candidates, empty) = next.candidates(queue);
                Expect::new(Allowed::Claimed { candidates, empty }, next)
            }
            Op::Finish { claim, keep_done, forged, job_of, .. } => {
                self.held_step((*claim, *job_of), *forged, false, next, |id, mut next| {
                    if *keep_done {
                        let job = next.jobs.get_mut(&id).expect("held");
                        job.state = JobState::Done;
                        job.token_cleared(now);
                    } else {
                        next.jobs.remove(&id);
                    }
                    Expect::new(Allowed::Done, next)
                })
            }
            Op::Fail { claim, how, forged, job_of, .. } => {
                let invalid = matches!(how, FailHow::After(ms) if *ms < 0 || now.checked_add(*ms).is_none());
                self.held_step((*claim, *job_of), *forged, invalid, next, |id, mut next| {
                    let backoff = next.backoff;
                    let job = next.jobs.get_mut(&id).expect("held");
                    let dead = matches!(how, FailHow::Permanent) || job.attempts >= job.max_attempts;
                    job.last_error = Some(Op::fail_text(*claim));
                    job.token_cleared(now);
                    if dead {
                        job.state = JobState::Dead;
                    } else {
                        job.state = JobState::Ready;
                        job.run_at = match how {
                            FailHow::After(ms) => Span::exact(now + ms),
                            _ => backoff.span(now, job.attempts),
                        };
                    }
                    let run_at = job.run_at;
                    Expect::new(Allowed::Failed { dead, run_at }, next)
                })
            }
            Op::Renew { claim, lease_ms, forged, job_of, .. } => {
                let invalid = *lease_ms < 1 || now.checked_add(*lease_ms).is_none();
                self.held_step((*claim, *job_of), *forged, invalid, next, |id, mut next| {
                    let job = next.jobs.get_mut(&id).expect("held");
                    let until = now + lease_ms;
                    job.lease_until = Some(until);
                    job.updated_at = now;
                    Expect::new(Allowed::Renewed { lease_until: until }, next)
                })
            }
            Op::Release { claim, forged, job_of, .. } => {
                self.held_step((*claim, *job_of), *forged, false, next, |id, mut next| {
                    let job = next.jobs.get_mut(&id).expect("held");
                    job.state = JobState::Ready;
                    job.attempts = (job.attempts - 1).max(0);
                    job.token_cleared(now);
                    // The published command sets run_at to now; the
                    // reference keeps it (FORMAT.md §5.8): the job was due
                    // when claimed, so either lies in [its run_at, now].
                    job.run_at = Span { lo: job.run_at.lo.min(now), hi: now };
                    Expect::new(Allowed::Done, next)
                })
            }
            Op::Retry { job, .. } => {
                let Some(&id) = self.adds.get(job) else {
                    return Expect::new(Allowed::Skip, next);
                };
                let allowed = match next.jobs.get_mut(&id) {
                    None => Allowed::Error(ErrorKind::NotFound),
                    Some(j) if j.state == JobState::Dead => {
                        j.retried(now);
                        Allowed::Done
                    }
                    Some(_) => Allowed::Error(ErrorKind::Refused),
                };
                let mut expect = Expect::new(allowed, next);
                expect.id = Some(id);
                expect
            }
            Op::RetryAll { queue, .. } => {
                if queue.as_deref().is_some_and(|q| !valid_queue(q)) {
                    return Expect::new(Allowed::Error(ErrorKind::Invalid), next);
                }
                let mut count = 0;
                for j in next.jobs.values_mut() {
                    if j.state == JobState::Dead && queue.as_ref().is_none_or(|q| *q == j.queue) {
                        j.retried(now);
                        count += 1;
                    }
                }
                Expect::new(Allowed::Count(count), next)
            }
            Op::Delete { job, .. } => {
                let Some(&id) = self.adds.get(job) else {
                    return Expect::new(Allowed::Skip, next);
                };
                let allowed = if next.jobs.remove(&id).is_some() {
                    Allowed::Done
                } else {
                    Allowed::Error(ErrorKind::NotFound)
                };
                let mut expect = Expect::new(allowed, next);
                expect.id = Some(id);
                expect
            }
            Op::Purge { state, queue, .. } => {
                if queue.as_deref().is_some_and(|q| !valid_queue(q)) {
                    return Expect::new(Allowed::Error(ErrorKind::Invalid), next);
                }
                let state = match state {
                    PurgeState::Dead => JobState::Dead,
                    PurgeState::Done => JobState::Done,
                };
                let before = next.jobs.len();
                next.jobs.retain(|_, j| !(j.state == state && queue.as_ref().is_none_or(|q| *q == j.queue)));
                Expect::new(Allowed::Count((before - next.jobs.len()) as i64), next)
            }
            Op::Stats { .. } => Expect::new(Allowed::Stats, next),
        }
    }

    /// Checks `answer` against the allowed outcomes of `op` and moves the
    /// model on, narrowing what the answer tells. With no answer (while
    /// generating ops) the model takes the outcome that puts every open
    /// run_at at the start of its range.
    pub fn observe(&mut self, op: &Op, expect: Expect, answer: Option<&Answer>) -> Result<(), String> {
        let Expect { allowed, mut next, .. } = expect;
        let blind = answer.is_none();
        let canonical;
        let answer = match answer {
            Some(a) => a,
            None => {
                canonical = self.canonical(op, &allowed, &next);
                &canonical
            }
        };
        match &allowed {
            Allowed::Skip | Allowed::Clock => {}
            Allowed::Error(kind) => {
                if answer.ok || answer.error != Some(*kind) {
                    let seen = match answer.error {
                        _ if answer.ok => "ok".to_string(),
                        Some(k) => format!("error {}", k.as_str()),
                        None => "an error with no kind".to_string(),
                    };
                    return mismatch(format!("expected error {}, got {seen}", kind.as_str()));
                }
                // A refused step changes nothing; a refused claim still
                // reaped in the reference only when it got that far, and
                // every refusal here comes before the reap.
                next = self.clone();
                if let Op::Claim { label, .. } = op {
                    next.claims.insert(*label, None);
                }
            }
            Allowed::Added { id } => {
                check_ok(answer)?;
                check_eq("id", answer.id, Some(*id))?;
            }
            Allowed::Done => check_ok(answer)?,
            Allowed::Renewed { lease_until } => {
                check_ok(answer)?;
                check_eq("lease_until", answer.lease_until, Some(*lease_until))?;
            }
            Allowed::Count(n) => {
                check_ok(answer)?;
                check_eq("count", answer.count, Some(*n))?;
            }
            Allowed::Failed { dead, run_at } => {
                check_ok(answer)?;
                if *dead {
                    check_eq("state", answer.state.as_deref(), Some("dead"))?;
                } else {
                    check_eq("state", answer.state.as_deref(), Some("ready"))?;
                    let seen = answer.run_at.ok_or("run_at: expected a time, got none")?;
                    if !run_at.contains(seen) {
                        return mismatch(format!("run_at: expected {run_at}, got {seen}"));
                    }
                    let Some(id) = self.claimed_id(op) else { return mismatch("fail of no job") };
                    next.jobs.get_mut(&id).expect("failed job").run_at = Span::exact(seen);
                }
            }
            Allowed::Claimed { candidates, empty } => {
                check_ok(answer)?;
                let Op::Claim { label, queue, lease_ms, .. } = op else { return mismatch("not a claim") };
                next.claims.insert(*label, answer.job.as_ref().map(|j| j.id));
                match &answer.job {
                    None => {
                        if !empty {
                            return mismatch(format!("claim: expected {allowed}, got no job"));
                        }
                        next.narrow_empty(queue, answer.next_due)?;
                    }
                    Some(job) => {
                        if !candidates.contains(&job.id) {
                            return mismatch(format!("claim: expected {allowed}, got job {}", job.id));
                        }
                        if job.token.is_empty() || self.tokens.values().any(|t| *t == job.token) {
                            return mismatch(format!("claim: token {} is not fresh", job.token.shown()));
                        }
                        next.tokens.insert(*label, job.token.clone());
                        next.take(job, *label, *lease_ms)?;
                    }
                }
            }
            Allowed::Stats => {
                check_ok(answer)?;
                if !blind {
                    next.check_stats(answer)?;
                }
            }
        }
        *self = next;
        Ok(())
    }

    /// Applies `op` with no answer to check (generation).
    pub fn apply_blind(&mut self, op: &Op) {
        let expect = self.expect(op);
        if let Err(e) = self.observe(op, expect, None) {
            debug_assert!(false, "the model disagrees with its own canonical answer to {op:?}: {e}");
        }
    }

    fn claimed_id(&self, op: &Op) -> Option<i64> {
        match op {
            Op::Finish { claim, job_of, .. }
            | Op::Fail { claim, job_of, .. }
            | Op::Renew { claim, job_of, .. }
            | Op::Release { claim, job_of, .. } => self.claimed(job_of.unwrap_or(*claim)).map(|(id, _)| id),
            _ => None,
        }
    }

    /// The answer a subject gives when every open run_at is at the start
    /// of its range.
    fn canonical(&self, op: &Op, allowed: &Allowed, next: &Model) -> Answer {
        match allowed {
            Allowed::Skip | Allowed::Clock => Answer::ok(),
            Allowed::Error(kind) => Answer::error(*kind, "canonical"),
            Allowed::Added { id } => Answer { id: Some(*id), ..Answer::ok() },
            Allowed::Done | Allowed::Stats => Answer::ok(),
            Allowed::Renewed { lease_until } => Answer { lease_until: Some(*lease_until), ..Answer::ok() },
            Allowed::Count(n) => Answer { count: Some(*n), ..Answer::ok() },
            Allowed::Failed { dead: true, .. } => Answer { state: Some("dead".into()), ..Answer::ok() },
            Allowed::Failed { dead: false, run_at } => {
                Answer { state: Some("ready".into()), run_at: Some(run_at.lo), ..Answer::ok() }
            }
            Allowed::Claimed { .. } => {
                let Op::Claim { label, queue, lease_ms, .. } = op else { return Answer::ok() };
                let first = next
                    .ready_in(queue)
                    .filter(|j| j.run_at.lo <= next.now)
                    .min_by_key(|j| (-j.priority, j.run_at.lo, j.id));
                match first {
                    Some(j) => Answer {
                        job: Some(j.claim_answer(next.now + lease_ms, format!("generated-{label}"))),
                        ..Answer::ok()
                    },
                    None => {
                        Answer { next_due: next.ready_in(queue).map(|j| j.run_at.lo).min(), ..Answer::ok() }
                    }
                }
            }
        }
    }

    /// A claim took nothing: no ready job of `queue` is due, and the
    /// earliest run_at among them is `next_due`.
    fn narrow_empty(&mut self, queue: &str, next_due: Option<Millis>) -> Result<(), String> {
        let now = self.now;
        let ids: Vec<i64> = self.ready_in(queue).map(|j| j.id).collect();
        for id in &ids {
            let job = self.jobs.get_mut(id).expect("ready");
            job.run_at.lo = job.run_at.lo.max(now + 1);
        }
        match next_due {
            None if ids.is_empty() => Ok(()),
            None => {
                mismatch(format!("claim: next_due: expected the earliest run_at of jobs {ids:?}, got none"))
            }
            Some(at) => {
                let lo = ids.iter().map(|id| self.jobs[id].run_at.lo).min();
                let hi = ids.iter().map(|id| self.jobs[id].run_at.hi).min();
                match (lo, hi) {
                    (Some(lo), Some(hi)) if lo <= at && at <= hi => {
                        for id in &ids {
                            let job = self.jobs.get_mut(id).expect("ready");
                            job.run_at.lo = job.run_at.lo.max(at);
                        }
                        Ok(())
                    }
                    (Some(lo), Some(hi)) => {
                        mismatch(format!("claim: next_due: expected {}, got {at}", Span { lo, hi }))
                    }
                    _ => mismatch(format!("claim: next_due: expected none (no ready job), got {at}")),
                }
            }
        }
    }

    /// A claim took `seen`: check what it showed, narrow the other ready
    /// jobs of its queue (none of them came first) and mark it running.
    fn take(&mut self, seen: &JobAnswer, label: Label, lease_ms: Millis) -> Result<(), String> {
        let now = self.now;
        let job = self.jobs.get(&seen.id).expect("a candidate").clone();
        check_eq("claim: queue", seen.queue.as_str(), job.queue.as_str())?;
        check_eq("claim: payload", seen.payload.as_str(), job.payload.as_str())?;
        check_eq("claim: priority", seen.priority, job.priority)?;
        check_eq("claim: attempt", seen.attempt, job.attempts + 1)?;
        check_eq("claim: max_attempts", seen.max_attempts, job.max_attempts)?;
        check_eq("claim: lease_until", seen.lease_until, now + lease_ms)?;
        check_eq("claim: created_at", seen.created_at, job.created_at)?;
        check_error("claim: last_error", seen.last_error.as_deref(), job.last_error.as_deref())?;
        let r = seen.run_at;
        if !(job.run_at.contains(r) && r <= now) {
            return mismatch(format!(
                "claim: run_at: expected {} and at most now {now}, got {r}",
                job.run_at
            ));
        }
        let others: Vec<i64> = self.ready_in(&job.queue).filter(|y| y.id != job.id).map(|y| y.id).collect();
        for id in others {
            let y = self.jobs.get_mut(&id).expect("ready");
            let floor = if y.priority > job.priority {
                now + 1
            } else if y.priority == job.priority {
                if y.id > job.id {
                    r
                } else {
                    r + 1
                }
            } else {
                continue;
            };
            y.run_at.lo = y.run_at.lo.max(floor);
            if y.run_at.lo > y.run_at.hi {
                return mismatch(format!(
                    "claim: took job {} (priority {}, run_at {r}) though job {id} (priority {}, run_at {}) came first",
                    job.id, job.priority, y.priority, y.run_at
                ));
            }
        }
        let taken = self.jobs.get_mut(&seen.id).expect("a candidate");
        taken.state = JobState::Running;
        taken.attempts += 1;
        taken.run_at = Span::exact(r);
        taken.lease_until = Some(now + lease_ms);
        taken.holder = Some(label);
        taken.updated_at = now;
        Ok(())
    }

    /// The counts of FORMAT.md §5.10, against the model (ranges allowing).
    fn check_stats(&self, answer: &Answer) -> Result<(), String> {
        let now = self.now;
        let seen = answer.queues.as_ref().ok_or("stats: no queues in the answer")?;
        let mut queues: BTreeMap<&str, Vec<&MJob>> = BTreeMap::new();
        for j in self.jobs.values() {
            queues.entry(j.queue.as_str()).or_default().push(j);
        }
        let names: Vec<&str> = seen.iter().map(|q| q.queue.as_str()).collect();
        check_eq("stats: queues", names, queues.keys().copied().collect())?;
        for (q, jobs) in seen.iter().zip(queues.values()) {
            let count = |f: &dyn Fn(&MJob) -> bool| jobs.iter().filter(|j| f(j)).count() as i64;
            let ready = |j: &MJob| j.state == JobState::Ready;
            let running = |j: &MJob| j.state == JobState::Running;
            let name = &q.queue;
            check_eq(
                &format!("stats {name}: running"),
                q.running,
                count(&|j| running(j) && j.lease_until > Some(now)),
            )?;
            check_eq(
                &format!("stats {name}: expired"),
                q.expired,
                count(&|j| running(j) && j.lease_until <= Some(now)),
            )?;
            check_eq(&format!("stats {name}: dead"), q.dead, count(&|j| j.state == JobState::Dead))?;
            check_eq(&format!("stats {name}: done"), q.done, count(&|j| j.state == JobState::Done))?;
            check_eq(&format!("stats {name}: ready + delayed"), q.ready + q.delayed, count(&ready))?;
            let (least, most) =
                (count(&|j| ready(j) && j.run_at.hi <= now), count(&|j| ready(j) && j.run_at.lo <= now));
            if !(least..=most).contains(&q.ready) {
                return mismatch(format!(
                    "stats {name}: ready: expected {}, got {}",
                    Span { lo: least, hi: most },
                    q.ready
                ));
            }
            let due: Vec<Span> =
                jobs.iter().filter(|j| ready(j) && j.run_at.lo <= now).map(|j| j.run_at).collect();
            match q.oldest_due {
                None if q.ready == 0 => {}
                None => return mismatch(format!("stats {name}: oldest_due: expected a time, got none")),
                Some(at) => {
                    let lo = due.iter().map(|s| s.lo).min().unwrap_or(i64::MAX);
                    if q.ready == 0 || at < lo || at > now {
                        return mismatch(format!(
                            "stats {name}: oldest_due: expected {lo}..={now}, got {at}"
                        ));
                    }
                    if due.iter().all(|s| s.is_exact() && s.lo <= now) {
                        check_eq(&format!("stats {name}: oldest_due"), at, lo)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks the file's rows against the model: the same jobs, each with
    /// the state, counts, times, token and error the model says (a run_at
    /// within its range). `rows` come from
    /// [`read_rows`](crate::subjects::observe::file::read_rows).
    pub fn check_rows(&self, rows: &[Row]) -> Result<(), String> {
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        check_eq("the file's job ids", ids, self.jobs.keys().copied().collect())?;
        for (row, job) in rows.iter().zip(self.jobs.values()) {
            // The job is named only in a mismatch (this runs after every step).
            let at = |checked: Result<(), String>| checked.map_err(|m| format!("file: job {}: {m}", job.id));
            at(check_eq("state", row.state.as_str(), job.state.as_str()))?;
            at(check_eq("queue", row.queue.as_str(), job.queue.as_str()))?;
            at(check_eq("payload", row.payload.as_slice(), job.payload.as_bytes()))?;
            at(check_eq("priority", row.priority, job.priority))?;
            at(check_eq("attempts", row.attempts, job.attempts))?;
            at(check_eq("max_attempts", row.max_attempts, job.max_attempts))?;
            at(check_eq("lease_until", row.lease_until, job.lease_until))?;
            at(check_error("last_error", row.last_error.as_deref(), job.last_error.as_deref()))?;
            at(check_eq("created_at", row.created_at, job.created_at))?;
            at(check_eq("updated_at", row.updated_at, job.updated_at))?;
            let token = job.holder.and_then(|h| self.tokens.get(&h)).map(String::as_str);
            at(check_eq("token", row.token.as_deref(), token))?;
            if !job.run_at.contains(row.run_at) {
                return at(mismatch(format!("run_at: expected {}, got {}", job.run_at, row.run_at)));
            }
        }
        Ok(())
    }
}

/// What the model knows of `last_error` after a reap: the format asks for a
/// note that the lease expired (FORMAT.md §5.4), in words of each
/// program's own.
pub const LEASE_EXPIRED: &str = "(any note that the lease expired)";

/// Compares a last_error with the model's, where [`LEASE_EXPIRED`] stands
/// for any text that is not empty.
fn check_error(what: &str, seen: Option<&str>, model: Option<&str>) -> Result<(), String> {
    if model == Some(LEASE_EXPIRED) {
        return match seen {
            Some(text) if !text.is_empty() => Ok(()),
            _ => mismatch(format!("{what}: expected a note that the lease expired, got {}", seen.shown())),
        };
    }
    check_eq(what, seen, model)
}

fn check_ok(answer: &Answer) -> Result<(), String> {
    if answer.ok {
        Ok(())
    } else {
        mismatch(format!(
            "expected ok, got error {} ({})",
            answer.error.map(|k| k.as_str()).unwrap_or("?"),
            answer.message.as_deref().unwrap_or("")
        ))
    }
}

impl MJob {
    /// What a claim that takes this job (its run_at at the start of its
    /// range) answers, with a lease until `lease_until` and `token`.
    pub fn claim_answer(&self, lease_until: Millis, token: String) -> JobAnswer {
        JobAnswer {
            id: self.id,
            queue: self.queue.clone(),
            payload: self.payload.clone(),
            priority: self.priority,
            attempt: self.attempts + 1,
            max_attempts: self.max_attempts,
            run_at: self.run_at.lo,
            lease_until,
            created_at: self.created_at,
            last_error: self.last_error.clone(),
            token,
        }
    }

    fn token_cleared(&mut self, now: Millis) {
        self.lease_until = None;
        self.holder = None;
        self.updated_at = now;
    }

    fn retried(&mut self, now: Millis) {
        self.state = JobState::Ready;
        self.attempts = 0;
        self.run_at = Span::exact(now);
        self.updated_at = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(label: Label, queue: &str, priority: i64, max_attempts: i64) -> Op {
        Op::Add { worker: 0, label, queue: queue.into(), priority, max_attempts, delay_ms: 0 }
    }

    fn claim(label: Label, queue: &str, lease_ms: i64) -> Op {
        Op::Claim { worker: 0, label, queue: queue.into(), lease_ms }
    }

    /// Applies ops blind (canonical answers), as the generator does.
    fn model(ops: &[Op]) -> Model {
        let mut m = Model::default();
        for op in ops {
            m.apply_blind(op);
        }
        m
    }

    fn taken(m: &Model, id: i64, token: &str, lease_ms: i64) -> Answer {
        Answer { job: Some(m.jobs[&id].claim_answer(m.now + lease_ms, token.into())), ..Answer::ok() }
    }

    #[test]
    fn backoff_doubles_up_to_an_hour() {
        assert_eq!(backoff_base(0), 10_000);
        assert_eq!(backoff_base(1), 10_000);
        assert_eq!(backoff_base(2), 20_000);
        assert_eq!(backoff_base(9), 2_560_000);
        assert_eq!(backoff_base(10), 3_600_000);
        assert_eq!(backoff_base(99), 3_600_000);
        assert_eq!(backoff_span(100, 1), Span { lo: 10_100, hi: 11_100 });
    }

    #[test]
    fn a_lease_runs_out_at_lease_until_and_a_claim_reaps_it() {
        let before =
            model(&[add(1, "a", 0, 3), claim(2, "a", 1_000), Op::Advance { ms: 999 }, claim(3, "b", 10)]);
        assert_eq!(before.jobs[&1].state, JobState::Running, "one ms before: still held");
        let at =
            model(&[add(1, "a", 0, 3), claim(2, "a", 1_000), Op::Advance { ms: 1_000 }, claim(3, "b", 10)]);
        let job = &at.jobs[&1];
        assert_eq!(job.state, JobState::Ready);
        assert_eq!(job.run_at, backoff_span(START_MS + 1_000, 1));
        assert_eq!(job.last_error.as_deref(), Some(LEASE_EXPIRED));
        let last =
            model(&[add(1, "a", 0, 1), claim(2, "a", 1_000), Op::Advance { ms: 1_000 }, claim(3, "b", 10)]);
        assert_eq!(last.jobs[&1].state, JobState::Dead, "the last attempt's lease ran out");
    }

    #[test]
    fn a_subject_with_its_own_backoff_is_held_to_none_but_a_bound() {
        let ops = [add(1, "a", 0, 3), claim(2, "a", 1_000), Op::Advance { ms: 1_000 }, claim(3, "b", 10)];
        let mut any = Model { backoff: Backoff::Any, ..Model::default() };
        for op in &ops {
            any.apply_blind(op);
        }
        let now = START_MS + 1_000;
        assert_eq!(any.jobs[&1].run_at, Span { lo: now, hi: now + ANY_BACKOFF_MAX });
        // Due at once is allowed, and a claim may take it or find none.
        let take = claim(4, "a", 1_000);
        assert_eq!(any.expect(&take).allowed, Allowed::Claimed { candidates: vec![1], empty: true });
        assert!(!model(&ops).jobs[&1].run_at.contains(now), "the published backoff is not 0");
    }

    #[test]
    fn a_holder_whose_lease_ran_out_unreaped_still_holds() {
        let m = model(&[add(1, "a", 0, 3), claim(2, "a", 1_000), Op::Advance { ms: 5_000 }]);
        let finish = Op::Finish { worker: 1, claim: 2, keep_done: true, forged: false, job_of: None };
        assert_eq!(m.expect(&finish).allowed, Allowed::Done);
        let forged = Op::Finish { worker: 1, claim: 2, keep_done: true, forged: true, job_of: None };
        assert_eq!(m.expect(&forged).allowed, Allowed::Error(ErrorKind::LeaseLost));
        let reaped =
            model(&[add(1, "a", 0, 3), claim(2, "a", 1_000), Op::Advance { ms: 5_000 }, claim(3, "b", 1)]);
        assert_eq!(reaped.expect(&finish).allowed, Allowed::Error(ErrorKind::LeaseLost));
    }

    #[test]
    fn release_gives_back_the_attempt_and_keeps_run_at_or_sets_it_to_now() {
        let m = model(&[
            add(1, "a", 0, 3),
            claim(2, "a", 1_000),
            Op::Advance { ms: 10 },
            Op::Release { worker: 0, claim: 2, forged: false, job_of: None },
        ]);
        let job = &m.jobs[&1];
        let either = Span { lo: START_MS, hi: START_MS + 10 };
        assert_eq!((job.state, job.attempts, job.run_at), (JobState::Ready, 0, either));
    }

    #[test]
    fn the_claim_order_of_a_file_follows_the_model() {
        let row = |id: i64, priority: i64, run_at: i64| Row {
            id,
            queue: "q".into(),
            payload: Vec::new(),
            state: "ready".into(),
            priority,
            attempts: 0,
            max_attempts: 10,
            run_at,
            created_at: 0,
            updated_at: 0,
            lease_until: None,
            token: None,
            last_error: None,
        };
        let rows = [row(1, 0, 90), row(2, 0, 80), row(3, 5, 95), row(4, 0, 80), row(5, 9, 200)];
        let model = Model::from_rows(&rows, 100);
        assert_eq!(model.claim_order("q"), Some(vec![3, 2, 4, 1]), "job 5 is not due");
        assert_eq!(model.claim_order("other"), Some(vec![]));
    }

    #[test]
    fn claims_follow_priority_then_run_at_then_id() {
        let m = model(&[add(1, "a", 0, 3), add(2, "a", 5, 3), add(3, "a", 5, 3), claim(4, "a", 1_000)]);
        assert_eq!(m.claims[&4], Some(2));
        let expect = m.expect(&claim(5, "a", 1_000));
        assert_eq!(expect.allowed, Allowed::Claimed { candidates: vec![3], empty: false });
    }

    #[test]
    fn an_open_run_at_allows_either_order_and_the_answer_narrows_it() {
        // Job 1 is reaped (run_at in [t+10000, t+11000]); job 2 is due at
        // t+10500 exactly. At t+10500 either may come first.
        let mut m = model(&[
            add(1, "a", 0, 3),
            claim(2, "a", 1),
            Op::Advance { ms: 1 },
            claim(3, "b", 1),
            Op::Add {
                worker: 0,
                label: 4,
                queue: "a".into(),
                priority: 0,
                max_attempts: 3,
                delay_ms: 10_499,
            },
            Op::Advance { ms: 10_499 },
        ]);
        assert_eq!(m.jobs[&1].run_at, Span { lo: START_MS + 10_001, hi: START_MS + 11_001 });
        let op = claim(5, "a", 1_000);
        let expect = m.expect(&op);
        assert_eq!(expect.allowed, Allowed::Claimed { candidates: vec![1, 2], empty: false });
        // The subject took job 2: job 1's run_at was later than job 2's.
        let answer = taken(&expect_model(&expect), 2, "t1", 1_000);
        m.observe(&op, expect, Some(&answer)).unwrap();
        assert_eq!(m.jobs[&1].run_at.lo, START_MS + 10_501, "narrowed past job 2's run_at");
        // A token seen before is not fresh.
        let op = claim(6, "a", 1_000);
        let mut stale = m.clone();
        stale.now += 1_000;
        let expect = stale.expect(&op);
        let answer = taken(&expect_model(&expect), 1, "t1", 1_000);
        assert!(stale.observe(&op, expect, Some(&answer)).unwrap_err().contains("not fresh"));
    }

    fn expect_model(expect: &Expect) -> Model {
        expect.next.clone()
    }

    #[test]
    fn wrong_answers_are_mismatches() {
        let mut m = model(&[add(1, "a", 0, 3), claim(2, "a", 1_000)]);
        let renew = Op::Renew { worker: 0, claim: 2, lease_ms: 5_000, forged: true, job_of: None };
        let expect = m.expect(&renew);
        let wrong = Answer { lease_until: Some(START_MS + 5_000), ..Answer::ok() };
        assert!(m.clone().observe(&renew, expect.clone(), Some(&wrong)).is_err());
        let right = Answer::error(ErrorKind::LeaseLost, "lost");
        m.observe(&renew, expect, Some(&right)).unwrap();
    }
}
