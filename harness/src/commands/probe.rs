//! `ukue-probe LOG [ARG...]`: the command that `ukue work` runs in the
//! conformance cases. It reads the job's payload on stdin and its
//! environment (`UKUE_FILE`, `UKUE_JOB_ID`, `UKUE_ATTEMPT`, …), appends a
//! start record to LOG (with the ARGs it was given), follows the script in
//! the payload, and appends an end record (crate::subjects::probe: the
//! records and the script). `ukue-probe --hold MS` (or
//! `--hold-ignoring-term MS`) is the child a `background:MS` word starts:
//! it sleeps MS ms holding the stdout and stderr it was given.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{self, SigHandler, Signal};
use sha2::{Digest, Sha256};

use crate::subjects::probe::{holds, now_ms, script, Action, Record, RecordKind};

/// The longest an `await:` word waits.
const LONGEST_WAIT: Duration = Duration::from_secs(60);

/// The `ukue-probe` binary: exits with the status the script gives.
pub fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(first) = args.next() else {
        eprintln!("usage: ukue-probe LOG [ARG...] (run by ukue work; the job's payload is its script)");
        std::process::exit(2);
    };
    let rest: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    match first.to_str() {
        Some(flag @ ("--hold" | "--hold-ignoring-term")) => {
            hold(rest.first().and_then(|ms| ms.parse().ok()).unwrap_or(0), flag == "--hold-ignoring-term")
        }
        _ => std::process::exit(run(first.into(), rest)),
    }
}

/// A background child: sleeps `ms` with the stdout and stderr it inherited.
fn hold(ms: u64, ignore_term: bool) {
    let handler = if ignore_term { SigHandler::SigIgn } else { SigHandler::SigDfl };
    // SAFETY: SIG_IGN and SIG_DFL install no handler code.
    let _ = unsafe { signal::signal(Signal::SIGTERM, handler) };
    std::thread::sleep(Duration::from_millis(ms));
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

/// Starts the children of the script's `background:` words; their pids.
fn start_children(actions: &[Action]) -> Vec<u32> {
    let Ok(me) = std::env::current_exe() else { return Vec::new() };
    let mut pids = Vec::new();
    for action in actions {
        if let Action::Background { ms, ignore_term } = action {
            let flag = if *ignore_term { "--hold-ignoring-term" } else { "--hold" };
            let child = Command::new(&me).args([flag, &ms.to_string()]).stdin(Stdio::null()).spawn();
            match child {
                Ok(child) => pids.push(child.id()),
                Err(e) => eprintln!("ukue-probe: cannot start a background child: {e}"),
            }
        }
    }
    pids
}

/// Waits until `done` holds, at most [`LONGEST_WAIT`].
fn wait_until(mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + LONGEST_WAIT;
    while !done() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn write_out(mut out: impl Write, bytes: &[u8]) {
    // A reader that has gone away is no concern of the script's.
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

/// Runs the probe with its log at `log`; returns the exit status.
fn run(log: PathBuf, args: Vec<String>) -> i32 {
    let mut payload = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut payload);
    let text = String::from_utf8_lossy(&payload).into_owned();
    let actions = script(&text);
    let file = std::env::var_os("UKUE_FILE").map(PathBuf::from);
    let job = env_i64("UKUE_JOB_ID");
    let attempt = env_i64("UKUE_ATTEMPT");
    let worker_pid = nix::unistd::getppid().as_raw() as u32;
    let held = || file.as_deref().and_then(|f| holds(f, job, attempt));
    let env = actions
        .iter()
        .filter_map(|a| match a {
            Action::Env(name) => Some((name.clone(), std::env::var(name).ok())),
            _ => None,
        })
        .collect();
    let mut record = Record {
        max_attempts: env_i64("UKUE_MAX_ATTEMPTS"),
        queue: std::env::var("UKUE_QUEUE").unwrap_or_default(),
        pid: std::process::id(),
        worker_pid,
        at_ms: now_ms(),
        payload_sha256: format!("{:x}", Sha256::digest(&payload)),
        payload: text.chars().take(200).collect(),
        args,
        env,
        children: start_children(&actions),
        ..Record::start(job, attempt)
    };
    record.saw(held());
    if let Err(e) = append(&log, &record) {
        eprintln!("ukue-probe: cannot write {}: {e}", log.display());
        return 70;
    }
    let mut status = 0;
    for action in actions {
        match action {
            Action::Exit(code) => {
                status = code;
                break;
            }
            Action::Sleep(ms) => std::thread::sleep(Duration::from_millis(ms)),
            Action::IgnoreTerm => {
                // SAFETY: SIG_IGN installs no handler code.
                let _ = unsafe { signal::signal(Signal::SIGTERM, SigHandler::SigIgn) };
            }
            Action::KillWorker => {
                let _ = signal::kill(nix::unistd::Pid::from_raw(worker_pid as i32), Signal::SIGKILL);
            }
            Action::FailAttempts(n) if attempt <= n => {
                status = 3;
                break;
            }
            Action::FailAttempts(_) => {}
            Action::Stdout(text) => write_out(std::io::stdout().lock(), format!("{text}\n").as_bytes()),
            Action::Stderr(text) => write_out(std::io::stderr().lock(), format!("{text}\n").as_bytes()),
            Action::FillStderr(n) => {
                let filler: Vec<u8> = (1..=n).map(|i| if i % 100 == 0 { b'\n' } else { b'x' }).collect();
                write_out(std::io::stderr().lock(), &filler);
            }
            Action::Signal(number) => {
                if let Ok(sig) = Signal::try_from(number) {
                    let _ = signal::raise(sig);
                }
            }
            Action::Await(name) => wait_until(|| log.with_file_name(&name).exists()),
            Action::Env(_) | Action::Background { .. } => {}
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
