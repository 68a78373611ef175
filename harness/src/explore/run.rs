//! Model runs: op sequences performed against a subject ([`Target`]: the
//! reference in this process, or step-driver processes), each step checked
//! against the model: the answer, then the file (integrity, the state
//! invariants of FORMAT.md §7, and every row against the model). A run in
//! progress is a [`ModelRun`]; what went wrong, a [`ModelFailure`] (a
//! case's is a [`Failure`](crate::subjects::Failure)).
//! [`search`] generates sequences with proptest, shrinks a failing one and
//! hands it back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use proptest_state_machine::ReferenceStateMachine;
use rusqlite::Connection;

use super::gen::{Generator, WORKERS};
use crate::check::model::{Allowed, Backoff, Model, Op, START_MS};
use crate::check::{self, file::invariants_of};
use crate::shown::Shown;
use crate::subjects::driver::client::{DriverCommand, DriverProcess};
use crate::subjects::driver::{Answer, ReferenceDriver, Request, CAP_NOW_MS, CAP_PUBLISHED_BACKOFF};
use crate::subjects::observe::file::{open_read_only, read_rows, Row};

/// A [`Target`] started on one file: it performs requests for several
/// workers.
pub trait Session {
    /// Performs `request` as worker `worker`.
    fn send(&mut self, worker: usize, request: Request) -> Result<Answer, String>;

    /// The subject's own connection, when its database is in this process
    /// and no path names it (an in-memory one): the run reads and empties
    /// the database through it.
    fn connection(&self) -> Option<&Connection> {
        None
    }

    /// The reference's open file, when the subject is the reference in
    /// this process: the fuzzer lists through it (a step the driver
    /// protocol has no request for).
    fn file(&self) -> Option<&ukue::Ukue> {
        None
    }

    /// The backoff the subject is held to: the reference's is the
    /// published one.
    fn backoff(&self) -> Backoff {
        Backoff::Published
    }
}

/// The subject of model runs, and how to start a fresh [`Session`] of it
/// for each run.
#[derive(Debug, Clone)]
pub enum Target {
    /// The reference library in this process (one [`ReferenceDriver`] a worker),
    /// running this FORMAT.md (the builtin one, or a broken one).
    InProcess(Arc<ukue::Spec>),
    /// The reference library in this process on an in-memory database, one
    /// connection for every worker and for the run's reads: no file, no
    /// fsync, no locks (the fuzzer's, for speed; what a file shared by
    /// several connections adds is [`Target::InProcess`]'s to check).
    InMemory(Arc<ukue::Spec>),
    /// One driver process a worker.
    Driver(DriverCommand),
}

impl Target {
    pub fn reference() -> Target {
        Target::InProcess(ukue::Spec::builtin())
    }

    /// The `--driver` words of a replay command for this target.
    pub fn describe(&self) -> String {
        match self {
            Target::InProcess(spec) if Arc::ptr_eq(spec, &ukue::Spec::builtin()) => {
                "the in-process reference".into()
            }
            Target::InProcess(_) => "the in-process reference with an edited FORMAT.md".into(),
            Target::InMemory(spec) if Arc::ptr_eq(spec, &ukue::Spec::builtin()) => {
                "the in-process reference on an in-memory database".into()
            }
            Target::InMemory(_) => {
                "the in-process reference with an edited FORMAT.md on an in-memory database".into()
            }
            Target::Driver(cmd) => format!("driver {}", cmd.display()),
        }
    }

