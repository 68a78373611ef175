//! The fuzz targets' logic (fuzz/fuzz_targets/ call these). Each takes the
//! fuzzer's bytes and panics when a property fails; `cargo test` replays
//! every seed in `fixtures/fuzz/<target>/` through the same functions
//! (harness/tests/fuzz_corpus.rs), so the corpus runs on stable Rust.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arbitrary::{Arbitrary, Unstructured};

use super::gen::{edges, WORKERS};
use super::run::{scratch_dir, ModelRun, Target};
use crate::check::model::{backoff_base, op, FailHow, JobState, Label, Op, PurgeState, START_MS};
use crate::subjects::broken;
use crate::subjects::driver::{Answer, ErrorKind, ReferenceDriver, Request};
use crate::subjects::observe::file::cell;

/// A fuzz target: panics when a property fails.
pub type FuzzTarget = fn(&[u8]);

/// The targets, by the name of their folder under fixtures/fuzz/.
pub const TARGETS: &[(&str, FuzzTarget)] = &[
    ("open_bytes", open_bytes),
    ("ops_vs_model", ops_vs_model),
    ("cli_args", super::fuzz_cli::cli_args),
    ("driver_lines", driver_lines),
    ("serve_requests", super::fuzz_serve::serve_requests),
];

/// Runs `body` in an empty scratch folder: one a thread, in memory when
/// the machine has /dev/shm, made once and emptied before each input
/// (making and removing a folder an input cost more than most inputs).
pub(crate) fn in_scratch<T>(body: impl FnOnce(&Path) -> T) -> T {
    thread_local! {
        static DIR: tempfile::TempDir = scratch_dir("ukue-fuzz-").expect("a temporary directory");
    }
    DIR.with(|dir| {
        for entry in listing(dir.path()) {
            let emptied = std::fs::remove_file(&entry).or_else(|_| std::fs::remove_dir_all(&entry));
            // Gone already: a closing connection of the input before took it.
            let gone = emptied.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
            if !gone {
                emptied.unwrap_or_else(|e| panic!("emptying the scratch folder: {}: {e}", entry.display()));
            }
        }
        body(dir.path())
    })
}

fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// `open_bytes`: the bytes as a file. Opening it refuses cleanly or
/// accepts, never panics; a file it refuses is left byte-for-byte
/// unchanged, with no -wal or -shm file beside it (FORMAT.md §2.3). An
/// accepted file then takes a stats, a claim and an add without panicking.
pub fn open_bytes(data: &[u8]) {
    in_scratch(|dir| open_bytes_in(dir, data))
}

fn open_bytes_in(dir: &Path, data: &[u8]) {
    let path = dir.join("fuzz.ukue");
    std::fs::write(&path, data).expect("writing the input");
    // The folder was empty.
    let before = vec![path.clone()];
    let clock = ukue::ManualClock::new(START_MS);
    let opened = ukue::OpenOptions::default().clock(clock).open(&path);
    match opened {
        Err(e) => {
            let after = std::fs::read(&path).expect("reading the input back");
            assert!(after == data, "opening changed a file it refused ({e})");
            assert_eq!(listing(dir), before, "opening left files behind after refusing ({e})");
        }
        Ok(mut file) => {
            steps_on_opened(&mut file);
        }
    }
    if std::env::var_os("UKUE_BROKEN").is_some_and(|name| !name.is_empty()) {
        same_opening(dir, data, fuzzed_spec());
    }
}

/// Under `UKUE_BROKEN=NAME` (a mutant of FORMAT.md, as
/// `fuzz/time-to-bug.sh open_bytes` runs it), the builtin reference is the
/// oracle: the mutant must make of the same bytes what it makes, opened as
/// an existing file and with its tables added (empty bytes: a new file).
/// The statements that run only as a file is made or opened are reached
/// here and nowhere else by fuzzing.
fn same_opening(dir: &Path, data: &[u8], mutant: Arc<ukue::Spec>) {
    for access in [ukue::Access::Existing, ukue::Access::AddTables] {
        let want = opening(dir, "reference", data, ukue::Spec::builtin(), access);
        let got = opening(dir, "mutant", data, mutant.clone(), access);
        assert!(
            got == want,
            "open_bytes: the mutant makes another file of the input (opened {access:?})\n  reference: {want}\n  mutant:    {got}"
        );
    }
}

