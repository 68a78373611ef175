//! Runs cases: each in a fresh directory, in parallel up to `jobs`, each
//! bounded by a timeout, every process it started killed at its end. The
//! runner only produces [`CaseReport`]s; reporters decide what to show.
//!
//! [`CaseReport`]: crate::report::CaseReport

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cases::{common, Case, Level};
use crate::check;
use crate::history::History;
use crate::report::timeline::Timeline;
use crate::report::{CaseReport, Reporter, RunInfo, Status};
use crate::spec as rules;
use crate::subjects::ctx::Ctx;
use crate::subjects::process;
use crate::subjects::worker::PROBE_LOG;
use crate::subjects::{Failure, FailureKind, Subjects};

pub mod partition;
pub mod soak;

#[derive(Debug, Clone)]
pub struct Config {
    pub subjects: Arc<Subjects>,
    pub seed: u64,
    pub jobs: usize,
    pub case_timeout: Duration,
    /// Keep the directories of cases that did not pass.
    pub keep: bool,
    /// Case id → why it is expected to fail.
    pub expected_failures: BTreeMap<String, String>,
    /// Where case directories go.
    pub work_root: PathBuf,
    /// The command line that replays a case, without `--cases`.
    pub replay: String,
    /// The crash family's kills, over all its cases (`--crash-kills`).
    pub crash_kills: usize,
    /// How long a generated case generates (`--generate-for`).
    pub generate_for: Duration,
    /// The jobs of every scale case's large file (`--scale-rows`).
    pub scale_rows: Option<u64>,
    /// The worker and producer processes of the concurrency, interop and
    /// crash cases (`--processes`).
    pub processes: Option<usize>,
    /// `--strict`: a `should` case that does not pass fails the run.
    pub strict: bool,
    /// `--fail-fast`: start no case once one has failed.
    pub fail_fast: bool,
    /// The soak pass this run is (None outside a soak).
    pub iteration: Option<u32>,
    /// `-v`: a timeline for every case that ran workers, passing or not.
    pub all_timelines: bool,
    /// What the run is, for the reports.
    pub info: RunInfo,
}