    /// Opens the file for `workers` workers (the first one creates it).
    fn start(&self, path: &Path, workers: usize) -> Result<Box<dyn Session>, String> {
        let open =
            |create: bool| Request::Open { path: path.display().to_string(), create, now_ms: Some(START_MS) };
        let mut session: Box<dyn Session> = match self {
            Target::InMemory(spec) => return Ok(Box::new(InMemory::start(spec)?)),
            Target::InProcess(spec) => {
                // The reference's own new file, made once: copying it is
                // quicker than making the tables for every run. (Drivers
                // make their files themselves.)
                std::fs::write(path, template()?).map_err(|e| format!("{}: {e}", path.display()))?;
                Box::new(InProcess {
                    handlers: (0..workers).map(|_| ReferenceDriver::new(spec.clone())).collect(),
                })
            }
            Target::Driver(cmd) => {
                let mut drivers = Vec::new();
                for _ in 0..workers {
                    let driver = match pooled(cmd) {
                        Some(driver) => driver,
                        None => DriverProcess::start(cmd, None)?,
                    };
                    if !driver.hello.has(CAP_NOW_MS) {
                        return Err(format!(
                            "the driver {} does not accept an injected clock (capability {CAP_NOW_MS}); \
                             model runs need one",
                            driver.hello.driver
                        ));
                    }
                    drivers.push(driver);
                }
                Box::new(Drivers { command: cmd.clone(), drivers, healthy: true })
            }
        };
        for w in 0..workers {
            let answer = session.send(w, open(w == 0))?;
            if !answer.ok {
                return Err(format!("worker {w} could not open {}: {answer:?}", path.display()));
            }
        }
        Ok(session)
    }
}

/// The bytes of a new file that the reference made at [`START_MS`].
fn template() -> Result<&'static [u8], String> {
    static TEMPLATE: std::sync::OnceLock<Result<Vec<u8>, String>> = std::sync::OnceLock::new();
    let made = TEMPLATE.get_or_init(|| {
        let dir = scratch_dir("ukue-model-")?;
        let path = dir.path().join("template.ukue");
        let options =
            ukue::OpenOptions::default().access(ukue::Access::Create).clock(ukue::ManualClock::new(START_MS));
        drop(options.open(&path).map_err(|e| format!("making a ukue file: {e}"))?);
        std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))
    });
    made.as_deref().map_err(Clone::clone)
}

struct InProcess {
    handlers: Vec<ReferenceDriver>,
}

impl Session for InProcess {
    fn send(&mut self, worker: usize, request: Request) -> Result<Answer, String> {
        Ok(self.handlers[worker].handle(request))
    }
}

/// [`Target::InMemory`]'s session: one driver for every worker (each
/// request carries its time, and a step is one transaction either way).
struct InMemory {
    driver: ReferenceDriver,
}

impl InMemory {
    fn start(spec: &Arc<ukue::Spec>) -> Result<InMemory, String> {
        let conn = Connection::open_in_memory().map_err(|e| format!("an in-memory database: {e}"))?;
        // Room for every statement of the reference, the row reads and the
        // invariants (rusqlite keeps 16): none is parsed twice.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // A step that runs away (a mutant's recursion that never ends) is
        // interrupted, so that the run fails with an answer the model
        // explains rather than hanging; no step of the reference comes
        // near this many of SQLite's instructions. SQLite calls the
        // handler every PROGRESS_EVERY instructions of a statement counted
        // over all its runs (a cached statement's count goes on), so the
        // calls are counted per step ([`InMemory::send`] starts each at 0).
        conn.progress_handler(
            PROGRESS_EVERY,
            Some(|| {
                RUNAWAY_CALLS.with(|n| {
                    n.set(n.get() + 1);
                    n.get() > RUNAWAY_CALLS_MOST
                })
            }),
        );
        // random() as the fuzzer asks for it ([`next_random`]), else at random.
        conn.create_scalar_function("random", 0, rusqlite::functions::FunctionFlags::SQLITE_UTF8, |_| {
            Ok(NEXT_RANDOM.with(std::cell::Cell::take).unwrap_or_else(rand::random::<i64>))
        })
        .map_err(|e| format!("random() of an in-memory database: {e}"))?;
        let mut driver = ReferenceDriver::new(spec.clone());
        driver
            .attach(conn, START_MS)
            .map_err(|e| format!("adding the tables to an in-memory database: {e}"))?;
        Ok(InMemory { driver })
    }
}

thread_local! {
    static NEXT_RANDOM: std::cell::Cell<Option<i64>> = const { std::cell::Cell::new(None) };
}

