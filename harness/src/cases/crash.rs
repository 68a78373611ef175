//! crash: the subject's workers are SIGKILLed at seeded random moments —
//! each with every process it started, its commands (which sit in groups
//! of their own) included — while the other workers keep going, producers
//! keep adding and new workers start with a 2 s lease. Then the queue
//! drains. Every job that was added finishes, or is dead where its script
//! says so; none is lost or left running; every run after a job's first is
//! excused (its worker or command was killed, its lease lapsed, or it
//! failed); attempts only rise; and a read-only connection finds the file
//! intact (`PRAGMA integrity_check` and FORMAT.md §7) after every kill and
//! at the end (§6.3).
//!
//! A reaped or failed job is due again only after the subject's backoff,
//! which each program picks for itself (FORMAT.md §5.6), so a case kills
//! for a bounded period (about 300 ms a kill) and, while it drains, makes
//! every job that waits out a backoff due at once. The kills
//! (`--crash-kills`, 200 by default) are shared out among four cases that
//! differ in the workers' concurrency, and run side by side within `--jobs`.
//! `--processes N` runs N workers at a time and N producers (the subject
//! and the reference in turn) beside the three killed mid-add.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::Range;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use rand::Rng;
use rusqlite::OptionalExtension;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::check::{self, Excuse, Finding};
use crate::history::{Added, Execution, History, UnknownAdd, WorkerEventKind};
use crate::shown::text;
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::observe::file::{end_backoffs, read};
use crate::subjects::observe::strace::printed_id;
use crate::subjects::probe::{self, Action};
use crate::subjects::worker::{start_worker, WorkerProcess};
use crate::subjects::Subject;
use crate::subjects::{Failure, LOCKED};

use super::common;

pub fn cases() -> Vec<Case> {
    let case = |id, summary, run| Case {
        id,
        rule: "6.3",
        summary,
        needs: Needs::default(),
        level: Level::Must,
        run,
    };
    vec![
        case(
            "crash/kill-workers-1",
            "workers (--concurrency 1) SIGKILLed with their commands, and producers mid-add, while producers add: nothing lost, stuck or half-written, every rerun excused, the file intact",
            kill_workers_1,
        ),
        case(
            "crash/kill-workers-2",
            "workers (--concurrency 2) SIGKILLed with their commands, and producers mid-add, while producers add: nothing lost, stuck or half-written, every rerun excused, the file intact",
            kill_workers_2,
        ),
        case(
            "crash/kill-workers-3",
            "workers (--concurrency 3 --keep-done) SIGKILLed with their commands, and producers mid-add, while producers add: nothing lost, stuck or half-written, every rerun excused, the file intact",
            kill_workers_3,
        ),
        case(
            "crash/kill-workers-4",
            "workers (--concurrency 4) SIGKILLed with their commands, and producers mid-add, while producers add: nothing lost, stuck or half-written, every rerun excused, the file intact",
            kill_workers_4,
        ),
    ]
}

/// How many cases share the kills.
const CASES: usize = 4;

fn kill_workers_1(ctx: &mut Ctx) -> CaseResult {
    kill_workers(ctx, "1", false)
}

fn kill_workers_2(ctx: &mut Ctx) -> CaseResult {
    kill_workers(ctx, "2", false)
}

fn kill_workers_3(ctx: &mut Ctx) -> CaseResult {
    kill_workers(ctx, "3", true)
}

fn kill_workers_4(ctx: &mut Ctx) -> CaseResult {
    kill_workers(ctx, "4", false)
}

/// Workers running at any time.
const WORKERS: usize = 4;
const LEASE: &str = "2s";
/// Jobs in the file before the first worker starts.
const INITIAL_JOBS: usize = 40;
/// The pause before each kill.
const KILL_GAP_MS: Range<u64> = 60..400;
/// The pause before each add of a producer.
const ADD_GAP_MS: Range<u64> = 100..400;
/// Producers killed mid-add: the subject, the reference, add_job.py.
const CUT_PRODUCERS: usize = 3;
/// When a producer is killed, as a share of one whole add of it: most of
/// an add is starting the process, and its commit and id come at its end,
/// so the kills lean late.
const KILL_SHARE: Range<f64> = 0.4..1.2;
/// A running job whose lease ran out this long ago, while idle workers
/// claim every 20 ms (and each claim reaps, FORMAT.md §5.4), is stuck.
const STUCK_AFTER_MS: i64 = 8_000;
/// What the drain needs beyond 1.1 times the kill period: the last leases,
/// the last runs, a loaded machine. (The drain ends each backoff at once,
/// whatever the subject's backoff is.)
const DRAIN_MARGIN: Duration = Duration::from_secs(30);

