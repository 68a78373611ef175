//! The probe, the command that `ukue work` runs in the conformance cases
//! (the `ukue-probe` command: crate::commands::probe): its [`Record`]s,
//! which make the history, and the script in a job's payload
//! ([`Action`]s).
//!
//! It appends a record to a log when it starts and when it ends (each
//! written with O_APPEND and synced, so records of many processes never
//! mix and survive a crash), checks in the file whether this attempt still
//! holds its job ([`holds`]), and follows the script in the job's payload.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::observe::file::open_read_only;

/// One action of a payload script; words that are none of these are labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `exit:N` — end now with status N.
    Exit(i32),
    /// `sleep:MS`
    Sleep(u64),
    /// `ignore-term` — ignore SIGTERM from here on.
    IgnoreTerm,
    /// `kill-worker` — SIGKILL the worker that started the probe.
    KillWorker,
    /// `fail-attempts:N` — exit 3 while this is attempt N or earlier.
    FailAttempts(i64),
    /// `stdout:TEXT` — write TEXT and a newline on stdout.
    Stdout(String),
    /// `stderr:TEXT` — write TEXT and a newline on stderr.
    Stderr(String),
    /// `fill-stderr:N` — write N bytes on stderr: `x`s, a newline every
    /// hundred (no digits, so that a number in `last_error` is the status).
    FillStderr(usize),
    /// `signal:N` — send itself signal N (ending without an end record).
    Signal(i32),
    /// `await:NAME` — wait until a file NAME exists beside the log, at most
    /// a minute.
    Await(String),
    /// `env:NAME` — the start record notes the variable NAME (null when
    /// unset). Done before the start record, wherever the word stands.
    Env(String),
    /// `background:MS`, `background-ignore-term:MS` — before the start
    /// record, start a child (in the probe's process group) that holds the
    /// probe's stdout and stderr for MS ms, ignoring SIGTERM or not; the
    /// start record lists the children's pids.
    Background { ms: u64, ignore_term: bool },
}

/// Parses a payload into its actions.
pub fn script(payload: &str) -> Vec<Action> {
    payload
        .split_whitespace()
        .filter_map(|word| {
            let (name, arg) = word.split_once(':').unwrap_or((word, ""));
            match name {
                "exit" => arg.parse().ok().map(Action::Exit),
                "sleep" => arg.parse().ok().map(Action::Sleep),
                "ignore-term" => Some(Action::IgnoreTerm),
                "kill-worker" => Some(Action::KillWorker),
                "fail-attempts" => arg.parse().ok().map(Action::FailAttempts),
                "stdout" => Some(Action::Stdout(arg.to_string())),
                "stderr" => Some(Action::Stderr(arg.to_string())),
                "fill-stderr" => arg.parse().ok().map(Action::FillStderr),
                "signal" => arg.parse().ok().map(Action::Signal),
                "await" if !arg.is_empty() && !arg.contains('/') => Some(Action::Await(arg.to_string())),
                "env" if !arg.is_empty() => Some(Action::Env(arg.to_string())),
                "background" => arg.parse().ok().map(|ms| Action::Background { ms, ignore_term: false }),
                "background-ignore-term" => {
                    arg.parse().ok().map(|ms| Action::Background { ms, ignore_term: true })
                }
                _ => None,
            }
        })
        .collect()
}

/// A probe's record. `start` records have no end fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub event: RecordKind,
    pub job: i64,
    pub attempt: i64,
    pub max_attempts: i64,
    pub queue: String,
    pub pid: u32,
    pub worker_pid: u32,
    pub at_ms: i64,
    pub payload_sha256: String,
    pub payload: String,
    /// Whether the file showed this attempt holding the job (running, with
    /// this attempt count) when the record was written; None when the
    /// file could not be read.
    pub held: Option<bool>,
    /// The status the probe exits with (end records).
    pub exit: Option<i32>,
    /// What the file showed of the job while this attempt held it: its
    /// token (and SQLite's type of it), `lease_until`, and `updated_at`
    /// (at the start, the moment the claim took it). Absent when not held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<i64>,
    /// What the file showed of the job when this attempt did not hold it:
    /// its state and attempts (absent when held, or when the job was gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_attempts: Option<i64>,
    /// The probe's arguments after LOG, as `work` passed them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The variables that `env:NAME` words ask for (null: unset).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, Option<String>>,
    /// The pids of the children that `background:` words started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordKind {
    Start,
    End,
}

pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// What the file shows of a job, read without writing, for one attempt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holding {
    /// Whether the job is running with this attempt count.
    pub held: bool,
    /// The rest only when held.
    pub token: Option<String>,
    pub token_type: Option<String>,
    pub lease_until: Option<i64>,
    pub updated_at: Option<i64>,
    /// When not held: the job's state and attempts (None: it was gone).
    pub seen: Option<(String, i64)>,
}