/// Makes the next random() of an in-memory run's statements give `value`
/// (once), so that the fuzzer reaches both ends of a backoff's jitter.
pub fn next_random(value: i64) {
    NEXT_RANDOM.with(|n| n.set(Some(value)));
}

/// How often (in SQLite instructions of one statement) the progress
/// handler of an in-memory run is called, and how many calls one step may
/// take before it is interrupted: 20 million instructions, a tenth of a
/// second of work.
const PROGRESS_EVERY: std::os::raw::c_int = 1_000_000;
const RUNAWAY_CALLS_MOST: u32 = 20;

thread_local! {
    static RUNAWAY_CALLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Prepared statements an in-memory run's connection keeps.
const STATEMENT_CACHE: usize = 64;

impl Session for InMemory {
    fn send(&mut self, _worker: usize, request: Request) -> Result<Answer, String> {
        RUNAWAY_CALLS.with(|n| n.set(0));
        Ok(self.driver.handle(request))
    }

    fn connection(&self) -> Option<&Connection> {
        self.driver.file().map(ukue::Ukue::connection)
    }

    fn file(&self) -> Option<&ukue::Ukue> {
        self.driver.file()
    }
}

/// Driver processes kept between runs: a run's `open` requests point them
/// at its new file (an open closes the file open before), which spares
/// starting an interpreter per worker per run.
static POOL: std::sync::Mutex<Vec<(DriverCommand, DriverProcess)>> = std::sync::Mutex::new(Vec::new());

/// At most this many idle drivers are kept.
const POOL_SIZE: usize = 8;

/// Stops the pooled drivers. A search's are of no use after it, and one
/// kept would outlive the process that started it: at its exit, the
/// driver ends only once it reads the end of its input (under load, after
/// nextest had found it holding a test's output open).
pub fn release_drivers() {
    POOL.lock().unwrap_or_else(|p| p.into_inner()).clear();
}

fn pooled(command: &DriverCommand) -> Option<DriverProcess> {
    let mut pool = POOL.lock().unwrap_or_else(|p| p.into_inner());
    let at = pool.iter().position(|(c, _)| c == command)?;
    Some(pool.swap_remove(at).1)
}

struct Drivers {
    command: DriverCommand,
    drivers: Vec<DriverProcess>,
    /// False once a request got no answer: such drivers are not kept.
    healthy: bool,
}

impl Session for Drivers {
    fn send(&mut self, worker: usize, request: Request) -> Result<Answer, String> {
        let answer = self.drivers[worker].request(&request);
        self.healthy &= answer.is_ok();
        answer
    }

    fn backoff(&self) -> Backoff {
        if self.drivers.iter().all(|d| d.hello.has(CAP_PUBLISHED_BACKOFF)) {
            Backoff::Published
        } else {
            Backoff::Any
        }
    }
}

impl Drop for Drivers {
    fn drop(&mut self) {
        if !self.healthy {
            return;
        }
        let mut pool = POOL.lock().unwrap_or_else(|p| p.into_inner());
        for driver in self.drivers.drain(..) {
            if pool.len() < POOL_SIZE {
                pool.push((self.command.clone(), driver));
            }
        }
    }
}

/// Where a run went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFailure {
    /// The index of the op that failed (None: before the first op).
    pub step: Option<usize>,
    pub op: Option<Op>,
    /// The allowed outcomes.
    pub expected: String,
    /// What the subject answered (JSON), if it answered.
    pub seen: String,
    pub message: String,
}

impl std::fmt::Display for ModelFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.step, &self.op) {
            (Some(step), Some(op)) => writeln!(f, "step {} ({}): {}", step + 1, op.to_line(), self.message)?,
            _ => writeln!(f, "before the first step: {}", self.message)?,
        }
        writeln!(f, "  expected: {}", self.expected)?;
        write!(f, "  seen:     {}", self.seen)
    }
}

fn setup_failure(message: String) -> Box<ModelFailure> {
    Box::new(ModelFailure { step: None, op: None, expected: String::new(), seen: String::new(), message })
}