/// Every random choice of a case, drawn from its seed before anything runs.
struct KillPlan {
    initial: Vec<String>,
    /// Per producer: (pause before the add, payload).
    producers: Vec<Vec<(u64, String)>>,
    /// (pause before the kill, which worker).
    kills: Vec<(u64, usize)>,
    /// Per producer that is killed mid-add: the payload of one add timed
    /// whole, the measure of where "mid-add" is.
    timing: Vec<String>,
    /// (pause before the add, which producer, when to kill it as a share
    /// of its timed add, payload).
    cut_adds: Vec<(u64, usize, f64, String)>,
}

impl KillPlan {
    /// Every payload the case adds: a row with another is partly written.
    fn payloads(&self) -> HashSet<String> {
        let producers = self.producers.iter().flatten().map(|(_, p)| p);
        let cut = self.cut_adds.iter().map(|(_, _, _, p)| p);
        self.initial.iter().chain(producers).chain(&self.timing).chain(cut).cloned().collect()
    }
}

/// A job's script: mostly a short run; some fail their first attempt, some
/// fail for good (exit 65: dead).
fn script(rng: &mut impl Rng, label: &str) -> String {
    match rng.gen_range(0..20) {
        0 | 1 => format!("{label} fail-attempts:1 sleep:{}", rng.gen_range(20..300)),
        2 => format!("{label} sleep:{} exit:65", rng.gen_range(0..200)),
        _ => format!("{label} sleep:{}", rng.gen_range(20..800)),
    }
}

fn dead_by_script(payload: &str) -> bool {
    probe::script(payload).contains(&Action::Exit(ukue::cli::work::EXIT_PERMANENT))
}

impl KillPlan {
    fn draw(rng: &mut impl Rng, kills: usize, workers: usize, producers: &[&str]) -> KillPlan {
        let initial = (0..INITIAL_JOBS).map(|i| script(rng, &format!("initial-{i}"))).collect();
        // Enough adds for the whole kill period; a producer stops when it ends.
        let adds = (kills * KILL_GAP_MS.end as usize).div_ceil(ADD_GAP_MS.start as usize);
        let producers = producers
            .iter()
            .enumerate()
            .map(|(p, by)| {
                // The default producers' payloads as they were; the extra ones' tell them apart.
                let by = if p < PRODUCERS.len() { by.to_string() } else { format!("{by}{p}") };
                (0..adds).map(|i| (rng.gen_range(ADD_GAP_MS), script(rng, &format!("{by}-{i}")))).collect()
            })
            .collect();
        let kills = (0..kills).map(|_| (rng.gen_range(KILL_GAP_MS), rng.gen_range(0..workers))).collect();
        let timing = (0..CUT_PRODUCERS).map(|i| script(rng, &format!("timing-{i}"))).collect();
        let cut_adds = (0..adds)
            .map(|i| {
                let (pause, who) = (rng.gen_range(ADD_GAP_MS), rng.gen_range(0..CUT_PRODUCERS));
                (pause, who, rng.gen_range(KILL_SHARE), script(rng, &format!("cut-{i}")))
            })
            .collect();
        KillPlan { initial, producers, kills, timing, cut_adds }
    }
}

/// A flag that ends the producers' (and the kills') pauses at once.
#[derive(Default)]
struct Stop {
    stopped: Mutex<bool>,
    changed: Condvar,
}

impl Stop {
    fn set(&self) {
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.changed.notify_all();
    }

    /// Pauses for `pause`, or less when stopped meanwhile; true when stopped.
    fn pause(&self, pause: Duration) -> bool {
        let guard = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
        let (guard, _) = self
            .changed
            .wait_timeout_while(guard, pause, |stopped| !*stopped)
            .unwrap_or_else(|p| p.into_inner());
        *guard
    }
}

