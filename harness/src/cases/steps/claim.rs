//! FORMAT.md §5.4 Claim: the order of claims, delayed jobs, expired
//! leases reaped, and what the command is given.

use std::path::Path;

use crate::cases::common;
use crate::cases::CaseResult;
use crate::check;
use crate::check::model::Model;
use crate::history::Added;
use crate::shown::{rfc3339, text, time_or_null, Shown, Time};
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::file::{read, read_rows, row, rows, Row};
use crate::subjects::probe::now_ms;
use crate::subjects::worker::start_command_worker;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::rows::{brief, brief_all, not_running, row_present, within, within_time};
use super::running::{probe_worker, runs_of, still_working, wait_settled};
use super::setup::{insert, Put};
use super::{secs, BACKOFF_MAX, BACKOFF_MIN, CLOCK_TOL, LATE, POLL, SKEW};

/// Adds `(payload, options)` jobs through the subject; returns them as added.
fn add_all(
    ctx: &Ctx,
    file: &Path,
    queue: &str,
    jobs: &[(String, Vec<String>)],
) -> Result<Vec<Added>, Failure> {
    let who = ctx.subject().clone();
    let mut added = Vec::new();
    for (payload, options) in jobs {
        let options: Vec<&str> = options.iter().map(String::as_str).collect();
        let job = ctx.add(&who, file, queue, payload, &options)?;
        added.push(Added { job, payload: payload.clone(), by: who.name.clone() });
    }
    Ok(added)
}

/// Runs every job of `added` with one worker running one job at a time,
/// then checks that they ran exactly once each, in `expected` order.
fn run_in_order(ctx: &Ctx, file: &Path, added: Vec<Added>, expected: &[i64]) -> CaseResult {
    // The one model of the format decides the order; the case's own list
    // says what the case means, and the two must agree.
    let model = Model::from_rows(&read_rows(&read(file)?)?, now_ms());
    let modelled = model.claim_order("q");
    if modelled.as_deref() != Some(expected) {
        return Err(Failure::error(
            format!("the case's expected order {} to be the model's", expected.shown()),
            format!("the model says {}", modelled.shown()),
        ));
    }
    let ids: Vec<i64> = added.iter().map(|a| a.job).collect();
    let mut worker = probe_worker(ctx, file, "q", &["--concurrency", "1"])?;
    wait_settled(ctx, file, &ids, secs(30), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let history = common::history(ctx, file, added)?;
    for run in &history.executions {
        let want = history.added.iter().find(|a| a.job == run.job).map(|a| a.payload.as_str());
        ensure!(
            want.is_some(),
            format!("only the jobs of q, {}, to run", ids.shown()),
            format!("job {} ran (attempt {}, payload {})", run.job, run.attempt, run.payload.shown())
        );
        ensure!(
            want == Some(run.payload.as_str()),
            format!("job {}'s command to read its payload {} on stdin", run.job, want.shown()),
            format!("attempt {} read {}", run.attempt, run.payload.shown())
        );
    }
    common::no_findings(
        &format!("the jobs to run in the order {}", expected.shown()),
        check::order(&history, expected),
    )?;
    common::no_findings("each job to run exactly once", check::exactly_once(&history))
}

pub(super) fn claim_order_priority(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("priority.ukue")?;
    let priorities = [0, 5, -3, 5, 100, -100];
    let jobs: Vec<(String, Vec<String>)> = priorities
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("job-{i}-priority-{p}"), vec!["--priority".into(), p.to_string()]))
        .collect();
    let added = add_all(ctx, &file, "q", &jobs)?;
    let stored = rows(&file)?;
    for (a, p) in added.iter().zip(priorities) {
        let r = stored.iter().find(|r| r.id == a.job);
        ensure_eq!(r.map(|r| r.priority), Some(p), format!("the stored priority of job {}", a.job));
    }
    // FORMAT.md's pick: priority DESC, run_at, id. The adds came one after
    // another, so run_at grows with id and the order is priority, then id.
    let mut order = stored.clone();
    order.sort_by_key(|r| (-r.priority, r.run_at, r.id));
    let expected: Vec<i64> = order.iter().map(|r| r.id).collect();
    run_in_order(ctx, &file, added, &expected)
}