/// What opening `data` as a file in `dir/name/` with `spec` gives: the
/// refusal, or the schema, meta, pragmas and the answers of a few steps.
fn opening(dir: &Path, name: &str, data: &[u8], spec: Arc<ukue::Spec>, access: ukue::Access) -> String {
    let folder = dir.join(name);
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir(&folder).expect("a folder for the input");
    let path = folder.join("fuzz.ukue");
    std::fs::write(&path, data).expect("writing the input");
    let options =
        ukue::OpenOptions::default().access(access).clock(ukue::ManualClock::new(START_MS)).spec(spec);
    let mut file = match options.open(&path) {
        Ok(file) => file,
        Err(e) => return format!("refused: {}", e.to_string().replace(&*folder.to_string_lossy(), "DIR")),
    };
    let read = |sql: &str| -> String {
        let conn = file.connection();
        let rows = conn.prepare(sql).and_then(|mut st| {
            let columns = st.column_count();
            let rows = st.query_map([], |row| {
                (0..columns).map(|i| row.get_ref(i).map(cell)).collect::<rusqlite::Result<Vec<_>>>()
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        });
        format!("{sql}: {rows:?}")
    };
    let mut seen: Vec<String> = [
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name",
        "SELECT key, value FROM ukue_meta ORDER BY key",
        "PRAGMA application_id",
        "PRAGMA journal_mode",
        "PRAGMA synchronous",
    ]
    .into_iter()
    .map(read)
    .collect();
    // The busy wait is the reference's own (PRAGMA busy_timeout reads 0
    // once it is installed), for as long as set_busy_timeout said.
    seen.push(format!("busy timeout: {:?}", file.busy_timeout()));
    seen.extend(steps_on_opened(&mut file));
    // What stays once the file is closed: a transaction left open (a step
    // that failed and was not rolled back) loses what came after it.
    drop(file);
    let kept = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|conn| {
            conn.query_row("SELECT count(*), max(id) FROM ukue_jobs", [], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Option<i64>>(1)?))
            })
        });
    seen.push(format!("kept: {kept:?}"));
    seen.join("\n")
}

/// The steps open_bytes takes on a file it opened: a stats, a list, a
/// claim (and the finish of what it took) and an add; their answers.
fn steps_on_opened(file: &mut ukue::Ukue) -> [String; 4] {
    let stats = format!("stats: {:?}", file.stats());
    let listed =
        file.list(&ukue::ListFilter::default()).map(|jobs| jobs.iter().map(|j| j.id).collect::<Vec<_>>());
    let claim = match file.claim("q", std::time::Duration::from_secs(1)) {
        Ok(Some(job)) => format!("claim: {} {:?}", job.id, file.finish(job.id, &job.token, false)),
        other => format!("claim: {:?}", other.map(|_| ())),
    };
    let add = format!("add: {:?}", file.add(&ukue::NewJob::new("q", b"fuzz".to_vec())));
    [stats, format!("list: {listed:?}"), claim, add]
}

/// What the fuzzer's bytes become in `ops_vs_model`: ops whose references
/// (claims, jobs, clock edges) are resolved against the model as it goes.
#[derive(Debug, Arbitrary)]
enum FuzzOp {
    Add {
        worker: u8,
        queue_b: bool,
        priority: i8,
        max_attempts: u8,
        delay_ms: u16,
    },
    Claim {
        worker: u8,
        queue_b: bool,
        lease_ms: u16,
    },
    Holder {
        worker: u8,
        claim: u8,
        kind: u8,
        /// Whose token, on whose job ([`holder_token`]): one byte, as the
        /// bool it was, so that the inputs before it read the same.
        token: u8,
        ms: u16,
    },
    Retry {
        worker: u8,
        job: u8,
    },
    Delete {
        worker: u8,
        job: u8,
    },
    RetryAll {
        worker: u8,
        queue: Option<bool>,
    },
    Purge {
        worker: u8,
        dead: bool,
        queue: Option<bool>,
    },
    /// The counts, then a listing: `worker` modulo the workers is the
    /// worker, the rest chooses the listing's filter ([`list_filter`]),
    /// so that inputs made before the listing read the same.
    Stats {
        worker: u8,
    },
    /// To one ms before, at or after an edge (a lease_until, a run_at).
    Edge {
        which: u8,
        offset: i8,
    },
    Advance {
        ms: u16,
    },
    /// What SQLite's random() gives next, so that a backoff's jitter can
    /// sit at either end of its range ([`jitters`]).
    Jitter {
        which: u8,
    },
    /// A new job claimed and failed (or its lease left to run out) again
    /// and again: the backoff's hour's cap holds only from attempt 10, and
    /// a wider jitter only from attempt 5, which one op at a time reaches
    /// only by chance (three ops an attempt, in the right order).
    Refail {
        worker: u8,
        queue_b: bool,
        times: u8,
        expire: bool,
        jitter: u8,
    },
}

