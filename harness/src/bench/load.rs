//! Throughput: one step after another for a fixed time, in this process
//! or in child processes that start together.
//!
//! A child is this same binary run as `ukue-bench __child ROLE FILE
//! START_US SECONDS`: it opens the file, waits for the common start, steps
//! until the deadline and prints what it did as one JSON line.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use ukue::{NewJob, Ukue};

/// The queue every figure uses.
pub const QUEUE: &str = "bench";
/// The lease of every claim (long enough that nothing is reaped).
pub const LEASE: std::time::Duration = std::time::Duration::from_secs(60);
/// Every job's payload: 64 bytes, the size of a small JSON document.
pub const PAYLOAD: &[u8] = b"{\"to\": \"someone@example.com\", \"template\": \"welcome\", \"n\": 1}   ";

/// What one process does, one step at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// Raw SQLite: one INSERT into ukue_jobs, its own transaction.
    Ceiling,
    /// The library's add.
    Add,
    /// The library's claim, then finish.
    Work,
}

/// One process's count of steps, and when it started and stopped (µs
/// since 1970, so that processes can be compared).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Count {
    pub steps: u64,
    pub start_us: u64,
    pub end_us: u64,
    /// Steps that found the file busy past the busy timeout and were tried again.
    pub busy: u64,
}

pub fn epoch_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// The statement of the ceiling: the columns that the library's `add`
/// writes, with nothing around it.
const RAW_INSERT: &str =
    "INSERT INTO ukue_jobs (queue, payload, priority, max_attempts, run_at, created_at, updated_at) \
     VALUES (?1, ?2, 0, 10, ?3, ?3, ?3)";

/// A raw SQLite connection set up as FORMAT.md §4.1 asks: WAL, a busy
/// timeout, every commit durable.
pub fn raw_connection(file: &Path) -> Result<Connection> {
    let conn = Connection::open(file)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        bail!("{}: journal mode {mode}, not WAL", file.display());
    }
    conn.execute_batch("PRAGMA synchronous = FULL")?;
    Ok(conn)
}

/// Creates an empty ukue file (the schema of FORMAT.md §3).
pub fn create_file(file: &Path) -> Result<()> {
    Ukue::create(file).with_context(|| format!("creating {}", file.display()))?;
    Ok(())
}

/// Adds `count` due jobs in transactions of `batch`.
pub fn prefill(file: &Path, count: u64, batch: usize) -> Result<()> {
    let mut ukue = Ukue::open(file)?;
    let job = NewJob::new(QUEUE, PAYLOAD.to_vec());
    let mut left = count as usize;
    while left > 0 {
        let n = left.min(batch);
        ukue.add_batch(&vec![job.clone(); n])?;
        left -= n;
    }
    checkpoint(ukue.connection())
}