pub(super) fn claim_order_run_at(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("run-at.ukue")?;
    // A whole second in the past, so that every `--at` below is past too.
    let t = now_ms().div_euclid(1_000) * 1_000;
    // (label, priority, run_at): ids 1..=6 in this order.
    let plan: [(&str, i64, i64); 6] = [
        ("a", 0, t - 1_000),
        ("b", 0, t - 3_000),
        ("c", 0, t - 2_000),
        ("d-high", 1, t - 500),
        ("e-high", 1, t - 5_000),
        ("f", 0, t - 3_000),
    ];
    let jobs: Vec<(String, Vec<String>)> = plan
        .iter()
        .map(|(label, priority, at)| {
            let mut options = vec!["--at".to_string(), rfc3339(*at)];
            if *priority != 0 {
                options.extend(["--priority".to_string(), priority.to_string()]);
            }
            (label.to_string(), options)
        })
        .collect();
    let added = add_all(ctx, &file, "q", &jobs)?;
    for (a, (label, _, at)) in added.iter().zip(plan) {
        let r = row_present(&file, a.job)?;
        ensure_eq!(Time(r.run_at), Time(at), format!("job {} ({label}) added with --at: run_at", a.job));
    }
    // e-high, d-high (priority first), then b and f (same run_at: id), c, a.
    let id = |n: usize| added[n].job;
    let expected = [id(4), id(3), id(1), id(5), id(2), id(0)];
    run_in_order(ctx, &file, added, &expected)
}

/// Due jobs at three priorities among delayed ones above, between and
/// below them: the pick goes down the priorities past every level whose
/// jobs are all delayed (FORMAT.md §5.4 step 3: among the due jobs, the
/// highest priority), and the delayed jobs stay ready, untouched. A pick
/// that walks the levels in another order can come back to a delayed
/// level for ever, and never reach the due jobs below it.
pub(super) fn claim_past_delayed_levels(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("levels.ukue")?;
    let delayed: Vec<(String, Vec<String>)> = [7, 4, 1, -2]
        .iter()
        .map(|p| {
            (
                format!("delayed-priority-{p}"),
                vec!["--delay".into(), "1h".into(), "--priority".into(), p.to_string()],
            )
        })
        .collect();
    let due: Vec<(String, Vec<String>)> = [5, 0, -5]
        .iter()
        .map(|p| (format!("due-priority-{p}"), vec!["--priority".into(), p.to_string()]))
        .collect();
    let waiting = add_all(ctx, &file, "q", &delayed)?;
    let added = add_all(ctx, &file, "q", &due)?;
    let expected: Vec<i64> = added.iter().map(|a| a.job).collect();
    run_in_order(ctx, &file, added, &expected)?;
    never_claimed(&file, &waiting, "delayed job")
}

/// Fails unless each of `jobs` is still ready and was never claimed.
fn never_claimed(file: &Path, jobs: &[Added], whose: &str) -> CaseResult {
    for a in jobs {
        let r = row_present(file, a.job)?;
        ensure!(
            r.state == "ready" && r.attempts == 0,
            format!("{whose} {} ({}) to stay ready, never claimed", a.job, a.payload),
            brief(&r)
        );
    }
    Ok(())
}

/// Jobs of queues named before and after `q`, older and at the same
/// priorities, among `q`'s own: a worker of `q` runs only `q`'s jobs, in
/// the pick's order (FORMAT.md §5.4: among the queue's ready jobs), and the
/// others stay ready, untouched. A pick that compares the queue's name by
/// order rather than equality takes a neighbour's job first.
pub(super) fn claim_own_queue(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("queues.ukue")?;
    let jobs = |queue: &str| -> Vec<(String, Vec<String>)> {
        [5, 0]
            .iter()
            .map(|p| (format!("{queue}-priority-{p}"), vec!["--priority".into(), p.to_string()]))
            .collect()
    };
    let mut others = add_all(ctx, &file, "a", &jobs("a"))?;
    others.extend(add_all(ctx, &file, "z", &jobs("z"))?);
    let added = add_all(ctx, &file, "q", &jobs("q"))?;
    let expected: Vec<i64> = added.iter().map(|a| a.job).collect();
    run_in_order(ctx, &file, added, &expected)?;
    never_claimed(&file, &others, "the job of another queue than q's worker's")
}