/// The attempts whose backoffs differ: from 10 the hour's cap holds.
const CAPPED_ATTEMPT: i64 = 10;

/// The values a [`FuzzOp::Jitter`] hands random(): 0 (no jitter), then for
/// each attempt up to the cap the largest jitter of its backoff and one
/// more (FORMAT.md §5.6's `abs(random() % (b/10 + 1))` gives b/10 and 0
/// for them, and a range one wider gives b/10 + 1).
fn jitters() -> &'static [i64] {
    static JITTERS: OnceLock<Vec<i64>> = OnceLock::new();
    JITTERS.get_or_init(|| {
        let most = (1..=CAPPED_ATTEMPT).map(|attempts| backoff_base(attempts) / 10);
        std::iter::once(0).chain(most.flat_map(|j| [j, j + 1])).collect()
    })
}

/// What [`FuzzOp::Refail`] hands random() before a backoff of a job at
/// `attempts`: by `jitter`, nothing chosen, none, the largest, one more.
fn refail_jitter(jitter: u8, attempts: i64) {
    let most = backoff_base(attempts) / 10;
    match jitter % 4 {
        0 => {}
        1 => super::run::next_random(0),
        2 => super::run::next_random(most),
        _ => super::run::next_random(most + 1),
    }
}

/// A holder step's token byte: odd, a forged token (the low bit, as a
/// bool reads it); even with the high bit set, the claim's own token on
/// the job of another claim (the index in the six bits between); else the
/// claim's own token on its own job.
fn holder_token(byte: u8) -> (bool, Option<u8>) {
    let forged = byte & 1 == 1;
    let other = (!forged && byte & 0x80 != 0).then_some((byte >> 1) & 0x3f);
    (forged, other)
}

fn queue_name(b: bool) -> String {
    if b { "b" } else { "a" }.to_string()
}