fn kill_workers(ctx: &mut Ctx, concurrency: &str, keep_done: bool) -> CaseResult {
    let (mut notes, mut figures) = Default::default();
    let outcome = kill_and_drain(ctx, concurrency, keep_done, &mut notes, &mut figures);
    let jobs = figures.get("jobs").copied().unwrap_or_default() as usize;
    ctx.notes = notes;
    ctx.figures = figures;
    let (workers, producers) = processes(ctx);
    common::note_contention(ctx, workers, producers.len(), jobs);
    outcome
}

/// The workers running at a time, and who each producer is.
fn processes(ctx: &Ctx) -> (usize, Vec<&'static str>) {
    let producers = ctx.processes.unwrap_or(PRODUCERS.len());
    (ctx.processes.unwrap_or(WORKERS), (0..producers).map(|p| PRODUCERS[p % PRODUCERS.len()]).collect())
}

/// The producers that add while the workers are killed, in turn.
const PRODUCERS: [&str; 2] = ["subject", "reference"];

fn kill_and_drain(
    ctx: &mut Ctx,
    concurrency: &str,
    keep_done: bool,
    notes: &mut Vec<String>,
    figures_out: &mut BTreeMap<String, u64>,
) -> CaseResult {
    let file = ctx.tracked_file("jobs.ukue");
    let subject = ctx.subject().clone();
    let reference = ctx.reference().clone();
    ctx.ok(&subject, &["init", path_str(&file)])?;
    let kills = ctx.crash_kills.div_ceil(CASES);
    let (worker_count, producer_names) = processes(ctx);
    let plan = KillPlan::draw(&mut ctx.rng, kills, worker_count, &producer_names);
    // The backlog comes from the reference, whose adds start in
    // milliseconds: a slow subject on a loaded machine would otherwise
    // spend the case's time on it, and its workers would idle through the
    // kills. The subject's own adds come while the workers run.
    let mut added = Vec::new();
    for payload in &plan.initial {
        let job = ctx.add(&reference, &file, "q", payload, &[])?;
        added.push(Added { job, payload: payload.clone(), by: reference.name.clone() });
    }
    let mut options = vec!["--concurrency", concurrency, "--lease", LEASE, "--poll", "20ms", "--quiet"];
    if keep_done {
        options.push("--keep-done");
    }
    let known = plan.payloads();
    let cutters = cut_producers(ctx, &file, &plan.timing, &mut added)?;
    let ctx: &Ctx = ctx;
    let mut workers = (0..worker_count)
        .map(|_| start_worker(ctx, &subject, &file, "q", &options))
        .collect::<Result<Vec<_>, _>>()?;

    // Kill while the producers add.
    let stop = Stop::default();
    let kill_started = Instant::now();
    let (killing, produced, cutting) = std::thread::scope(|scope| {
        let cutting = scope.spawn(|| cut_loop(ctx, &cutters, &file, &plan.cut_adds, &stop, &known));
        let producers: Vec<_> = producer_names
            .iter()
            .map(|name| if *name == "subject" { &subject } else { &reference })
            .zip(&plan.producers)
            .map(|(who, adds)| {
                let (stop, file) = (&stop, file.as_path());
                scope.spawn(move || produce(ctx, who, file, adds, stop))
            })
            .collect();
        let killing = kill_loop(ctx, &subject, &file, &options, &plan.kills, &mut workers, &stop);
        stop.set();
        let produced: Vec<Result<Vec<Added>, Failure>> = producers
            .into_iter()
            .map(|p| p.join().unwrap_or_else(|_| Err(Failure::error("a producer", "panicked"))))
            .collect();
        let cutting = cutting.join().unwrap_or_else(|_| Err(Failure::error("a producer", "panicked")));
        (killing, produced, cutting)
    });
    let kill_period = kill_started.elapsed();
    for batch in produced {
        added.extend(batch?);
    }
    let mut killing = killing?;
    let cutting = cutting?;
    added.extend(cutting.acknowledged.iter().cloned());
    if !cutting.findings.is_empty() {
        // Seen in the file at once: no drain can mend it.
        for worker in workers {
            let _ = worker.stop(Duration::from_secs(30));
        }
        return Err(Failure::fail(
            "every add killed mid-way to have committed whole or not at all, the file intact",
            clipped(&cutting.findings),
        )
        .blaming(check::blame(&cutting.findings)));
    }

    // Drain: the workers left run every job, each killed one after its backoff.
    let drain_started = Instant::now();
    let limit = kill_period.mul_f64(1.1) + DRAIN_MARGIN;
    let drained = drain(ctx, &file, &mut workers, limit);
    let drain_time = drain_started.elapsed();
    let mut stopped = Ok(());
    for worker in workers {
        stopped = stopped.and(worker.stop(Duration::from_secs(30)));
    }

    let mut history = common::history(ctx, &file, added)?;
    history.killed_workers.extend(killing.pids.iter().copied());
    history.unknown = cutting.unknown.clone();
    let (committed, mut findings) = check::resolve_unknown(&history);
    let committed_unknown = committed.len();
    history.added.extend(committed);
    ctx.keep_history(&history);
    let reruns = check::reruns(&history);
    findings.extend(std::mem::take(&mut killing.integrity));
    findings.extend(check::at_least_once(&history));
    findings.extend(check::finish_cut_off(&history, &killing.cut_off));
    findings.extend(check::attempts_rise(&history));
    findings.extend(check::payloads(&history));
    findings.extend(script_findings(&history, keep_done));
    findings.extend(check::file::invariants(&file));
    findings.extend(check::file::partly_written(&file, &known));
    *notes = figures(&history, &killing, &reruns, kill_period, drain_time);
    notes.push(format!(
        "{} producers killed mid-add ({} after printing the id, {} cut off before it, of which {} had committed); \
         {} adds ended before their kill",
        cutting.killed,
        cutting.killed - cutting.unknown.len(),
        cutting.unknown.len(),
        committed_unknown,
        cutting.ended_first
    ));
    *figures_out = [
        ("workers_killed", killing.killed),
        ("producers_killed", cutting.killed),
        ("producer_kills_unknown", cutting.unknown.len()),
        ("unknown_adds_committed", committed_unknown),
        ("jobs", history.added.len()),
        ("executions", history.executions.len()),
        ("reruns", reruns.len()),
    ]
    .into_iter()
    .map(|(name, n)| (name.to_string(), n as u64))
    .collect();
    if let Err(failure) = drained {
        let seen = format!("{}\n{}", failure.seen, clipped(&findings));
        return Err(Failure { seen, ..failure.blaming(check::blame(&findings)) });
    }
    stopped?;
    if !findings.is_empty() {
        return Err(Failure::fail(
            "every job added to finish (or be dead where its script exits 65), none lost or left running, \
             every rerun excused by a killed worker or command, a lapsed lease or a failure, \
             attempts rising, the file intact after every kill and at the end",
            clipped(&findings),
        )
        .blaming(check::blame(&findings)));
    }
    // A run of kills that never hit a running command showed nothing.
    let interrupted = history
        .executions
        .iter()
        .filter(|e| e.end_ms.is_none() && history.killed_workers.contains(&e.worker_pid))
        .count();
    if killing.killed >= 10 && interrupted == 0 {
        return Err(Failure::error(
            "the kills to interrupt running commands",
            format!("none of {} kills did", killing.killed),
        ));
    }
    Ok(())
}