/// Moves the WAL into the database and empties it, so that every figure
/// starts from the same place.
pub fn checkpoint(conn: &Connection) -> Result<()> {
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

/// `--busy-poll-us`: the wait between tries on a busy file, 0 for
/// SQLite's own busy timeout.
static BUSY_POLL_US: AtomicU64 = AtomicU64::new(0);

/// Makes the connections that the bench opens itself (every figure but the
/// worker's) wait for a busy file by trying again every `us` µs, for the
/// same 5 s in all, instead of with SQLite's busy timeout, whose waits
/// grow from 1 ms to 100 ms. An experiment: the library does not do this.
pub fn set_busy_poll(us: Option<u64>) {
    BUSY_POLL_US.store(us.unwrap_or(0), Ordering::Relaxed);
}

fn busy_poll(conn: &Connection) -> Result<()> {
    fn wait(tries: i32) -> bool {
        let us = BUSY_POLL_US.load(Ordering::Relaxed).max(1);
        std::thread::sleep(Duration::from_micros(us));
        (tries.max(0) as u64) * us < 5_000_000
    }
    if BUSY_POLL_US.load(Ordering::Relaxed) > 0 {
        conn.busy_handler(Some(wait))?;
    }
    Ok(())
}

enum Stepper {
    Ceiling { conn: Connection },
    Add { ukue: Ukue, job: NewJob },
    Work { ukue: Ukue },
}

impl Stepper {
    fn open(role: Role, file: &Path) -> Result<Stepper> {
        let stepper = match role {
            Role::Ceiling => {
                let conn = raw_connection(file)?;
                // Prepared once, as the library's statement cache does.
                conn.prepare_cached(RAW_INSERT)?;
                Stepper::Ceiling { conn }
            }
            Role::Add => Stepper::Add { ukue: Ukue::open(file)?, job: NewJob::new(QUEUE, PAYLOAD.to_vec()) },
            Role::Work => Stepper::Work { ukue: Ukue::open(file)? },
        };
        busy_poll(match &stepper {
            Stepper::Ceiling { conn } => conn,
            Stepper::Add { ukue, .. } | Stepper::Work { ukue } => ukue.connection(),
        })?;
        Ok(stepper)
    }

    /// One step: Ok(false) when there was nothing to do (the queue is
    /// drained), Err(busy) when the file stayed busy past the timeout.
    fn step(&mut self) -> Result<bool, StepError> {
        match self {
            Stepper::Ceiling { conn } => {
                let now = ukue::Clock::now_ms(&ukue::SystemClock);
                conn.prepare_cached(RAW_INSERT)?.execute(rusqlite::params![QUEUE, PAYLOAD, now])?;
                Ok(true)
            }
            Stepper::Add { ukue, job } => {
                ukue.add(job)?;
                Ok(true)
            }
            Stepper::Work { ukue } => match ukue.claim(QUEUE, LEASE)? {
                Some(job) => {
                    ukue.finish(job.id, &job.token, false)?;
                    Ok(true)
                }
                None => Ok(false),
            },
        }
    }
}

enum StepError {
    Busy,
    Other(anyhow::Error),
}

impl From<ukue::Error> for StepError {
    fn from(e: ukue::Error) -> Self {
        if e.is_busy() {
            StepError::Busy
        } else {
            StepError::Other(e.into())
        }
    }
}

impl From<rusqlite::Error> for StepError {
    fn from(e: rusqlite::Error) -> Self {
        StepError::from(ukue::Error::from(e))
    }
}

/// Steps from `start_us` until `seconds` later, or until the queue is drained.
pub fn run_role(role: Role, file: &Path, start_us: u64, seconds: f64) -> Result<Count> {
    let mut stepper = Stepper::open(role, file)?;
    let wait = start_us.saturating_sub(epoch_us());
    std::thread::sleep(Duration::from_micros(wait));
    let start_us = epoch_us().max(start_us);
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut count = Count { steps: 0, start_us, end_us: start_us, busy: 0 };
    while Instant::now() < deadline {
        match stepper.step() {
            Ok(true) => {
                count.steps += 1;
                count.end_us = epoch_us();
            }
            Ok(false) => break,
            Err(StepError::Busy) => count.busy += 1,
            Err(StepError::Other(e)) => return Err(e),
        }
    }
    if count.end_us == start_us {
        count.end_us = epoch_us();
    }
    Ok(count)
}

/// The hidden child command: runs one role and prints its [`Count`].
pub fn child(role: Role, file: &Path, start_us: u64, seconds: f64) -> Result<()> {
    let count = run_role(role, file, start_us, seconds)?;
    println!("{}", serde_json::to_string(&count)?);
    Ok(())
}

/// Steps per second of `processes` processes at once.
pub fn in_processes(role: Role, file: &Path, processes: usize, seconds: f64) -> Result<Rate> {
    let exe = std::env::current_exe().context("finding ukue-bench itself")?;
    // Time for every child to start and open the file before the common start.
    let start_us = epoch_us() + 200_000;
    let children = (0..processes)
        .map(|_| {
            Command::new(&exe)
                .arg("__child")
                .arg(role_name(role))
                .arg(file)
                .arg(start_us.to_string())
                .arg(seconds.to_string())
                .arg(format!("--busy-poll-us={}", BUSY_POLL_US.load(Ordering::Relaxed)))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .with_context(|| format!("starting {}", exe.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut counts = Vec::new();
    for child in children {
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "a {} child failed ({}): {}",
                role_name(role),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let line = String::from_utf8_lossy(&out.stdout);
        counts.push(
            serde_json::from_str::<Count>(line.trim()).with_context(|| format!("child said {line:?}"))?,
        );
    }
    Ok(Rate::of(&counts))
}

/// Steps per second of `threads` threads of this process, each with its
/// own connection.
pub fn in_threads(role: Role, file: &Path, threads: usize, seconds: f64) -> Result<Rate> {
    let start_us = epoch_us() + 50_000;
    let counts = std::thread::scope(|scope| {
        joined((0..threads).map(|_| scope.spawn(move || run_role(role, file, start_us, seconds))).collect())
    })?;
    Ok(Rate::of(&counts))
}

/// What scoped threads gave, in order; a thread's panic is passed on.
pub fn joined<T>(handles: Vec<std::thread::ScopedJoinHandle<'_, Result<T>>>) -> Result<Vec<T>> {
    handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
}

/// Steps per second of this process alone.
pub fn in_this_process(role: Role, file: &Path, seconds: f64) -> Result<Rate> {
    Ok(Rate::of(&[run_role(role, file, epoch_us(), seconds)?]))
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Ceiling => "ceiling",
        Role::Add => "add",
        Role::Work => "work",
    }
}

/// Steps over the wall time from the first start to the last step.
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    pub per_s: f64,
    pub steps: u64,
    pub busy: u64,
}

impl Rate {
    pub fn of(counts: &[Count]) -> Rate {
        let steps: u64 = counts.iter().map(|c| c.steps).sum();
        let start = counts.iter().map(|c| c.start_us).min().unwrap_or(0);
        let end = counts.iter().map(|c| c.end_us).max().unwrap_or(0);
        let secs = (end.saturating_sub(start) as f64 / 1e6).max(1e-6);
        Rate { per_s: steps as f64 / secs, steps, busy: counts.iter().map(|c| c.busy).sum() }
    }
}

/// Jobs added per second with `add_batch`, `batch` jobs a transaction.
pub fn batch_add(file: &Path, batch: usize, seconds: f64) -> Result<Rate> {
    let mut ukue = Ukue::open(file)?;
    let jobs = vec![NewJob::new(QUEUE, PAYLOAD.to_vec()); batch];
    let start_us = epoch_us();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut steps = 0;
    while Instant::now() < deadline {
        steps += ukue.add_batch(&jobs)?.len() as u64;
    }
    Ok(Rate::of(&[Count { steps, start_us, end_us: epoch_us(), busy: 0 }]))
}

/// Jobs claimed and finished per second by the library's worker with
/// `concurrency` slots (each its own connection) and a handler that
/// finishes every job at once.
pub fn worker(file: &Path, concurrency: usize, seconds: f64) -> Result<Rate> {
    use ukue::worker::{Event, Outcome, Worker, WorkerOptions};

    let options = WorkerOptions {
        concurrency,
        lease: LEASE,
        poll: Duration::from_millis(10),
        ..WorkerOptions::default()
    };
    let worker = Worker::new(file, QUEUE, options);
    let stopper = worker.stopper();
    let finished = AtomicU64::new(0);
    let last_us = AtomicU64::new(0);
    let errors = std::sync::Mutex::new(Vec::new());
    let start_us = epoch_us();
    let handler = |_: &ukue::Claimed, _: &ukue::worker::JobControl| Outcome::Finish;
    let events = |event: Event| match event {
        Event::Finished { .. } => {
            finished.fetch_add(1, Ordering::Relaxed);
            last_us.fetch_max(epoch_us(), Ordering::Relaxed);
        }
        Event::Error { message } => errors.lock().unwrap_or_else(|p| p.into_inner()).push(message),
        _ => {}
    };
    std::thread::scope(|scope| {
        let stopper = stopper.clone();
        scope.spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(seconds));
            stopper.stop();
        });
        worker.run(&handler, &events)
    })?;
    let errors = errors.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Some(first) = errors.first() {
        bail!("the worker reported {} errors, first: {first}", errors.len());
    }
    let steps = finished.load(Ordering::Relaxed);
    Ok(Rate::of(&[Count { steps, start_us, end_us: last_us.load(Ordering::Relaxed).max(start_us), busy: 0 }]))
}

/// A file in the bench's temporary directory, removed (with its -wal and
/// -shm) when dropped.
pub struct TempFile(pub PathBuf);

impl TempFile {
    pub fn new(dir: &Path, name: &str) -> TempFile {
        let file = TempFile(dir.join(name));
        file.remove();
        file
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        self.remove();
    }
}

impl AsRef<Path> for TempFile {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}