/// A folder for scratch files (`prefix` begins its name): in memory
/// (/dev/shm) when there is one, since these runs check steps, not
/// durability.
pub fn scratch_dir(prefix: &str) -> Result<tempfile::TempDir, String> {
    let shm = Path::new("/dev/shm");
    let builder = || {
        let mut b = tempfile::Builder::new();
        b.prefix(prefix);
        b
    };
    if shm.is_dir() {
        if let Ok(dir) = builder().tempdir_in(shm) {
            return Ok(dir);
        }
    }
    builder().tempdir().map_err(|e| format!("making a work directory: {e}"))
}

/// One run in progress: the session, the model and a read-only connection
/// to the file.
pub struct ModelRun {
    pub model: Model,
    /// Run `PRAGMA integrity_check` after every step (the default), or
    /// only in [`ModelRun::finish`] (the fuzzer, for speed); the invariants
    /// and the rows are checked after every step either way.
    pub integrity_every_step: bool,
    session: Box<dyn Session>,
    /// A read-only connection to the file (None: the session's own
    /// connection, [`Session::connection`]).
    reader: Option<Connection>,
    /// A writing connection for [`ModelRun::reset`], made when first needed.
    admin: Option<Connection>,
    steps: usize,
    /// The file's folder (None: the database is in memory).
    _dir: Option<tempfile::TempDir>,
    path: PathBuf,
}