/// Turns one fuzzer op into a model op, or None when it names nothing.
fn resolve(fuzz: FuzzOp, run: &ModelRun, next_label: &mut Label) -> Option<Op> {
    let model = &run.model;
    let w = |worker: u8| worker % WORKERS;
    let mut label = || {
        *next_label += 1;
        *next_label
    };
    Some(match fuzz {
        FuzzOp::Add { worker, queue_b, priority, max_attempts, delay_ms } => Op::Add {
            worker: w(worker),
            label: label(),
            queue: queue_name(queue_b),
            priority: i64::from(priority),
            max_attempts: i64::from(max_attempts % 5),
            delay_ms: i64::from(delay_ms),
        },
        FuzzOp::Claim { worker, queue_b, lease_ms } => Op::Claim {
            worker: w(worker),
            label: label(),
            queue: queue_name(queue_b),
            lease_ms: i64::from(lease_ms),
        },
        FuzzOp::Holder { worker, claim, kind, token, ms } => {
            // Only claims that took a job: a step on one that took nothing
            // is skipped, and most claims of a short input take nothing, so
            // picking among all of them made a crossed step (two claims that
            // both took a job) a rare input.
            let claims: Vec<Label> =
                model.claims.iter().filter(|(_, id)| id.is_some()).map(|(l, _)| *l).collect();
            let claim = *claims.get(claim as usize % claims.len().max(1))?;
            let (forged, job_of) = holder_token(token);
            // Another claim's job, never its own: its own is what a step
            // without `job_of` already presents.
            let others: Vec<Label> = claims.iter().copied().filter(|&l| l != claim).collect();
            let job_of = job_of.and_then(|n| others.get(n as usize % others.len().max(1)).copied());
            let (worker, ms) = (w(worker), i64::from(ms));
            match kind % 7 {
                0 => Op::Finish { worker, claim, keep_done: false, forged, job_of },
                1 => Op::Finish { worker, claim, keep_done: true, forged, job_of },
                2 => Op::Fail { worker, claim, how: FailHow::Backoff, forged, job_of },
                3 => Op::Fail { worker, claim, how: FailHow::After(ms), forged, job_of },
                4 => Op::Fail { worker, claim, how: FailHow::Permanent, forged, job_of },
                5 => Op::Renew { worker, claim, lease_ms: ms, forged, job_of },
                _ => Op::Release { worker, claim, forged, job_of },
            }
        }
        FuzzOp::Retry { worker, job } | FuzzOp::Delete { worker, job } if model.adds.is_empty() => {
            let _ = (worker, job);
            return None;
        }
        FuzzOp::Retry { worker, job } => {
            let jobs: Vec<Label> = model.adds.keys().copied().collect();
            Op::Retry { worker: w(worker), job: jobs[job as usize % jobs.len()] }
        }
        FuzzOp::Delete { worker, job } => {
            let jobs: Vec<Label> = model.adds.keys().copied().collect();
            Op::Delete { worker: w(worker), job: jobs[job as usize % jobs.len()] }
        }
        FuzzOp::RetryAll { worker, queue } => {
            Op::RetryAll { worker: w(worker), queue: queue.map(queue_name) }
        }
        FuzzOp::Purge { worker, dead, queue } => Op::Purge {
            worker: w(worker),
            state: if dead { PurgeState::Dead } else { PurgeState::Done },
            queue: queue.map(queue_name),
        },
        FuzzOp::Stats { worker } => Op::Stats { worker: w(worker) },
        FuzzOp::Edge { which, offset } => {
            let edges = edges(model);
            let edge = *edges.get(which as usize % edges.len().max(1))?;
            let ms = edge + i64::from(offset.clamp(-1, 1)) - model.now;
            (ms > 0).then_some(Op::Advance { ms })?
        }
        FuzzOp::Advance { ms } => Op::Advance { ms: i64::from(ms).max(1) },
        FuzzOp::Jitter { which } => {
            super::run::next_random(jitters()[which as usize % jitters().len()]);
            return None;
        }
        FuzzOp::Refail { .. } => unreachable!("a macro op: ops_on steps it"),
    })
}

/// `ops_vs_model`: op sequences on the in-process reference (three
/// workers) against the model; every answer and the database after every
/// step must match it. For speed the database is in memory, one
/// connection for every worker ([`Target::InMemory`]); the model-based
/// runs (`ukue-conformance model`) check the same steps on a file with a
/// connection a worker. With `UKUE_BROKEN=NAME` the reference runs a
/// deliberately broken FORMAT.md (crate::subjects::broken), to show that
/// fuzzing finds the bug: `UKUE_BROKEN=no-reaping fuzz/run.sh 60 ops_vs_model`.
pub fn ops_vs_model(data: &[u8]) {
    // One database and its connection serve every input, emptied in
    // between (making the tables costs more than most inputs' steps). A run
    // that failed is dropped with the panic, and the next input starts anew.
    thread_local! {
        static KEPT: std::cell::RefCell<Option<ModelRun>> = const { std::cell::RefCell::new(None) };
    }
    let kept = KEPT.with(|k| k.borrow_mut().take());
    let run = match kept {
        Some(mut run) => match run.reset() {
            Ok(()) => run,
            Err(e) => panic!("cannot empty the file for the next input: {e}"),
        },
        None => start(&Target::InMemory(fuzzed_spec())),
    };
    let run = ops_on(run, data);
    KEPT.with(|k| *k.borrow_mut() = Some(run));
}

/// [`ops_vs_model`] against any target (a broken one, to show it fails),
/// on a new database.
pub fn ops_vs_model_on(target: &Target, data: &[u8]) {
    ops_on(start(target), data);
}

/// The inputs in `dir`, in name order, with their paths.
pub fn corpus(dir: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
    let mut seeds = Vec::new();
    for path in listing(dir) {
        let data = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        seeds.push((path, data));
    }
    if seeds.is_empty() {
        return Err(format!("{}: no inputs", dir.display()));
    }
    Ok(seeds)
}

