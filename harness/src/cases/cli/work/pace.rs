//! How much `work` runs and when: commands at once (`--concurrency`), the
//! length of each claim's lease (`--lease`), and how soon an idle worker
//! looks again (`--poll`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cases::steps::rows::brief_all;
use crate::cases::steps::running::still_working;
use crate::cases::steps::setup::{insert, Put};
use crate::cases::CaseResult;
use crate::subjects::ctx::Ctx;
use crate::subjects::observe::file::{job_count, row, rows, write};
use crate::subjects::probe::{now_ms, Record, RecordKind};
use crate::subjects::worker::{probe_log, start_worker, WorkerProcess};
use crate::subjects::Failure;
use crate::subjects::Subject;
use crate::{ensure, ensure_eq};

use super::support::{most_at_once, probe_worker, records, secs, wait_started, POLL};

/// Commands at once, and jobs due (more than that).
const WIDE: usize = 4;
const WIDE_JOBS: usize = 6;

/// The file whose making lets every held command of the case end.
const GO: &str = "go";

/// How long the case goes on holding every command once the workers run
/// as many as they may, watching for one more to start. A worker that
/// runs one more claims it right after the last: at most 254 ms later in
/// 40 runs under `fresh-conditions --load 2` (spec/CONFORMANCE.md, "The
/// work cases").
const HOLD: Duration = Duration::from_secs(3);

fn starts(records: &[Record]) -> usize {
    records.iter().filter(|r| r.event == RecordKind::Start).count()
}

/// Waits until `files` hold no job, while `workers` run.
fn wait_drained(
    ctx: &Ctx,
    files: &[&Path],
    limit: Duration,
    workers: &mut [&mut WorkerProcess],
) -> CaseResult {
    ctx.wait_for("every job to run and finish", limit, || {
        still_working(workers)?;
        for file in files {
            if job_count(file)? > 0 {
                return Ok(false);
            }
        }
        Ok(true)
    })
    .map_err(|mut f| {
        let left: Vec<String> = files.iter().map(|f| brief_all(&rows(f).unwrap_or_default())).collect();
        f.seen = format!("{}; left: {}", f.seen, left.join("; "));
        f
    })
}

