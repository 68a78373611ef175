//! The worker loop: claim, run, renew, finish — with several jobs at once
//! and a graceful stop that gives unfinished jobs back.
//!
//! Each slot (one job at a time) has a runner thread that claims and runs
//! jobs and a supervisor thread that keeps their leases. Every wait in here
//! is on the slot's condition variable, so a stop request, a job's end, a
//! lost lease and a timeout wake whoever waits at once, with no polling.

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use crate::clock::{millis, Millis};
use crate::error::{Error, Result};
use crate::job::{Claim, Claimed, Failed, Retry, DEFAULT_LEASE};
use crate::open::OpenOptions;
use crate::Ukue;
use crate::{fault, validate};

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// How many jobs run at once (at least one).
    pub concurrency: usize,
    /// Each claim's lease; renewed every third of it while the job runs.
    pub lease: Duration,
    /// How often an idle worker looks for a job (sooner when the queue's
    /// next job is due sooner).
    pub poll: Duration,
    /// After a stop request, how long running jobs may go on.
    pub grace: Duration,
    /// A job still running after this long is stopped and fails.
    pub timeout: Option<Duration>,
    /// Keep finished jobs as `done` instead of deleting them.
    pub keep_done: bool,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            concurrency: 1,
            lease: DEFAULT_LEASE,
            poll: Duration::from_secs(1),
            grace: Duration::from_secs(30),
            timeout: None,
            keep_done: false,
        }
    }
}

/// What a handler made of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The job is done: finish it.
    Finish,
    /// The attempt failed.
    Fail {
        /// What went wrong, stored as `last_error`.
        error: String,
        /// When the job may run again.
        retry: Retry,
    },
    /// Give the job back without counting the attempt.
    Release,
}

/// Why a running job must stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Another worker may hold the job now: do not finish it.
    LeaseLost,
    /// The job ran longer than the timeout.
    Timeout,
    /// The worker is stopping and the grace period is over.
    Shutdown,
}

/// What the worker tells its caller, as it happens. `Busy`: another
/// connection held the file's write lock for the whole busy timeout
/// (FORMAT.md §4.1) while the worker tried `step` (`renew`, `finish`,
/// `fail`, `release`) on the job; it tries again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A claim took a job.
    Claimed {
        /// The job.
        id: i64,
        /// Its attempt, 1 for the first.
        attempt: i64,
    },
    /// A job finished.
    Finished {
        /// The job.
        id: i64,
        /// How long its work took.
        elapsed: Duration,
    },
    /// A job's attempt failed.
    Failed {
        /// The job.
        id: i64,
        /// What the handler reported.
        error: String,
        /// Where the job went.
        to: Failed,
    },
    /// A job was given back (the worker is stopping).
    Released {
        /// The job.
        id: i64,
    },
    /// The worker no longer holds a job; its result was not recorded.
    LeaseLost {
        /// The job.
        id: i64,
    },
    /// See above.
    Busy {
        /// The job.
        id: i64,
        /// The step that met the busy file.
        step: &'static str,
    },
    /// A job is being stopped.
    Stopping {
        /// Why.
        reason: StopReason,
        /// The job.
        id: i64,
    },
    /// A step failed for another reason; the worker goes on.
    Error {
        /// What failed.
        message: String,
    },
}

/// Runs one job. Long-running handlers watch `control` and stop soon
/// after it reports a [`StopReason`].
pub trait Handler: Send + Sync {
    /// Does the job's work and says how it went.
    fn handle(&self, job: &Claimed, control: &JobControl) -> Outcome;
}

impl<F> Handler for F
where
    F: Fn(&Claimed, &JobControl) -> Outcome + Send + Sync,
{
    fn handle(&self, job: &Claimed, control: &JobControl) -> Outcome {
        self(job, control)
    }
}

