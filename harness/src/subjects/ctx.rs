//! What a case works with: its own directory, the subjects, a seeded
//! random generator, and waits that end at a deadline.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;

use super::observe::scaling::Scaling;
use super::observe::strace::printed_id;
use super::process::{Procs, Spawned};
use super::{Subject, Subjects};
use crate::history::{History, WorkerEvents};
use crate::subjects::Failure;

/// How long [`Ctx::past_busy`] takes a step again while the file is busy:
/// a dozen of FORMAT.md §4.1's busy timeouts. A file that stays busy for
/// so long is stuck, not shared.
pub const BUSY_PATIENCE: Duration = Duration::from_secs(60);

/// How long one command of a subject may take before the case fails.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Ctx {
    pub dir: PathBuf,
    pub seed: u64,
    pub rng: StdRng,
    pub subjects: Arc<Subjects>,
    pub procs: Procs,
    deadline: Instant,
    /// ukue files whose integrity and invariants are checked after the case.
    pub tracked: Vec<PathBuf>,
    /// How many workers the crash family kills, over all its cases
    /// (`--crash-kills`).
    pub crash_kills: usize,
    /// How long a case that generates its runs goes on generating them
    /// (`--generate-for`).
    pub generate_for: Duration,
    /// The jobs of every scale case's large file (`--scale-rows`); None:
    /// each case's own.
    pub scale_rows: Option<u64>,
    /// A scale case's figures, for the reports.
    pub scale: Option<Scaling>,
    /// The worker and producer processes of the concurrency, interop and
    /// crash cases (`--processes`); None: each case's own (3 or 4).
    pub processes: Option<usize>,
    /// Figures a case reports whatever its outcome (shown with `-v`, and
    /// in the JSON report).
    pub notes: Vec<String>,
    /// The same figures as numbers, summed over a run (`workers_killed`…).
    pub figures: std::collections::BTreeMap<String, u64>,
    /// What the case did to its workers (starts, kills, stops).
    pub events: WorkerEvents,
    /// The history the case's checks read, for the report's timeline.
    history: Mutex<Option<History>>,
    /// The steps that gave up on a busy file ([`Ctx::past_busy`]).
    busy_refusals: AtomicU64,
}

/// The crash family's kills in a default run.
pub const DEFAULT_CRASH_KILLS: usize = 200;

/// How long the generated runs of a default run take (the differential
/// family's).
pub const DEFAULT_GENERATE_FOR: Duration = Duration::from_secs(3);

impl Ctx {
    pub fn new(dir: PathBuf, seed: u64, subjects: Arc<Subjects>, marker: String, deadline: Instant) -> Ctx {
        Ctx {
            dir,
            seed,
            rng: StdRng::seed_from_u64(seed),
            subjects,
            procs: Procs::new(marker),
            deadline,
            tracked: Vec::new(),
            crash_kills: DEFAULT_CRASH_KILLS,
            generate_for: DEFAULT_GENERATE_FOR,
            scale_rows: None,
            scale: None,
            processes: None,
            notes: Vec::new(),
            figures: Default::default(),
            events: WorkerEvents::default(),
            history: Mutex::new(None),
            busy_refusals: AtomicU64::new(0),
        }
    }

    /// Runs `step`, and runs it again while it gives up on a busy file
    /// ([`Failure::is_busy`]), for up to [`BUSY_PATIENCE`], as an
    /// application does. For the cases whose many processes keep the file
    /// busy on purpose: FORMAT.md §4.1 asks a program to wait only a busy
    /// timeout (5 s) for another writer, and a loaded machine can keep a
    /// correct one waiting longer. Each refusal counts (`busy_refusals`).
    /// A step refused as busy must have changed nothing: one that did
    /// leaves a job whose payload no acknowledged add had, which the
    /// delivery checks find.
    pub fn past_busy<T>(&self, mut step: impl FnMut() -> Result<T, Failure>) -> Result<T, Failure> {
        let until = Instant::now() + BUSY_PATIENCE;
        loop {
            match step() {
                Err(refused) if refused.is_busy() && Instant::now() < until => self.count_busy_refusal(),
                done => return done,
            }
        }
    }

    /// Counts a step of the case's that gave up on a busy file.
    pub fn count_busy_refusal(&self) {
        self.busy_refusals.fetch_add(1, Ordering::Relaxed);
    }

    /// Notes the busy refusals, if any, in the notes and figures.
    pub fn note_busy_refusals(&mut self) {
        let refused = *self.busy_refusals.get_mut();
        if refused > 0 {
            self.notes.push(format!(
                "{refused} steps of the case gave up on the busy file (\"{}\")",
                super::LOCKED
            ));
            *self.figures.entry("busy_refusals".to_string()).or_default() += refused;
        }
    }

    /// Keeps `history` (the latest one kept wins) as what the case's checks
    /// read, with the case's worker events, for the report's timeline.
    pub fn keep_history(&self, history: &History) {
        let kept = History { events: self.events.all(), ..history.clone() };
        *self.history.lock().unwrap_or_else(|p| p.into_inner()) = Some(kept);
    }

