//! The step-driver protocol (spec/CONFORMANCE.md, "The step-driver
//! protocol"): a driver is a process that performs FORMAT.md's steps on
//! request, one JSON request a line on stdin, one JSON answer a line on
//! stdout, after a hello line that names it, the protocol version and its
//! capabilities.
//!
//! This module holds the protocol's types, the [`ReferenceDriver`] that
//! answers requests with the reference library (the `ukue-driver` binary,
//! crate::commands::driver, is a loop around it; the in-process model runs
//! call it directly) and, in [`client`], the side that starts a driver
//! process and talks to it. (The library's `ukue::worker::Handler` is
//! something else: what its worker runs for each job.)

pub mod client;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use ukue::{Access, Claim, Error, Failed, ManualClock, NewJob, OpenOptions, Retry, Spec, State, Ukue};

/// Milliseconds since the Unix epoch: every time on the wire (and in the
/// model of the format).
pub type Millis = i64;

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The capability of accepting an injected clock: every request's
/// `now_ms` is the time the step runs at.
pub const CAP_NOW_MS: &str = "now_ms";

/// The capability of backing off as the published command does (FORMAT.md
/// §5.6: 10 s × 2^(attempt−1), at most an hour, plus up to a tenth): the
/// model holds such a driver to that span, and any other to any delay.
pub const CAP_PUBLISHED_BACKOFF: &str = "published_backoff";

/// The first line a driver writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The driver's name and version, for reports.
    pub driver: String,
    pub protocol: u32,
    /// What the driver can do beyond the required requests (`now_ms`).
    #[serde(default)]
    pub capabilities: Vec<String>,
}

impl Hello {
    pub fn has(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }
}

/// One request. Every request may carry `now_ms`: the caller's clock in
/// milliseconds, which a driver with the `now_ms` capability runs the step
/// at (FORMAT.md's `:now`); without it the driver uses its own clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Opens the file at `path` (an existing ukue file; with `create`, a
    /// missing or empty path becomes a new one). Closes any file open before.
    Open {
        path: String,
        #[serde(default)]
        create: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now_ms: Option<Millis>,
    },
    Add {
        queue: String,
        payload: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        priority: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_attempts: Option<i64>,
        /// Due this many ms after now (default 0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delay_ms: Option<Millis>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now_ms: Option<Millis>,
    },
    Claim {
        queue: String,
        lease_ms: Millis,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now_ms: Option<Millis>,
    },
    Finish {
        id: i64,
        token: String,
        #[serde(default)]
        keep_done: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now_ms: Option<Millis>,
    },
    /// Fails a held job: dead when `permanent` (or out of attempts), else
    /// ready after `retry_in_ms` when given, else after the backoff.
    Fail {
        id: i64,
        token: String,
        #[serde(default)]
        error: String,
        #[serde(default)]
        permanent: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_in_ms: Option<Millis>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now_ms: Option<Millis>,
    },
    Renew {
        id: i64,
        token: String,
        lease_ms: Millis,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now_ms: Option<Millis>,
    },
    Release {
        id: i64,
        token: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now_ms: Option<Millis>,
    },
    /// `id`: one dead job; `all`: every dead job (of `queue`, when given).
    Retry {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<i64>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        all: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        queue: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now_ms: Option<Millis>,
    },
    Delete {
        id: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now_ms: Option<Millis>,
    },
    Purge {
        state: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        queue: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now_ms: Option<Millis>,
    },
    Stats {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now_ms: Option<Millis>,
    },
}

impl Request {
    pub fn now_ms(&self) -> Option<Millis> {
        match self {
            Request::Open { now_ms, .. }
            | Request::Add { now_ms, .. }
            | Request::Claim { now_ms, .. }
            | Request::Finish { now_ms, .. }
            | Request::Fail { now_ms, .. }
            | Request::Renew { now_ms, .. }
            | Request::Release { now_ms, .. }
            | Request::Retry { now_ms, .. }
            | Request::Delete { now_ms, .. }
            | Request::Purge { now_ms, .. }
            | Request::Stats { now_ms } => *now_ms,
        }
    }
}

/// The typed errors of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The caller does not hold the job (FORMAT.md §5.5).
    LeaseLost,
    /// No job has that id.
    NotFound,
    /// The file was refused (§2.3), or the job is not in a state the step
    /// takes (retry of a job that is not dead).
    Refused,
    /// Input that no step accepts, a request that cannot be read, or no
    /// file open.
    Invalid,
    /// Anything else (an I/O or SQLite failure); the message says what.
    Error,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::LeaseLost => "lease_lost",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Refused => "refused",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Error => "error",
        }
    }
}

/// A claimed job as an answer shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobAnswer {
    pub id: i64,
    pub queue: String,
    pub payload: String,
    pub priority: i64,
    pub attempt: i64,
    pub max_attempts: i64,
    pub run_at: Millis,
    pub lease_until: Millis,
    pub created_at: Millis,
    pub last_error: Option<String>,
    pub token: String,
}

