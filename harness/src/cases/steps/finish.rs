//! FORMAT.md §5.5 Finish, §5.6 Fail, §5.8 Release.

use std::path::Path;

use crate::cases::common;
use crate::cases::CaseResult;
use crate::check;
use crate::history::{Added, Execution};
use crate::shown::{rfc3339, time_or_null, Shown, Time};
use crate::subjects::ctx::Ctx;
use crate::subjects::observe::file::{end_backoffs, row, rows, Row};
use crate::subjects::probe::now_ms;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::rows::{brief, brief_all, has_error, not_running, row_present, within, within_time};
use super::running::{alive, probe_worker, runs_of, still_working, wait_settled};
use super::setup::{insert, Put};
use super::{secs, BACKOFF_MAX, BACKOFF_MIN, CLOCK_TOL, LATE, SKEW};

pub(super) fn fail_backoff(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("backoff.ukue")?;
    let who = ctx.subject().clone();
    let id = ctx.add(&who, &file, "q", "exit:3", &[])?;
    let mut worker = probe_worker(ctx, &file, "q", &[])?;
    let seen_at = wait_settled(ctx, &file, &[id], secs(15), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let r = row_present(&file, id)?;
    let runs = common::executions(ctx)?;
    let first = runs_of(&runs, id).into_iter().find(|e| e.attempt == 1).cloned();
    let end = first
        .as_ref()
        .and_then(|e| e.end_ms)
        .ok_or_else(|| Failure::fail(format!("a probe record of job {id} attempt 1 ending"), runs.shown()))?;
    ensure_eq!(
        (r.state.as_str(), r.attempts),
        ("ready", 1),
        format!("job {id} after attempt 1 exited 3: (state, attempts)")
    );
    not_running(&r)?;
    has_error(&r)?;
    within(
        &format!("job {id} failed on attempt 1: run_at − updated_at (the backoff)"),
        r.run_at - r.updated_at,
        BACKOFF_MIN - CLOCK_TOL,
        BACKOFF_MAX + CLOCK_TOL,
    )?;
    within_time(
        &format!(
            "job {id} whose command ended at {} (seen failed at {}): run_at",
            rfc3339(end),
            rfc3339(seen_at)
        ),
        r.run_at,
        end + BACKOFF_MIN - SKEW,
        seen_at + BACKOFF_MAX + LATE,
    )
}

pub(super) fn dead_after_max_attempts(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("dead.ukue")?;
    let who = ctx.subject().clone();
    let one = ctx.add(&who, &file, "q", "exit:3 only-attempt", &["--attempts", "1"])?;
    // A job on its second and last attempt, as a first failure leaves it
    // (without waiting 10 s for the backoff).
    let now = now_ms();
    let put = Put::new("q", "ready", now).text("exit:3 last-of-two").attempts(1, 2).error("exit status 3");
    let two = insert(&file, &[put])?[0];
    let before_two = row_present(&file, two)?;
    let mut worker = probe_worker(ctx, &file, "q", &[])?;
    wait_settled(ctx, &file, &[one, two], secs(15), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let added = vec![Added { job: one, payload: "exit:3 only-attempt".into(), by: who.name.clone() }];
    let history = common::history(ctx, &file, added)?;
    common::no_findings(
        &format!("job {one} (--attempts 1, exit 3) dead after exactly one run"),
        check::dead_after_max(&history, &[one]),
    )?;
    let r = row_present(&file, one)?;
    ensure_eq!(r.attempts, 1, format!("job {one} dead: attempts"));
    not_running(&r)?;
    has_error(&r)?;
    let runs = runs_of(&history.executions, two);
    let seen: Vec<(i64, i64)> = runs.iter().map(|e| (e.attempt, e.max_attempts)).collect();
    ensure_eq!(
        seen,
        vec![(2, 2)],
        format!("job {two} (attempts 1 of 2): the (UKUE_ATTEMPT, UKUE_MAX_ATTEMPTS) of its runs")
    );
    dead_after_failing(&file, &before_two, 2, "after its last attempt exited 3")
}

/// Jobs of `--attempts` N, 1 to 4, whose command always fails: each runs
/// exactly N times, as attempts 1 to N, and is then dead (FORMAT.md §5.6,
/// both sides of `attempts >= max_attempts`). The case ends each backoff
/// as it begins, whatever the program's backoff is.
pub(super) fn attempts_exact(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("attempts.ukue")?;
    let who = ctx.subject().clone();
    let mut jobs = Vec::new();
    for most in 1..=4 {
        let id = ctx.add(
            &who,
            &file,
            "q",
            &format!("exit:3 attempts-{most}"),
            &["--attempts", &most.to_string()],
        )?;
        jobs.push((id, most));
    }
    let mut worker = probe_worker(ctx, &file, "q", &[])?;
    ctx.wait_for("every job dead after its attempts", secs(60), || {
        still_working(&mut [&mut worker])?;
        let runs = common::executions(ctx)?;
        if let Some((id, most)) = jobs.iter().find(|(id, most)| runs_of(&runs, *id).len() as i64 > *most) {
            return Err(Failure::fail(
                format!("job {id} (--attempts {most}, its command exits 3) to run at most {most} times"),
                format!("{} runs so far", runs_of(&runs, *id).len()),
            ));
        }
        end_backoffs(&file, None)?;
        Ok(rows(&file)?.iter().all(|r| r.state == "dead"))
    })
    .map_err(|mut f| {
        f.seen = format!("{}; the jobs: {}", f.seen, brief_all(&rows(&file).unwrap_or_default()));
        f
    })?;
    worker.stop(secs(15))?;
    let runs = common::executions(ctx)?;
    for (id, most) in jobs {
        let attempts: Vec<i64> = runs_of(&runs, id).iter().map(|e| e.attempt).collect();
        ensure_eq!(
            attempts,
            (1..=most).collect::<Vec<i64>>(),
            format!("job {id} (--attempts {most}, its command exits 3): the UKUE_ATTEMPT of each run")
        );
        let r = row_present(&file, id)?;
        ensure_eq!((r.state.as_str(), r.attempts), ("dead", most), format!("job {id}: (state, attempts)"));
    }
    Ok(())
}

/// Job `before.id` is dead after a failed run, with `attempts` counted, its
/// max_attempts and run_at as `before`, no holder and an error; `how` says
/// what killed it.
fn dead_after_failing(file: &Path, before: &Row, attempts: i64, how: &str) -> CaseResult {
    let id = before.id;
    let r = row_present(file, id)?;
    ensure_eq!(
        (r.state.as_str(), r.attempts, r.max_attempts),
        ("dead", attempts, before.max_attempts),
        format!("job {id} {how}: (state, attempts, max_attempts)")
    );
    ensure_eq!(Time(r.run_at), Time(before.run_at), format!("job {id} dead: run_at (unchanged)"));
    not_running(&r)?;
    has_error(&r)
}

pub(super) fn exit_65_dead(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("exit65.ukue")?;
    let who = ctx.subject().clone();
    let id = ctx.add(&who, &file, "q", "exit:65", &[])?;
    let before = row_present(&file, id)?;
    let mut worker = probe_worker(ctx, &file, "q", &[])?;
    wait_settled(ctx, &file, &[id], secs(15), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let runs = common::executions(ctx)?;
    ensure_eq!(runs_of(&runs, id).len(), 1, format!("runs of job {id}"));
    ensure_eq!(before.max_attempts, 10, format!("job {id} added without --attempts: max_attempts"));
    dead_after_failing(&file, &before, 1, "whose command exited 65 on attempt 1")
}

/// The first run of job `id`, which the worker stopped before its end
/// (`how`): it wrote no end record, and its process is gone (waited for).
/// With `only`, it must be the job's only run.
fn stopped_run(ctx: &Ctx, id: i64, only: bool, how: &str) -> Result<Execution, Failure> {
    let runs = common::executions(ctx)?;
    let run = runs_of(&runs, id).first().copied().cloned().ok_or_else(|| Failure::fail("a run", "none"))?;
    if only {
        ensure_eq!(runs_of(&runs, id).len(), 1, format!("runs of job {id}"));
    }
    ensure!(
        run.end_ms.is_none(),
        format!("job {id}'s command {how}"),
        format!("it ran to its end at {} (exit {})", time_or_null(run.end_ms), run.exit.shown())
    );
    ctx.wait_for(&format!("job {id}'s command (pid {}) to be gone", run.pid), secs(5), || {
        Ok(!alive(run.pid))
    })?;
    Ok(run)
}

pub(super) fn timeout(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("timeout.ukue")?;
    let who = ctx.subject().clone();
    let id = ctx.add(&who, &file, "q", "sleep:60000", &[])?;
    let mut worker = probe_worker(ctx, &file, "q", &["--timeout", "300ms"])?;
    let seen_at = wait_settled(ctx, &file, &[id], secs(20), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let run = stopped_run(ctx, id, false, "(sleep 60 s) stopped by --timeout 300ms")?;
    // A short backoff (the program's own) may run it again before the
    // worker stops: each run is an attempt that timed out.
    let ran = runs_of(&common::executions(ctx)?, id).len() as i64;
    let r = row_present(&file, id)?;
    ensure_eq!(
        (r.state.as_str(), r.attempts),
        ("ready", ran),
        format!("job {id} after {ran} runs, each stopped by the timeout: (state, attempts)")
    );
    not_running(&r)?;
    has_error(&r)?;
    // Any backoff (FORMAT.md §5.6: other programs pick their own), but not
    // a run_at before the attempt failed.
    ensure!(
        r.run_at >= run.start_ms - SKEW,
        format!("job {id} timed out after its start at {}: run_at no earlier", rfc3339(run.start_ms)),
        brief(&r)
    );
    within_time(
        &format!("job {id} failed: updated_at"),
        r.updated_at,
        run.start_ms - SKEW,
        seen_at + CLOCK_TOL,
    )
}

/// Workers with and without --keep-done, one with --concurrency 2 too (a
/// worker that runs its jobs side by side must keep them as well).
pub(super) fn keep_done(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("keep.ukue")?;
    let who = ctx.subject().clone();
    let kept = ctx.add(&who, &file, "keep", "keep-me", &[])?;
    let dropped = ctx.add(&who, &file, "drop", "drop-me", &[])?;
    let side_by_side = [
        ctx.add(&who, &file, "keep-2", "keep-me-too", &[])?,
        ctx.add(&who, &file, "keep-2", "keep-me-as-well", &[])?,
    ];
    let mut keeper = probe_worker(ctx, &file, "keep", &["--keep-done"])?;
    let mut dropper = probe_worker(ctx, &file, "drop", &[])?;
    let mut keeper2 = probe_worker(ctx, &file, "keep-2", &["--keep-done", "--concurrency", "2"])?;
    let all = [kept, dropped, side_by_side[0], side_by_side[1]];
    wait_settled(ctx, &file, &all, secs(15), &mut [&mut keeper, &mut dropper, &mut keeper2])?;
    keeper.stop(secs(15))?;
    dropper.stop(secs(15))?;
    keeper2.stop(secs(15))?;
    let added = [
        (kept, "keep-me"),
        (dropped, "drop-me"),
        (side_by_side[0], "keep-me-too"),
        (side_by_side[1], "keep-me-as-well"),
    ]
    .iter()
    .map(|&(job, payload)| Added { job, payload: payload.into(), by: who.name.clone() })
    .collect();
    let history = common::history(ctx, &file, added)?;
    common::no_findings("each job to run exactly once", check::exactly_once(&history))?;
    for (id, how) in [
        (kept, "--keep-done"),
        (side_by_side[0], "--keep-done --concurrency 2"),
        (side_by_side[1], "--keep-done --concurrency 2"),
    ] {
        let r = row(&file, id)?.ok_or_else(|| {
            Failure::fail(format!("job {id}, finished by a `work {how}` worker, kept as done"), "it is gone")
        })?;
        ensure_eq!(
            (r.state.as_str(), r.attempts),
            ("done", 1),
            format!("job {id} finished by `work {how}`: (state, attempts)")
        );
        not_running(&r)?;
        ensure!(
            r.updated_at >= r.created_at,
            format!("job {id}: updated_at at or after created_at"),
            brief(&r)
        );
    }
    if let Some(r) = row(&file, dropped)? {
        return Err(Failure::fail(
            format!("job {dropped}, finished without --keep-done, deleted"),
            brief(&r),
        ));
    }
    Ok(())
}

pub(super) fn give_back_on_stop(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("release.ukue")?;
    let who = ctx.subject().clone();
    let id = ctx.add(&who, &file, "q", "sleep:30000 long", &[])?;
    let before = row_present(&file, id)?;
    let mut worker = probe_worker(ctx, &file, "q", &["--grace", "200ms"])?;
    ctx.wait_for(&format!("job {id}'s command to start"), secs(15), || {
        still_working(&mut [&mut worker])?;
        Ok(common::executions(ctx)?.iter().any(|e| e.job == id)
            && row(&file, id)?.is_some_and(|r| r.state == "running"))
    })?;
    let stopping = now_ms();
    worker.stop(secs(15))?;
    let stopped = now_ms();
    stopped_run(ctx, id, true, "(sleep 30 s) stopped at the end of --grace 200ms")?;
    let r = row_present(&file, id)?;
    ensure_eq!(
        (r.state.as_str(), r.attempts),
        ("ready", 0),
        format!("job {id} given back by a stopping worker: (state, attempts; the attempt not counted)")
    );
    // The published command sets run_at to now, the reference keeps it
    // (FORMAT.md §5.8): due at once either way.
    ensure!(
        r.run_at == before.run_at || (stopping - CLOCK_TOL..=stopped + CLOCK_TOL).contains(&r.run_at),
        format!(
            "job {id} given back: run_at unchanged ({}), or the moment it was given back \
             (between {} and {})",
            rfc3339(before.run_at),
            rfc3339(stopping),
            rfc3339(stopped)
        ),
        brief(&r)
    );
    not_running(&r)
}