    /// The history kept by [`keep_history`](Self::keep_history), if any.
    pub fn take_history(&mut self) -> Option<History> {
        self.history.get_mut().unwrap_or_else(|p| p.into_inner()).take()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn subject(&self) -> &Subject {
        &self.subjects.subject
    }

    pub fn reference(&self) -> &Subject {
        &self.subjects.reference
    }

    /// A new ukue file path in the case's directory, checked after the case.
    pub fn tracked_file(&mut self, name: &str) -> PathBuf {
        let path = self.path(name);
        self.tracked.push(path.clone());
        path
    }

    /// A new ukue file in the case's directory, made by the subject's own
    /// `init`, checked after the case.
    pub fn init(&mut self, name: &str) -> Result<PathBuf, Failure> {
        let file = self.tracked_file(name);
        let subject = self.subject().clone();
        self.ok(&subject, &["init", path_str(&file)])?;
        Ok(file)
    }

    /// How long one command of a subject may take: [`COMMAND_TIMEOUT`],
    /// or more with `--processes` past the cases' own 4, in proportion: a
    /// command on a file that N writers share on a few cores waits its
    /// turn for the write lock longer, and that wait is no failure.
    pub fn command_timeout(&self) -> Duration {
        let shares = self.processes.map_or(1, |n| n.div_ceil(4).max(1));
        COMMAND_TIMEOUT * u32::try_from(shares).unwrap_or(u32::MAX)
    }

    /// The time left before the case's deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Starts `program args` (in the case's directory, marked, in a group
    /// of its own) without waiting.
    pub fn spawn(
        &self,
        program: &Path,
        args: &[&str],
        stdout: Stdio,
        stderr: Stdio,
    ) -> Result<Spawned, Failure> {
        let mut cmd = Command::new(program);
        cmd.args(args).current_dir(&self.dir).stdin(Stdio::null()).stdout(stdout).stderr(stderr);
        self.procs
            .spawn(&mut cmd)
            .map_err(|e| Failure::error(format!("{} to start", program.display()), e.to_string()))
    }

    /// Runs `who args` to the end, feeding it `stdin`.
    pub fn run_with(&self, who: &Subject, args: &[&str], stdin: Option<&[u8]>) -> Result<Output, Failure> {
        self.run_os_with(who, args, stdin)
    }

    /// [`run_with`](Self::run_with) for arguments that need not be UTF-8
    /// (a payload of any bytes but NUL).
    pub fn run_os_with<A: AsRef<OsStr>>(
        &self,
        who: &Subject,
        args: &[A],
        stdin: Option<&[u8]>,
    ) -> Result<Output, Failure> {
        Ok(self.run_measured(who, args, stdin)?.0)
    }

    /// [`run_os_with`](Self::run_os_with), with the CPU time the process
    /// spent (crate::subjects::observe::cpu).
    pub fn run_measured<A: AsRef<OsStr>>(
        &self,
        who: &Subject,
        args: &[A],
        stdin: Option<&[u8]>,
    ) -> Result<(Output, Duration), Failure> {
        let mut cmd = Command::new(&who.program);
        cmd.args(&who.args)
            .args(args)
            .current_dir(&self.dir)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let shown: Vec<String> = args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect();
        let shown = format!("{} {}", who.name, shown.join(" "));
        let mut spawned = self
            .procs
            .spawn(&mut cmd)
            .map_err(|e| Failure::error(format!("`{shown}` to start"), e.to_string()))?;
        if let (Some(bytes), Some(mut pipe)) = (stdin, spawned.child.stdin.take()) {
            let bytes = bytes.to_vec();
            std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
        }
        let limit = self.command_timeout().min(self.remaining());
        // Read the pipes while waiting, so a chatty subject cannot block.
        let stdout = spawned.child.stdout.take();
        let stderr = spawned.child.stderr.take();
        let out_thread = drain(stdout);
        let err_thread = drain(stderr);
        let ended = spawned.wait_with_cpu(limit)?;
        let Some((status, cpu)) = ended else {
            spawned.signal_group(nix::sys::signal::Signal::SIGKILL);
            return Err(Failure::timeout(
                format!("`{shown}` to end within {} s", limit.as_secs()),
                "it was still running; killed",
            ));
        };
        let stdout = out_thread.join().unwrap_or_default();
        let stderr = err_thread.join().unwrap_or_default();
        Ok((Output { status, stdout, stderr }, cpu))
    }

    pub fn run(&self, who: &Subject, args: &[&str]) -> Result<Output, Failure> {
        self.run_with(who, args, None)
    }

    /// Runs `who args`, which must exit 0; returns its stdout.
    pub fn ok(&self, who: &Subject, args: &[&str]) -> Result<String, Failure> {
        let out = self.run(who, args)?;
        expect_success(who, args, &out)?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs `who args --json`-style commands: exit 0 and JSON on stdout.
    pub fn json(&self, who: &Subject, args: &[&str]) -> Result<serde_json::Value, Failure> {
        let text = self.ok(who, args)?;
        serde_json::from_str(&text).map_err(|e| {
            Failure::error(
                format!("`{} {}` to print JSON", who.name, args.join(" ")),
                format!("{e}: {}", clip(&text)),
            )
        })
    }

    /// Adds a job through `who`'s `add`; returns the printed id.
    pub fn add(
        &self,
        who: &Subject,
        file: &Path,
        queue: &str,
        payload: &str,
        options: &[&str],
    ) -> Result<i64, Failure> {
        let mut args = vec!["add", path_str(file), queue, payload];
        args.extend_from_slice(options);
        let text = self.ok(who, &args)?;
        parse_id(who, &text)
    }

    /// Adds a job with add_job.py; returns the printed id.
    pub fn python_add(
        &self,
        file: &Path,
        queue: &str,
        payload: &str,
        options: &[&str],
    ) -> Result<i64, Failure> {
        let python = self.subjects.python.as_ref().ok_or_else(|| {
            Failure::error("python3 for add_job.py", "no python (the case should be skipped)")
        })?;
        let mut args = vec![path_str(file), queue, payload];
        args.extend_from_slice(options);
        let text = self.ok(python, &args)?;
        parse_id(python, &text)
    }

    /// Polls `condition` until it holds, up to `limit` (and the case's deadline).
    pub fn wait_for(
        &self,
        what: &str,
        limit: Duration,
        mut condition: impl FnMut() -> Result<bool, Failure>,
    ) -> Result<(), Failure> {
        let deadline = Instant::now() + limit.min(self.remaining());
        loop {
            if condition()? {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Failure::timeout(
                    format!("{what} within {:.1} s", limit.as_secs_f64()),
                    "it did not happen",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

pub fn path_str(path: &Path) -> &str {
    path.to_str().unwrap_or("<non-UTF-8 path>")
}

/// The first 300 characters of `text`, for a report.
pub fn clip(text: &str) -> String {
    let mut clipped: String = text.chars().take(300).collect();
    if clipped.len() < text.len() {
        clipped.push('…');
    }
    clipped
}

/// A subject that crashed (a signal) is an error; one that exited non-zero
/// when it should have succeeded is a failure.
pub fn expect_success(who: &Subject, args: &[&str], out: &Output) -> Result<(), Failure> {
    if out.status.success() {
        return Ok(());
    }
    let shown = format!("`{} {}`", who.name, args.join(" "));
    let stderr = clip(&String::from_utf8_lossy(&out.stderr));
    match out.status.code() {
        Some(code) => {
            Err(Failure::fail(format!("{shown} to succeed"), format!("exit status {code}: {stderr}")))
        }
        None => Err(Failure::error(
            format!("{shown} to succeed"),
            format!("it crashed ({}): {stderr}", out.status),
        )),
    }
}

fn parse_id(who: &Subject, text: &str) -> Result<i64, Failure> {
    printed_id(text).ok_or_else(|| {
        Failure::error(
            format!("{} add to print the new id alone on a line", who.name),
            crate::shown::text(&clip(text)),
        )
    })
}

fn drain<R: std::io::Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx {
        let nobody = Subject::binary("/nonexistent/ukue");
        let subjects = Subjects {
            subject: nobody.clone(),
            reference: nobody,
            python: None,
            probe: PathBuf::from("/nonexistent/probe"),
            strace: None,
            python_driver: None,
            python_http_worker: None,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        Ctx::new(std::env::temp_dir(), 1, Arc::new(subjects), "test".into(), deadline)
    }

    fn busy() -> Failure {
        Failure::fail(
            "`ukue add` to succeed",
            format!("exit status 1: ukue add: {}", crate::subjects::LOCKED),
        )
    }

    #[test]
    fn a_step_refused_as_busy_is_taken_again_and_counted() {
        let mut ctx = ctx();
        let mut tries = 0;
        let added = ctx.past_busy(|| {
            tries += 1;
            if tries < 3 {
                Err(busy())
            } else {
                Ok(7)
            }
        });
        assert_eq!(added, Ok(7));
        assert_eq!(tries, 3);
        ctx.note_busy_refusals();
        assert_eq!(ctx.figures.get("busy_refusals"), Some(&2));
        assert!(ctx.notes[0].starts_with("2 steps of the case gave up on the busy file"), "{:?}", ctx.notes);
    }

    #[test]
    fn any_other_failure_is_not_taken_again() {
        let mut ctx = ctx();
        let mut tries = 0;
        let other = Failure::fail("`ukue add` to succeed", "exit status 1: ukue add: no such file");
        let crashed = Failure::error(
            "`ukue add` to succeed",
            format!("killed by SIGSEGV: {}", crate::subjects::LOCKED),
        );
        for refusal in [other, crashed] {
            let seen = ctx.past_busy(|| -> Result<i64, Failure> {
                tries += 1;
                Err(refusal.clone())
            });
            assert_eq!(seen, Err(refusal));
        }
        assert_eq!(tries, 2);
        ctx.note_busy_refusals();
        assert!(ctx.figures.is_empty() && ctx.notes.is_empty());
    }
}