/// What the kills did.
#[derive(Default)]
struct Killing {
    /// Workers killed.
    killed: usize,
    /// Every process killed: workers, their commands, whatever they started.
    pids: Vec<u32>,
    /// The (job, attempt) of runs that ended well whose finish the kill cut off.
    cut_off: BTreeSet<(i64, i64)>,
    /// Findings of the integrity samples taken after each kill.
    integrity: Vec<Finding>,
    /// Integrity samples taken.
    samples: usize,
}

fn kill_loop(
    ctx: &Ctx,
    who: &Subject,
    file: &Path,
    options: &[&str],
    plan: &[(u64, usize)],
    workers: &mut Vec<WorkerProcess>,
    stop: &Stop,
) -> Result<Killing, Failure> {
    let mut killing = Killing::default();
    for &(pause, victim) in plan {
        // Leave the drain its time.
        if stop.pause(Duration::from_millis(pause)) || ctx.remaining() < DRAIN_MARGIN * 2 {
            break;
        }
        exited_by_itself(workers)?;
        let victim = busy_victim(ctx, workers, victim % workers.len(), stop)?;
        let worker = workers.remove(victim);
        let pids = kill_worker(worker)?;
        killing.cut_off.extend(cut_off_finishes(ctx, file, &pids)?);
        killing.pids.extend(pids);
        killing.killed += 1;
        workers.insert(victim % (workers.len() + 1), start_worker(ctx, who, file, "q", options)?);
        // Sampled while the other workers run and right after a kill.
        killing.samples += 1;
        let found = check::file::invariants(file);
        if !found.is_empty() {
            killing.integrity.extend(
                found.into_iter().map(|f| Finding {
                    message: format!("after kill {}: {}", killing.killed, f.message),
                    ..f
                }),
            );
            break;
        }
    }
    Ok(killing)
}