/// The index of the first of `seeds` that fails [`ops_vs_model_on`]
/// `target`, if one does; the failures' messages are not printed.
pub fn first_kill(target: &Target, seeds: &[(PathBuf, Vec<u8>)]) -> Option<usize> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let found = seeds.iter().position(|(_, data)| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ops_vs_model_on(target, data))).is_err()
    });
    std::panic::set_hook(hook);
    found
}

/// The FORMAT.md that [`ops_vs_model`] and [`driver_lines`] run: the
/// builtin one, or the broken one or mutant that `UKUE_BROKEN` names (read
/// once, as `ukue-driver` does).
fn fuzzed_spec() -> Arc<ukue::Spec> {
    static SPEC: OnceLock<Arc<ukue::Spec>> = OnceLock::new();
    SPEC.get_or_init(|| broken::spec_from_env().unwrap_or_else(|e| panic!("{e}"))).clone()
}

fn start(target: &Target) -> ModelRun {
    match ModelRun::start(target, WORKERS as usize) {
        Ok(run) => run,
        Err(f) => panic!("cannot start a run: {f}"),
    }
}

/// The most ops an input runs.
const MOST_OPS: usize = 64;

fn ops_on(mut run: ModelRun, data: &[u8]) -> ModelRun {
    let mut input = Unstructured::new(data);
    run.integrity_every_step = false;
    let mut ops = Vec::new();
    let mut next_label = 0;
    while ops.len() < MOST_OPS && !input.is_empty() {
        let Ok(fuzz) = FuzzOp::arbitrary(&mut input) else { break };
        if let FuzzOp::Refail { worker, queue_b, times, expire, jitter } = fuzz {
            let refail = Refail { worker: worker % WORKERS, queue: queue_name(queue_b), expire, jitter };
            refail.run(&mut run, &mut ops, &mut next_label, 1 + i64::from(times) % (CAPPED_ATTEMPT + 2));
            continue;
        }
        let listing = match fuzz {
            FuzzOp::Stats { worker } => Some(list_filter(worker)),
            _ => None,
        };
        let Some(op) = resolve(fuzz, &run, &mut next_label) else { continue };
        step(&mut run, &mut ops, op);
        if let Some(filter) = listing {
            check_list(&run, &ops, &filter);
        }
    }
    if let Err(message) = run.finish() {
        panic!("after the last op: {message}\nthe ops:\n{}", op::script_text(&[], &ops));
    }
    run
}

/// Runs one op, or panics with the ops so far and how to replay them.
fn step(run: &mut ModelRun, ops: &mut Vec<Op>, op: Op) {
    ops.push(op.clone());
    if let Err(failure) = run.step(&op) {
        let script = op::script_text(&[failure.to_string()], ops);
        let path = std::env::temp_dir().join(format!("ukue-fuzz-ops-{}.jsonl", std::process::id()));
        let saved = match std::fs::write(&path, &script) {
            Ok(()) => format!("saved to {0}; replay: ukue-conformance replay {0}", path.display()),
            Err(e) => format!("not saved ({}: {e})", path.display()),
        };
        panic!("the subject disagrees with the model:\n{failure}\nthe ops:\n{script}{saved}");
    }
}

/// The listing a [`FuzzOp::Stats`] asks for, from its worker byte's
/// quotient: the queue (any, a, b), the state (any, or one of the five a
/// listing shows), and from 0 to 4 for the id to list after, with a limit
/// of 2 when it is odd.
fn list_filter(worker: u8) -> ukue::ListFilter {
    use ukue::ListState::{Dead, Delayed, Done, Ready, Running};
    let k = usize::from(worker / WORKERS);
    let queue = [None, Some("a"), Some("b")][k % 3].map(str::to_string);
    let state = [None, Some(Ready), Some(Delayed), Some(Running), Some(Done), Some(Dead)][k / 3 % 6];
    let after = (k / 18) as i64;
    ukue::ListFilter { queue, state, after, limit: if after % 2 == 1 { 2 } else { 1000 } }
}

