//! Stopping: a worker's graceful stop on SIGTERM (and its end on a second
//! signal), and how a worker stops a command (a timeout, a lost lease, the
//! end of the grace): SIGTERM to its process group, SIGKILL 10 s later.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::cases::steps::rows::{brief, has_error, row_present};
use crate::cases::steps::running::alive;
use crate::cases::CaseResult;
use crate::history::WorkerEventKind;
use crate::subjects::ctx::{clip, Ctx};
use crate::subjects::observe::file::{row, write};
use crate::subjects::probe::{now_ms, Record};
use crate::subjects::worker::WorkerProcess;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::support::{ended, probe_worker, records, secs, start_of, wait_exit, wait_started, POLL};

/// How long after SIGTERM the case watches that nothing stops.
const STOP_WINDOW: Duration = Duration::from_secs(1);

fn signal(worker: &WorkerProcess, signal: Signal) {
    worker.process.signal(signal);
    worker.note(WorkerEventKind::Stopped);
}

/// Fails unless the run's process still runs.
fn runs_on(run: &Record, how: &str) -> CaseResult {
    ensure!(
        alive(run.pid),
        format!("job {}'s command (pid {}) to go on {how}", run.job, run.pid),
        "it had ended".to_string()
    );
    Ok(())
}

/// Touches `name` beside `log`: a probe waiting on `await:NAME` goes on.
fn release(log: &Path, name: &str) -> CaseResult {
    std::fs::write(log.with_file_name(name), "")?;
    Ok(())
}

