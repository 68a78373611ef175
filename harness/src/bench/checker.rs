//! The history checkers on large synthetic histories: a run of
//! executions (a start and an end event each) over jobs of which a tenth
//! failed once and ran again.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::check;
use crate::history::{Added, Execution, History};

/// How long the checkers took on a history of `events` events.
#[derive(Debug, Clone)]
pub struct Timing {
    pub events: u64,
    pub executions: u64,
    pub jobs: u64,
    /// Each checker with its time (the best of three runs).
    pub checks: Vec<(&'static str, Duration)>,
}

impl Timing {
    pub fn total(&self) -> Duration {
        self.checks.iter().map(|(_, d)| *d).sum()
    }
}

/// Workers that ran the synthetic executions.
const WORKERS: u32 = 4;

/// A history of `events` events: `events / 2` executions over jobs of
/// which one in ten failed its first attempt and succeeded on its second.
/// It is clean: every checker finds nothing in it.
pub fn synthetic(events: u64) -> History {
    let executions = events / 2;
    // jobs + retried = executions, with one job in ten or fewer retried.
    let jobs = (executions * 10).div_ceil(11);
    let retried = executions - jobs;
    let added = (1..=jobs as i64).map(|job| Added { job, payload: format!("p{job}"), by: "bench".into() });
    let mut at = 0i64;
    let mut pid = 1000u32;
    let mut run = |job: i64, attempt: i64, exit: i32| {
        at += 2;
        pid = pid.wrapping_add(1);
        Execution {
            job,
            attempt,
            max_attempts: 10,
            pid,
            worker_pid: pid % WORKERS + 1,
            start_ms: at,
            end_ms: Some(at + 1),
            held_at_start: Some(true),
            reaped_before_start: false,
            held_at_end: Some(true),
            exit: Some(exit),
            payload: format!("p{job}"),
            ..Default::default()
        }
    };
    let mut runs = Vec::with_capacity(executions as usize);
    for job in 1..=jobs as i64 {
        // The retried jobs are spread through the run: every tenth job.
        let failed_first = job % 10 == 0 && (job / 10) as u64 <= retried;
        if failed_first {
            runs.push(run(job, 1, 1));
        }
        runs.push(run(job, if failed_first { 2 } else { 1 }, 0));
    }
    History { added: added.collect(), executions: runs, ..History::default() }
}

type Checker<'a> = &'a dyn Fn(&History) -> Vec<check::Finding>;

/// Times `exactly_once`, `at_least_once`, `stale_token` and `order` on a
/// synthetic history of `events` events: the best of three runs each.
pub fn time(events: u64) -> Result<Timing> {
    let history = synthetic(events);
    let expected: Vec<i64> = history.executions.iter().map(|e| e.job).collect();
    let order = |h: &History| check::order(h, &expected);
    let checkers: [(&'static str, Checker); 4] = [
        ("exactly_once", &check::exactly_once),
        ("at_least_once", &check::at_least_once),
        ("stale_token", &check::stale_token),
        ("order", &order),
    ];
    let mut checks = Vec::new();
    for (name, checker) in checkers {
        let mut best = Duration::MAX;
        for _ in 0..3 {
            let start = Instant::now();
            let findings = checker(&history);
            best = best.min(start.elapsed());
            if !findings.is_empty() {
                bail!(
                    "{name} found {} things wrong in a clean history, first: {}",
                    findings.len(),
                    findings[0]
                );
            }
        }
        checks.push((name, best));
    }
    Ok(Timing {
        events: history.executions.len() as u64 * 2,
        executions: history.executions.len() as u64,
        jobs: history.added.len() as u64,
        checks,
    })
}