/// A listing of the reference (in process: the driver protocol has no
/// list) against the rows, which the last step checked against the model:
/// the ids after `after`, of the queue, in the state (a ready job not yet
/// due is `delayed`), in id order, at most `limit` (FORMAT.md's list).
fn check_list(run: &ModelRun, ops: &[Op], filter: &ukue::ListFilter) {
    let Some(file) = run.file() else { return };
    let rows = run.rows().unwrap_or_else(|e| panic!("{e}"));
    let now = run.model.now;
    let shown = |state: &str, run_at: i64| {
        if state == "ready" && run_at > now { "delayed" } else { state }.to_string()
    };
    let want: Vec<i64> = rows
        .iter()
        .filter(|r| r.id > filter.after)
        .filter(|r| filter.queue.as_ref().is_none_or(|q| *q == r.queue))
        .filter(|r| filter.state.is_none_or(|s| s.as_str() == shown(&r.state, r.run_at)))
        .map(|r| r.id)
        .take(filter.limit as usize)
        .collect();
    let got = file.list(filter).map(|jobs| jobs.iter().map(|j| j.id).collect::<Vec<_>>());
    if !matches!(&got, Ok(ids) if *ids == want) {
        panic!(
            "the subject disagrees with the model: a list ({filter:?}) at {now} gave {got:?}, the rows say {want:?}\nthe ops:\n{}",
            op::script_text(&[], ops)
        );
    }
}

/// [`FuzzOp::Refail`], resolved.
struct Refail {
    worker: u8,
    queue: String,
    expire: bool,
    jitter: u8,
}

impl Refail {
    /// Adds a job with attempts to spare, then up to `rounds` times: the
    /// clock to when it is due, a claim, and a fail with the backoff (or
    /// the lease's end, which the next claim reaps). Each op goes through
    /// the model as any other; the ops stop at the input's limit.
    fn run(&self, run: &mut ModelRun, ops: &mut Vec<Op>, next_label: &mut Label, rounds: i64) {
        let mut label = || {
            *next_label += 1;
            *next_label
        };
        let (worker, queue) = (self.worker, self.queue.clone());
        let add = label();
        let max_attempts = CAPPED_ATTEMPT + 2;
        step(
            run,
            ops,
            Op::Add { worker, label: add, queue: queue.clone(), priority: 0, max_attempts, delay_ms: 0 },
        );
        let Some(&id) = run.model.adds.get(&add) else { return };
        const LEASE_MS: i64 = 1_000;
        for _ in 0..rounds {
            let Some(job) = run.model.jobs.get(&id).cloned() else { return };
            let room = ops.len() + 3 <= MOST_OPS;
            match job.state {
                JobState::Running if room => {
                    // Its lease ran out: this claim reaps it, with a backoff.
                    self.jitter_for(job.attempts);
                    step(
                        run,
                        ops,
                        Op::Claim { worker, label: label(), queue: queue.clone(), lease_ms: LEASE_MS },
                    );
                }
                JobState::Ready if room => {}
                _ => return,
            }
            let Some(job) = run.model.jobs.get(&id).cloned() else { return };
            if job.state == JobState::Ready && job.run_at.hi > run.model.now {
                step(run, ops, Op::Advance { ms: job.run_at.hi - run.model.now });
            }
            let claim = label();
            step(run, ops, Op::Claim { worker, label: claim, queue: queue.clone(), lease_ms: LEASE_MS });
            let Some(Some(taken)) = run.model.claims.get(&claim).copied() else { return };
            if self.expire {
                step(run, ops, Op::Advance { ms: LEASE_MS });
            } else {
                let attempts = run.model.jobs.get(&taken).map_or(1, |j| j.attempts);
                self.jitter_for(attempts);
                step(
                    run,
                    ops,
                    Op::Fail { worker, claim, how: FailHow::Backoff, forged: false, job_of: None },
                );
            }
        }
    }

    fn jitter_for(&self, attempts: i64) {
        refail_jitter(self.jitter, attempts);
    }
}

/// `driver_lines`: the bytes, split into lines, as requests to the Rust
/// driver ([`ReferenceDriver`], whose `open` stays inside a scratch
/// folder). Each answer is one line of JSON: ok, or a typed error; a line
/// that is not a request is `invalid`. Never a panic or a hang.
pub fn driver_lines(data: &[u8]) {
    in_scratch(|dir| driver_lines_in(dir, data))
}