#[derive(Debug, Default)]
struct Slot {
    /// Wakes the slot's runner and its handler, and no other slot's.
    runner: Arc<Condvar>,
    /// Wakes the slot's supervisor, only when its deadlines change: on a
    /// stop request, when the slot closes, and on a new job while it
    /// idles. Not on a job's end: it learns of that at its next deadline,
    /// which comes before any later job's first one, so jobs that finish
    /// within a third of the lease never wake it.
    supervisor: Arc<Condvar>,
    /// The supervisor waits for a job, with no deadline.
    supervisor_idle: bool,
    /// Counts the jobs the slot has taken; the supervisor tells by it
    /// whether the job it watches is still the slot's.
    job: u64,
    /// The job being run, for the supervisor.
    held: Option<Held>,
    stop: Option<StopReason>,
    /// The handler has returned and the outcome is recorded.
    done: bool,
    /// Set by [`JobControl::wake`] and by a new stop reason, cleared by
    /// the [`JobControl::wait`] it ends: a wake that lands between the
    /// handler's last look and its wait is kept, not lost.
    woken: bool,
    /// The slot's runner has returned; its supervisor ends too.
    closed: bool,
}

/// What the supervisor needs of a job.
#[derive(Debug, Clone)]
struct Held {
    id: i64,
    token: String,
    started: Instant,
}

impl Slot {
    fn begin(&mut self, held: Held) {
        self.job += 1;
        self.held = Some(held);
        self.stop = None;
        self.done = false;
        self.woken = false;
        if self.supervisor_idle {
            self.supervisor.notify_all();
        }
    }

    /// Whether job number `job` still runs here.
    fn runs(&self, job: u64) -> bool {
        self.job == job && !self.done && !self.closed
    }
}

#[derive(Debug, Default)]
struct WorkerState {
    stop_requested_at: Option<Instant>,
    slots: Vec<Slot>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<WorkerState>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, WorkerState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits on `changed` until `done` says so or `deadline` passes;
    /// returns the guard.
    fn wait_until<'a>(
        &'a self,
        mut guard: MutexGuard<'a, WorkerState>,
        changed: &Condvar,
        deadline: Option<Instant>,
        mut done: impl FnMut(&WorkerState) -> bool,
    ) -> MutexGuard<'a, WorkerState> {
        while !done(&guard) {
            guard = match deadline {
                None => changed.wait(guard).unwrap_or_else(|poisoned| poisoned.into_inner()),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    changed
                        .wait_timeout(guard, deadline - now)
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .0
                }
            };
        }
        guard
    }
}

/// Asks a running worker to stop; cheap to clone and send to a signal
/// handler thread.
#[derive(Debug, Clone)]
pub struct Stopper(Arc<Shared>);

impl Stopper {
    /// Stop claiming; running jobs get the grace period, then are stopped
    /// and given back.
    pub fn stop(&self) {
        let mut state = self.0.lock();
        state.stop_requested_at.get_or_insert_with(Instant::now);
        for slot in &state.slots {
            slot.runner.notify_all();
            slot.supervisor.notify_all();
        }
    }

    /// Whether a stop was asked for.
    pub fn is_stopping(&self) -> bool {
        self.0.lock().stop_requested_at.is_some()
    }
}

/// A handler's view of its job's fate.
#[derive(Debug, Clone)]
pub struct JobControl {
    shared: Arc<Shared>,
    slot: usize,
}

impl JobControl {
    /// Why the job must stop, once it must.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.shared.lock().slots[self.slot].stop
    }

    /// Waits up to `timeout` for a new stop reason or a
    /// [`JobControl::wake`]; returns the stop reason, if any. Either one
    /// that came since the last wait ends this one at once.
    pub fn wait(&self, timeout: Duration) -> Option<StopReason> {
        let guard = self.shared.lock();
        let slot = self.slot;
        let deadline = Some(Instant::now() + timeout);
        let changed = guard.slots[slot].runner.clone();
        let mut guard = self.shared.wait_until(guard, &changed, deadline, |s| s.slots[slot].woken);
        guard.slots[slot].woken = false;
        guard.slots[slot].stop
    }

    /// Wakes the handler's own [`JobControl::wait`] (for example from a
    /// thread that saw the job's process end).
    pub fn wake(&self) {
        let mut state = self.shared.lock();
        let slot = &mut state.slots[self.slot];
        slot.woken = true;
        slot.runner.notify_all();
    }

    /// Stops job number `job`, if it still runs and has no stop reason yet.
    fn stop_job(&self, job: u64, reason: StopReason) {
        let mut state = self.shared.lock();
        let slot = &mut state.slots[self.slot];
        if slot.runs(job) && slot.stop.is_none() {
            slot.stop = Some(reason);
            slot.woken = true;
            slot.runner.notify_all();
        }
    }
}

