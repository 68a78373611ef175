//! `ukue work`: each job runs a command in its own process group, which is
//! stopped as a whole (SIGTERM, then SIGKILL 10 s later) when the lease is
//! lost, the job times out or the grace period ends.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::worker::{Event, Handler, JobControl, Outcome, StopReason};
use crate::{Claimed, Failed, Retry};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::time;

/// A command's exit status that means "never retry" (EX_DATAERR).
pub const EXIT_PERMANENT: i32 = 65;

/// How long a stopped command has between SIGTERM and SIGKILL.
const KILL_AFTER: Duration = Duration::from_secs(10);

pub struct CommandHandler {
    pub file: PathBuf,
    pub queue: String,
    pub command: Vec<OsString>,
}

impl Handler for CommandHandler {
    fn handle(&self, job: &Claimed, control: &JobControl) -> Outcome {
        let mut child = match self.spawn(job) {
            Ok(child) => child,
            Err(e) => {
                return Outcome::Fail {
                    error: format!("cannot start {}: {e}", self.command[0].to_string_lossy()),
                    retry: Retry::Backoff,
                }
            }
        };
        let group = Pid::from_raw(child.id() as i32);
        if let Some(mut stdin) = child.stdin.take() {
            let payload = job.payload.clone();
            // A command that never reads its stdin must not block us.
            thread::spawn(move || {
                let _ = stdin.write_all(&payload);
            });
        }
        let status: Arc<Mutex<Option<std::io::Result<ExitStatus>>>> = Arc::default();
        {
            let status = status.clone();
            let control = control.clone();
            thread::spawn(move || {
                let result = child.wait();
                *status.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
                control.wake();
            });
        }
        let mut stopping: Option<(StopReason, Instant)> = None;
        let mut killed = false;
        let status = loop {
            if let Some(result) = status.lock().unwrap_or_else(|p| p.into_inner()).take() {
                break result;
            }
            if let (None, Some(reason)) = (stopping, control.stop_reason()) {
                let _ = killpg(group, Signal::SIGTERM);
                stopping = Some((reason, Instant::now() + KILL_AFTER));
            }
            let mut wait = Duration::from_secs(3600);
            if let Some((_, kill_at)) = stopping {
                let now = Instant::now();
                if now >= kill_at && !killed {
                    let _ = killpg(group, Signal::SIGKILL);
                    killed = true;
                }
                wait = kill_at.saturating_duration_since(now).max(Duration::from_millis(100));
            }
            control.wait(wait);
        };
        match (stopping.map(|(reason, _)| reason), status) {
            (Some(StopReason::Shutdown | StopReason::LeaseLost), _) => Outcome::Release,
            (Some(StopReason::Timeout), _) => {
                Outcome::Fail { error: "timed out".into(), retry: Retry::Backoff }
            }
            (None, Err(e)) => {
                Outcome::Fail { error: format!("lost track of the command: {e}"), retry: Retry::Backoff }
            }
            (None, Ok(status)) => outcome_of(status),
        }
    }
}

impl CommandHandler {
    /// The handler of `ukue work`'s arguments.
    pub fn of(args: &super::args::WorkArgs) -> CommandHandler {
        CommandHandler { file: args.file.clone(), queue: args.queue.clone(), command: args.command.clone() }
    }

    fn spawn(&self, job: &Claimed) -> std::io::Result<std::process::Child> {
        Command::new(&self.command[0])
            .args(&self.command[1..])
            .stdin(Stdio::piped())
            .env("UKUE_FILE", &self.file)
            .env("UKUE_QUEUE", &self.queue)
            .env("UKUE_JOB_ID", job.id.to_string())
            .env("UKUE_ATTEMPT", job.attempt.to_string())
            .env("UKUE_MAX_ATTEMPTS", job.max_attempts.to_string())
            .process_group(0)
            .spawn()
    }
}

fn outcome_of(status: ExitStatus) -> Outcome {
    match (status.code(), status.signal()) {
        (Some(0), _) => Outcome::Finish,
        (Some(EXIT_PERMANENT), _) => Outcome::Fail {
            error: format!("exit status {EXIT_PERMANENT} (permanent failure)"),
            retry: Retry::Never,
        },
        (Some(code), _) => Outcome::Fail { error: format!("exit status {code}"), retry: Retry::Backoff },
        (None, Some(signal)) => {
            let name = Signal::try_from(signal)
                .map(|s| s.as_str().to_string())
                .unwrap_or_else(|_| signal.to_string());
            Outcome::Fail { error: format!("killed by signal {name}"), retry: Retry::Backoff }
        }
        (None, None) => Outcome::Fail { error: "ended without a status".into(), retry: Retry::Backoff },
    }
}

/// One line on stderr per event; `quiet` keeps only the errors.
pub fn report(event: Event, quiet: bool) {
    let line = match event {
        Event::Error { message } => format!("ukue work: {message}"),
        _ if quiet => return,
        Event::Claimed { id, attempt } => format!("ukue work: job {id} attempt {attempt} started"),
        Event::Finished { id, elapsed } => {
            format!("ukue work: job {id} finished in {}ms", elapsed.as_millis())
        }
        Event::Failed { id, error, to: Failed::Ready { run_at } } => {
            format!(
                "ukue work: job {id} failed ({}); ready again at {}",
                super::output::escape(&error),
                time::format(run_at)
            )
        }
        Event::Failed { id, error, to: Failed::Dead } => {
            format!("ukue work: job {id} failed ({}); dead", super::output::escape(&error))
        }
        Event::Released { id } => format!("ukue work: job {id} given back"),
        Event::LeaseLost { id } => format!("ukue work: job {id}: lease lost; another worker may run it"),
        Event::Busy { id, step } => {
            format!("ukue work: job {id}: the file stayed locked past the busy timeout; retrying the {step}")
        }
        Event::Stopping { reason, id } => format!("ukue work: job {id}: stopping its command ({reason:?})"),
    };
    eprintln!("{line}");
}
