//! leases: a job that runs longer than its lease keeps it (the worker
//! renews); a worker stopped past its lease loses the job to another, and
//! its late steps after it wakes do not touch the job the other now holds.

use std::path::PathBuf;
use std::time::Duration;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::check;
use crate::history::{Added, Execution};
use crate::shown::Shown;
use crate::subjects::ctx::Ctx;
use crate::subjects::observe::file::{end_backoffs, job_count, read, row, state_and_attempts, write};
use crate::subjects::probe::now_ms;
use crate::subjects::worker::{probe_log, start_worker};
use crate::subjects::Failure;
use crate::subjects::Subject;

use super::common::{self, no_findings};

pub fn cases() -> Vec<Case> {
    vec![
        Case {
            id: "leases/renewed-while-running",
            rule: "6.2",
            summary: "a job that runs three leases long is renewed, never past the lease from now, and runs once, undisturbed",
            needs: Needs::default(),
            level: Level::Must,
            run: renewed_while_running,
        },
        Case {
            id: "leases/stopped-worker-loses-job",
            rule: "5.5",
            summary:
                "a worker stopped past its lease loses the job; after SIGCONT its late finish is refused",
            needs: Needs::default(),
            level: Level::Must,
            run: stopped_worker_loses_job,
        },
        Case {
            id: "leases/last-attempt-kept",
            rule: "5.4",
            summary: "a job on its last attempt keeps its lease while another worker claims: it runs once and \
                      finishes, never reaped to dead",
            needs: Needs::default(),
            level: Level::Must,
            run: last_attempt_kept,
        },
    ]
}

fn started(ctx: &Ctx, job: i64, attempt: i64) -> Result<Option<Execution>, Failure> {
    Ok(common::executions(ctx)?.into_iter().find(|e| e.job == job && e.attempt == attempt))
}

/// A file the subject made, with one job of queue `q` it added; returns
/// the file, the subject and the job.
fn one_job(ctx: &mut Ctx, payload: &str) -> Result<(PathBuf, Subject, i64), Failure> {
    let file = ctx.init("jobs.ukue")?;
    let subject = ctx.subject().clone();
    let job = ctx.add(&subject, &file, "q", payload, &[])?;
    Ok((file, subject, job))
}

/// The lease of renewed_while_running, and how far two programs' readings
/// of the clock may differ.
const LEASE_MS: i64 = 1_500;
const CLOCK_TOL_MS: i64 = 100;

fn renewed_while_running(ctx: &mut Ctx) -> CaseResult {
    // Three leases long. The lease is 1.5 s, so that a renewal due every
    // third of it (the published worker's pace) still has a second to land
    // when a loaded machine stalls an fsync.
    let payload = "long sleep:4500";
    let (file, subject, job) = one_job(ctx, payload)?;
    // A second worker claims all the time: it would reap the job at once if
    // the lease were not renewed.
    let options = ["--lease", "1500ms", "--poll", "20ms"];
    let holder = start_worker(ctx, &subject, &file, "q", &options)?;
    let rival = start_worker(ctx, &subject, &file, "q", &options)?;
    // FORMAT.md §5.7: a renewal moves lease_until to the lease from now,
    // never further, so that a job whose worker dies waits one lease at
    // most. Seen from here, after the write: never more than the lease
    // ahead of our clock.
    let mut furthest: Option<i64> = None;
    let done = ctx.wait_for("the job to finish", Duration::from_secs(30), || {
        match row(&file, job)?.and_then(|r| r.lease_until) {
            Some(until) => furthest = furthest.max(Some(until - now_ms())),
            None => return Ok(job_count(&file)? == 0),
        }
        Ok(false)
    });
    holder.stop(Duration::from_secs(30))?;
    rival.stop(Duration::from_secs(30))?;
    if let Some(ahead) = furthest.filter(|ahead| *ahead > LEASE_MS + CLOCK_TOL_MS) {
        return Err(Failure::fail(
            "while the job ran, its lease_until at most --lease 1500ms ahead of now (FORMAT.md §5.7: a \
             renewal sets it to the lease from now)",
            format!("lease_until {ahead} ms ahead of now"),
        ));
    }
    // A job reaped mid-run is refused its holder's finish and waits out a
    // backoff: if it is still in the file, its holder lost it (and if it
    // ran again at once, the count of runs below says so).
    if done.is_err() {
        let row = state_and_attempts(&read(&file)?, job)?;
        return Err(Failure::fail(
            "the job to finish within 30 s, its lease renewed",
            format!("the job is now (state, attempts) {} (null: gone)", row.shown()),
        ));
    }
    let history =
        common::history(ctx, &file, vec![Added { job, payload: payload.into(), by: subject.name.clone() }])?;
    let mut findings = check::exactly_once(&history);
    if history.executions.len() != 1 {
        findings.push(
            check::Finding {
                check: "runs",
                job: Some(job),
                message: format!("{} runs, expected 1", history.executions.len()),
                ..Default::default()
            }
            .blaming(&history.executions),
        );
    }
    no_findings("one run that held its job from start to end", findings)
}

