//! The probe: the command that `ukue work` runs in the conformance cases.
//!
//! It appends a record to a log when it starts and when it ends (each
//! written with O_APPEND and synced, so records of many processes never
//! mix and survive a crash), checks in the file whether this attempt still
//! holds its job, and follows the script in the job's payload.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One step of a payload script; words that are none of these are labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
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

/// Parses a payload into its steps.
pub fn script(payload: &str) -> Vec<Step> {
    payload
        .split_whitespace()
        .filter_map(|word| {
            let (name, arg) = word.split_once(':').unwrap_or((word, ""));
            match name {
                "exit" => arg.parse().ok().map(Step::Exit),
                "sleep" => arg.parse().ok().map(Step::Sleep),
                "ignore-term" => Some(Step::IgnoreTerm),
                "kill-worker" => Some(Step::KillWorker),
                "fail-attempts" => arg.parse().ok().map(Step::FailAttempts),
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

fn env_i64(name: &str) -> i64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(-1)
}

/// Whether `attempt` holds `job` in `file`, read without writing.
pub fn holds(file: &Path, job: i64, attempt: i64) -> Option<bool> {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = rusqlite::Connection::open_with_flags(file, flags).ok()?;
    conn.busy_timeout(Duration::from_secs(5)).ok()?;
    let row: Result<(String, i64), _> =
        conn.query_row("SELECT state, attempts FROM ukue_jobs WHERE id = ?1", [job], |r| {
            Ok((r.get(0)?, r.get(1)?))
        });
    match row {
        Ok((state, attempts)) => Some(state == "running" && attempts == attempt),
        Err(rusqlite::Error::QueryReturnedNoRows) => Some(false),
        Err(_) => None,
    }
}

fn append(log: &Path, record: &Record) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    file.write_all(&line)?;
    file.sync_data()
}

/// Runs the probe: `ukue-probe LOG`. Returns the exit status.
pub fn main(log: PathBuf) -> i32 {
    let mut payload = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut payload);
    let text = String::from_utf8_lossy(&payload).into_owned();
    let file = std::env::var_os("UKUE_FILE").map(PathBuf::from);
    let job = env_i64("UKUE_JOB_ID");
    let attempt = env_i64("UKUE_ATTEMPT");
    let worker_pid = nix::unistd::getppid().as_raw() as u32;
    let held = || file.as_deref().and_then(|f| holds(f, job, attempt));
    let mut record = Record {
        event: RecordKind::Start,
        job,
        attempt,
        max_attempts: env_i64("UKUE_MAX_ATTEMPTS"),
        queue: std::env::var("UKUE_QUEUE").unwrap_or_default(),
        pid: std::process::id(),
        worker_pid,
        at_ms: now_ms(),
        payload_sha256: format!("{:x}", Sha256::digest(&payload)),
        payload: text.chars().take(200).collect(),
        held: held(),
        exit: None,
    };
    if let Err(e) = append(&log, &record) {
        eprintln!("ukue-probe: cannot write {}: {e}", log.display());
        return 70;
    }
    let mut status = 0;
    for step in script(&text) {
        match step {
            Step::Exit(code) => {
                status = code;
                break;
            }
            Step::Sleep(ms) => std::thread::sleep(Duration::from_millis(ms)),
            Step::IgnoreTerm => {
                // SAFETY: SIG_IGN installs no handler code.
                let _ = unsafe {
                    nix::sys::signal::signal(
                        nix::sys::signal::Signal::SIGTERM,
                        nix::sys::signal::SigHandler::SigIgn,
                    )
                };
            }
            Step::KillWorker => {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(worker_pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            Step::FailAttempts(n) if attempt <= n => {
                status = 3;
                break;
            }
            Step::FailAttempts(_) => {}
        }
    }
    record.event = RecordKind::End;
    record.at_ms = now_ms();
    record.held = held();
    record.exit = Some(status);
    if let Err(e) = append(&log, &record) {
        eprintln!("ukue-probe: cannot write {}: {e}", log.display());
        return 70;
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts() {
        assert_eq!(script("p1 sleep:20 exit:3"), vec![Step::Sleep(20), Step::Exit(3)]);
        assert_eq!(
            script("fail-attempts:2 ignore-term kill-worker"),
            vec![Step::FailAttempts(2), Step::IgnoreTerm, Step::KillWorker]
        );
        assert_eq!(script("just a label exit:x"), vec![]);
    }
}