/// Every command waits for the case's word (`await:go`), so none ends
/// before the case has seen how many run at once, whatever the machine's
/// pace: a worker of `--concurrency 4` with six jobs due must get to four
/// (a worker that runs fewer never does), and one without the flag, two
/// jobs due, to one; then the case holds them all [`HOLD`] longer, and a
/// worker that runs one more starts it meanwhile. The order of the
/// probe's records (a run's end is written before its process exits)
/// never shows more at once than ran.
pub(in crate::cases::cli) fn concurrency(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let wide = ctx.init("wide.ukue")?;
    let narrow = ctx.init("default.ukue")?;
    for i in 0..WIDE_JOBS {
        ctx.add(&who, &wide, "q", &format!("await:{GO} wide-{i}"), &[])?;
    }
    ctx.add(&who, &narrow, "q", &format!("await:{GO} first"), &[])?;
    ctx.add(&who, &narrow, "q", &format!("await:{GO} second"), &[])?;
    let wide_n = WIDE.to_string();
    let mut options = vec!["--concurrency", wide_n.as_str()];
    options.extend(POLL);
    let (mut wide_worker, wide_log) = probe_worker(ctx, &wide, "q", &options, "wide.log", &[])?;
    let (mut narrow_worker, narrow_log) = probe_worker(ctx, &narrow, "q", &POLL, "default.log", &[])?;
    let counts = || -> Result<(usize, usize), Failure> {
        Ok((starts(&records(&wide_log)?), starts(&records(&narrow_log)?)))
    };
    let what = format!(
        "{WIDE} commands running at once (--concurrency {WIDE}, {WIDE_JOBS} jobs due), and 1 without \
         --concurrency (2 jobs due)"
    );
    ctx.wait_for(&what, secs(20), || {
        still_working(&mut [&mut wide_worker, &mut narrow_worker])?;
        let (wide_started, narrow_started) = counts()?;
        Ok(wide_started >= WIDE && narrow_started >= 1)
    })
    .map_err(|mut f| {
        let (wide_started, narrow_started) = counts().unwrap_or_default();
        f.seen = format!("{}: {wide_started} and {narrow_started} started", f.seen);
        f
    })?;
    // Held on; ends early only once a worker has run more than it may.
    let hold_end = Instant::now() + HOLD;
    while Instant::now() < hold_end {
        still_working(&mut [&mut wide_worker, &mut narrow_worker])?;
        let (wide_started, narrow_started) = counts()?;
        if wide_started > WIDE || narrow_started > 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::write(ctx.path(GO), "")?;
    wait_drained(ctx, &[&wide, &narrow], secs(20), &mut [&mut wide_worker, &mut narrow_worker])?;
    wide_worker.stop(secs(15))?;
    narrow_worker.stop(secs(15))?;
    let wide_records = records(&wide_log)?;
    ensure_eq!(
        starts(&wide_records),
        WIDE_JOBS,
        format!("runs of the {WIDE_JOBS} jobs (--concurrency {WIDE})")
    );
    let (most, jobs) = most_at_once(&wide_records);
    let mut distinct = jobs.clone();
    distinct.sort_unstable();
    distinct.dedup();
    ensure!(
        most == WIDE && distinct.len() == most,
        format!("--concurrency {WIDE}: at most {WIDE} commands at once, each for a job of its own"),
        format!("{most} at once, for jobs {jobs:?}")
    );
    let (most, jobs) = most_at_once(&records(&narrow_log)?);
    ensure_eq!(
        (most, jobs.len()),
        (1, 1),
        "without --concurrency (default 1), two jobs due: (commands at once, their jobs)"
    );
    Ok(())
}

/// Two readings of the same clock, by two programs (ms).
const CLOCK_TOL: i64 = 100;

pub(in crate::cases::cli) fn lease(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("lease.ukue")?;
    let short = ctx.add(&who, &file, "short", "lease-7s", &[])?;
    let long = ctx.add(&who, &file, "default", "lease-default", &[])?;
    let mut options = vec!["--lease", "7s"];
    options.extend(POLL);
    let mut short_worker = start_worker(ctx, &who, &file, "short", &options)?;
    let mut long_worker = start_worker(ctx, &who, &file, "default", &POLL)?;
    let log = probe_log(ctx);
    let started =
        wait_started(ctx, &log, &[short, long], secs(15), &mut [&mut short_worker, &mut long_worker])?;
    wait_drained(ctx, &[&file], secs(15), &mut [&mut short_worker, &mut long_worker])?;
    short_worker.stop(secs(15))?;
    long_worker.stop(secs(15))?;
    for (record, lease, how) in [(&started[0], 7_000, "--lease 7s"), (&started[1], 60_000, "no --lease (1m)")]
    {
        let expected = format!(
            "job {}, claimed by a worker with {how}: lease_until − updated_at (the claim's time) {lease} ms",
            record.job
        );
        let (Some(true), Some(until), Some(claimed)) = (record.held, record.lease_until, record.updated_at)
        else {
            return Err(Failure::fail(expected, format!("the probe did not see its job held: {record:?}")));
        };
        let seen = until - claimed;
        ensure!((lease - CLOCK_TOL..=lease + CLOCK_TOL).contains(&seen), expected, format!("{seen} ms"));
    }
    shortest_lease(ctx, &who)
}

/// The shortest lease `work.lease-bad` leaves: 3 ms is no lease under 3 ms,
/// so it is taken (cargo-mutants' `<` made `<=` refuses it). On a file of
/// its own, which no other worker's claim reaps when a renewal of so short
/// a lease comes late on a loaded machine; the lease as the probe reads it
/// is a claim's or a renewal's: its time plus 3 ms.
fn shortest_lease(ctx: &mut Ctx, who: &Subject) -> CaseResult {
    let file = ctx.init("lease-3ms.ukue")?;
    let job = ctx.add(who, &file, "q", "lease-3ms", &[])?;
    let mut options = vec!["--lease", "3ms"];
    options.extend(POLL);
    let (mut worker, log) = probe_worker(ctx, &file, "q", &options, "lease-3ms.log", &[])?;
    let started = wait_started(ctx, &log, &[job], secs(15), &mut [&mut worker])?;
    wait_drained(ctx, &[&file], secs(15), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let record = &started[0];
    let expected =
        format!("job {job}, claimed by a worker with --lease 3ms: held, lease_until − updated_at 3 ms");
    let (Some(true), Some(until), Some(renewed)) = (record.held, record.lease_until, record.updated_at)
    else {
        return Err(Failure::fail(expected, format!("the probe did not see its job held: {record:?}")));
    };
    let seen = until - renewed;
    ensure!((3 - CLOCK_TOL..=3 + CLOCK_TOL).contains(&seen), expected, format!("{seen} ms"));
    Ok(())
}

/// The poll the case gives and how many jobs it times with it; how many
/// it times with the default poll (1 s); how late the median of them may
/// be claimed beyond the poll (a worker waking late on a loaded machine).
const POLL_MS: i64 = 100;
const POLL_ROUNDS: usize = 5;
const DEFAULT_POLL_MS: i64 = 1_000;
const DEFAULT_POLL_ROUNDS: usize = 1;
const POLL_SLACK_MS: i64 = 400;

/// Makes job `id` a running job whose lease ran out a second ago, as a
/// worker that died leaves it: the next claim on any queue reaps it.
fn expire(file: &Path, id: i64, round: usize) -> CaseResult {
    let now = now_ms();
    write(file)?.execute(
        "UPDATE ukue_jobs SET state = 'running', attempts = 1, token = ?1, lease_until = ?2, updated_at = ?3
         WHERE id = ?4",
        rusqlite::params![format!("token-of-a-dead-worker-{round}"), now - 1_000, now, id],
    )?;
    Ok(())
}

/// A file whose only job (in queue `other`) is held by a dead worker, and
/// a worker (with `options`) of its empty queue `q`.
fn idle_worker(ctx: &mut Ctx, name: &str, options: &[&str]) -> Result<Idle, Failure> {
    let file = ctx.init(&format!("{name}.ukue"))?;
    let now = now_ms();
    let put = Put::new("other", "running", now).text("held-by-a-dead-worker").attempts(1, 1_000);
    let expired = insert(&file, &[put.lease(now - 1_000, "token-of-a-dead-worker")])?[0];
    let (worker, log) = probe_worker(ctx, &file, "q", options, &format!("{name}.log"), &[])?;
    Ok(Idle { file, expired, worker, log })
}

struct Idle {
    file: PathBuf,
    /// The job of a dead worker that each look reaps.
    expired: i64,
    worker: WorkerProcess,
    log: PathBuf,
}

impl Idle {
    /// `rounds` times: waits for a look (the expired lease reaped), adds a
    /// job with the reference at once, and notes how long after the add
    /// its claim came (the claim's updated_at, as the file showed it: the
    /// moment the worker looked, not when a loaded machine got round to
    /// starting the command); the delays, in ms.
    fn delays(&mut self, ctx: &Ctx, rounds: usize, limit: Duration) -> Result<Vec<i64>, Failure> {
        let reference = ctx.reference().clone();
        let mut delays = Vec::new();
        for round in 0..rounds {
            if round > 0 {
                expire(&self.file, self.expired, round)?;
            }
            let look =
                format!("the idle worker to look for jobs, its claim reaping job {}'s lease", self.expired);
            ctx.wait_for(&look, limit, || {
                still_working(&mut [&mut self.worker])?;
                Ok(row(&self.file, self.expired)?.is_some_and(|r| r.state != "running"))
            })?;
            let job = ctx.add(&reference, &self.file, "q", &format!("poll-{round}"), &[])?;
            let added = now_ms();
            let run = wait_started(ctx, &self.log, &[job], limit, &mut [&mut self.worker])?.remove(0);
            let claimed = run.updated_at.filter(|_| run.held == Some(true)).unwrap_or(run.at_ms);
            delays.push(claimed - added);
            ctx.wait_for(&format!("job {job} to finish"), limit, || Ok(row(&self.file, job)?.is_none()))?;
        }
        Ok(delays)
    }
}

/// Fails unless the median of `delays` is within the poll and the slack.
fn claimed_within(delays: &[i64], poll_ms: i64, how: &str) -> CaseResult {
    let mut sorted = delays.to_vec();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    ensure!(
        median <= poll_ms + POLL_SLACK_MS,
        format!(
            "{how}: jobs added (by another program) just after the idle worker looked, claimed within {} ms \
             of their add (the median of {})",
            poll_ms + POLL_SLACK_MS,
            delays.len()
        ),
        format!("claimed after {delays:?} ms: median {median} ms")
    );
    Ok(())
}

/// An idle worker's looks for jobs are seen by what a claim does to any
/// queue (FORMAT.md §5.4): it reaps an expired lease of another queue,
/// which the case sets up before each look. Right after a look, the case
/// adds a job (with the reference, another program): the next look is at
/// most `--poll` away, so the job is claimed within about that, however
/// the worker's looks fall; a worker that looks every second instead
/// claims it about a second later, every time. A worker with the default
/// poll is timed meanwhile, on a file of its own.
pub(in crate::cases::cli) fn poll(ctx: &mut Ctx) -> CaseResult {
    let poll = format!("{POLL_MS}ms");
    let mut given = idle_worker(ctx, "poll", &["--poll", &poll])?;
    let mut default = idle_worker(ctx, "default-poll", &[])?;
    let ctx = &*ctx;
    let (given_delays, default_delays) = std::thread::scope(|scope| {
        let default = scope.spawn(|| default.delays(ctx, DEFAULT_POLL_ROUNDS, secs(10)));
        let given = given.delays(ctx, POLL_ROUNDS, secs(10));
        (given, default.join().unwrap_or_else(|_| Err(Failure::error("the harness to work", "a panic"))))
    });
    given.worker.stop(secs(15))?;
    default.worker.stop(secs(15))?;
    claimed_within(&given_delays?, POLL_MS, &format!("--poll {poll}"))?;
    claimed_within(&default_delays?, DEFAULT_POLL_MS, "no --poll (1s)")
}