/// One case's seed: the run's seed mixed with the case id, so that a case
/// replayed alone gets the same one.
pub fn case_seed(run_seed: u64, id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ run_seed;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // splitmix64 finaliser, so nearby seeds differ everywhere.
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Runs `cases` (and reports `skipped` as such); returns every report in
/// case order.
pub fn run(
    config: &Config,
    cases: &[Case],
    skipped: &[(Case, String)],
    reporter: &Mutex<&mut dyn Reporter>,
) -> Vec<CaseReport> {
    let mut reports: Vec<CaseReport> = skipped
        .iter()
        .map(|(case, reason)| CaseReport {
            status: Status::Skipped,
            reason: Some(reason.clone()),
            ..blank(config, case)
        })
        .collect();
    for report in &reports {
        lock(reporter).case_done(report);
    }
    let order = start_order(cases);
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let done = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..config.jobs.max(1) {
            scope.spawn(|| loop {
                if config.fail_fast && failed.load(Ordering::SeqCst) {
                    return;
                }
                let Some(&i) = order.get(next.fetch_add(1, Ordering::SeqCst)) else { return };
                let case = &cases[i];
                let report = run_one(config, case);
                if process::interrupted() {
                    // The interrupt killed this case's processes, so its
                    // verdict would be false; the interrupt's thread ends
                    // the run (exit 130) as soon as its sweep is done.
                    loop {
                        std::thread::park();
                    }
                }
                if report.status.is_bad() {
                    failed.store(true, Ordering::SeqCst);
                }
                lock(reporter).case_done(&report);
                done.lock().unwrap_or_else(|p| p.into_inner()).push((i, report));
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    done.sort_by_key(|(i, _)| *i);
    reports.extend(done.into_iter().map(|(_, r)| r));
    reports
}

/// Cases known to take seconds, by id prefix, longest first: the crash
/// cases take some 20 s each, these others 1 to 6 s; most cases take
/// less than half a second.
pub(crate) const SLOW_FIRST: &[&[&str]] = &[
    &["crash/"],
    &[
        "concurrency/",
        "leases/",
        "ioerror/work-",
        "interop/python-",
        "http/server-killed",
        "http/mixed-delivery",
        "powerloss/",
        "ioerror/",
        "differential/",
        "scale/",
    ],
];

/// The order in which the cases start (indices into `cases`): the slow
/// ones first, so that none of them starts last and runs alone while the
/// other slots have nothing left to run (longest processing time first);
/// the rest in catalogue order. Reports keep the catalogue order.
fn start_order(cases: &[Case]) -> Vec<usize> {
    let rank = |id: &str| {
        SLOW_FIRST.iter().position(|tier| tier.iter().any(|p| id.starts_with(p))).unwrap_or(SLOW_FIRST.len())
    };
    let mut order: Vec<usize> = (0..cases.len()).collect();
    order.sort_by_key(|&i| rank(cases[i].id));
    order
}

fn lock<'a, 'b>(
    reporter: &'a Mutex<&'b mut dyn Reporter>,
) -> std::sync::MutexGuard<'a, &'b mut dyn Reporter> {
    reporter.lock().unwrap_or_else(|p| p.into_inner())
}

fn blank(config: &Config, case: &Case) -> CaseReport {
    CaseReport {
        id: case.id.to_string(),
        rule: rules::label(case.rule),
        summary: case.summary.to_string(),
        level: case.level,
        status: Status::Pass,
        duration_ms: 0,
        expected: None,
        seen: None,
        reason: None,
        seed: config.seed,
        work_dir: None,
        replay: format!("{} --cases '{}'", config.replay, case.id),
        notes: Vec::new(),
        figures: BTreeMap::new(),
        iteration: config.iteration,
        rules: rules::coverage::rules_of(case),
        rule_text: None,
        timeline: None,
        scale: None,
    }
}

fn run_one(config: &Config, case: &Case) -> CaseReport {
    let started = Instant::now();
    let mut report = blank(config, case);
    let dir = config.work_root.join(case.id.replace('/', "__"));
    let (outcome, history) = match std::fs::create_dir_all(&dir) {
        Ok(()) => run_in(config, case, dir.clone(), &mut report),
        Err(e) => (Err(Failure::error("a work directory", e.to_string())), None),
    };
    report.duration_ms = started.elapsed().as_millis();
    let status = match &outcome {
        Ok(()) => Status::Pass,
        Err(f) => match f.kind {
            FailureKind::Fail => Status::Fail,
            FailureKind::Error => Status::Error,
            FailureKind::Timeout => Status::Timeout,
        },
    };
    let blame = outcome.as_ref().err().map(|f| f.blame.clone()).unwrap_or_default();
    if status != Status::Pass || config.all_timelines {
        report.timeline = history.and_then(|h| Timeline::of(&h, &blame));
    }
    if status != Status::Pass {
        report.rule_text = rules::rule_text(case.rule);
    }
    if let Err(f) = outcome {
        report.expected = Some(f.expected);
        report.seen = Some(f.seen);
    }
    report.status = match (config.expected_failures.get(case.id), status) {
        (Some(reason), Status::Pass) => {
            report.reason = Some(reason.clone());
            report.expected = Some(format!("a failure ({reason}), as --expected-failures says"));
            report.seen = Some("it passed: take it off the list".into());
            Status::UnexpectedPass
        }
        (Some(reason), _) => {
            report.reason = Some(reason.clone());
            Status::ExpectedFailure
        }
        (None, Status::Pass) => Status::Pass,
        (None, _) if case.level == Level::Should && !config.strict => Status::Warn,
        (None, status) => status,
    };
    if config.keep && report.status != Status::Pass {
        report.work_dir = Some(dir);
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    report
}

/// Runs the case in a thread of its own, so that a case stuck past its
/// deadline is reported as a timeout instead of stopping the run. Returns
/// its outcome, and the history its checks read (or what the probe
/// recorded before it failed).
fn run_in(
    config: &Config,
    case: &Case,
    dir: PathBuf,
    report: &mut CaseReport,
) -> (Result<(), Failure>, Option<History>) {
    let timeout =
        config.case_timeout + if case.needs.generated { config.generate_for } else { Duration::ZERO };
    let deadline = Instant::now() + timeout;
    let seed = case_seed(config.seed, case.id);
    // A marker of this run of the case alone: a soak's next pass of the
    // same case must not carry it (its processes would be swept with this
    // one's).
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let marker = format!("{}-{}-{}", std::process::id(), RUNS.fetch_add(1, Ordering::SeqCst), case.id);
    let log = dir.join(PROBE_LOG);
    let mut ctx = Ctx::new(dir, seed, config.subjects.clone(), marker, deadline);
    ctx.crash_kills = config.crash_kills;
    ctx.generate_for = config.generate_for;
    ctx.scale_rows = config.scale_rows;
    ctx.processes = config.processes;
    let (tx, rx) = mpsc::channel();
    let run = case.run;
    std::thread::spawn(move || {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&mut ctx))).unwrap_or_else(
            |panic| {
                Err(Failure::error(
                    "the case to run",
                    format!("the harness panicked: {}", panic_text(&panic)),
                ))
            },
        );
        // Kill what the case started before its files are checked.
        ctx.procs.kill_all();
        ctx.note_busy_refusals();
        let result = result.and_then(|()| check_files(&ctx));
        let history = ctx.take_history().or_else(|| common::history_so_far(&ctx));
        let (notes, figures, scale) =
            (std::mem::take(&mut ctx.notes), std::mem::take(&mut ctx.figures), ctx.scale.take());
        // Gone (and every process it started swept) before the runner
        // hears of it and starts the next case.
        drop(ctx);
        let _ = tx.send((result, notes, figures, scale, history));
    });
    // Waits inside the case end at the deadline; give it a little longer
    // to come back before giving up on it.
    match rx.recv_timeout(timeout + Duration::from_secs(15)) {
        Ok((result, notes, figures, scale, history)) => {
            report.notes = notes;
            report.figures = figures;
            report.scale = scale;
            (result, history)
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            (Err(Failure::error("the case to report", "its thread ended without a result")), None)
        }
        Err(mpsc::RecvTimeoutError::Timeout) => (
            Err(Failure::timeout(
                format!("the case to finish within {} s", timeout.as_secs()),
                "it was still running",
            )),
            // What the probe recorded of the stuck case, for its timeline.
            crate::history::read_log(&log)
                .ok()
                .filter(|runs| !runs.is_empty())
                .map(|executions| History { executions, ..History::default() }),
        ),
    }
}

/// FORMAT.md §7 on every file the case made.
fn check_files(ctx: &Ctx) -> Result<(), Failure> {
    for file in &ctx.tracked {
        if !file.exists() {
            continue;
        }
        let findings = check::file::invariants(file);
        if !findings.is_empty() {
            return Err(Failure::fail(
                format!("{} to keep the invariants of {}", file.display(), rules::label("7")),
                check::describe(&findings),
            ));
        }
    }
    Ok(())
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::Needs;

    fn case(id: &'static str) -> Case {
        Case { id, rule: "6.3", summary: "", needs: Needs::default(), level: Level::Must, run: |_| Ok(()) }
    }

    #[test]
    fn slow_cases_start_first_and_the_rest_keep_their_order() {
        let ids =
            ["format/a", "crash/kill-workers-2", "steps/b", "leases/c", "crash/kill-workers-1", "http/d"];
        let cases: Vec<Case> = ids.iter().map(|id| case(id)).collect();
        let started: Vec<&str> = start_order(&cases).into_iter().map(|i| cases[i].id).collect();
        assert_eq!(
            started,
            ["crash/kill-workers-2", "crash/kill-workers-1", "leases/c", "format/a", "steps/b", "http/d"]
        );
    }

    #[test]
    fn every_case_starts_once() {
        let cases = crate::cases::all();
        let mut order = start_order(&cases);
        order.sort_unstable();
        assert_eq!(order, (0..cases.len()).collect::<Vec<_>>());
    }
}
