//! What the end of a job's command does to the job: other exit statuses
//! and signals fail the attempt, with a `last_error` that says why; a
//! command that exits 0 finishes its job even while a process it left
//! behind holds its output.

use rand::Rng;

use crate::cases::common;
use crate::cases::steps::rows::{brief, brief_all, has_error, not_running, row_present};
use crate::cases::steps::running::{still_working, wait_settled};
use crate::cases::CaseResult;
use crate::subjects::ctx::Ctx;
use crate::subjects::observe::file::{row, rows, write};
use crate::subjects::worker::start_worker;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::support::{probe_worker, secs, wait_started, POLL};

/// (payload, max attempts): statuses but 0 and 65 and deaths by signal
/// fail the attempt; dead on the last one.
/// Each sleeps first, so that the fail's updated_at shows it came after.
const ENDINGS: &[(&str, &str)] = &[
    ("sleep:300 exit:1", "3"),
    ("sleep:300 exit:2", "3"),
    ("sleep:300 exit:64", "3"),
    ("sleep:300 exit:66", "3"),
    ("sleep:300 exit:255", "3"),
    ("sleep:300 signal:9", "3"),
    ("sleep:300 signal:15", "3"),
    ("sleep:300 exit:3 last-attempt", "1"),
    ("sleep:300 signal:9 last-attempt", "1"),
];
/// How long each of them sleeps (ms).
const ENDING_SLEEP_MS: i64 = 300;

/// Two readings of the same clock, by two programs.
const CLOCK_SKEW_MS: i64 = 100;