/// A worker on one queue of one file.
pub struct Worker {
    path: PathBuf,
    queue: String,
    options: WorkerOptions,
    open: OpenOptions,
    shared: Arc<Shared>,
}

impl Worker {
    /// A worker for `queue` of the file at `path`; [`Worker::run`] starts it.
    pub fn new(path: impl Into<PathBuf>, queue: impl Into<String>, options: WorkerOptions) -> Self {
        Worker {
            path: path.into(),
            queue: queue.into(),
            options,
            open: OpenOptions::default(),
            shared: Arc::default(),
        }
    }

    /// Opens connections with these options (a test clock, say).
    pub fn open_options(mut self, open: OpenOptions) -> Self {
        self.open = open;
        self
    }

    /// A handle that stops the worker from another thread.
    pub fn stopper(&self) -> Stopper {
        Stopper(self.shared.clone())
    }

    /// Runs until [`Stopper::stop`], then returns once every job has been
    /// finished, failed or given back. Refuses a file it cannot open
    /// before it starts anything.
    pub fn run(&self, handler: &dyn Handler, events: &(dyn Fn(Event) + Sync)) -> Result<()> {
        validate::queue(&self.queue)?;
        validate::lease(self.options.lease)?;
        let concurrency = self.options.concurrency.max(1);
        let connections = (0..concurrency)
            .map(|_| self.open.clone().open(&self.path).map(Mutex::new))
            .collect::<Result<Vec<_>>>()?;
        self.shared.lock().slots = (0..concurrency).map(|_| Slot::default()).collect();
        let runners: Vec<SlotRunner> = connections
            .into_iter()
            .enumerate()
            .map(|(slot, conn)| SlotRunner { worker: self, slot, conn, handler, events })
            .collect();
        thread::scope(|scope| {
            for runner in &runners {
                scope.spawn(move || runner.supervise_jobs());
                scope.spawn(move || {
                    // Even should the handler panic, the supervisor must end.
                    let _close = CloseOnDrop(runner);
                    runner.run();
                });
            }
        });
        Ok(())
    }
}

/// Closes a slot when dropped, ending its supervisor.
struct CloseOnDrop<'a, 'b>(&'a SlotRunner<'b>);

impl Drop for CloseOnDrop<'_, '_> {
    fn drop(&mut self) {
        let mut state = self.0.worker.shared.lock();
        let slot = &mut state.slots[self.0.slot];
        slot.closed = true;
        slot.supervisor.notify_all();
    }
}

struct SlotRunner<'a> {
    worker: &'a Worker,
    slot: usize,
    conn: Mutex<Ukue>,
    handler: &'a dyn Handler,
    events: &'a (dyn Fn(Event) + Sync),
}

fn lock(conn: &Mutex<Ukue>) -> MutexGuard<'_, Ukue> {
    conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A short pause before trying a step again after a busy file.
const BUSY_RETRY: Duration = Duration::from_millis(50);

