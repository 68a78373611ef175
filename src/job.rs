//! The values that steps take and give.

use std::fmt;
use std::str::FromStr;

use crate::clock::Millis;
use crate::error::Invalid;
use crate::validate;

pub type JobId = i64;

/// Defaults of the reference (shared/ukue-contract.md).
pub const DEFAULT_MAX_ATTEMPTS: i64 = 10;
pub const DEFAULT_LEASE_MS: Millis = 60_000;

/// A job's stored state (FORMAT.md §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Ready,
    Running,
    Done,
    Dead,
}

impl State {
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
    Ready,
    Delayed,
    Running,
    Dead,
    Done,
}

impl ListState {
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
    #[default]
    Now,
    /// This many milliseconds after the add.
    After(Millis),
    At(Millis),
}

/// A job to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    pub queue: String,
    pub payload: Vec<u8>,
    pub priority: i64,
    pub max_attempts: i64,
    pub run_at: RunAt,
}

impl NewJob {
    pub fn new(queue: impl Into<String>, payload: impl Into<Vec<u8>>) -> Self {
        NewJob {
            queue: queue.into(),
            payload: payload.into(),
            priority: 0,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            run_at: RunAt::Now,
        }
    }
    pub fn priority(mut self, priority: i64) -> Self {
        self.priority = priority;
        self
    }
    pub fn max_attempts(mut self, max_attempts: i64) -> Self {
        self.max_attempts = max_attempts;
        self
    }
    pub fn delay_ms(mut self, delay: Millis) -> Self {
        self.run_at = RunAt::After(delay);
        self
    }
    pub fn run_at(mut self, at: Millis) -> Self {
        self.run_at = RunAt::At(at);
        self
    }

    /// Checks every field; the step that stores the job calls this.
    pub fn validate(&self) -> Result<(), Invalid> {
        validate::queue(&self.queue)?;
        validate::priority(self.priority)?;
        validate::max_attempts(self.max_attempts)?;
        if let RunAt::After(delay) = self.run_at {
            if delay < 0 {
                return Err(Invalid::Delay(delay));
            }
        }
        Ok(())
    }

    pub(crate) fn due_at(&self, now: Millis) -> Millis {
        match self.run_at {
            RunAt::Now => now,
            RunAt::After(delay) => now.saturating_add(delay),
            RunAt::At(at) => at,
        }
    }
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: JobId,
    pub queue: String,
    pub state: State,
    pub priority: i64,
    pub attempts: i64,
    pub max_attempts: i64,
    pub run_at: Millis,
    pub lease_until: Option<Millis>,
    pub last_error: Option<String>,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub payload: Vec<u8>,
}

/// A job that a claim took: its holder's view, with the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    pub id: JobId,
    pub queue: String,
    pub payload: Vec<u8>,
    pub priority: i64,
    /// This attempt's number, 1 for the first.
    pub attempt: i64,
    pub max_attempts: i64,
    pub run_at: Millis,
    pub lease_until: Millis,
    pub created_at: Millis,
    pub last_error: Option<String>,
    pub token: String,
}

/// How a holder fails a job (FORMAT.md §5.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Retry {
    /// Ready again after the backoff, or dead on the last attempt.
    #[default]
    Backoff,
    /// Ready again after this many ms, or dead on the last attempt.
    After(Millis),
    /// Dead at once.
    Never,
}

/// Where a failed job went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failed {
    Ready { run_at: Millis },
    Dead,
}

/// The result of a claim that may find nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    Job(Claimed),
    /// No due job; `next_due` is the run_at of the queue's next ready job.
    Empty {
        next_due: Option<Millis>,
    },
}

/// Counts of one queue (FORMAT.md §5.10; the counts do not overlap).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueueStats {
    pub queue: String,
    pub ready: i64,
    pub delayed: i64,
    pub running: i64,
    pub expired: i64,
    pub dead: i64,
    pub done: i64,
    pub oldest_due: Option<Millis>,
}

/// Which jobs `list` returns, in id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListFilter {
    pub queue: Option<String>,
    pub state: Option<ListState>,
    /// Only ids greater than this (paging).
    pub after: JobId,
    pub limit: i64,
}

impl Default for ListFilter {
    fn default() -> Self {
        ListFilter { queue: None, state: None, after: 0, limit: 50 }
    }
}
