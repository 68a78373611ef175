//! `ukue-probe LOG`: the command that `ukue work` runs in the conformance
//! cases. It reads the job's payload on stdin and its environment
//! (`UKUE_FILE`, `UKUE_JOB_ID`, `UKUE_ATTEMPT`, …), appends a start record
//! to LOG, follows the script in the payload, and appends an end record
//! (crate::subjects::probe: the records and the script).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::subjects::probe::{holds, now_ms, script, Action, Record, RecordKind};

/// The `ukue-probe` binary: exits with the status the script gives.
pub fn main() {
    let Some(log) = std::env::args_os().nth(1) else {
        eprintln!("usage: ukue-probe LOG (run by ukue work; the job's payload is its script)");
        std::process::exit(2);
    };
    std::process::exit(run(log.into()));
}

fn env_i64(name: &str) -> i64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(-1)
}

fn append(log: &Path, record: &Record) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    file.write_all(&line)?;
    file.sync_data()
}

/// Runs the probe with its log at `log`; returns the exit status.
fn run(log: PathBuf) -> i32 {
    let mut payload = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut payload);
    let text = String::from_utf8_lossy(&payload).into_owned();
    let file = std::env::var_os("UKUE_FILE").map(PathBuf::from);
    let job = env_i64("UKUE_JOB_ID");
    let attempt = env_i64("UKUE_ATTEMPT");
    let worker_pid = nix::unistd::getppid().as_raw() as u32;
    let held = || file.as_deref().and_then(|f| holds(f, job, attempt));
    let mut record = Record {
        max_attempts: env_i64("UKUE_MAX_ATTEMPTS"),
        queue: std::env::var("UKUE_QUEUE").unwrap_or_default(),
        pid: std::process::id(),
        worker_pid,
        at_ms: now_ms(),
        payload_sha256: format!("{:x}", Sha256::digest(&payload)),
        payload: text.chars().take(200).collect(),
        ..Record::start(job, attempt)
    };
    record.saw(held());
    if let Err(e) = append(&log, &record) {
        eprintln!("ukue-probe: cannot write {}: {e}", log.display());
        return 70;
    }
    let mut status = 0;
    for action in script(&text) {
        match action {
            Action::Exit(code) => {
                status = code;
                break;
            }
            Action::Sleep(ms) => std::thread::sleep(Duration::from_millis(ms)),
            Action::IgnoreTerm => {
                // SAFETY: SIG_IGN installs no handler code.
                let _ = unsafe {
                    nix::sys::signal::signal(
                        nix::sys::signal::Signal::SIGTERM,
                        nix::sys::signal::SigHandler::SigIgn,
                    )
                };
            }
            Action::KillWorker => {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(worker_pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            Action::FailAttempts(n) if attempt <= n => {
                status = 3;
                break;
            }
            Action::FailAttempts(_) => {}
        }
    }
    record.event = RecordKind::End;
    record.at_ms = now_ms();
    record.saw(held());
    record.exit = Some(status);
    if let Err(e) = append(&log, &record) {
        eprintln!("ukue-probe: cannot write {}: {e}", log.display());
        return 70;
    }
    status
}