/// How long a kill waits for a worker that runs a command.
const BUSY_WAIT: Duration = Duration::from_secs(2);

/// The worker to kill: the seeded one if it runs a command, else the next
/// one that does, waiting up to [`BUSY_WAIT`] for one to (a kill of a
/// worker that has not claimed yet shows little, and a slow subject on a
/// loaded machine starts its workers slowly); else the seeded one.
fn busy_victim(ctx: &Ctx, workers: &[WorkerProcess], seeded: usize, stop: &Stop) -> Result<usize, Failure> {
    let deadline = Instant::now() + BUSY_WAIT;
    let pids: Vec<i32> = workers.iter().map(|w| w.process.pid()).collect();
    loop {
        // A command's worker is its nearest ancestor among the workers (a
        // worker may start it through a shell).
        let busy: HashSet<i32> = common::executions(ctx)?
            .iter()
            .filter(|e| e.end_ms.is_none())
            .filter_map(|e| ancestor_among(e.pid as i32, &pids))
            .collect();
        let n = workers.len();
        let found = (0..n).map(|i| (seeded + i) % n).find(|&i| busy.contains(&pids[i]));
        if let Some(i) = found {
            return Ok(i);
        }
        if Instant::now() >= deadline || stop.pause(Duration::from_millis(20)) {
            return Ok(seeded);
        }
    }
}

/// The (job, attempt) of the runs of the killed processes that ended well
/// but whose finish never committed: once the worker is dead, the job is
/// still in the file, and not done. (Nobody else can have finished it:
/// another worker takes it only after its lease and the backoff.)
fn cut_off_finishes(ctx: &Ctx, file: &Path, pids: &[u32]) -> Result<Vec<(i64, i64)>, Failure> {
    let pids: HashSet<u32> = pids.iter().copied().collect();
    let conn = read(file)?;
    let mut found = Vec::new();
    for run in common::executions(ctx)? {
        if pids.contains(&run.worker_pid) && run.end_ms.is_some() && run.exit == Some(0) {
            let state: Option<String> = conn
                .query_row("SELECT state FROM ukue_jobs WHERE id = ?1", [run.job], |r| r.get(0))
                .optional()?;
            if state.is_some_and(|state| state != "done") {
                found.push((run.job, run.attempt));
            }
        }
    }
    Ok(found)
}

/// A producer that is killed mid-add, and how long one add of it takes.
struct Cutter {
    who: Subject,
    /// Whether its command line needs the word `add` (add_job.py's does not).
    add_word: bool,
    add_time: Duration,
}

/// The producers to kill mid-add (add_job.py when there is Python), each
/// timed on one whole add, which is acknowledged as any other.
fn cut_producers(
    ctx: &Ctx,
    file: &Path,
    timing: &[String],
    added: &mut Vec<Added>,
) -> Result<Vec<Cutter>, Failure> {
    let mut cutters = vec![(ctx.subject().clone(), true), (ctx.reference().clone(), true)];
    cutters.extend(ctx.subjects.python.clone().map(|python| (python, false)));
    cutters
        .into_iter()
        .zip(timing)
        .map(|((who, add_word), payload)| {
            let started = Instant::now();
            let job = if add_word {
                ctx.add(&who, file, "q", payload, &[])?
            } else {
                ctx.python_add(file, "q", payload, &[])?
            };
            added.push(Added { job, payload: payload.clone(), by: who.name.clone() });
            Ok(Cutter { who, add_word, add_time: started.elapsed() })
        })
        .collect()
}