fn driver_lines_in(dir: &Path, data: &[u8]) {
    let mut driver = ReferenceDriver::jailed(fuzzed_spec(), dir.to_path_buf());
    for line in data.split(|b| *b == b'\n').take(64) {
        let text = String::from_utf8_lossy(line);
        let reply = driver.handle_line(&text);
        assert!(!reply.contains('\n'), "an answer of more than one line: {reply:?}");
        let answer: Answer = serde_json::from_str(&reply).unwrap_or_else(|e| panic!("answer {reply:?}: {e}"));
        if !answer.ok {
            assert!(answer.error.is_some(), "an error answer without an error kind: {reply}");
        }
        if serde_json::from_str::<Request>(&text).is_err() {
            assert_eq!(answer.error, Some(ErrorKind::Invalid), "for {text:?}: {reply}");
        }
    }
}

/// One entry of a libFuzzer dictionary: its name, if it has one, and its bytes.
pub type DictEntry = (Option<String>, Vec<u8>);

/// The entries of a libFuzzer dictionary (fuzz/dict/<target>.dict), read
/// as libFuzzer reads them: a line `name="value"` or `"value"`, `#` a
/// comment; in a value, `\\`, `\"` and `\xAB` are the escapes.
pub fn dictionary(text: &str) -> Result<Vec<DictEntry>, String> {
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| format!("line {}: {why}: {line}", n + 1);
        let open = line.find('"').ok_or_else(|| bad("no opening quote"))?;
        let name = line[..open].trim();
        let name = match name.strip_suffix('=') {
            Some(name) if !name.is_empty() => Some(name.to_string()),
            None if name.is_empty() => None,
            _ => return Err(bad("not name=\"value\"")),
        };
        let quoted = &line[open + 1..];
        let value = quoted.strip_suffix('"').ok_or_else(|| bad("no closing quote"))?;
        let mut bytes = Vec::new();
        let mut chars = value.bytes();
        while let Some(b) = chars.next() {
            if b != b'\\' {
                bytes.push(b);
                continue;
            }
            match chars.next() {
                Some(e @ (b'\\' | b'"')) => bytes.push(e),
                Some(b'x') => {
                    let hex: Vec<u8> = chars.by_ref().take(2).collect();
                    let digits = std::str::from_utf8(&hex).ok().filter(|h| h.len() == 2);
                    let byte = digits.and_then(|h| u8::from_str_radix(h, 16).ok());
                    bytes.push(byte.ok_or_else(|| bad("\\x takes two hex digits"))?);
                }
                _ => return Err(bad("an escape other than \\\\, \\\" or \\xAB")),
            }
        }
        if bytes.is_empty() {
            return Err(bad("an empty value"));
        }
        entries.push((name, bytes));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionaries_read_as_libfuzzer_reads_them() {
        let entries = dictionary("# c\n\nkw=\"a\\\"b\"\n\"\\x00\\\\\"\n").unwrap();
        assert_eq!(entries, vec![(Some("kw".into()), b"a\"b".to_vec()), (None, b"\x00\\".to_vec())]);
        for bad in ["a", "\"a", "=\"a\"", "\"\"", "\"\\n\"", "\"\\x0\"", "k \"a\""] {
            assert!(dictionary(bad).is_err(), "{bad:?}");
        }
    }

    /// open_bytes under a mutant compares its opening with the reference's:
    /// on empty bytes (a new file once the tables are added) the builtin
    /// FORMAT.md makes the same, a mutant of the schema or of a pragma
    /// another file.
    #[test]
    fn a_mutant_that_makes_another_file_fails_open_bytes() {
        in_scratch(|dir| same_opening(dir, b"", ukue::Spec::builtin()));
        // No false verdict: the builtin makes the same of every seed as itself.
        let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/fuzz/open_bytes");
        for (path, data) in corpus(&seeds).unwrap() {
            let same = std::panic::catch_unwind(|| {
                in_scratch(|dir| same_opening(dir, &data, ukue::Spec::builtin()))
            });
            assert!(same.is_ok(), "{}", path.display());
        }
        for name in [
            "create_index_due/hand-1",
            "create_jobs/const-5",
            "set_application_id/hand-1",
            "set_busy_timeout/const-1",
        ] {
            let spec = crate::subjects::mutants::named(name).unwrap().spec();
            let caught = std::panic::catch_unwind(|| in_scratch(|dir| same_opening(dir, b"", spec)));
            assert!(caught.is_err(), "{name} passed");
        }
    }

    /// A stats op lists too, and the listing is checked: two jobs due and
    /// one delayed, listed in full (worker byte 0) and by `delayed` (18:
    /// quotient 6). The reference passes; a list in the wrong order, or
    /// one that shows a delayed job as ready, fails.
    #[test]
    fn a_stats_op_lists_and_a_wrong_listing_fails() {
        let add = |delay: [u8; 2]| [&[0, 0, 0, 0, 0, 0, 0, 3][..], &delay].concat();
        let stats = |worker: u8| vec![0x56, 0x55, 0x55, 0x95, worker];
        let data = [add([0, 0]), add([0, 0]), add([0xe8, 0x03]), stats(0), stats(18)].concat();
        assert_eq!(list_filter(18).state, Some(ukue::ListState::Delayed));
        ops_vs_model_on(&Target::InMemory(ukue::Spec::builtin()), &data);
        for name in ["list/hand-3", "list/hand-2"] {
            let spec = crate::subjects::mutants::named(name).unwrap().spec();
            let caught = std::panic::catch_unwind(|| ops_vs_model_on(&Target::InMemory(spec), &data));
            assert!(caught.is_err(), "{name} passed");
        }
    }

    /// fuzz/dict/ops_vs_model.dict's `op_*` entries are the FuzzOp
    /// variants' tags.
    #[test]
    fn the_op_tags_of_the_dictionary_are_the_ops() {
        let text = include_str!("../../../fuzz/dict/ops_vs_model.dict");
        let tags: Vec<(String, Vec<u8>)> = dictionary(text)
            .unwrap()
            .into_iter()
            .filter_map(|(name, bytes)| Some((name?.strip_prefix("op_")?.to_string(), bytes)))
            .collect();
        assert_eq!(tags.len(), 12, "one tag a variant");
        for (name, tag) in tags {
            let mut data = tag.clone();
            data.resize(32, 0);
            let op = FuzzOp::arbitrary(&mut Unstructured::new(&data)).unwrap();
            let variant: String = format!("{op:?}").chars().take_while(|c| c.is_alphanumeric()).collect();
            let snake: String = variant
                .chars()
                .enumerate()
                .flat_map(|(i, c)| {
                    let sep = (i > 0 && c.is_uppercase()).then_some('_');
                    sep.into_iter().chain(c.to_lowercase())
                })
                .collect();
            assert_eq!(snake, name, "the tag {tag:x?}");
        }
    }

    /// fuzz/dict/ops_vs_model.dict's `crossed_*` entries are what their
    /// comment says: alone, five ops that end in a step with one claim's
    /// token on the other claim's job, whose id is above it for `_up`.
    #[test]
    fn the_crossed_entries_of_the_dictionary_cross() {
        let text = include_str!("../../../fuzz/dict/ops_vs_model.dict");
        let crossed: Vec<(String, Vec<u8>)> = dictionary(text)
            .unwrap()
            .into_iter()
            .filter_map(|(name, bytes)| Some((name?.strip_prefix("crossed_")?.to_string(), bytes)))
            .collect();
        assert_eq!(crossed.len(), 14, "each of the seven holder steps, up and down");
        for (name, bytes) in crossed {
            let mut run = start(&Target::InMemory(fuzzed_spec()));
            let (mut ops, mut next_label) = (Vec::new(), 0);
            let mut input = Unstructured::new(&bytes);
            while !input.is_empty() {
                let fuzz = FuzzOp::arbitrary(&mut input).unwrap();
                let op = resolve(fuzz, &run, &mut next_label)
                    .unwrap_or_else(|| panic!("{name}: an op names nothing"));
                step(&mut run, &mut ops, op);
            }
            assert_eq!(ops.len(), 5, "{name}");
            let (claim, job_of) = match ops.last().unwrap() {
                Op::Finish { claim, job_of, .. }
                | Op::Fail { claim, job_of, .. }
                | Op::Renew { claim, job_of, .. }
                | Op::Release { claim, job_of, .. } => (*claim, *job_of),
                other => panic!("{name}: the last op is {other:?}"),
            };
            let other = job_of.unwrap_or_else(|| panic!("{name}: not crossed"));
            let (own, theirs) = (run.model.claims[&claim].unwrap(), run.model.claims[&other].unwrap());
            assert_ne!(own, theirs, "{name}");
            assert_eq!(own < theirs, name.ends_with("_up"), "{name}: job {own} presented on job {theirs}");
        }
    }
}
