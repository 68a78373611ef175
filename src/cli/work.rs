//! `ukue work`: each job runs a command in its own process group, which is
//! stopped as a whole (SIGTERM, then SIGKILL 10 s later) when the lease is
//! lost, the job times out or the grace period ends.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{ChildStderr, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::worker::{Event, Handler, JobControl, Outcome, StopReason, Worker, WorkerOptions};
use crate::{Claimed, Failed, Retry};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::args::WorkArgs;
use super::time;

/// A command's exit status that means "never retry" (EX_DATAERR).
pub const EXIT_PERMANENT: i32 = 65;

/// How long a stopped command has between SIGTERM and SIGKILL.
const KILL_AFTER: Duration = Duration::from_secs(10);

/// How much of the end of its command's stderr a failed attempt's
/// `last_error` keeps, as the published command.
const STDERR_TAIL: usize = 2000;

/// How long, once a failed command has ended, to wait for the end of its
/// stderr: a process it started may hold it open.
const STDERR_WAIT: Duration = Duration::from_secs(2);

/// Where `name` runs from, as a shell would find it: a name with a `/` is
/// a path, any other is looked for on `PATH`; either must be a file that
/// may be executed. The error says why not.
pub fn find_command(name: &OsStr) -> Result<PathBuf, String> {
    let shown = name.to_string_lossy();
    let why = |reason: &str| format!("can't run {shown:?}: {reason}");
    if name.is_empty() {
        return Err(why("an empty command name"));
    }
    if name.as_bytes().contains(&b'/') {
        return runnable(Path::new(name)).map(|()| PathBuf::from(name)).map_err(|e| why(&e));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = if path.is_empty() { Vec::new() } else { std::env::split_paths(&path).collect() };
    for dir in dirs {
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        let candidate = dir.join(name);
        if runnable(&candidate).is_ok() {
            return Ok(candidate);
        }
    }
    Err(why("executable file not found in $PATH"))
}

/// Whether `path` is a file this process may execute.
fn runnable(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| plain_io_error(&e))?;
    if meta.is_dir() {
        return Err("is a directory".into());
    }
    let executable = match nix::unistd::access(path, nix::unistd::AccessFlags::X_OK) {
        Ok(()) => true,
        // Some sandboxes refuse the call itself: judge by the mode.
        Err(nix::errno::Errno::ENOSYS | nix::errno::Errno::EPERM) => meta.permissions().mode() & 0o111 != 0,
        Err(_) => false,
    };
    if executable {
        Ok(())
    } else {
        Err("permission denied".into())
    }
}

/// An I/O error's text without Rust's ` (os error N)`.
fn plain_io_error(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_lowercase(),
        None => text,
    }
}

/// A command's stderr, passed on to the worker's as it comes, its end
/// kept for the `last_error` of a failed attempt.
struct StderrTail {
    kept: Arc<Mutex<Vec<u8>>>,
    closed: mpsc::Receiver<()>,
}

impl StderrTail {
    fn forward(mut pipe: ChildStderr) -> StderrTail {
        let kept: Arc<Mutex<Vec<u8>>> = Arc::default();
        let (closed_tx, closed) = mpsc::channel();
        let tail = kept.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                let _ = std::io::stderr().lock().write_all(&buf[..n]);
                let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                tail.extend_from_slice(&buf[..n]);
                let extra = tail.len().saturating_sub(STDERR_TAIL);
                tail.drain(..extra);
            }
            let _ = closed_tx.send(());
        });
        StderrTail { kept, closed }
    }

    /// The end of what the command wrote on stderr, once the pipe is
    /// closed or [`STDERR_WAIT`] has passed; trimmed, invalid UTF-8 shown
    /// as U+FFFD.
    fn text(&self) -> String {
        let _ = self.closed.recv_timeout(STDERR_WAIT);
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&kept).trim().to_string()
    }

    /// `outcome`, a failure's error followed by the end of the stderr.
    fn detail(&self, outcome: Outcome) -> Outcome {
        match outcome {
            Outcome::Fail { error, retry } => {
                let tail = self.text();
                let error = if tail.is_empty() { error } else { format!("{error}: {tail}") };
                Outcome::Fail { error, retry }
            }
            other => other,
        }
    }
}

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
        let stderr = child.stderr.take().map(StderrTail::forward);
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
        let outcome = match (stopping.map(|(reason, _)| reason), status) {
            (Some(StopReason::Shutdown | StopReason::LeaseLost), _) => Outcome::Release,
            (Some(StopReason::Timeout), _) => {
                Outcome::Fail { error: "timed out".into(), retry: Retry::Backoff }
            }
            (None, Err(e)) => {
                Outcome::Fail { error: format!("lost track of the command: {e}"), retry: Retry::Backoff }
            }
            (None, Ok(status)) => outcome_of(status),
        };
        // A job that ended well is not held up by a process the command
        // left in the background with its stderr.
        match stderr {
            Some(stderr) => stderr.detail(outcome),
            None => outcome,
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
            .stderr(Stdio::piped())
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

/// The worker's options as `ukue work`'s flags give them.
pub fn worker_options(args: &WorkArgs) -> WorkerOptions {
    WorkerOptions {
        concurrency: usize::from(args.concurrency),
        lease: args.lease,
        poll: args.poll,
        grace: args.grace,
        timeout: (!args.timeout.is_zero()).then_some(args.timeout),
        keep_done: args.keep_done,
    }
}

/// Runs `worker` until its queue work is stopped: a first SIGINT or
/// SIGTERM stops claiming and lets running commands finish (within the
/// grace); a second ends the process at once, as the published command
/// does (its commands run on; their jobs come back once their leases run
/// out). The outer error is the signal handlers' set-up, the inner the
/// worker's own.
pub fn run_until_signalled(
    worker: &Worker,
    handler: &dyn Handler,
    events: &(dyn Fn(Event) + Sync),
) -> std::io::Result<crate::Result<()>> {
    let stopper = worker.stopper();
    let mut signals =
        signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM])?;
    let signal_handle = signals.handle();
    let listener = thread::spawn(move || {
        let mut pending = signals.forever();
        if pending.next().is_some() {
            stopper.stop();
            if let Some(second) = pending.next() {
                eprintln!("ukue work: a second signal: ending at once, without waiting for running commands");
                let _ = signal_hook::low_level::emulate_default_handler(second);
                std::process::exit(1);
            }
        }
    });
    let result = worker.run(handler, events);
    signal_handle.close();
    let _ = listener.join();
    Ok(result)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_found_on_path_or_at_its_path_and_must_be_runnable() {
        assert!(find_command(OsStr::new("sh")).is_ok());
        assert!(find_command(OsStr::new("/bin/sh")).is_ok());
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = |name: &Path, why: &str| {
            let e = find_command(name.as_os_str()).unwrap_err();
            assert!(e.starts_with(&format!("can't run {:?}: ", name.to_string_lossy())), "{e}");
            assert!(e.ends_with(why), "{e}");
        };
        refused(Path::new("ukue-no-such-command"), "executable file not found in $PATH");
        refused(&dir.path().join("missing"), "no such file or directory");
        refused(dir.path(), "is a directory");
        refused(&plain, "permission denied");
    }
}