/// What the kills of producers did.
#[derive(Default)]
struct Cutting {
    /// Adds killed while they ran.
    killed: usize,
    /// Adds that ended before their kill came.
    ended_first: usize,
    /// Adds whose id was printed (before their kill, or as they ended).
    acknowledged: Vec<Added>,
    /// Adds killed before they printed an id.
    unknown: Vec<UnknownAdd>,
    /// What the file showed right after a kill.
    findings: Vec<Finding>,
}

/// Starts the planned adds, each killed (SIGKILL, its whole group) at its
/// seeded share of its producer's timed add, until stopped; after each
/// kill the file must be intact and hold no partly written row.
fn cut_loop(
    ctx: &Ctx,
    cutters: &[Cutter],
    file: &Path,
    plan: &[(u64, usize, f64, String)],
    stop: &Stop,
    known: &HashSet<String>,
) -> Result<Cutting, Failure> {
    let mut cutting = Cutting::default();
    for (pause, who, share, payload) in plan {
        if stop.pause(Duration::from_millis(*pause)) {
            break;
        }
        let cutter = &cutters[who % cutters.len()];
        let mut args: Vec<&str> = cutter.who.args.iter().map(String::as_str).collect();
        if cutter.add_word {
            args.push("add");
        }
        args.extend([path_str(file), "q", payload.as_str()]);
        let mut add = ctx.spawn(&cutter.who.program, &args, Stdio::piped(), Stdio::piped())?;
        // Not a wait for anything: the seeded moment of the kill.
        std::thread::sleep(cutter.add_time.mul_f64(*share));
        let running = add.child.try_wait()?.is_none();
        add.signal_group(Signal::SIGKILL);
        let status = add.child.wait()?;
        let (mut out, mut err) = (String::new(), String::new());
        if let Some(mut stdout) = add.child.stdout.take() {
            let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
        }
        if let Some(mut stderr) = add.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
        }
        // An id is acknowledged once its line is whole.
        let id = out.ends_with('\n').then(|| printed_id(&out)).flatten();
        match id {
            Some(job) => cutting.acknowledged.push(Added {
                job,
                payload: payload.clone(),
                by: cutter.who.name.clone(),
            }),
            None if running => {
                cutting.unknown.push(UnknownAdd { payload: payload.clone(), by: cutter.who.name.clone() })
            }
            // It gave up on the busy file before its kill came (FORMAT.md
            // §4.1 asks for a wait, a `should`): it added nothing, and a
            // row it left would run with a payload no add had.
            None if err.contains(LOCKED) => {
                ctx.count_busy_refusal();
                cutting.ended_first += 1;
                continue;
            }
            None => {
                stop.set();
                return Err(Failure::fail(
                    format!("`{} add` (not killed) to print the new id", cutter.who.name),
                    format!("it ended ({status}) and printed {}", text(&clip(&out))),
                ));
            }
        }
        if !running {
            cutting.ended_first += 1;
            continue;
        }
        cutting.killed += 1;
        let mut found = check::file::invariants(file);
        found.extend(check::file::partly_written(file, known));
        if !found.is_empty() {
            let n = cutting.killed;
            cutting.findings.extend(found.into_iter().map(|f| Finding {
                message: format!("after producer kill {n} ({}): {}", cutter.who.name, f.message),
                ..f
            }));
            stop.set();
            break;
        }
    }
    Ok(cutting)
}