pub(in crate::cases::cli) fn stop(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("stop.ukue")?;
    let first = ["--priority", "10"];
    let finishes = ctx.add(&who, &file, "q", "await:go-finish finishes", &first)?;
    let fails = ctx.add(
        &who,
        &file,
        "q",
        "await:go-fail exit:3 fails",
        &[&first[..], &["--attempts", "3"]].concat(),
    )?;
    let waiting = ctx.add(&who, &file, "q", "due-all-along", &[])?;
    let twice_file = ctx.init("twice.ukue")?;
    let runs_on_job = ctx.add(&who, &twice_file, "q", "sleep:120000 runs-on", &[])?;
    let mut options = vec!["--concurrency", "2", "--timeout", "0"];
    options.extend(POLL);
    let (mut worker, log) = probe_worker(ctx, &file, "q", &options, "stop.log", &[])?;
    let mut options = vec!["--grace", "60s"];
    options.extend(POLL);
    let (mut twice, twice_log) = probe_worker(ctx, &twice_file, "q", &options, "twice.log", &[])?;
    let runs = wait_started(ctx, &log, &[finishes, fails], secs(15), &mut [&mut worker])?;
    let long = wait_started(ctx, &twice_log, &[runs_on_job], secs(15), &mut [&mut twice])?.remove(0);
    let before = row_present(&file, waiting)?;
    signal(&worker, Signal::SIGTERM);
    signal(&twice, Signal::SIGTERM);
    let window_end = Instant::now() + STOP_WINDOW;
    while Instant::now() < window_end {
        worker.still_running(
            "the worker (--grace 30s by default) to wait after SIGTERM for its running commands",
        )?;
        twice.still_running("the worker (--grace 60s) to wait after SIGTERM for its running command")?;
        for run in runs.iter().chain([&long]) {
            runs_on(run, "after SIGTERM, within the grace")?;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // work.stop-twice: a second signal ends the worker at once.
    signal(&twice, Signal::SIGINT);
    if wait_exit(&mut twice, secs(10))?.is_none() {
        return Err(Failure::fail(
            "`work --grace 60s` to end within 10 s of a second signal (SIGINT after SIGTERM)",
            "it was still running",
        ));
    }
    // A command that ends within the grace ends its job as usual: fails it.
    release(&log, "go-fail")?;
    let what = format!("job {fails}'s command, told to exit 3 after SIGTERM, to end and its job to fail");
    ctx.wait_for(&what, secs(10), || {
        worker.still_running("the stopped worker to wait for its other running command")?;
        Ok(row(&file, fails)?.is_some_and(|r| r.state != "running"))
    })?;
    let r = row_present(&file, fails)?;
    ensure_eq!(
        (r.state.as_str(), r.attempts),
        ("ready", 1),
        format!("job {fails}, whose command exited 3 within the grace: (state, attempts), failed as usual")
    );
    has_error(&r)?;
    runs_on(&runs[0], "until it is told to end")?;
    release(&log, "go-finish")?;
    match wait_exit(&mut worker, secs(10))? {
        Some(status) if status.success() => {}
        Some(status) => {
            return Err(Failure::fail(
                "the stopped worker to exit 0 once its commands ended and their jobs were recorded",
                format!("{}: {}", ended(status), clip(&worker.stderr())),
            ))
        }
        None => {
            return Err(Failure::fail(
                "the stopped worker to exit within 10 s of its last command's end",
                "it was still running",
            ))
        }
    }
    if let Some(r) = row(&file, finishes)? {
        return Err(Failure::fail(
            format!(
                "job {finishes}, whose command exited 0 within the grace, finished when the worker exited"
            ),
            brief(&r),
        ));
    }
    let after = row_present(&file, waiting)?;
    ensure!(
        after == before && start_of(&records(&log)?, waiting).is_none(),
        format!("job {waiting}, due all along, never claimed after SIGTERM"),
        brief(&after)
    );
    Ok(())
}

/// A command that ignores SIGTERM, with a child that does not and one
/// that does too: only SIGKILL ends it, and the first child shows when
/// SIGTERM came.
const STUBBORN: &str = "background:120000 background-ignore-term:120000 ignore-term sleep:120000";

/// One stopped run, watched until its processes are gone.
struct Watched {
    how: &'static str,
    run: Record,
    /// When the child that SIGTERM kills was seen gone.
    termed: Option<Instant>,
    /// When the command and its child that ignores SIGTERM were seen gone.
    killed: Option<Instant>,
}

impl Watched {
    fn new(how: &'static str, run: Record) -> Result<Watched, Failure> {
        ensure!(
            run.children.len() == 2,
            format!("job {}'s probe to start two children", run.job),
            format!("children {:?}", run.children)
        );
        Ok(Watched { how, run, termed: None, killed: None })
    }

    fn look(&mut self, now: Instant) {
        if self.termed.is_none() && !alive(self.run.children[0]) {
            self.termed = Some(now);
        }
        if self.killed.is_none() && !alive(self.run.pid) && !alive(self.run.children[1]) {
            self.killed = Some(now);
        }
    }

    fn shown(&self, since: Instant) -> String {
        let at = |t: Option<Instant>| {
            t.map(|t| format!("{:.1} s", t.duration_since(since).as_secs_f64())).unwrap_or("never".into())
        };
        format!(
            "{} (pid {}, children {:?}): the child that dies of SIGTERM gone at {}, the rest at {}",
            self.how,
            self.run.pid,
            self.run.children,
            at(self.termed),
            at(self.killed)
        )
    }
}

/// SIGKILL is due 10 s after SIGTERM: the child that SIGTERM kills must be
/// gone this long before the rest (and the rest gone within the limit).
const KILL_GAP_AT_LEAST: Duration = Duration::from_secs(5);
const ALL_GONE_WITHIN: Duration = Duration::from_secs(30);

pub(in crate::cases::cli) fn stop_kill(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let timeout_file = ctx.init("timeout.ukue")?;
    let lost_file = ctx.init("lost.ukue")?;
    let grace_file = ctx.init("grace.ukue")?;
    let timed_out = ctx.add(&who, &timeout_file, "q", &format!("{STUBBORN} timed-out"), &[])?;
    let taken = ctx.add(&who, &lost_file, "q", &format!("{STUBBORN} taken"), &[])?;
    let deleted = ctx.add(&who, &lost_file, "q", &format!("{STUBBORN} deleted"), &[])?;
    let given_back = ctx.add(&who, &grace_file, "q", &format!("{STUBBORN} grace"), &[])?;
    let with = |options: &[&'static str]| [options, &POLL].concat();
    let (mut timeout_worker, timeout_log) =
        probe_worker(ctx, &timeout_file, "q", &with(&["--timeout", "500ms"]), "timeout.log", &[])?;
    let lost_options = with(&["--lease", "1500ms", "--concurrency", "2"]);
    let (mut lost_worker, lost_log) = probe_worker(ctx, &lost_file, "q", &lost_options, "lost.log", &[])?;
    let (mut grace_worker, grace_log) =
        probe_worker(ctx, &grace_file, "q", &with(&["--grace", "300ms"]), "grace.log", &[])?;
    let timeout_run = wait_started(ctx, &timeout_log, &[timed_out], secs(15), &mut [&mut timeout_worker])?;
    let lost_runs = wait_started(ctx, &lost_log, &[taken, deleted], secs(15), &mut [&mut lost_worker])?;
    let grace_run = wait_started(ctx, &grace_log, &[given_back], secs(15), &mut [&mut grace_worker])?;
    // Lost leases: one job taken by another worker (as its claim would
    // leave it), one deleted.
    let now = now_ms();
    let conn = write(&lost_file)?;
    conn.execute(
        "UPDATE ukue_jobs SET token = 'taken-by-another-worker', attempts = attempts + 1, lease_until = ?1,
         updated_at = ?2 WHERE id = ?3",
        rusqlite::params![now + 3_600_000, now, taken],
    )?;
    conn.execute("DELETE FROM ukue_jobs WHERE id = ?1", [deleted])?;
    drop(conn);
    let taken_row = row_present(&lost_file, taken)?;
    signal(&grace_worker, Signal::SIGTERM);
    let since = Instant::now();
    let mut watched = vec![
        Watched::new("the command past --timeout 500ms", timeout_run[0].clone())?,
        Watched::new("the command whose job another worker took", lost_runs[0].clone())?,
        Watched::new("the command whose job was deleted", lost_runs[1].clone())?,
        Watched::new("the command still running at the end of --grace 300ms", grace_run[0].clone())?,
    ];
    let gone = ctx.wait_for("every stopped command and its children to be gone", ALL_GONE_WITHIN, || {
        let now = Instant::now();
        watched.iter_mut().for_each(|w| w.look(now));
        Ok(watched.iter().all(|w| w.killed.is_some()))
    });
    let shown = || watched.iter().map(|w| w.shown(since)).collect::<Vec<_>>().join("; ");
    if let Err(f) = gone {
        return Err(Failure { seen: format!("{}: {}", f.seen, shown()), ..f });
    }
    for w in &watched {
        let gap = w.killed.zip(w.termed).map(|(k, t)| k.saturating_duration_since(t)).unwrap_or_default();
        ensure!(
            w.termed.is_some() && gap >= KILL_GAP_AT_LEAST,
            format!(
                "{}: SIGTERM to its whole process group, SIGKILL 10 s later: the child that dies of SIGTERM \
                 gone at least {} s before the processes that ignore it",
                w.how,
                KILL_GAP_AT_LEAST.as_secs()
            ),
            shown()
        );
    }
    // What each worker then made of its job.
    ctx.wait_for(&format!("job {timed_out}'s timed-out attempt to be failed"), secs(10), || {
        Ok(row(&timeout_file, timed_out)?.is_some_and(|r| r.state != "running"))
    })?;
    let r = row_present(&timeout_file, timed_out)?;
    ensure_eq!(
        (r.state.as_str(), r.attempts),
        ("ready", 1),
        format!("job {timed_out} timed out: (state, attempts)")
    );
    has_error(&r)?;
    match wait_exit(&mut grace_worker, secs(10))? {
        Some(status) if status.success() => {}
        other => return Err(Failure::fail(
            "the worker stopped with SIGTERM to exit 0 once its command was killed and its job given back",
            other.map(ended).unwrap_or_else(|| "it was still running 10 s after".into()),
        )),
    }
    let r = row_present(&grace_file, given_back)?;
    ensure_eq!(
        (r.state.as_str(), r.attempts),
        ("ready", 0),
        format!("job {given_back}, running at the end of the grace: (state, attempts), given back")
    );
    lost_worker.still_running("the worker whose jobs were taken and deleted to go on")?;
    let now_taken = row_present(&lost_file, taken)?;
    ensure!(
        now_taken == taken_row && row(&lost_file, deleted)?.is_none(),
        format!(
            "the worker that lost jobs {taken} (taken) and {deleted} (deleted) to record nothing for them: \
             job {taken} as the other worker took it, job {deleted} still gone"
        ),
        format!("{}; job {deleted}: {:?}", brief(&now_taken), row(&lost_file, deleted)?.map(|r| brief(&r)))
    );
    timeout_worker.stop(secs(15))?;
    lost_worker.stop(secs(15))
}