/// One queue's counts (FORMAT.md §5.10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueAnswer {
    pub queue: String,
    pub ready: i64,
    pub delayed: i64,
    pub running: i64,
    pub expired: i64,
    pub dead: i64,
    pub done: i64,
    pub oldest_due: Option<Millis>,
}

/// One answer. `ok` says whether the step happened; the other fields are
/// those of the request's op (add: `id`; claim: `job`, null when nothing
/// is due, with `next_due`; fail: `state` and `run_at`; renew:
/// `lease_until`; retry all and purge: `count`; stats: `queues`), or, when
/// not ok, `error` and `message`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobAnswer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_due: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_at: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queues: Option<Vec<QueueAnswer>>,
}

impl Answer {
    pub fn ok() -> Answer {
        Answer { ok: true, ..Answer::default() }
    }

    pub fn error(kind: ErrorKind, message: impl Into<String>) -> Answer {
        Answer { ok: false, error: Some(kind), message: Some(message.into()), ..Answer::default() }
    }

    /// The answer as one line of JSON (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(r#"{{"ok":false,"error":"error","message":"cannot write the answer: {e}"}}"#)
        })
    }
}

fn kind_of(e: &Error) -> ErrorKind {
    match e {
        Error::LeaseLost { .. } => ErrorKind::LeaseLost,
        Error::JobNotFound { .. } => ErrorKind::NotFound,
        Error::Refused(_) | Error::NotDead { .. } => ErrorKind::Refused,
        Error::Invalid(_) => ErrorKind::Invalid,
        _ => ErrorKind::Error,
    }
}

/// The protocol gives spans in ms, the library takes Durations: a
/// negative span is input that no step takes (the message says why).
fn span(ms: Millis, what: &str) -> Result<Duration, String> {
    u64::try_from(ms)
        .map(Duration::from_millis)
        .map_err(|_| format!("{what} must not be negative, got {ms} ms"))
}

/// [`span`], or return an invalid answer from the request.
macro_rules! span_or_answer {
    ($ms:expr, $what:expr) => {
        match span($ms, $what) {
            Ok(span) => span,
            Err(message) => return Ok(Answer::error(ErrorKind::Invalid, message)),
        }
    };
}

impl From<Error> for Answer {
    fn from(e: Error) -> Answer {
        Answer::error(kind_of(&e), e.to_string())
    }
}

/// Answers requests with the reference library: one connection (the file
/// of the last `open`), on a [`ManualClock`] set from each request's
/// `now_ms`.
#[derive(Debug)]
pub struct ReferenceDriver {
    file: Option<Ukue>,
    clock: ManualClock,
    spec: Arc<Spec>,
    /// When set, `open` takes only a plain file name, inside this folder
    /// (the fuzzer's requests must not touch the rest of the machine).
    jail: Option<PathBuf>,
}

impl ReferenceDriver {
    /// A handler running `spec` (the builtin FORMAT.md, or a broken one).
    pub fn new(spec: Arc<Spec>) -> ReferenceDriver {
        ReferenceDriver { file: None, clock: ManualClock::new(0), spec, jail: None }
    }

    /// A handler whose `open` takes only plain names of files inside `dir`.
    pub fn jailed(spec: Arc<Spec>, dir: PathBuf) -> ReferenceDriver {
        ReferenceDriver { jail: Some(dir), ..ReferenceDriver::new(spec) }
    }

    /// The hello line's content.
    pub fn hello(&self) -> Hello {
        let broken = if Arc::ptr_eq(&self.spec, &Spec::builtin()) { "" } else { ", edited FORMAT.md" };
        Hello {
            driver: format!("ukue-driver (Rust reference, ukue {}{broken})", env!("CARGO_PKG_VERSION")),
            protocol: PROTOCOL_VERSION,
            capabilities: vec![CAP_NOW_MS.to_string(), CAP_PUBLISHED_BACKOFF.to_string()],
        }
    }

    /// Answers one request line; the answer is one line of JSON.
    pub fn handle_line(&mut self, line: &str) -> String {
        let answer = match serde_json::from_str::<Request>(line) {
            Ok(request) => self.handle(request),
            Err(e) => Answer::error(ErrorKind::Invalid, format!("cannot read the request: {e}")),
        };
        answer.to_line()
    }

    /// Answers one request.
    pub fn handle(&mut self, request: Request) -> Answer {
        let now = request.now_ms().unwrap_or_else(|| ukue::Clock::now_ms(&ukue::SystemClock));
        self.clock.set(now);
        match self.run(request) {
            Ok(answer) => answer,
            Err(e) => e.into(),
        }
    }

    fn open(&mut self, path: String, create: bool) -> Result<Answer, Error> {
        self.file = None;
        let path = match &self.jail {
            None => PathBuf::from(path),
            Some(dir) => {
                if path.is_empty() || path.contains('/') || path == "." || path == ".." {
                    return Ok(Answer::error(ErrorKind::Invalid, "this driver opens only plain file names"));
                }
                dir.join(path)
            }
        };
        let access = if create { Access::Create } else { Access::Existing };
        self.file = Some(self.options(access).open(path)?);
        Ok(Answer::ok())
    }