/// Whether `attempt` holds `job` in `file`, and its token and lease if so;
/// None when the file cannot be read.
pub fn holds(file: &Path, job: i64, attempt: i64) -> Option<Holding> {
    let conn = open_read_only(file).ok()?;
    let row = conn.query_row(
        "SELECT state, attempts, CAST(token AS TEXT), typeof(token), lease_until, updated_at
         FROM ukue_jobs WHERE id = ?1",
        [job],
        |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<i64>>(4)?,
                r.get::<_, Option<i64>>(5)?,
            ))
        },
    );
    match row {
        Ok((state, attempts, token, token_type, lease_until, updated_at)) => {
            if state == "running" && attempts == attempt {
                Some(Holding {
                    held: true,
                    token,
                    token_type: Some(token_type),
                    lease_until,
                    updated_at,
                    seen: None,
                })
            } else {
                Some(Holding { seen: Some((state, attempts)), ..Holding::default() })
            }
        }
        Err(rusqlite::Error::QueryReturnedNoRows) => Some(Holding::default()),
        Err(_) => None,
    }
}

impl Record {
    /// The start record of one attempt at a job, with the rest empty: the
    /// probe fills in what it knows, and has seen nothing of the file yet.
    pub fn start(job: i64, attempt: i64) -> Record {
        Record {
            event: RecordKind::Start,
            job,
            attempt,
            max_attempts: 0,
            queue: String::new(),
            pid: 0,
            worker_pid: 0,
            at_ms: 0,
            payload_sha256: String::new(),
            payload: String::new(),
            held: None,
            exit: None,
            token: None,
            token_type: None,
            lease_until: None,
            updated_at: None,
            seen_state: None,
            seen_attempts: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            children: Vec::new(),
        }
    }

    /// Notes what the file showed (`None`: it could not be read).
    pub fn saw(&mut self, holding: Option<Holding>) {
        self.held = holding.as_ref().map(|h| h.held);
        let holding = holding.unwrap_or_default();
        self.token = holding.token;
        self.token_type = holding.token_type;
        self.lease_until = holding.lease_until;
        self.updated_at = holding.updated_at;
        (self.seen_state, self.seen_attempts) = holding.seen.unzip();
    }

    /// The file showed this attempt's claim committed and its hold over
    /// before the command started: the job back in `ready` (or `dead`)
    /// with this attempt counted, reaped when its lease ran out (FORMAT.md
    /// §5.4), or with a later attempt counted, in any state (reaped and
    /// claimed again meanwhile: a worker stalled on a loaded machine
    /// between its claim and its command).
    pub fn saw_it_reaped(&self) -> bool {
        match (self.held, self.seen_state.as_deref(), self.seen_attempts) {
            (Some(false), Some("ready" | "dead"), Some(attempts)) => attempts >= self.attempt,
            (Some(false), Some(_), Some(attempts)) => attempts > self.attempt,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_seen_past_this_attempt_was_reaped() {
        let record = |held, seen: Option<(&str, i64)>| {
            let mut r =
                Record { max_attempts: 3, queue: "q".into(), pid: 1, worker_pid: 1, ..Record::start(1, 2) };
            r.saw(Some(Holding { held, seen: seen.map(|(s, a)| (s.to_string(), a)), ..Holding::default() }));
            r
        };
        assert!(record(false, Some(("ready", 2))).saw_it_reaped());
        assert!(record(false, Some(("dead", 2))).saw_it_reaped());
        // Reaped, and claimed again (and maybe finished) since.
        assert!(record(false, Some(("running", 3))).saw_it_reaped());
        assert!(record(false, Some(("done", 4))).saw_it_reaped());
        // Not yet claimed, or not yet committed, or gone: no reap shown.
        assert!(!record(false, Some(("ready", 1))).saw_it_reaped());
        assert!(!record(false, Some(("running", 1))).saw_it_reaped());
        assert!(!record(false, Some(("running", 2))).saw_it_reaped());
        assert!(!record(false, None).saw_it_reaped());
        assert!(!record(true, None).saw_it_reaped());
    }

    #[test]
    fn scripts() {
        assert_eq!(script("p1 sleep:20 exit:3"), vec![Action::Sleep(20), Action::Exit(3)]);
        assert_eq!(
            script("fail-attempts:2 ignore-term kill-worker"),
            vec![Action::FailAttempts(2), Action::IgnoreTerm, Action::KillWorker]
        );
        assert_eq!(script("just a label exit:x"), vec![]);
        assert_eq!(
            script("stdout:a stderr:b fill-stderr:9 signal:9 await:go env:HOME"),
            vec![
                Action::Stdout("a".into()),
                Action::Stderr("b".into()),
                Action::FillStderr(9),
                Action::Signal(9),
                Action::Await("go".into()),
                Action::Env("HOME".into()),
            ]
        );
        assert_eq!(
            script("background:10 background-ignore-term:20 await:a/b env:"),
            vec![
                Action::Background { ms: 10, ignore_term: false },
                Action::Background { ms: 20, ignore_term: true }
            ]
        );
    }
}