pub(super) fn delayed_not_early(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("delayed.ukue")?;
    let who = ctx.subject().clone();
    let t0 = now_ms();
    let delayed = ctx.add(&who, &file, "q", "delayed", &["--delay", "1500ms"])?;
    let t1 = now_ms();
    let at = now_ms() + 1_500;
    let timed = ctx.add(&who, &file, "q", "timed", &["--at", &rfc3339(at)])?;
    let delayed_at = row_present(&file, delayed)?.run_at;
    within_time(
        &format!("job {delayed} added with --delay 1500ms at [{}, {}]: run_at", rfc3339(t0), rfc3339(t1)),
        delayed_at,
        t0 + 1_500 - CLOCK_TOL,
        t1 + 1_500 + CLOCK_TOL,
    )?;
    ensure_eq!(
        Time(row_present(&file, timed)?.run_at),
        Time(at),
        format!("job {timed} added with --at: run_at")
    );
    let mut worker = probe_worker(ctx, &file, "q", &[])?;
    wait_settled(ctx, &file, &[delayed, timed], secs(15), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let runs = common::executions(ctx)?;
    for (id, run_at) in [(delayed, delayed_at), (timed, at)] {
        for run in runs_of(&runs, id) {
            // The claim's now is at least run_at, and the command starts
            // after the claim; allow a little for clock reading granularity.
            ensure!(
                run.start_ms >= run_at - 10,
                format!("job {id} to start no sooner than its run_at {}", rfc3339(run_at)),
                format!(
                    "attempt {} started at {}, {} ms early",
                    run.attempt,
                    rfc3339(run.start_ms),
                    run_at - run.start_ms
                )
            );
        }
    }
    let added = [delayed, timed]
        .iter()
        .map(|&job| Added { job, payload: String::new(), by: who.name.clone() })
        .collect();
    let history = common::history(ctx, &file, added)?;
    common::no_findings("each job to run exactly once", check::exactly_once(&history))
}

/// A running job with an expired lease, written by SQL; the subject's
/// worker on another queue claims a sentinel job there, and that claim must
/// have reaped the expired lease first (§5.4 step 2 covers every queue).
/// Returns (before, after, the time the worker started, the time the
/// harness saw the sentinel run).
fn reap(ctx: &mut Ctx, attempts: i64, max_attempts: i64) -> Result<(Row, Row, i64, i64), Failure> {
    let file = ctx.init("reap.ukue")?;
    let who = ctx.subject().clone();
    let now = now_ms();
    let put = Put::new("q", "running", now)
        .attempts(attempts, max_attempts)
        .lease(now - 1_000, "stale")
        .run_at(now - 5_000);
    let id = insert(&file, &[put])?[0];
    let sentinel = ctx.add(&who, &file, "other", "sentinel", &[])?;
    let before = row_present(&file, id)?;
    let started = now_ms();
    let mut worker = probe_worker(ctx, &file, "other", &[])?;
    let mut seen_at = 0;
    ctx.wait_for(&format!("the worker on queue `other` to claim and run job {sentinel}"), secs(15), || {
        still_working(&mut [&mut worker])?;
        let ran = common::executions(ctx)?.iter().any(|e| e.job == sentinel);
        seen_at = now_ms();
        Ok(ran)
    })?;
    let after = row_present(&file, id)?;
    ensure!(
        after.state != "running",
        format!(
            "the claim that took job {sentinel} (queue `other`) to have reaped job {id} (queue `q`, lease_until {} \
             in the past) first",
            time_or_null(before.lease_until)
        ),
        brief(&after)
    );
    wait_settled(ctx, &file, &[sentinel], secs(15), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let after = row_present(&file, id)?;
    let ran: Vec<i64> = common::executions(ctx)?.iter().map(|e| e.job).collect();
    ensure_eq!(ran, vec![sentinel], "the jobs that ran (only the sentinel of queue `other`)");
    ensure_eq!(
        (
            after.queue.as_str(),
            after.priority,
            after.max_attempts,
            Time(after.created_at),
            after.payload.as_slice()
        ),
        (
            before.queue.as_str(),
            before.priority,
            before.max_attempts,
            Time(before.created_at),
            before.payload.as_slice()
        ),
        format!("job {id} reaped: (queue, priority, max_attempts, created_at, payload) unchanged")
    );
    not_running(&after)?;
    ensure!(
        after.last_error.as_deref().is_some_and(|e| !e.trim().is_empty()),
        format!("job {id} reaped with last_error noting the expired lease"),
        brief(&after)
    );
    Ok((before, after, started, seen_at))
}

/// [`reap`] of attempt 1 of 3: the job is ready again, the attempt
/// counted. Returns the job after, and the times [`reap`] gives.
fn reaped_to_ready(ctx: &mut Ctx) -> Result<(Row, i64, i64), Failure> {
    let (_before, after, started, seen_at) = reap(ctx, 1, 3)?;
    ensure_eq!(
        (after.state.as_str(), after.attempts),
        ("ready", 1),
        format!("job {} reaped: (state, attempts)", after.id)
    );
    Ok((after, started, seen_at))
}

/// A reaped job's updated_at lies between the worker's start and the
/// moment the harness saw the reap.
fn updated_by_the_reap(after: &Row, started: i64, seen_at: i64) -> CaseResult {
    within_time(
        &format!("job {} reaped: updated_at", after.id),
        after.updated_at,
        started - CLOCK_TOL,
        seen_at + CLOCK_TOL,
    )
}

pub(super) fn lease_reaped_counted(ctx: &mut Ctx) -> CaseResult {
    let (after, started, seen_at) = reaped_to_ready(ctx)?;
    updated_by_the_reap(&after, started, seen_at)?;
    // Any backoff (FORMAT.md §5.4, §5.6), but not a run_at before the reap.
    ensure!(
        after.run_at >= after.updated_at - CLOCK_TOL,
        format!("job {} reaped at its updated_at: run_at no earlier", after.id),
        brief(&after)
    );
    Ok(())
}

/// Two running jobs of the worker's queue, and none due: one whose lease
/// ran out (its worker died), one whose lease holds for ten minutes. The
/// worker MUST reap the first (FORMAT.md §5.4 step 2; §6.3, a job whose
/// worker dies runs again), whether it looks first or not: a look that
/// finds a lease run out claims. A look that read the lease that ends last
/// would wait out the live one. The live job stays held, untouched.
pub(super) fn lease_reaped_beside_live_lease(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("reap-beside.ukue")?;
    let now = now_ms();
    let running = |lease_until: i64, token: &str| {
        Put::new("q", "running", now).attempts(1, 3).lease(lease_until, token).run_at(now - 5_000)
    };
    let ids = insert(&file, &[running(now - 1_000, "stale"), running(now + 600_000, "live")])?;
    let (lost, held) = (ids[0], ids[1]);
    let live = row_present(&file, held)?;
    let mut worker = probe_worker(ctx, &file, "q", &[])?;
    let reaped = ctx.wait_for(
        &format!(
            "the worker of `q` to reap job {lost}, whose lease ran out, beside job {held}, whose lease holds"
        ),
        secs(15),
        || {
            still_working(&mut [&mut worker])?;
            Ok(row_present(&file, lost)?.state != "running")
        },
    );
    worker.stop(secs(15))?;
    if let Err(mut f) = reaped {
        f.seen = format!("{}; file: {}", f.seen, brief_all(&rows(&file)?));
        return Err(f);
    }
    let after = row_present(&file, held)?;
    ensure!(
        (after.state.as_str(), after.attempts, after.lease_until, after.token.as_deref())
            == ("running", 1, live.lease_until, Some("live")),
        format!("job {held}, whose lease holds, to stay running, held by its token, untouched"),
        brief(&after)
    );
    Ok(())
}

pub(super) fn lease_reaped_backoff(ctx: &mut Ctx) -> CaseResult {
    let (after, started, seen_at) = reaped_to_ready(ctx)?;
    let id = after.id;
    within(
        &format!("job {id} reaped after its attempt 1: run_at − updated_at (the backoff)"),
        after.run_at - after.updated_at,
        BACKOFF_MIN - CLOCK_TOL,
        BACKOFF_MAX + CLOCK_TOL,
    )?;
    within_time(
        &format!("job {id} reaped between {} and {}: run_at", rfc3339(started), rfc3339(seen_at)),
        after.run_at,
        started + BACKOFF_MIN - SKEW,
        seen_at + BACKOFF_MAX + LATE,
    )
}

pub(super) fn lease_reaped_dead(ctx: &mut Ctx) -> CaseResult {
    let (before, after, started, seen_at) = reap(ctx, 3, 3)?;
    let id = after.id;
    ensure_eq!(
        (after.state.as_str(), after.attempts),
        ("dead", 3),
        format!("job {id} reaped on its last attempt: (state, attempts)")
    );
    ensure_eq!(
        Time(after.run_at),
        Time(before.run_at),
        format!("job {id} reaped to dead: run_at (unchanged)")
    );
    updated_by_the_reap(&after, started, seen_at)
}

pub(super) fn work_environment(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("env.ukue")?;
    let who = ctx.subject().clone();
    let first = ctx.add(&who, &file, "env-q", "hello world", &["--attempts", "4"])?;
    let now = now_ms();
    let later = insert(&file, &[Put::new("env-q", "ready", now).text("second").attempts(2, 5)])?[0];
    let out = ctx.path("env.out");
    let script = r#"printf '%s|%s|%s|%s|%s|%s\n' "$UKUE_FILE" "$UKUE_QUEUE" "$UKUE_JOB_ID" "$UKUE_ATTEMPT" "$UKUE_MAX_ATTEMPTS" "$(cat)" >> "$0""#;
    let mut options = POLL.to_vec();
    options.extend(["--concurrency", "1"]);
    let mut worker =
        start_command_worker(ctx, &who, &file, "env-q", &options, &["sh", "-c", script, path_str(&out)])?;
    let read_lines = || std::fs::read_to_string(&out).unwrap_or_default();
    ctx.wait_for("both jobs to run their command and be finished", secs(15), || {
        still_working(&mut [&mut worker])?;
        Ok(read_lines().lines().count() >= 2 && row(&file, first)?.is_none() && row(&file, later)?.is_none())
    })
    .map_err(|mut f| {
        f.seen = format!(
            "{}; the command wrote {}; file: {}",
            f.seen,
            text(&read_lines()),
            brief_all(&rows(&file).unwrap_or_default())
        );
        f
    })?;
    worker.stop(secs(15))?;
    let text = read_lines();
    let same_file = |seen: &str| {
        seen == path_str(&file)
            || std::fs::canonicalize(seen)
                .ok()
                .zip(std::fs::canonicalize(&file).ok())
                .is_some_and(|(a, b)| a == b)
    };
    for (id, attempt, max, payload) in [(first, 1, 4, "hello world"), (later, 3, 5, "second")] {
        let expected = format!("{}|env-q|{id}|{attempt}|{max}|{payload}", path_str(&file));
        let lines: Vec<&str> =
            text.lines().filter(|l| l.split('|').nth(2) == Some(id.to_string().as_str())).collect();
        ensure!(
            lines.len() == 1,
            format!("one run of job {id} with UKUE_FILE|UKUE_QUEUE|UKUE_JOB_ID|UKUE_ATTEMPT|UKUE_MAX_ATTEMPTS|stdin = {expected}"),
            format!("the command wrote {}", text.shown())
        );
        let fields: Vec<&str> = lines[0].splitn(6, '|').collect();
        let want =
            ["env-q".to_string(), id.to_string(), attempt.to_string(), max.to_string(), payload.to_string()];
        let ok = fields.len() == 6 && same_file(fields[0]) && fields[1..] == want[..];
        ensure!(ok, format!("job {id}'s command to see {expected}"), lines[0].to_string());
    }
    Ok(())
}

/// FORMAT.md §5.4: "The token MUST be a fresh random value of at least 128
/// bits, stored as text". From outside: every claim's token (as the probe
/// read it from the file while its run held the job) is TEXT, no two are
/// alike, and each is long enough to hold 128 bits in the alphabet the
/// tokens use (32 hex digits; 22 characters of base64): a lower bound, so
/// that no correct program fails it.
pub(super) fn claim_token_fresh(ctx: &mut Ctx) -> CaseResult {
    const JOBS: usize = 20;
    let file = ctx.init("tokens.ukue")?;
    let jobs: Vec<(String, Vec<String>)> = (0..JOBS).map(|i| (format!("token-{i}"), Vec::new())).collect();
    let added = add_all(ctx, &file, "q", &jobs)?;
    let ids: Vec<i64> = added.iter().map(|a| a.job).collect();
    let mut worker = probe_worker(ctx, &file, "q", &["--concurrency", "2"])?;
    wait_settled(ctx, &file, &ids, secs(30), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let history = common::history(ctx, &file, added)?;
    let mut findings = check::exactly_once(&history);
    findings.extend(token_findings(&history.executions));
    common::no_findings(
        &format!(
            "each of the {JOBS} claims to store a new token, as text, of at least 128 bits (FORMAT.md §5.4)"
        ),
        findings,
    )
}

/// What is wrong with the tokens the runs held: not read, not TEXT, one
/// used twice, too short for 128 bits in the tokens' alphabet.
fn token_findings(runs: &[crate::history::Execution]) -> Vec<check::Finding> {
    let mut alphabet: Vec<char> = runs.iter().flat_map(|e| e.token.iter().flat_map(|t| t.chars())).collect();
    alphabet.sort_unstable();
    alphabet.dedup();
    let bits_a_char = (alphabet.len().max(2) as f64).log2();
    let mut seen = std::collections::BTreeMap::new();
    let mut findings = Vec::new();
    let mut found = |e: &crate::history::Execution, message: String| {
        let f = check::Finding { check: "token", job: Some(e.job), message, ..Default::default() };
        findings.push(f.blaming([e]));
    };
    for e in runs {
        let Some(token) = &e.token else {
            found(e, format!("attempt {} (pid {}): the file showed no token while it ran", e.attempt, e.pid));
            continue;
        };
        if e.token_type.as_deref() != Some("text") {
            found(
                e,
                format!(
                    "attempt {}: the token {} is stored as {}, not text",
                    e.attempt,
                    token.shown(),
                    e.token_type.shown()
                ),
            );
        }
        let bits = token.chars().count() as f64 * bits_a_char;
        if token.len() < 16 || bits < 128.0 {
            found(
                e,
                format!(
                    "attempt {}: the token {} holds at most {bits:.0} bits ({} characters of an alphabet of {})",
                    e.attempt,
                    token.shown(),
                    token.chars().count(),
                    alphabet.len()
                ),
            );
        }
        if let Some(other) = seen.insert(token.clone(), (e.job, e.attempt)) {
            found(
                e,
                format!(
                    "attempt {}: the token {} was job {}'s attempt {} too",
                    e.attempt,
                    token.shown(),
                    other.0,
                    other.1
                ),
            );
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Execution;

    fn run(job: i64, token: &str) -> Execution {
        Execution {
            job,
            attempt: 1,
            token: Some(token.into()),
            token_type: Some("text".into()),
            ..Default::default()
        }
    }

    #[test]
    fn tokens_must_be_new_text_and_long_enough() {
        let hex: Vec<Execution> = (0..16)
            .map(|i| run(i, &format!("{:032x}", 0x0123_4567_89ab_cdefu128 * (i as u128 + 3))))
            .collect();
        assert_eq!(token_findings(&hex), vec![], "32 hex digits hold 128 bits");
        let short: Vec<Execution> =
            (0..16).map(|i| run(i, &format!("{:08x}", 0x89ab_cdefu32.wrapping_mul(i as u32 + 3)))).collect();
        assert_eq!(token_findings(&short).len(), 16, "8 hex digits hold 32");
        let mut twice = hex.clone();
        twice[1].token = twice[0].token.clone();
        twice[2].token_type = Some("blob".into());
        twice[3].token = None;
        let checks: Vec<String> = token_findings(&twice).into_iter().map(|f| f.message).collect();
        assert_eq!(checks.len(), 3, "{checks:?}");
    }
}