/// Adds the planned jobs through `who`, one after each pause, until stopped.
fn produce(
    ctx: &Ctx,
    who: &Subject,
    file: &Path,
    plan: &[(u64, String)],
    stop: &Stop,
) -> Result<Vec<Added>, Failure> {
    let mut added = Vec::new();
    for (pause, payload) in plan {
        if stop.pause(Duration::from_millis(*pause)) {
            break;
        }
        match ctx.past_busy(|| ctx.add(who, file, "q", payload, &[])) {
            Ok(job) => added.push(Added { job, payload: payload.clone(), by: who.name.clone() }),
            Err(e) => {
                stop.set();
                return Err(e);
            }
        }
    }
    Ok(added)
}

/// A worker that ended although nobody killed it fails the case.
fn exited_by_itself(workers: &mut [WorkerProcess]) -> Result<(), Failure> {
    for worker in workers {
        if let Some(status) = worker.process.child.try_wait()? {
            return Err(Failure::fail(
                "the workers to keep running until killed or stopped",
                format!("one exited by itself ({status}): {}", clip(&worker.stderr())),
            ));
        }
    }
    Ok(())
}

/// Stops the worker (so that it starts nothing more), SIGKILLs every
/// process it started — each one's whole group, since a command leads a
/// group of its own — and then the worker's own group. Returns every pid
/// killed: a command's `worker_pid` is its parent, whichever it is.
fn kill_worker(mut worker: WorkerProcess) -> Result<Vec<u32>, Failure> {
    let pid = worker.process.pid();
    exited_by_itself(std::slice::from_mut(&mut worker))?;
    worker.process.signal(Signal::SIGSTOP);
    wait_stopped(pid);
    let descendants = descendants(pid);
    let own_group = nix::unistd::getpgrp().as_raw();
    for &child in &descendants {
        if let Some((_, _, group)) = stat(child) {
            if group > 1 && group != own_group && group != pid {
                let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
            }
        }
        let _ = kill(Pid::from_raw(child), Signal::SIGKILL);
    }
    worker.process.signal_group(Signal::SIGKILL);
    worker.note(WorkerEventKind::Killed);
    worker.process.child.wait()?;
    Ok(std::iter::once(pid).chain(descendants).map(|p| p as u32).collect())
}

/// `(state, ppid, pgrp)` of a process or thread, from /proc.
fn stat_at(path: &Path) -> Option<(char, i32, i32)> {
    let text = std::fs::read_to_string(path).ok()?;
    // The command name may hold spaces and parentheses: the fields that
    // follow it start after its last `)`.
    let rest = text.get(text.rfind(')')? + 1..)?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, ppid, group))
}

fn stat(pid: i32) -> Option<(char, i32, i32)> {
    stat_at(Path::new(&format!("/proc/{pid}/stat")))
}

/// Waits (up to 2 s) until every thread of `pid` has stopped, or it is gone.
fn wait_stopped(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(2);
    let all_stopped = || {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return true };
        tasks.flatten().all(|task| {
            stat_at(&task.path().join("stat"))
                .is_none_or(|(state, _, _)| matches!(state, 'T' | 't' | 'Z' | 'X'))
        })
    };
    while !all_stopped() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The nearest ancestor of `pid` among `among`, if it is alive.
fn ancestor_among(pid: i32, among: &[i32]) -> Option<i32> {
    let mut pid = pid;
    for _ in 0..32 {
        let (_, ppid, _) = stat(pid)?;
        if among.contains(&ppid) {
            return Some(ppid);
        }
        if ppid <= 1 {
            return None;
        }
        pid = ppid;
    }
    None
}