impl SlotRunner<'_> {
    fn options(&self) -> &WorkerOptions {
        &self.worker.options
    }

    fn control(&self) -> JobControl {
        JobControl { shared: self.worker.shared.clone(), slot: self.slot }
    }

    fn run(&self) {
        loop {
            if self.stopping() {
                return;
            }
            let claim = lock(&self.conn).claim_next(&self.worker.queue, self.options().lease);
            match claim {
                Ok(Claim::Job(job)) => self.run_job(job),
                Ok(Claim::Empty { next_due }) => self.idle(next_due),
                Err(e) if e.is_busy() => self.idle_for(BUSY_RETRY),
                Err(e) => {
                    (self.events)(Event::Error { message: format!("claim: {e}") });
                    self.idle_for(self.options().poll);
                }
            }
        }
    }

    fn stopping(&self) -> bool {
        self.worker.shared.lock().stop_requested_at.is_some()
    }

    fn idle(&self, next_due: Option<Millis>) {
        let mut wait = self.options().poll;
        if let Some(due) = next_due {
            let now = lock(&self.conn).now();
            let until_due = Duration::from_millis(due.saturating_sub(now).max(0) as u64);
            wait = wait.min(until_due.max(Duration::from_millis(1)));
        }
        self.idle_for(wait);
    }

    fn idle_for(&self, wait: Duration) {
        let guard = self.worker.shared.lock();
        let deadline = Some(Instant::now() + wait);
        let changed = guard.slots[self.slot].runner.clone();
        drop(self.worker.shared.wait_until(guard, &changed, deadline, |s| s.stop_requested_at.is_some()));
    }

    fn run_job(&self, job: Claimed) {
        (self.events)(Event::Claimed { id: job.id, attempt: job.attempt });
        // Test-only: a crash with the claim committed and the work not started.
        fault::point(fault::AFTER_CLAIM);
        let started = Instant::now();
        let held = Held { id: job.id, token: job.token.clone(), started };
        self.worker.shared.lock().slots[self.slot].begin(held);
        let outcome = self.handler.handle(&job, &self.control());
        // Test-only: a crash with the work done and not yet recorded.
        fault::point(fault::AFTER_WORK);
        self.settle(&job, outcome, started);
    }

    /// The slot's supervisor, for its whole life: one thread that watches
    /// each job the slot takes in turn, rather than a thread per job.
    fn supervise_jobs(&self) {
        let slot = self.slot;
        let changed = self.worker.shared.lock().slots[slot].supervisor.clone();
        let mut seen = 0;
        loop {
            let mut guard = self.worker.shared.lock();
            guard.slots[slot].supervisor_idle = true;
            let mut guard = self
                .worker
                .shared
                .wait_until(guard, &changed, None, |s| s.slots[slot].closed || s.slots[slot].job != seen);
            guard.slots[slot].supervisor_idle = false;
            let state = &guard.slots[slot];
            if state.closed {
                return;
            }
            seen = state.job;
            let held = state.held.clone().expect("a slot that took a job holds it");
            drop(guard);
            self.supervise(seen, &held);
        }
    }

    /// Renews job number `job`'s lease every third of it, and stops the job
    /// on a lost lease, a timeout or the end of the grace period; returns
    /// once the job is no longer the slot's or its lease is lost.
    fn supervise(&self, job: u64, held: &Held) {
        let control = self.control();
        let slot = self.slot;
        let changed = self.worker.shared.lock().slots[slot].supervisor.clone();
        let renew_every = Duration::from_millis((millis(self.options().lease) / 3).max(1) as u64);
        let mut next_renew = held.started + renew_every;
        let timeout_at = self.options().timeout.map(|t| held.started + t);
        loop {
            let guard = self.worker.shared.lock();
            let grace_at = guard.stop_requested_at.map(|at| at + self.worker.options.grace);
            let stopped = guard.slots[slot].stop;
            // Once the job is being stopped, only renewals remain to wait for.
            let deadline = match stopped {
                Some(_) => next_renew,
                None => {
                    [Some(next_renew), timeout_at, grace_at].into_iter().flatten().min().unwrap_or(next_renew)
                }
            };
            let requested = guard.stop_requested_at;
            let guard = self.worker.shared.wait_until(guard, &changed, Some(deadline), |s| {
                !s.slots[slot].runs(job) || s.stop_requested_at != requested || s.slots[slot].stop != stopped
            });
            let state = &guard.slots[slot];
            if !state.runs(job) || state.stop == Some(StopReason::LeaseLost) {
                return;
            }
            let stopped = state.stop.is_some();
            drop(guard);
            let now = Instant::now();
            if timeout_at.is_some_and(|t| now >= t) && !stopped {
                (self.events)(Event::Stopping { reason: StopReason::Timeout, id: held.id });
                control.stop_job(job, StopReason::Timeout);
            } else if grace_at.is_some_and(|t| now >= t) && !stopped {
                (self.events)(Event::Stopping { reason: StopReason::Shutdown, id: held.id });
                control.stop_job(job, StopReason::Shutdown);
            }
            if now >= next_renew {
                let mut file = lock(&self.conn);
                // The job may have been settled while we waited for the file.
                if !self.worker.shared.lock().slots[slot].runs(job) {
                    return;
                }
                match file.renew(held.id, &held.token, self.options().lease) {
                    Ok(_) => next_renew = now + renew_every,
                    Err(Error::LeaseLost { .. }) => {
                        (self.events)(Event::LeaseLost { id: held.id });
                        control.stop_job(job, StopReason::LeaseLost);
                        return;
                    }
                    Err(e) if e.is_busy() => {
                        (self.events)(Event::Busy { id: held.id, step: "renew" });
                        // From now, not from before the busy timeout: else
                        // the retry is due at once and takes the connection
                        // straight back from a finish waiting for it.
                        next_renew = Instant::now() + BUSY_RETRY;
                    }
                    Err(e) => {
                        (self.events)(Event::Error { message: format!("renew job {}: {e}", held.id) });
                        next_renew = now + BUSY_RETRY.max(renew_every / 10);
                    }
                }
            }
        }
    }

    /// Records the outcome; retries while the file is busy (the supervisor
    /// keeps the lease meanwhile).
    fn settle(&self, job: &Claimed, outcome: Outcome, started: Instant) {
        let event = self.settle_step(job, outcome, started);
        if let Some(event) = event {
            (self.events)(event);
        }
    }

    /// Marks the job done for the supervisor; call with the file locked,
    /// so that no renewal slips in after the last step.
    fn mark_done(&self) {
        let mut state = self.worker.shared.lock();
        // Nobody waits for this: the supervisor finds out at its next
        // deadline (see `Slot::supervisor`).
        state.slots[self.slot].done = true;
    }

    fn settle_step(&self, job: &Claimed, outcome: Outcome, started: Instant) -> Option<Event> {
        let control = self.control();
        let outcome = match control.stop_reason() {
            Some(StopReason::LeaseLost) => {
                self.mark_done();
                return None;
            }
            Some(StopReason::Shutdown) if outcome != Outcome::Finish => Outcome::Release,
            _ => outcome,
        };
        loop {
            let result = {
                let mut file = lock(&self.conn);
                let result = match &outcome {
                    Outcome::Finish => file
                        .finish(job.id, &job.token, self.options().keep_done)
                        .map(|()| Event::Finished { id: job.id, elapsed: started.elapsed() }),
                    Outcome::Fail { error, retry } => file
                        .fail(job.id, &job.token, error, *retry)
                        .map(|to| Event::Failed { id: job.id, error: error.clone(), to }),
                    Outcome::Release => {
                        file.release(job.id, &job.token).map(|()| Event::Released { id: job.id })
                    }
                };
                if !matches!(&result, Err(e) if e.is_busy()) {
                    self.mark_done();
                }
                result
            };
            match result {
                Ok(event) => return Some(event),
                Err(Error::LeaseLost { id }) => return Some(Event::LeaseLost { id }),
                Err(e) if e.is_busy() => {
                    let step = match &outcome {
                        Outcome::Finish => "finish",
                        Outcome::Fail { .. } => "fail",
                        Outcome::Release => "release",
                    };
                    (self.events)(Event::Busy { id: job.id, step });
                    if control.wait(BUSY_RETRY) == Some(StopReason::LeaseLost) {
                        self.mark_done();
                        return Some(Event::LeaseLost { id: job.id });
                    }
                }
                Err(e) => return Some(Event::Error { message: format!("job {}: {e}", job.id) }),
            }
        }
    }
}