fn stopped_worker_loses_job(ctx: &mut Ctx) -> CaseResult {
    let payload = "sleep:1500";
    let (file, subject, job) = one_job(ctx, payload)?;
    // A long lease, so that the stopped worker has no renewal due when it
    // wakes: its first step is then the late finish of a job it lost.
    let stopped = start_worker(ctx, &subject, &file, "q", &["--lease", "10m", "--poll", "20ms"])?;
    ctx.wait_for("the first worker to start the job", Duration::from_secs(20), || {
        Ok(started(ctx, job, 1)?.is_some())
    })?;
    // Stop the worker alone (its command goes on and ends), then let the
    // lease run out, as if the worker had been stopped for ten minutes.
    stopped.suspend();
    let stopped_pid = stopped.process.pid() as u32;
    ctx.wait_for("the stopped worker's command to end", Duration::from_secs(20), || {
        Ok(started(ctx, job, 1)?.is_some_and(|e| e.end_ms.is_some()))
    })?;
    write(&file)?.execute(
        "UPDATE ukue_jobs SET lease_until = ?1 WHERE id = ?2 AND state = 'running'",
        [now_ms() - 1, job],
    )?;
    let taker = start_worker(ctx, &subject, &file, "q", &["--lease", "30s", "--poll", "20ms"])?;
    // The taker reaps the job, which is due again after the subject's own
    // backoff: the case ends that backoff as soon as the file shows it.
    let taken = ctx.wait_for(
        "a second worker to take the job after its lease ran out",
        Duration::from_secs(40),
        || {
            end_backoffs(&file, Some(job))?;
            Ok(started(ctx, job, 2)?.is_some())
        },
    );
    // Wake the stopped worker while the new holder runs: its late finish
    // must be refused.
    stopped.resume();
    taken?;
    let finished = ctx.wait_for("the job to finish", Duration::from_secs(30), || Ok(job_count(&file)? == 0));
    stopped.stop(Duration::from_secs(30))?;
    taker.stop(Duration::from_secs(30))?;
    finished?;
    let runs = common::executions(ctx)?;
    let mut history =
        common::history(ctx, &file, vec![Added { job, payload: payload.into(), by: subject.name.clone() }])?;
    // The stopped worker's lease ran out: that excuses the second run.
    history.killed_workers.insert(stopped_pid);
    ctx.keep_history(&history);
    // The new holder must keep the job to its end: the woken worker's late
    // finish carries a stale token.
    let mut findings = check::stale_token(&history);
    findings.extend(check::at_least_once(&history));
    findings.extend(check::attempts(&history));
    if runs.len() != 2 {
        findings.push(
            check::Finding {
                check: "runs",
                job: Some(job),
                message: format!("{} runs, expected 2", runs.len()),
                ..Default::default()
            }
            .blaming(&runs),
        );
    }
    no_findings("two runs: the stopped worker's, then the new holder's", findings)
}

/// A claim reaps only expired leases (FORMAT.md §5.4 step 2): a job on its
/// last attempt, whose reaping would make it dead for good, is held while a
/// second worker claims another job beside it, and then finishes. The first
/// job waits for the case's word, so that the second claim surely comes
/// while it runs, whatever the machine's pace.
fn last_attempt_kept(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let subject = ctx.subject().clone();
    let payload = "await:rival-claimed last-attempt";
    let job = ctx.add(&subject, &file, "q", payload, &["--attempts", "1"])?;
    let options = ["--concurrency", "1", "--poll", "20ms"];
    let holder = start_worker(ctx, &subject, &file, "q", &options)?;
    ctx.wait_for("the first worker to start the job", Duration::from_secs(20), || {
        Ok(started(ctx, job, 1)?.is_some())
    })?;
    let other = ctx.add(&subject, &file, "q", "beside", &[])?;
    let rival = start_worker(ctx, &subject, &file, "q", &options)?;
    let claimed =
        ctx.wait_for("a second worker to run the job added beside it", Duration::from_secs(20), || {
            Ok(started(ctx, other, 1)?.is_some_and(|e| e.end_ms.is_some()))
        });
    let held = state_and_attempts(&read(&file)?, job)?;
    std::fs::write(probe_log(ctx).with_file_name("rival-claimed"), "")?;
    let finished = ctx.wait_for("the job to finish once told to", Duration::from_secs(30), || {
        Ok(state_and_attempts(&read(&file)?, job)?.is_none_or(|(state, _)| state != "running"))
    });
    holder.stop(Duration::from_secs(30))?;
    rival.stop(Duration::from_secs(30))?;
    claimed?;
    if held != Some(("running".to_string(), 1)) {
        return Err(Failure::fail(
            format!(
                "job {job} (--attempts 1), its lease not yet run out, to stay running while another worker \
                 claimed job {other}"
            ),
            format!("(state, attempts) {} (null: gone)", held.shown()),
        ));
    }
    finished?;
    let row = state_and_attempts(&read(&file)?, job)?;
    if row.is_some() {
        return Err(Failure::fail(
            format!("job {job} to finish once told to (finished jobs are deleted)"),
            format!("it is now (state, attempts) {}", row.shown()),
        ));
    }
    let added = vec![
        Added { job, payload: payload.into(), by: subject.name.clone() },
        Added { job: other, payload: "beside".into(), by: subject.name.clone() },
    ];
    let history = common::history(ctx, &file, added)?;
    no_findings("each job to run exactly once", check::exactly_once(&history))
}