pub(in crate::cases::cli) fn exit_other(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("endings.ukue")?;
    let who = ctx.subject().clone();
    let mut ids = Vec::new();
    for (payload, attempts) in ENDINGS {
        ids.push(ctx.add(&who, &file, "q", payload, &["--attempts", attempts])?);
    }
    // Due a minute ago: a fail that kept run_at would leave it there.
    write(&file)?.execute("UPDATE ukue_jobs SET run_at = run_at - 60000", [])?;
    let mut options = vec!["--concurrency", "4"];
    options.extend(POLL);
    let mut worker = start_worker(ctx, &who, &file, "q", &options)?;
    wait_settled(ctx, &file, &ids, secs(20), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let runs = common::executions(ctx)?;
    for (&id, (payload, attempts)) in ids.iter().zip(ENDINGS) {
        // The backoff is the program's own (FORMAT.md §5.6): a short one
        // runs a job again before the worker stops, each run an attempt.
        let ran = runs.iter().filter(|e| e.job == id).count() as i64;
        let most: i64 = attempts.parse().expect("a number");
        ensure!(
            (1..=most).contains(&ran),
            format!("job {id} ({payload:?}, --attempts {attempts}) to run 1 to {most} times"),
            format!("{ran} runs")
        );
        let state = if ran < most { "ready" } else { "dead" };
        let what = format!(
            "job {id} ({payload:?}, --attempts {attempts}) after {ran} failed runs: (state, attempts)"
        );
        let r = row(&file, id)?.ok_or_else(|| {
            Failure::fail(
                format!("{what}: {:?}", (state, ran)),
                "it is gone: finished, as if it had exited 0",
            )
        })?;
        ensure_eq!((r.state.as_str(), r.attempts), (state, ran), what);
        // Due after a backoff of the program's own (FORMAT.md §5.6), never
        // before the attempt failed.
        let last_start = runs.iter().filter(|e| e.job == id).map(|e| e.start_ms).max().unwrap_or(0);
        ensure!(
            r.updated_at >= last_start + ENDING_SLEEP_MS - CLOCK_SKEW_MS,
            format!(
                "job {id} ({payload:?}) failed: updated_at the time of the fail, after its last run's \
                 {ENDING_SLEEP_MS} ms (it started at {last_start} ms)"
            ),
            format!("updated_at {} ms", r.updated_at)
        );
        ensure!(
            state == "dead" || r.run_at >= last_start - CLOCK_SKEW_MS,
            format!("job {id} ({payload:?}) failed: run_at no earlier than its last run's start ({last_start} ms)"),
            format!("run_at {} ms", r.run_at)
        );
        not_running(&r)?;
        has_error(&r)?;
    }
    Ok(())
}

/// What a timed-out attempt's `last_error` may say.
fn says_timed_out(error: &str) -> bool {
    let error = error.to_lowercase();
    ["timed out", "timeout", "time out", "timed-out"].iter().any(|w| error.contains(w))
}

/// How many bytes of a command's stderr `last_error` may hold.
const TAIL_MOST: usize = 4000;

pub(in crate::cases::cli) fn last_error_text(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("errors.ukue")?;
    let who = ctx.subject().clone();
    let tag: String = (0..10).map(|_| ctx.rng.gen_range(b'a'..=b'z') as char).collect();
    let tail = format!("TAIL-{tag}");
    // 6,000 bytes of x (no digit, so that 37 can only be the status), then the tail.
    let loud = ctx.add(&who, &file, "loud", &format!("fill-stderr:6000 stderr:{tail} exit:37"), &[])?;
    let slow = ctx.add(&who, &file, "slow", "sleep:60000", &[])?;
    let mut loud_worker = start_worker(ctx, &who, &file, "loud", &POLL)?;
    let mut options = vec!["--timeout", "300ms"];
    options.extend(POLL);
    let mut slow_worker = start_worker(ctx, &who, &file, "slow", &options)?;
    wait_settled(ctx, &file, &[loud, slow], secs(20), &mut [&mut loud_worker, &mut slow_worker])?;
    loud_worker.stop(secs(15))?;
    slow_worker.stop(secs(15))?;
    let error = row_present(&file, loud)?.last_error.unwrap_or_default();
    ensure!(
        error.contains("37") && error.contains(&tail) && error.len() <= TAIL_MOST + 200,
        format!(
            "job {loud}, whose command wrote 6,000 bytes and then {tail:?} on stderr and exited 37: a last_error \
             with the status 37 and the end of that stderr, at most {TAIL_MOST} bytes of it"
        ),
        format!("{} bytes: {:?}", error.len(), crate::subjects::ctx::clip(&error))
    );
    let r = row_present(&file, slow)?;
    let error = r.last_error.clone().unwrap_or_default();
    ensure!(
        says_timed_out(&error),
        format!("job {slow}, stopped by --timeout 300ms: a last_error that says it timed out"),
        brief(&r)
    );
    Ok(())
}

pub(in crate::cases::cli) fn background_output(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("background.ukue")?;
    let who = ctx.subject().clone();
    let job = ctx.add(&who, &file, "q", "background:120000 leaves-a-child", &[])?;
    let (mut worker, log) = probe_worker(ctx, &file, "q", &POLL, "background.log", &[])?;
    let started = wait_started(ctx, &log, &[job], secs(15), &mut [&mut worker])?;
    ensure!(
        started[0].children.len() == 1,
        "the probe to start a child that holds its stdout and stderr",
        format!("children {:?}", started[0].children)
    );
    // The published command gives such a child 10 s, then finishes the job.
    let what = format!(
        "job {job}, whose command exited 0 leaving a child (pid {}) that holds its stdout and stderr for \
         2 minutes, to be finished",
        started[0].children[0]
    );
    ctx.wait_for(&what, secs(25), || {
        still_working(&mut [&mut worker])?;
        match row(&file, job)? {
            None => Ok(true),
            Some(r) if r.state == "done" => Ok(true),
            Some(r) if r.state == "running" => Ok(false),
            Some(r) => Err(Failure::fail(what.clone(), brief(&r))),
        }
    })
    .map_err(|mut f| {
        f.seen = format!("{}; file: {}", f.seen, brief_all(&rows(&file).unwrap_or_default()));
        f
    })?;
    worker.stop(secs(15))
}