/// Every live descendant of `root`.
fn descendants(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
            if let Some((_, ppid, _)) = stat(pid) {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut found = Vec::new();
    let mut seen = HashSet::from([root]);
    let mut next = vec![root];
    while let Some(pid) = next.pop() {
        for &child in children.get(&pid).map(Vec::as_slice).unwrap_or_default() {
            if seen.insert(child) {
                found.push(child);
                next.push(child);
            }
        }
    }
    found
}

/// Waits until no job is ready or running. A running job whose lease ran
/// out long ago, while the workers claim all the time, fails at once.
fn drain(ctx: &Ctx, file: &Path, workers: &mut [WorkerProcess], limit: Duration) -> Result<(), Failure> {
    let count = workers.len();
    let what = "every job to finish or end dead after the kills (the case ends each backoff at once)";
    ctx.wait_for(what, limit, || {
        exited_by_itself(workers)?;
        end_backoffs(file, None)?;
        let conn = read(file)?;
        let open: i64 = conn.query_row(
            "SELECT count(*) FROM ukue_jobs WHERE state IN ('ready', 'running')",
            [],
            |r| r.get(0),
        )?;
        let stuck: Option<(i64, i64)> = conn
            .query_row(
                "SELECT id, lease_until FROM ukue_jobs WHERE state = 'running' AND lease_until <= ?1
                 ORDER BY lease_until LIMIT 1",
                [probe::now_ms() - STUCK_AFTER_MS],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map(Some)
            .or_else(|e| if e == rusqlite::Error::QueryReturnedNoRows { Ok(None) } else { Err(e) })?;
        if let Some((job, lease_until)) = stuck {
            return Err(Failure::fail(
                "each expired lease reaped by the next claim (FORMAT.md §5.4), so that the job runs again",
                format!(
                    "job {job} is still running {:.1} s after its lease ran out, while {count} workers claim every 20 ms",
                    (probe::now_ms() - lease_until) as f64 / 1000.0
                ),
            ));
        }
        Ok(open == 0)
    })
}

/// Jobs whose end in the file is not what their script makes it: exit 65
/// must end dead; every other job is finished (gone, or done when kept).
fn script_findings(history: &History, keep_done: bool) -> Vec<Finding> {
    let mut findings = Vec::new();
    for added in &history.added {
        let end = history.final_jobs.get(&added.job);
        let state = end.map_or("gone", |j| j.state.as_str());
        let fine = if dead_by_script(&added.payload) {
            state == "dead"
        } else {
            state == "gone" || (keep_done && state == "done")
        };
        if !fine {
            let want = if dead_by_script(&added.payload) {
                "dead (its script exits 65)"
            } else if keep_done {
                "done"
            } else {
                "finished and deleted"
            };
            let attempts = end.map_or(String::new(), |j| format!(" after {} attempts", j.attempts));
            findings.push(Finding {
                check: "end state",
                job: Some(added.job),
                message: format!("is {state}{attempts}, expected {want}"),
                ..Default::default()
            });
        }
    }
    findings
}

/// The first 20 findings, then how many more.
fn clipped(findings: &[Finding]) -> String {
    let mut text = check::describe(&findings[..findings.len().min(20)]);
    if findings.len() > 20 {
        text.push_str(&format!("\n… and {} more", findings.len() - 20));
    }
    text
}

/// The case's figures, for the report.
fn figures(
    history: &History,
    killing: &Killing,
    reruns: &[check::Rerun],
    kill_period: Duration,
    drain_time: Duration,
) -> Vec<String> {
    let killed = |e: &&Execution| history.killed_workers.contains(&e.worker_pid);
    let mid_run = history.executions.iter().filter(killed).filter(|e| e.end_ms.is_none()).count();
    let mut by_excuse: BTreeMap<String, usize> = BTreeMap::new();
    for rerun in reruns {
        let name = match rerun.excuse {
            Some(Excuse::WorkerKilled) => "finish cut off by the kill",
            Some(Excuse::Killed) => "command killed",
            Some(Excuse::LeaseLapsed) => "lease lapsed",
            Some(Excuse::LeaseLapsedAfterEnd) => "lease lapsed before the finish",
            Some(Excuse::Failed) => "failed attempt",
            None => "UNEXCUSED",
        };
        *by_excuse.entry(name.to_string()).or_default() += 1;
    }
    let excuses: Vec<String> = by_excuse.iter().map(|(name, n)| format!("{n} {name}")).collect();
    vec![
        format!(
            "{} workers killed in {:.1} s: {} commands killed mid-run, {} finishes cut off after the command \
             ended well; {} integrity samples",
            killing.killed,
            kill_period.as_secs_f64(),
            mid_run,
            killing.cut_off.len(),
            killing.samples
        ),
        format!(
            "{} jobs, {} runs; {} reruns ({}); drained in {:.1} s",
            history.added.len(),
            history.executions.len(),
            reruns.len(),
            if excuses.is_empty() { "none".to_string() } else { excuses.join(", ") },
            drain_time.as_secs_f64()
        ),
    ]
}