    /// In place of an `open` request: the tables of `conn`'s database
    /// (added when it has none, at `now`), such as an in-memory one, which
    /// no path names.
    pub fn attach(&mut self, conn: rusqlite::Connection, now: Millis) -> Result<(), Error> {
        self.file = None;
        self.clock.set(now);
        self.file = Some(self.options(Access::AddTables).attach(conn)?);
        Ok(())
    }

    /// The file open now, if any.
    pub fn file(&self) -> Option<&Ukue> {
        self.file.as_ref()
    }

    fn options(&self, access: Access) -> OpenOptions {
        OpenOptions::default().access(access).clock(self.clock.clone()).spec(self.spec.clone())
    }

    fn run(&mut self, request: Request) -> Result<Answer, Error> {
        if let Request::Open { path, create, .. } = request {
            return self.open(path, create);
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(Answer::error(ErrorKind::Invalid, "no file is open: send an open request first"));
        };
        Ok(match request {
            Request::Open { .. } => unreachable!("answered above"),
            Request::Add { queue, payload, priority, max_attempts, delay_ms, .. } => {
                let mut job = NewJob::new(queue, payload.into_bytes());
                if let Some(p) = priority {
                    job = job.priority(p);
                }
                if let Some(n) = max_attempts {
                    job = job.max_attempts(n);
                }
                if let Some(d) = delay_ms {
                    job = job.delay(span_or_answer!(d, "delay"));
                }
                let id = file.add(&job)?;
                Answer { id: Some(id), ..Answer::ok() }
            }
            Request::Claim { queue, lease_ms, .. } => {
                match file.claim_next(&queue, span_or_answer!(lease_ms, "lease"))? {
                    Claim::Job(job) => Answer {
                        job: Some(JobAnswer {
                            id: job.id,
                            queue: job.queue,
                            payload: String::from_utf8_lossy(&job.payload).into_owned(),
                            priority: job.priority,
                            attempt: job.attempt,
                            max_attempts: job.max_attempts,
                            run_at: job.run_at,
                            lease_until: job.lease_until,
                            created_at: job.created_at,
                            last_error: job.last_error,
                            token: job.token,
                        }),
                        ..Answer::ok()
                    },
                    Claim::Empty { next_due } => Answer { next_due, ..Answer::ok() },
                }
            }
            Request::Finish { id, token, keep_done, .. } => {
                file.finish(id, &token, keep_done)?;
                Answer::ok()
            }
            Request::Fail { id, token, error, permanent, retry_in_ms, .. } => {
                let retry = match (permanent, retry_in_ms) {
                    (true, _) => Retry::Never,
                    (false, Some(ms)) => Retry::After(span_or_answer!(ms, "retry_in")),
                    (false, None) => Retry::Backoff,
                };
                match file.fail(id, &token, &error, retry)? {
                    Failed::Dead => Answer { state: Some("dead".into()), ..Answer::ok() },
                    Failed::Ready { run_at } => {
                        Answer { state: Some("ready".into()), run_at: Some(run_at), ..Answer::ok() }
                    }
                }
            }
            Request::Renew { id, token, lease_ms, .. } => {
                let until = file.renew(id, &token, span_or_answer!(lease_ms, "lease"))?;
                Answer { lease_until: Some(until), ..Answer::ok() }
            }
            Request::Release { id, token, .. } => {
                file.release(id, &token)?;
                Answer::ok()
            }
            Request::Retry { id: Some(id), all: false, queue: None, .. } => {
                file.retry(id)?;
                Answer::ok()
            }
            Request::Retry { id: None, all: true, queue, .. } => {
                if let Some(q) = &queue {
                    ukue::validate::queue(q)?;
                }
                let count = file.retry_all(queue.as_deref())?;
                Answer { count: Some(count as i64), ..Answer::ok() }
            }
            Request::Retry { .. } => {
                Answer::error(ErrorKind::Invalid, "retry takes an id, or all (with a queue or not)")
            }
            Request::Delete { id, .. } => {
                file.delete(id)?;
                Answer::ok()
            }
            Request::Purge { state, queue, .. } => {
                let state = match state.as_str() {
                    "dead" => State::Dead,
                    "done" => State::Done,
                    other => return Err(ukue::Invalid::PurgeState(other.to_string()).into()),
                };
                if let Some(q) = &queue {
                    ukue::validate::queue(q)?;
                }
                let count = file.purge(state, queue.as_deref())?;
                Answer { count: Some(count as i64), ..Answer::ok() }
            }
            Request::Stats { .. } => {
                let queues = file
                    .stats()?
                    .into_iter()
                    .map(|s| QueueAnswer {
                        queue: s.queue,
                        ready: s.ready,
                        delayed: s.delayed,
                        running: s.running,
                        expired: s.expired,
                        dead: s.dead,
                        done: s.done,
                        oldest_due: s.oldest_due,
                    })
                    .collect();
                Answer { queues: Some(queues), ..Answer::ok() }
            }
        })
    }
}