impl ModelRun {
    /// A fresh file with `workers` workers of `target` on it.
    pub fn start(target: &Target, workers: usize) -> Result<ModelRun, Box<ModelFailure>> {
        let (dir, path) = match target {
            Target::InMemory(_) => (None, PathBuf::from(":memory:")),
            Target::InProcess(_) | Target::Driver(_) => {
                let dir = scratch_dir("ukue-model-").map_err(setup_failure)?;
                let path = dir.path().join("model.ukue");
                (Some(dir), path)
            }
        };
        let session = target.start(&path, workers.max(1)).map_err(setup_failure)?;
        let reader = match session.connection() {
            Some(_) => None,
            None => {
                Some(open_read_only(&path).map_err(|e| setup_failure(format!("{}: {e}", path.display())))?)
            }
        };
        Ok(ModelRun {
            model: Model { backoff: session.backoff(), ..Model::default() },
            integrity_every_step: true,
            session,
            reader,
            admin: None,
            steps: 0,
            _dir: dir,
            path,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection the run reads the database through.
    fn reader(&self) -> &Connection {
        match &self.reader {
            Some(reader) => reader,
            None => self.session.connection().expect("a session without a file has a connection"),
        }
    }

    /// Performs one op and checks the answer and the file.
    pub fn step(&mut self, op: &Op) -> Result<(), Box<ModelFailure>> {
        let index = self.steps;
        self.steps += 1;
        let expect = self.model.expect(op);
        // What was expected and seen, written out only for a failure.
        let allowed = expect.allowed.clone();
        let fail = |seen: Option<&Option<Answer>>, message: String| {
            let seen = match seen {
                None => "no answer".into(),
                Some(None) => "(nothing sent)".into(),
                Some(Some(answer)) => answer.to_line(),
            };
            let expected = allowed.to_string();
            Box::new(ModelFailure { step: Some(index), op: Some(op.clone()), expected, seen, message })
        };
        let answer = match expect.request(op, self.model.now) {
            None => None,
            Some(request) => {
                let worker = op.worker().unwrap_or(0) as usize;
                Some(self.session.send(worker, request).map_err(|e| fail(None, e))?)
            }
        };
        let touched = !matches!(expect.allowed, Allowed::Skip | Allowed::Clock);
        self.model.observe(op, expect, answer.as_ref()).map_err(|m| fail(Some(&answer), m))?;
        if touched {
            self.check_file().map_err(|m| fail(Some(&answer), m))?;
        }
        Ok(())
    }

    /// The reference's open file, for a [`Target::InMemory`] run.
    pub fn file(&self) -> Option<&ukue::Ukue> {
        self.session.file()
    }

    /// Every row of the file, by id.
    pub fn rows(&self) -> Result<Vec<Row>, String> {
        read_rows(self.reader()).map_err(|e| format!("reading the file: {e}"))
    }

    /// The file's integrity and invariants, and its rows against the model.
    pub fn check_file(&self) -> Result<(), String> {
        if self.integrity_every_step {
            self.finish()?;
        }
        let rows = self.rows()?;
        // The invariants of FORMAT.md §7 that rows show (the model's rows
        // keep them too, but a row check names them plainly).
        for row in &rows {
            if (row.state == "running") != (row.token.is_some() && row.lease_until.is_some())
                || (row.state != "running" && (row.token.is_some() || row.lease_until.is_some()))
            {
                return Err(format!(
                    "invariants: job {}: state {} with token {} and lease_until {}",
                    row.id,
                    row.state,
                    row.token.shown(),
                    row.lease_until.shown()
                ));
            }
        }
        self.model.check_rows(&rows)
    }

    /// Empties the file for another run on the same connections: no jobs,
    /// and ids from 1 again (sqlite_sequence emptied), as in a new file.
    pub fn reset(&mut self) -> Result<(), String> {
        if self.reader.is_some() && self.admin.is_none() {
            let admin = Connection::open(&self.path).map_err(|e| format!("{}: {e}", self.path.display()))?;
            self.admin = Some(admin);
        }
        let conn = self.admin.as_ref().unwrap_or_else(|| self.reader());
        for sql in ["DELETE FROM ukue_jobs", "DELETE FROM sqlite_sequence WHERE name = 'ukue_jobs'"] {
            conn.prepare_cached(sql)
                .and_then(|mut st| st.execute([]))
                .map_err(|e| format!("emptying {}: {e}", self.path.display()))?;
        }
        self.model = Model { backoff: self.model.backoff, ..Model::default() };
        self.steps = 0;
        Ok(())
    }

    /// The full file checks, integrity included (after the last step):
    /// the file's integrity and the invariants of FORMAT.md §7.
    pub fn finish(&self) -> Result<(), String> {
        let findings = invariants_of(self.reader());
        if findings.is_empty() {
            Ok(())
        } else {
            Err(check::describe(&findings))
        }
    }
}

/// Runs `ops` from a fresh file; the first failure, if any.
pub fn run_ops(target: &Target, ops: &[Op]) -> Result<(), Box<ModelFailure>> {
    let workers = ops.iter().filter_map(Op::worker).max().map_or(1, |w| w as usize + 1);
    let mut run = ModelRun::start(target, workers.max(WORKERS as usize))?;
    for op in ops {
        run.step(op)?;
    }
    Ok(())
}

/// What a property search does.
#[derive(Debug, Clone)]
pub struct SearchConfig {
    pub target: Target,
    /// Sequences to try (before shrinking).
    pub cases: u32,
    pub seed: u64,
    /// The longest sequence.
    pub max_steps: usize,
    /// Shrink a failing sequence (for at most [`SHRINK_TIME_MS`]), or
    /// report it as found: a driver that hangs costs its answer's deadline
    /// on every shrink candidate.
    pub shrink: bool,
}

/// The longest a search shrinks a failing sequence.
pub const SHRINK_TIME_MS: u32 = 120_000;

impl SearchConfig {
    pub fn new(target: Target, cases: u32, seed: u64) -> SearchConfig {
        SearchConfig { target, cases, seed, max_steps: 40, shrink: true }
    }
}

/// A failing sequence, shrunk.
#[derive(Debug, Clone)]
pub struct Found {
    pub ops: Vec<Op>,
    /// The failure of the shrunk sequence.
    pub failure: ModelFailure,
    /// How many ops the first failing sequence had.
    pub original_len: usize,
}

/// What a search found.
#[derive(Debug, Clone)]
pub struct SearchReport {
    pub cases: u32,
    pub elapsed: Duration,
    /// None: every sequence passed.
    pub found: Option<Found>,
}

/// The 32-byte ChaCha seed of a printed u64 seed.
fn rng(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &(seed.wrapping_add(i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes(),
        );
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// Generates `cases` sequences from `seed`, runs each against the target
/// and, on a failure, shrinks it to a shortest failing sequence.
pub fn search(config: &SearchConfig) -> SearchReport {
    let started = Instant::now();
    let proptest_config = Config {
        cases: config.cases,
        failure_persistence: None,
        max_shrink_iters: 4096,
        max_shrink_time: SHRINK_TIME_MS,
        max_local_rejects: 1 << 20,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(proptest_config, rng(config.seed));
    let strategy = Generator::sequential_strategy(1..=config.max_steps.max(1));
    let target = config.target.clone();
    let first_len = std::cell::Cell::new(None::<usize>);
    // Without shrinking, the first failing sequence is kept and every
    // candidate after it fails at once, unrun (proptest-state-machine
    // cannot be told not to shrink).
    let first_failing = std::cell::RefCell::new(None::<Vec<Op>>);
    let result = runner.run(&strategy, |(_, ops, seen)| {
        if !config.shrink && first_failing.borrow().is_some() {
            return Err(TestCaseError::fail("not shrunk"));
        }
        let mut run =
            ModelRun::start(&target, WORKERS as usize).map_err(|f| TestCaseError::fail(f.to_string()))?;
        for op in &ops {
            if let Some(seen) = &seen {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            if let Err(f) = run.step(op) {
                if first_len.get().is_none() {
                    first_len.set(Some(ops.len()));
                    first_failing.replace(Some(ops.clone()));
                } else if run_ops(&target, &ops).is_ok() {
                    // A shrunk candidate counts only when it fails again:
                    // SQLite's random() in a backoff can make a step fail
                    // once in a thousand runs, and a shrink that kept it
                    // would end on a sequence that no longer fails.
                    return Ok(());
                }
                return Err(TestCaseError::fail(f.to_string()));
            }
        }
        Ok(())
    });
    let found = match result {
        Ok(()) => None,
        Err(TestError::Fail(_, (_, shrunk, _))) => {
            let ops = if config.shrink { shrunk } else { first_failing.take().unwrap_or(shrunk) };
            // Run the shrunk sequence again for its failure, cut after it.
            let failure = match run_ops(&config.target, &ops) {
                Err(f) => *f,
                Ok(()) => *setup_failure(
                    "the shrunk sequence passed when run again (a nondeterministic failure)".into(),
                ),
            };
            let ops = match failure.step {
                Some(step) => ops[..=step].to_vec(),
                None => ops,
            };
            let (ops, failure) = if failure.step.is_some() && config.shrink {
                minimize(&config.target, ops, failure)
            } else {
                (ops, failure)
            };
            Some(Found { original_len: first_len.get().unwrap_or(ops.len()), ops, failure })
        }
        Err(TestError::Abort(reason)) => Some(Found {
            ops: Vec::new(),
            failure: *setup_failure(format!("the search stopped: {reason}")),
            original_len: 0,
        }),
    };
    release_drivers();
    SearchReport { cases: config.cases, elapsed: started.elapsed(), found }
}

/// After proptest's shrinking (one pass of deletions from the back), drops
/// single ops for as long as the sequence still fails: a shortest
/// sequence in which no one op can go. A dropped add or claim leaves the
/// steps that named it with nothing to act on; they are skipped.
pub fn minimize(target: &Target, mut ops: Vec<Op>, mut failure: ModelFailure) -> (Vec<Op>, ModelFailure) {
    let mut changed = true;
    while changed {
        changed = false;
        for i in (0..ops.len()).rev() {
            let mut fewer = ops.clone();
            fewer.remove(i);
            if fewer.is_empty() {
                continue;
            }
            if let Err(f) = run_ops(target, &fewer) {
                // As in the search's shrinking: only a failure seen twice.
                if let Some(step) = f.step.filter(|_| run_ops(target, &fewer).is_err()) {
                    fewer.truncate(step + 1);
                    ops = fewer;
                    failure = *f;
                    changed = true;
                    break;
                }
            }
        }
    }
    (ops, failure)
}
