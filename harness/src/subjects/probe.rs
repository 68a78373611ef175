//! The probe, the command that `ukue work` runs in the conformance cases
//! (the `ukue-probe` command: crate::commands::probe): its [`Record`]s,
//! which make the history, and the script in a job's payload
//! ([`Action`]s).
//!
//! It appends a record to a log when it starts and when it ends (each
//! written with O_APPEND and synced, so records of many processes never
//! mix and survive a crash), checks in the file whether this attempt still
//! holds its job ([`holds`]), and follows the script in the job's payload.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::observe::file::{open_read_only, state_and_attempts};

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

/// Whether `attempt` holds `job` in `file`, read without writing; None
/// when the file cannot be read.
pub fn holds(file: &Path, job: i64, attempt: i64) -> Option<bool> {
    let conn = open_read_only(file).ok()?;
    match state_and_attempts(&conn, job) {
        Ok(Some((state, attempts))) => Some(state == "running" && attempts == attempt),
        Ok(None) => Some(false),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts() {
        assert_eq!(script("p1 sleep:20 exit:3"), vec![Action::Sleep(20), Action::Exit(3)]);
        assert_eq!(
            script("fail-attempts:2 ignore-term kill-worker"),
            vec![Action::FailAttempts(2), Action::IgnoreTerm, Action::KillWorker]
        );
        assert_eq!(script("just a label exit:x"), vec![]);
    }
}
