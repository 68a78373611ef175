//! The values that steps take and give.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::clock::{millis, Millis};
use crate::error::Invalid;
use crate::validate;

/// A job's id: the `id` column, never used twice in a file.
pub type JobId = i64;

/// A new job's attempts unless told otherwise (the column's default).
pub const DEFAULT_MAX_ATTEMPTS: i64 = 10;
/// The reference's lease unless told otherwise (spec/COMMAND.md).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// A job's stored state (FORMAT.md §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Waiting for a worker; due once `run_at` has passed.
    Ready,
    /// Held by the worker with the token until `lease_until`.
    Running,
    /// Finished and kept.
    Done,
    /// Out of attempts, or failed for good; stays until retried or deleted.
    Dead,
}

impl State {
    /// The name the file stores.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Ready => "ready",
            State::Running => "running",
            State::Done => "done",
            State::Dead => "dead",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for State {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ready" => Ok(State::Ready),
            "running" => Ok(State::Running),
            "done" => Ok(State::Done),
            "dead" => Ok(State::Dead),
            other => Err(format!("unknown job state {other:?}")),
        }
    }
}

/// What `list` can filter on: the stored states, with ready split into
/// due (`ready`) and not yet due (`delayed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListState {
    /// Ready and due.
    Ready,
    /// Ready, not yet due.
    Delayed,
    /// Running.
    Running,
    /// Dead.
    Dead,
    /// Done.
    Done,
}

impl ListState {
    /// The name `list` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            ListState::Ready => "ready",
            ListState::Delayed => "delayed",
            ListState::Running => "running",
            ListState::Dead => "dead",
            ListState::Done => "done",
        }
    }
}

impl FromStr for ListState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ready" => Ok(ListState::Ready),
            "delayed" => Ok(ListState::Delayed),
            "running" => Ok(ListState::Running),
            "dead" => Ok(ListState::Dead),
            "done" => Ok(ListState::Done),
            other => Err(format!("unknown state {other:?} (ready, delayed, running, dead or done)")),
        }
    }
}

/// When a new job becomes due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunAt {
    /// At the add.
    #[default]
    Now,
    /// This long after the add (whole milliseconds).
    After(Duration),
    /// At this time.
    At(Millis),
}

/// A job to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    /// The queue, 1 to 200 characters.
    pub queue: String,
    /// The job's bytes, which no ukue program reads.
    pub payload: Vec<u8>,
    /// -100 to 100; among due jobs the highest runs first.
    pub priority: i64,
    /// How many claims the job gets before it is dead.
    pub max_attempts: i64,
    /// When it becomes due.
    pub run_at: RunAt,
}

impl NewJob {
    /// A job due now, of priority 0, with the default attempts.
    pub fn new(queue: impl Into<String>, payload: impl Into<Vec<u8>>) -> Self {
        NewJob {
            queue: queue.into(),
            payload: payload.into(),
            priority: 0,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            run_at: RunAt::Now,
        }
    }
    /// With this priority.
    pub fn priority(mut self, priority: i64) -> Self {
        self.priority = priority;
        self
    }
    /// With this many attempts.
    pub fn max_attempts(mut self, max_attempts: i64) -> Self {
        self.max_attempts = max_attempts;
        self
    }
    /// Due `delay` after the add.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.run_at = RunAt::After(delay);
        self
    }
    /// Due at `at`.
    pub fn run_at(mut self, at: Millis) -> Self {
        self.run_at = RunAt::At(at);
        self
    }

    /// Checks every field; the step that stores the job calls this.
    pub fn validate(&self) -> Result<(), Invalid> {
        validate::queue(&self.queue)?;
        validate::priority(self.priority)?;
        validate::max_attempts(self.max_attempts)
    }

    pub(crate) fn due_at(&self, now: Millis) -> Millis {
        match self.run_at {
            RunAt::Now => now,
            RunAt::After(delay) => now.saturating_add(millis(delay)),
            RunAt::At(at) => at,
        }
    }
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The job's id.
    pub id: JobId,
    /// Its queue.
    pub queue: String,
    /// Its stored state.
    pub state: State,
    /// Its priority.
    pub priority: i64,
    /// How many times it was claimed.
    pub attempts: i64,
    /// How many claims it gets.
    pub max_attempts: i64,
    /// When it is (or was) due.
    pub run_at: Millis,
    /// When a running job's lease runs out; None unless running.
    pub lease_until: Option<Millis>,
    /// What the last failed attempt reported.
    pub last_error: Option<String>,
    /// When it was added.
    pub created_at: Millis,
    /// When it last changed.
    pub updated_at: Millis,
    /// Its bytes.
    pub payload: Vec<u8>,
}

/// A job that a claim took: its holder's view, with the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    /// The job's id.
    pub id: JobId,
    /// Its queue.
    pub queue: String,
    /// Its bytes.
    pub payload: Vec<u8>,
    /// Its priority.
    pub priority: i64,
    /// This attempt's number, 1 for the first.
    pub attempt: i64,
    /// How many claims it gets.
    pub max_attempts: i64,
    /// When it was due.
    pub run_at: Millis,
    /// When this claim's lease runs out, unless renewed.
    pub lease_until: Millis,
    /// When it was added.
    pub created_at: Millis,
    /// What the last failed attempt reported.
    pub last_error: Option<String>,
    /// The lease's token, which the holder's steps must give.
    pub token: String,
}

/// How a holder fails a job (FORMAT.md §5.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Retry {
    /// Ready again after the backoff, or dead on the last attempt.
    #[default]
    Backoff,
    /// Ready again after this long (whole milliseconds), or dead on the
    /// last attempt.
    After(Duration),
    /// Dead at once.
    Never,
}

/// Where a failed job went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failed {
    /// Ready again, due at `run_at`.
    Ready {
        /// When it is due again.
        run_at: Millis,
    },
    /// Dead.
    Dead,
}

/// The result of a claim that may find nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The job the claim took.
    Job(Claimed),
    /// No due job.
    Empty {
        /// The run_at of the queue's next ready job, if any.
        next_due: Option<Millis>,
    },
}

/// Counts of one queue (FORMAT.md §5.10; the counts do not overlap).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueueStats {
    /// The queue.
    pub queue: String,
    /// Ready and due.
    pub ready: i64,
    /// Ready, not yet due.
    pub delayed: i64,
    /// Running, lease not run out.
    pub running: i64,
    /// Running, lease run out (the next claim reaps them).
    pub expired: i64,
    /// Dead.
    pub dead: i64,
    /// Done.
    pub done: i64,
    /// The run_at of the longest-waiting due job.
    pub oldest_due: Option<Millis>,
}

/// Which jobs `list` returns, in id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListFilter {
    /// Only this queue's jobs.
    pub queue: Option<String>,
    /// Only jobs in this state.
    pub state: Option<ListState>,
    /// Only ids greater than this (paging).
    pub after: JobId,
    /// At most this many, 1 to 1000.
    pub limit: i64,
}

impl Default for ListFilter {
    fn default() -> Self {
        ListFilter { queue: None, state: None, after: 0, limit: 50 }
    }
}
