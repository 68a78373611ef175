//! Every way an attempt ends, at both sides of the last attempt, each
//! after an earlier failure: a failure (exit 3), a permanent one (exit
//! 65), a timeout, a lease that runs out (reaped by another claim) and a
//! give-back at the end of the grace. The attempt before the last leaves
//! the job ready, the last one dead (a give-back neither counts nor kills);
//! and each field the step sets is the step's, not the earlier one's:
//! `last_error`, `updated_at`, the token and lease cleared. The backoff is
//! each program's own (FORMAT.md §5.6): a job that one runs again at once
//! shows, by its run of the last attempt, that it was not dead before it.

use std::path::Path;

use crate::cases::common;
use crate::cases::CaseResult;
use crate::ensure;
use crate::subjects::ctx::Ctx;
use crate::subjects::observe::file::rows;
use crate::subjects::probe::now_ms;

use super::rows::{brief, brief_all, row_present};
use super::running::{probe_worker, still_working};
use super::setup::{insert, Put};
use super::{secs, CLOCK_TOL};

/// What an earlier attempt left in `last_error`.
const EARLIER: &str = "an earlier failure";
/// How long the failing commands run (ms) before they exit, and the
/// give-back worker's `--grace`: each step's updated_at comes after. A
/// timeout (`--timeout 1s`) counts from the command's start, which the
/// probe records a moment later: half of it, to stay clear of that moment
/// on a loaded machine (a claim's updated_at is before the start).
const RUNS_FOR: i64 = 300;
const TIMEOUT: i64 = 500;
const GRACE: i64 = 300;

/// A job of the case: what it is, and what it must be once its path ran.
struct Ended {
    what: &'static str,
    id: i64,
    state: &'static str,
    attempts: i64,
    /// The step sets last_error (every path but the give-back).
    sets_error: bool,
    /// How long (ms) its command runs before the step: the step's
    /// updated_at is at least that long after the command's start.
    runs_for: i64,
}

/// Fails unless job `p` is as its path leaves it, and every field its
/// step sets is that step's (`since`: no earlier than the step). A job
/// left ready that the worker ran again (`ran_again`: a short backoff)
/// has ended its last attempt since: dead, with all its attempts.
fn after_its_path(file: &Path, p: &Ended, since: i64, ran_again: bool) -> CaseResult {
    let r = row_present(file, p.id)?;
    let again = ran_again && p.state == "ready";
    let (state, attempts) = if again { ("dead", r.max_attempts) } else { (p.state, p.attempts) };
    let expected = format!(
        "job {} ({}{}) to be {state} with attempts {attempts} of {}, no token nor lease{}, updated_at set by the step",
        p.id,
        p.what,
        if again { ", then run again on its last attempt" } else { "" },
        r.max_attempts,
        if p.sets_error { format!(", and a last_error of its own (not the earlier {EARLIER:?})") } else { String::new() }
    );
    let error_ok = !p.sets_error || r.last_error.as_deref().is_some_and(|e| !e.is_empty() && e != EARLIER);
    ensure!(
        r.state == state
            && r.attempts == attempts
            && r.token.is_none()
            && r.lease_until.is_none()
            && error_ok
            && r.updated_at >= since - CLOCK_TOL,
        expected,
        brief(&r)
    );
    Ok(())
}

/// One worker (concurrency 6, --timeout 1s) runs jobs on their attempt
/// before the last and on their last, each after an earlier failure, and
/// its first claim reaps two leases of another queue that ran out on those
/// attempts; a second worker is stopped (--grace 300ms) while its job runs
/// its last attempt.
pub(super) fn paths_to_last_attempt(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("paths.ukue")?;
    let now = now_ms();
    let ready = |text: &str, attempts: i64| {
        Put::new("paths", "ready", now).text(text).attempts(attempts, 3).error(EARLIER)
    };
    let expired = |text: &str, attempts: i64, token: &str| {
        Put::new("reaped", "running", now)
            .text(text)
            .attempts(attempts, 3)
            .lease(now - 1_000, token)
            .error(EARLIER)
    };
    let ids = insert(
        &file,
        &[
            expired("reaped before the last attempt", 2, "a-dead-worker"),
            expired("reaped on the last attempt", 3, "another-dead-worker"),
            ready("sleep:300 exit:3 fails before the last attempt", 1),
            ready("sleep:300 exit:3 fails on the last attempt", 2),
            ready("sleep:30000 times out before the last attempt", 1),
            ready("sleep:30000 times out on the last attempt", 2),
            ready("sleep:300 exit:65 fails for good before the last attempt", 1),
            Put::new("give-back", "ready", now)
                .text("sleep:30000 given back on the last attempt")
                .attempts(2, 3),
        ],
    )?;
    let path = |what, i: usize, state, attempts, sets_error, runs_for| Ended {
        what,
        id: ids[i],
        state,
        attempts,
        sets_error,
        runs_for,
    };
    let paths = [
        path("its lease ran out on attempt 2 of 3, reaped", 0, "ready", 2, true, 0),
        path("its lease ran out on attempt 3 of 3, reaped", 1, "dead", 3, true, 0),
        path("exit 3 on attempt 2 of 3", 2, "ready", 2, true, RUNS_FOR),
        path("exit 3 on attempt 3 of 3", 3, "dead", 3, true, RUNS_FOR),
        path("timed out on attempt 2 of 3", 4, "ready", 2, true, TIMEOUT),
        path("timed out on attempt 3 of 3", 5, "dead", 3, true, TIMEOUT),
        path("exit 65 on attempt 2 of 3", 6, "dead", 2, true, RUNS_FOR),
        path("given back at the end of the grace on attempt 3 of 3", 7, "ready", 2, false, 0),
    ];
    let started = now_ms();
    let mut worker = probe_worker(ctx, &file, "paths", &["--concurrency", "6", "--timeout", "1s"])?;
    let mut giver = probe_worker(ctx, &file, "give-back", &["--grace", "300ms"])?;
    let given = ids[7];
    ctx.wait_for(&format!("job {given}'s command to start"), secs(20), || {
        still_working(&mut [&mut worker, &mut giver])?;
        Ok(common::executions(ctx)?.iter().any(|e| e.job == given))
    })?;
    let stopped = now_ms();
    giver.stop(secs(20))?;
    let ran = &ids[2..7];
    let settled = ctx.wait_for("every job to have run, and no job to be running", secs(30), || {
        still_working(&mut [&mut worker])?;
        let runs = common::executions(ctx)?;
        if !ran.iter().all(|id| runs.iter().any(|e| e.job == *id)) {
            return Ok(false);
        }
        Ok(rows(&file)?.iter().all(|r| r.state != "running"))
    });
    worker.stop(secs(20))?;
    if let Err(mut f) = settled {
        f.seen = format!("{}; file: {}", f.seen, brief_all(&rows(&file)?));
        return Err(f);
    }
    let runs = common::executions(ctx)?;
    for p in &paths {
        // The step came after the command ran its while (the give-back
        // after the grace, a reap after the worker's start).
        let first = runs.iter().filter(|e| e.job == p.id).map(|e| e.start_ms).min();
        let since = match (p.sets_error, first) {
            (false, _) => stopped + GRACE,
            (true, Some(start)) => start + p.runs_for,
            (true, None) => started,
        };
        // A counted attempt past the one the path left is a run after it
        // (the give-back's own run is attempt 3, which it does not count).
        let ran_again = p.sets_error && runs.iter().any(|e| e.job == p.id && e.attempt > p.attempts);
        after_its_path(&file, p, since, ran_again)?;
    }
    Ok(())
}
