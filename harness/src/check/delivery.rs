//! Delivery checks: nothing lost, nothing run twice without an excuse, no
//! two holders at once, attempts counted once each, order kept, each
//! payload as it was added.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{finding, Finding};
use crate::history::{Added, Execution, History, RunRef};
use crate::shown::{rfc3339, text, time_or_null, Shown};

/// Why a job may rightly run again after an earlier execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Excuse {
    /// The earlier command failed (non-zero exit): a retry.
    Failed,
    /// The earlier command never recorded its end: it was killed.
    Killed,
    /// The earlier command's worker was killed.
    WorkerKilled,
    /// The earlier command no longer held the job at its end: its lease
    /// ran out and the job was reaped.
    LeaseLapsed,
    /// The earlier command ended well and still held the job, but its
    /// lease, as the file showed it then, had run out before the later run
    /// started: its finish came too late (a stalled worker) and a claim
    /// reaped the job, as FORMAT.md §5.4 allows.
    LeaseLapsedAfterEnd,
}

/// Why `earlier` excuses a later run of its job, if it does.
pub fn excuse(earlier: &Execution, killed_workers: &BTreeSet<u32>) -> Option<Excuse> {
    if killed_workers.contains(&earlier.worker_pid) {
        Some(Excuse::WorkerKilled)
    } else {
        own_excuse(earlier)
    }
}

/// Why `earlier` excuses `later`, the next run of its job, if it does,
/// the most specific excuse first: its own ([`own_excuse`]), then a lease
/// that ran out after `earlier` ended and before `later` began, and only
/// then the death of its worker (see [`reruns`]).
fn rerun_excuse(earlier: &Execution, later: &Execution, killed_workers: &BTreeSet<u32>) -> Option<Excuse> {
    own_excuse(earlier)
        .or_else(|| lapsed_after_end(earlier, later))
        .or_else(|| excuse(earlier, killed_workers))
}

fn lapsed_after_end(earlier: &Execution, later: &Execution) -> Option<Excuse> {
    let lapsed =
        earlier.held_at_end == Some(true) && earlier.lease_until.is_some_and(|l| l <= later.start_ms);
    lapsed.then_some(Excuse::LeaseLapsedAfterEnd)
}

/// The excuse that `earlier` gives by itself, whatever became of its worker.
fn own_excuse(earlier: &Execution) -> Option<Excuse> {
    if earlier.end_ms.is_none() {
        Some(Excuse::Killed)
    } else if earlier.held_at_end == Some(false) {
        Some(Excuse::LeaseLapsed)
    } else if earlier.exit != Some(0) {
        Some(Excuse::Failed)
    } else {
        None
    }
}

/// The executions of each job in start order, the jobs in id order, in
/// one sorted vector (not a map with a vector a job), so that the checks
/// stay linear in the history's length.
struct ByJob<'a> {
    runs: Vec<&'a Execution>,
}

impl<'a> ByJob<'a> {
    fn of(history: &'a History) -> ByJob<'a> {
        let mut runs: Vec<&Execution> = history.executions.iter().collect();
        // A stable sort: ties keep the history's order. The history is
        // nearly in this order already, which the sort exploits.
        runs.sort_by_key(|e| (e.job, e.start_ms, e.attempt));
        ByJob { runs }
    }

    /// Each job with its runs.
    fn jobs(&self) -> impl Iterator<Item = (i64, &[&'a Execution])> {
        self.runs.chunk_by(|a, b| a.job == b.job).map(|runs| (runs[0].job, runs))
    }
}

/// Every job that was added (and acknowledged) must have run to a good
/// end, or be dead in the file. A job still ready or running at the end
/// of a drain is lost.
pub fn lost(history: &History) -> Vec<Finding> {
    lost_in(history, &ByJob::of(history))
}

fn lost_in(history: &History, by_job: &ByJob) -> Vec<Finding> {
    // Each added job's (runs, one ended well), found by walking the added
    // jobs and the runs side by side in job order.
    let added = &history.added;
    let mut in_job_order: Vec<usize> = (0..added.len()).collect();
    in_job_order.sort_by_key(|&i| added[i].job);
    let mut found: Vec<(&[&Execution], bool)> = vec![(&[], false); added.len()];
    let mut jobs = by_job.jobs().peekable();
    for i in in_job_order {
        while jobs.next_if(|(job, _)| *job < added[i].job).is_some() {}
        if let Some((_, runs)) = jobs.peek().filter(|(job, _)| *job == added[i].job) {
            found[i] = (runs, runs.iter().any(|e| e.succeeded()));
        }
    }
    added
        .iter()
        .zip(found)
        .filter(|(added, (_, finished))| {
            !finished && history.final_jobs.get(&added.job).is_none_or(|j| j.state != "dead")
        })
        .map(|(added, (runs, _))| {
            let state =
                history.final_jobs.get(&added.job).map(|j| j.state.as_str()).unwrap_or("gone from the file");
            finding(
                "lost",
                Some(added.job),
                format!(
                    "added by {} and acknowledged, never finished ({} runs; now {state})",
                    added.by,
                    runs.len()
                ),
            )
            .blaming(runs.iter().copied())
        })
        .collect()
}

/// A job that ran again although nothing excuses it.
pub fn duplicates(history: &History) -> Vec<Finding> {
    duplicates_in(history, &ByJob::of(history))
}

fn duplicates_in(history: &History, by_job: &ByJob) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (job, runs) in by_job.jobs() {
        for pair in runs.windows(2) {
            if rerun_excuse(pair[0], pair[1], &history.killed_workers).is_none() {
                findings.push(
                    finding(
                        "duplicate",
                        Some(job),
                        format!(
                            "ran again (attempt {} at {}) after attempt {} had finished well at {}",
                            pair[1].attempt,
                            rfc3339(pair[1].start_ms),
                            pair[0].attempt,
                            time_or_null(pair[0].end_ms)
                        ),
                    )
                    .blaming([pair[0], pair[1]]),
                );
            }
        }
    }
    findings
}

/// Two executions of one job at once, the earlier still holding it.
pub fn overlaps(history: &History) -> Vec<Finding> {
    overlaps_in(history, &ByJob::of(history))
}

fn overlaps_in(history: &History, by_job: &ByJob) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (job, runs) in by_job.jobs() {
        for (i, a) in runs.iter().enumerate() {
            let a_end = a.end_ms.unwrap_or(i64::MAX);
            let a_still_held = a.held_at_end != Some(false) && excuse(a, &history.killed_workers).is_none();
            if !a_still_held {
                continue;
            }
            // The runs are in start order: once one starts after `a` ended,
            // so do all that follow.
            for b in runs[i + 1..].iter().take_while(|b| b.start_ms < a_end) {
                findings.push(finding(
                    "two holders",
                    Some(job),
                    format!(
                        "attempt {} (pid {}) started at {} while attempt {} (pid {}) ran until {} and still held it",
                        b.attempt,
                        b.pid,
                        rfc3339(b.start_ms),
                        a.attempt,
                        a.pid,
                        a.end_ms.map_or_else(|| "its end (none recorded)".to_string(), rfc3339)
                    ),
                )
                .blaming([*a, *b]));
            }
        }
    }
    findings
}

/// Each run of a job is the next attempt: a repeated number is an attempt
/// not counted, a skipped one an attempt counted twice.
pub fn attempts(history: &History) -> Vec<Finding> {
    attempts_in(&ByJob::of(history))
}

fn attempts_in(by_job: &ByJob) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (job, runs) in by_job.jobs() {
        let mut expected = runs.first().map_or(1, |e| e.attempt.max(1));
        if let Some(first) = runs.first() {
            if first.attempt != 1 {
                findings.push(
                    finding("attempts", Some(job), format!("first run was attempt {}", first.attempt))
                        .blaming([*first]),
                );
            }
        }
        for (i, run) in runs.iter().enumerate() {
            let with_previous = runs[i.saturating_sub(1)..=i].iter().copied();
            if run.attempt < expected {
                findings.push(
                    finding("attempts", Some(job), format!("attempt {} ran again: not counted", run.attempt))
                        .blaming(with_previous),
                );
            } else if run.attempt > expected {
                findings.push(
                    finding(
                        "attempts",
                        Some(job),
                        format!("attempt {} followed attempt {}: counted twice", run.attempt, expected - 1),
                    )
                    .blaming(with_previous),
                );
            }
            expected = run.attempt + 1;
            if run.max_attempts > 0 && run.attempt > run.max_attempts {
                findings.push(beyond_max(job, run));
            }
        }
    }
    findings
}

fn beyond_max(job: i64, run: &Execution) -> Finding {
    finding(
        "attempts",
        Some(job),
        format!("attempt {} ran, beyond max_attempts {}", run.attempt, run.max_attempts),
    )
    .blaming([run])
}

/// A command must start only once its claim has committed: the file shows
/// the job running with this attempt when it starts, or back in `ready`
/// with this attempt counted, or with a later attempt counted (its claim
/// committed, and its lease ran out before the command started: a worker
/// stalled on a loaded machine).
pub fn held_at_start(history: &History) -> Vec<Finding> {
    history
        .executions
        .iter()
        .filter(|e| e.held_at_start == Some(false) && !e.reaped_before_start)
        .map(|e| {
            finding(
                "not held at start",
                Some(e.job),
                format!(
                    "attempt {} (pid {}) started while the file did not show it holding the job",
                    e.attempt, e.pid
                ),
            )
            .blaming([e])
        })
        .collect()
}

/// Without crashes or stopped workers, nobody may take or change a job
/// while its holder runs.
pub fn changed_while_held(history: &History) -> Vec<Finding> {
    changed_while_held_in(history, &ByJob::of(history))
}

fn changed_while_held_in(history: &History, by_job: &ByJob) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (job, runs) in by_job.jobs() {
        for e in runs {
            if e.held_at_end != Some(false) || history.killed_workers.contains(&e.worker_pid) {
                continue;
            }
            // Who took it: the runs of the job that ran while it did, and
            // its next attempt (whose command may start only after).
            let end = e.end_ms.unwrap_or(i64::MAX);
            let next = runs.iter().filter(|o| o.attempt > e.attempt).min_by_key(|o| o.attempt);
            let during = runs
                .iter()
                .filter(|o| o.pid != e.pid && o.start_ms < end && o.end_ms.is_none_or(|t| t > e.start_ms))
                .chain(next);
            findings.push(
                finding(
                    "changed while held",
                    Some(job),
                    format!("attempt {} (pid {}) no longer held the job when it ended", e.attempt, e.pid),
                )
                .blaming(std::iter::once(*e).chain(during.copied())),
            );
        }
    }
    findings
}

/// A job's latest holder lost it while it ran, after an earlier holder's
/// worker was stopped or killed: the old holder's late step (with its stale
/// token) was accepted.
pub fn stale_token(history: &History) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (job, runs) in ByJob::of(history).jobs() {
        let Some(last) = runs.last() else { continue };
        let earlier_interrupted =
            runs[..runs.len() - 1].iter().find(|e| history.killed_workers.contains(&e.worker_pid));
        if let (Some(old), Some(false)) = (earlier_interrupted, last.held_at_end) {
            findings.push(finding(
                "stale token accepted",
                Some(job),
                format!(
                    "attempt {} (pid {}) lost the job while it ran; the stopped holder of attempt {} (worker {}) changed it",
                    last.attempt, last.pid, old.attempt, old.worker_pid
                ),
            )
            .blaming([*old, *last]));
        }
    }
    findings
}

/// Runs in start order must be `expected` (one worker, one at a time).
pub fn order(history: &History, expected: &[i64]) -> Vec<Finding> {
    let mut runs: Vec<&Execution> = history.executions.iter().collect();
    runs.sort_by_key(|e| e.start_ms);
    let seen: Vec<i64> = runs.iter().map(|e| e.job).collect();
    if seen == expected {
        Vec::new()
    } else {
        // The first run out of place, and the one it took the place of.
        let first =
            seen.iter().zip(expected).position(|(a, b)| a != b).unwrap_or(seen.len().min(expected.len()));
        let out_of_place = runs.get(first).into_iter().copied();
        let due = expected.get(first).and_then(|job| runs.iter().find(|e| e.job == *job)).copied();
        vec![finding(
            "order",
            None,
            format!("jobs ran in the order {}, expected {}", seen.shown(), expected.shown()),
        )
        .blaming(out_of_place.chain(due))]
    }
}

/// Executions whose payload (as the probe read it on stdin) is not the
/// payload the job was added with.
pub fn payloads(history: &History) -> Vec<Finding> {
    let added: HashMap<i64, &str> = history.added.iter().map(|a| (a.job, a.payload.as_str())).collect();
    history
        .executions
        .iter()
        .filter_map(|e| {
            let want = added.get(&e.job)?;
            // The probe keeps the first 200 characters.
            let want: String = want.chars().take(200).collect();
            (e.payload != want).then(|| {
                finding(
                    "payload",
                    Some(e.job),
                    format!(
                        "attempt {} read {} on stdin, but the job holds {}",
                        e.attempt,
                        text(&e.payload),
                        text(&want)
                    ),
                )
                .blaming([e])
            })
        })
        .collect()
}

/// Jobs whose every attempt fails must end dead after exactly
/// max_attempts runs.
pub fn dead_after_max(history: &History, always_failing: &[i64]) -> Vec<Finding> {
    let mut counts: HashMap<i64, i64> = always_failing.iter().map(|&job| (job, 0)).collect();
    for e in &history.executions {
        if let Some(runs) = counts.get_mut(&e.job) {
            *runs += 1;
        }
    }
    let mut findings = Vec::new();
    for job in always_failing {
        let runs = counts[job];
        match history.final_jobs.get(job) {
            Some(f) if f.state == "dead" && runs == f.max_attempts => {}
            Some(f) => findings.push(finding(
                "dead after max",
                Some(*job),
                format!(
                    "{runs} runs of max_attempts {}, now {} with {} attempts",
                    f.max_attempts, f.state, f.attempts
                ),
            )),
            None => findings.push(finding("dead after max", Some(*job), "gone from the file, expected dead")),
        }
    }
    findings
}

/// The delivery checks of a run without crashes: those of
/// [`at_least_once`], and every attempt counted once and no job disturbed
/// while its holder runs.
pub fn exactly_once(history: &History) -> Vec<Finding> {
    let by_job = ByJob::of(history);
    let mut findings = delivered(history, &by_job);
    findings.extend(attempts_in(&by_job));
    findings.extend(changed_while_held_in(history, &by_job));
    findings
}

/// The delivery checks of a run with crashes: nothing lost, every second
/// run excused, one holder at a time, every command started by its holder.
pub fn at_least_once(history: &History) -> Vec<Finding> {
    delivered(history, &ByJob::of(history))
}

fn delivered(history: &History, by_job: &ByJob) -> Vec<Finding> {
    let mut findings = lost_in(history, by_job);
    findings.extend(duplicates_in(history, by_job));
    findings.extend(overlaps_in(history, by_job));
    findings.extend(held_at_start(history));
    findings
}

/// A run of a job after an earlier run of it, and what excuses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rerun {
    pub job: i64,
    pub attempt: i64,
    /// The attempt of the run before it.
    pub after: i64,
    /// The two runs: the one before, and this one.
    pub runs: [RunRef; 2],
    /// None when nothing does: then [`duplicates`] has a finding for it.
    pub excuse: Option<Excuse>,
}

/// Every run of a job after its first, with the excuse that the run
/// before it gives, for a report. A run is excused exactly when
/// [`duplicates`] excuses it, but the excuse named is the most specific:
/// a killed command, then a lapsed lease, then a failure, then a lease
/// that ran out after the run ended, and only then the death of its
/// worker — which so names a run that ended well and held its job, whose
/// finish the death cut off. A lease that ran out before the rerun began
/// excuses it whatever became of the worker later: with many processes
/// on one file a finish can come too late, a reap then takes the job, and
/// the worker is killed only after (seen at `--processes 32`).
pub fn reruns(history: &History) -> Vec<Rerun> {
    let mut reruns = Vec::new();
    for (job, runs) in ByJob::of(history).jobs() {
        for pair in runs.windows(2) {
            let earlier = pair[0];
            let excuse = rerun_excuse(earlier, pair[1], &history.killed_workers);
            reruns.push(Rerun {
                job,
                attempt: pair[1].attempt,
                after: earlier.attempt,
                runs: [RunRef::from(earlier), RunRef::from(pair[1])],
                excuse,
            });
        }
    }
    reruns
}

/// With killed workers: a run that ended well and held its job excuses a
/// rerun by its worker's death only when the death came before the finish
/// committed. `cut_off` holds the (job, attempt) of such runs, as the file
/// showed them once the worker was dead: the job still there, not done.
pub fn finish_cut_off(history: &History, cut_off: &BTreeSet<(i64, i64)>) -> Vec<Finding> {
    reruns(history)
        .into_iter()
        .filter(|r| r.excuse == Some(Excuse::WorkerKilled) && !cut_off.contains(&(r.job, r.after)))
        .map(|r| Finding {
            runs: r.runs.to_vec(),
            ..finding(
                "duplicate",
                Some(r.job),
                format!(
                    "ran again (attempt {}) after attempt {} had ended well and its finish had committed; \
                     its worker was killed only later",
                    r.attempt, r.after
                ),
            )
        })
        .collect()
}

/// With crashes: each run of a job is a later attempt than the run before
/// it. A claim that committed just before its worker died leaves a number
/// unused, but no number is used twice: every claim counts (FORMAT.md §5.4).
pub fn attempts_rise(history: &History) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (job, runs) in ByJob::of(history).jobs() {
        for pair in runs.windows(2) {
            if pair[1].attempt <= pair[0].attempt {
                findings.push(
                    finding(
                        "attempts",
                        Some(job),
                        format!(
                            "attempt {} ran after attempt {}: a claim was not counted",
                            pair[1].attempt, pair[0].attempt
                        ),
                    )
                    .blaming([pair[0], pair[1]]),
                );
            }
        }
        if let Some(run) = runs.iter().find(|e| e.max_attempts > 0 && e.attempt > e.max_attempts) {
            findings.push(beyond_max(job, run));
        }
    }
    findings
}

/// Adds cut off by a kill ([`History::unknown`]) committed whole or not at
/// all. One that committed shows as the runs of one job with its payload:
/// it comes back as an [`Added`], for the other checks to hold it to what
/// they hold any acknowledged add to. The findings: a run whose payload
/// no add had (`partly written`: a row committed before all of it was
/// written), one add's payload under two ids or two adds under one id
/// (`id used twice`).
///
/// [`History::unknown`]: crate::history::History::unknown
pub fn resolve_unknown(history: &History) -> (Vec<Added>, Vec<Finding>) {
    let mut findings = Vec::new();
    // Each job's payloads as its runs read them.
    let mut ran: BTreeMap<i64, BTreeSet<&str>> = BTreeMap::new();
    for e in &history.executions {
        ran.entry(e.job).or_default().insert(e.payload.as_str());
    }
    let mut owner: HashMap<i64, &str> = HashMap::new();
    for a in &history.added {
        if let Some(other) = owner.insert(a.job, &a.payload) {
            findings.push(finding(
                "id used twice",
                Some(a.job),
                format!("printed for {} and for {}", text(other), text(&a.payload)),
            ));
        }
    }
    let unknown: HashMap<&str, &str> =
        history.unknown.iter().map(|u| (u.payload.as_str(), u.by.as_str())).collect();
    let mut committed: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for (&job, payloads) in &ran {
        if payloads.len() > 1 {
            findings.push(finding(
                "id used twice",
                Some(job),
                format!("its runs read the payloads {}", payloads.shown()),
            ));
        }
        for &payload in payloads {
            if unknown.contains_key(payload) {
                committed.entry(payload).or_default().push(job);
                if let Some(other) = owner.get(&job) {
                    findings.push(finding(
                        "id used twice",
                        Some(job),
                        format!("printed for {}, and ran the cut-off add {}", text(other), text(payload)),
                    ));
                }
            } else if !owner.contains_key(&job) {
                findings.push(finding(
                    "partly written",
                    Some(job),
                    format!(
                        "ran with the payload {}, which no add had: a row committed half-written",
                        text(payload)
                    ),
                ));
            }
        }
    }
    let mut resolved = Vec::new();
    for (payload, jobs) in committed {
        if let [job] = jobs[..] {
            resolved.push(Added {
                job,
                payload: payload.to_string(),
                by: format!("{} (killed mid-add)", unknown[payload]),
            });
        } else {
            findings.push(finding(
                "id used twice",
                None,
                format!("the cut-off add {} ran as jobs {}", text(payload), jobs.shown()),
            ));
        }
    }
    (resolved, findings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Added, FinalJob};

    fn run(job: i64, attempt: i64, start: i64, end: Option<i64>, exit: Option<i32>) -> Execution {
        Execution {
            job,
            attempt,
            max_attempts: 3,
            pid: (job * 100 + attempt) as u32,
            worker_pid: 7,
            start_ms: start,
            end_ms: end,
            held_at_start: Some(true),
            reaped_before_start: false,
            held_at_end: end.map(|_| true),
            exit,
            payload: String::new(),
            ..Default::default()
        }
    }

    fn added(jobs: &[i64]) -> Vec<Added> {
        jobs.iter().map(|&job| Added { job, payload: format!("p{job}"), by: "test".into() }).collect()
    }

    fn history(jobs: &[i64], executions: Vec<Execution>) -> History {
        History { added: added(jobs), executions, ..History::default() }
    }

    #[test]
    fn a_lease_that_ran_out_after_a_good_end_excuses_the_rerun_only_when_it_had_run_out() {
        // Attempt 1 ended well at 10, holding the job with a lease to 15;
        // its finish never committed (its worker stalled), and a claim
        // reaped the job.
        let first = Execution { lease_until: Some(15), ..run(1, 1, 0, Some(10), Some(0)) };
        let h = history(&[1], vec![first.clone(), run(1, 2, 15, Some(20), Some(0))]);
        assert_eq!(duplicates(&h), vec![]);
        assert_eq!(reruns(&h)[0].excuse, Some(Excuse::LeaseLapsedAfterEnd));
        // Its worker killed later: the lapse still excuses the rerun, and
        // no finish is said to have been cut off.
        let mut killed_later = history(&[1], vec![first.clone(), run(1, 2, 15, Some(20), Some(0))]);
        killed_later.killed_workers.insert(7);
        assert_eq!(reruns(&killed_later)[0].excuse, Some(Excuse::LeaseLapsedAfterEnd));
        assert_eq!(finish_cut_off(&killed_later, &BTreeSet::new()), vec![]);
        // A rerun before that lease ran out had no reap to come from.
        let h = history(&[1], vec![first, run(1, 2, 14, Some(20), Some(0))]);
        assert_eq!(duplicates(&h).len(), 1);
        // Without a lease seen at the end, nothing shows it ran out.
        let h = history(&[1], vec![run(1, 1, 0, Some(10), Some(0)), run(1, 2, 15, Some(20), Some(0))]);
        assert_eq!(duplicates(&h).len(), 1);
    }

    #[test]
    fn a_command_may_start_after_its_job_was_reaped_but_not_before_its_claim() {
        let late = Execution {
            held_at_start: Some(false),
            reaped_before_start: true,
            ..run(1, 1, 0, Some(1), Some(0))
        };
        assert_eq!(held_at_start(&history(&[1], vec![late])), vec![]);
        let early = Execution { held_at_start: Some(false), ..run(1, 1, 0, Some(1), Some(0)) };
        assert_eq!(held_at_start(&history(&[1], vec![early]))[0].check, "not held at start");
    }

    #[test]
    fn a_cut_off_add_committed_whole_or_not_at_all() {
        use crate::history::UnknownAdd;
        let ran =
            |job, payload: &str| Execution { payload: payload.into(), ..run(job, 1, 0, Some(1), Some(0)) };
        let cut = |payload: &str| UnknownAdd { payload: payload.into(), by: "ukue".into() };
        let mut h = history(&[1], vec![ran(1, "p1"), ran(2, "cut-a")]);
        h.unknown = vec![cut("cut-a"), cut("cut-b")];
        let (resolved, found) = resolve_unknown(&h);
        assert_eq!(found, vec![]);
        assert_eq!(resolved.iter().map(|a| (a.job, a.payload.as_str())).collect::<Vec<_>>(), [(2, "cut-a")]);
        // Half a row: a payload no add had.
        h.executions.push(ran(3, ""));
        assert_eq!(resolve_unknown(&h).1[0].check, "partly written");
        // One cut-off add under two ids, and an id printed for another add.
        let mut h = history(&[1], vec![ran(1, "cut-a"), ran(2, "cut-a")]);
        h.unknown = vec![cut("cut-a")];
        let checks: Vec<&str> = resolve_unknown(&h).1.iter().map(|f| f.check).collect();
        assert_eq!(checks, ["id used twice", "id used twice"]);
    }

    #[test]
    fn a_clean_history_passes_every_check() {
        let h = history(&[1, 2], vec![run(1, 1, 0, Some(10), Some(0)), run(2, 1, 5, Some(20), Some(0))]);
        assert_eq!(exactly_once(&h), vec![]);
        assert_eq!(order(&h, &[1, 2]), vec![]);
    }

    #[test]
    fn a_job_never_run_is_lost_unless_dead() {
        let mut h = history(&[1, 2], vec![run(1, 1, 0, Some(10), Some(0))]);
        let found = lost(&h);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].job, Some(2));
        h.final_jobs.insert(2, FinalJob { id: 2, state: "dead".into(), attempts: 3, max_attempts: 3 });
        assert_eq!(lost(&h), vec![]);
        // A run that failed does not count as finished.
        let h = history(&[1], vec![run(1, 1, 0, Some(10), Some(3))]);
        assert_eq!(lost(&h).len(), 1);
    }

    #[test]
    fn a_second_run_after_success_is_an_unexcused_duplicate() {
        let h = history(&[1], vec![run(1, 1, 0, Some(10), Some(0)), run(1, 2, 20, Some(30), Some(0))]);
        assert_eq!(duplicates(&h).len(), 1);
        assert!(!exactly_once(&h).is_empty());
    }

    #[test]
    fn failures_kills_and_lapsed_leases_excuse_a_second_run() {
        let failed = history(&[1], vec![run(1, 1, 0, Some(10), Some(3)), run(1, 2, 20, Some(30), Some(0))]);
        assert_eq!(duplicates(&failed), vec![]);
        let killed = history(&[1], vec![run(1, 1, 0, None, None), run(1, 2, 20, Some(30), Some(0))]);
        assert_eq!(duplicates(&killed), vec![]);
        let mut lapsed = run(1, 1, 0, Some(10), Some(0));
        lapsed.held_at_end = Some(false);
        let h = history(&[1], vec![lapsed, run(1, 2, 20, Some(30), Some(0))]);
        assert_eq!(duplicates(&h), vec![]);
        assert_eq!(changed_while_held(&h).len(), 1, "but in a run without stops it is a change while held");
        let mut h = history(&[1], vec![run(1, 1, 0, Some(10), Some(0)), run(1, 2, 20, Some(30), Some(0))]);
        h.killed_workers.insert(7);
        assert_eq!(duplicates(&h), vec![]);
    }

    #[test]
    fn two_holders_at_once_are_found() {
        let h = history(&[1], vec![run(1, 1, 0, Some(50), Some(0)), run(1, 2, 20, Some(60), Some(0))]);
        let found = overlaps(&h);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].check, "two holders");
    }

    #[test]
    fn attempts_not_counted_or_counted_twice_are_found() {
        let repeated = history(&[1], vec![run(1, 1, 0, Some(10), Some(3)), run(1, 1, 20, Some(30), Some(0))]);
        assert!(attempts(&repeated)[0].message.contains("not counted"));
        let skipped = history(&[1], vec![run(1, 1, 0, Some(10), Some(3)), run(1, 3, 20, Some(30), Some(0))]);
        assert!(attempts(&skipped)[0].message.contains("counted twice"));
        let beyond = history(
            &[1],
            vec![
                run(1, 1, 0, Some(1), Some(3)),
                run(1, 2, 2, Some(3), Some(3)),
                run(1, 3, 4, Some(5), Some(3)),
                run(1, 4, 6, Some(7), Some(0)),
            ],
        );
        assert!(attempts(&beyond).iter().any(|f| f.message.contains("beyond max_attempts")));
    }

    #[test]
    fn a_command_started_before_its_claim_is_found() {
        let mut early = run(1, 1, 0, Some(10), Some(0));
        early.held_at_start = Some(false);
        assert_eq!(held_at_start(&history(&[1], vec![early])).len(), 1);
    }

    #[test]
    fn a_stale_token_accepted_is_found() {
        let mut old = run(1, 1, 0, Some(10), Some(0));
        old.worker_pid = 99;
        let mut new = run(1, 2, 20, Some(40), Some(0));
        new.worker_pid = 7;
        new.held_at_end = Some(false);
        let mut h = history(&[1], vec![old.clone(), new.clone()]);
        h.killed_workers.insert(99);
        let found = stale_token(&h);
        assert_eq!(found.len(), 1, "{found:?}");
        new.held_at_end = Some(true);
        let mut h = history(&[1], vec![old, new]);
        h.killed_workers.insert(99);
        assert_eq!(stale_token(&h), vec![]);
    }

    #[test]
    fn reruns_name_their_excuse_and_attempts_must_rise() {
        let mut killed = run(1, 1, 0, Some(10), Some(0));
        killed.worker_pid = 99;
        let mut h = history(
            &[1, 2],
            vec![
                killed,
                run(1, 3, 20, None, None),
                run(1, 4, 30, Some(40), Some(3)),
                run(1, 5, 50, Some(60), Some(0)),
                run(2, 1, 0, Some(10), Some(0)),
                run(2, 2, 20, Some(30), Some(0)),
            ],
        );
        h.killed_workers.insert(99);
        let found: Vec<(i64, i64, Option<Excuse>)> =
            reruns(&h).into_iter().map(|r| (r.job, r.attempt, r.excuse)).collect();
        assert_eq!(
            found,
            [
                (1, 3, Some(Excuse::WorkerKilled)),
                (1, 4, Some(Excuse::Killed)),
                (1, 5, Some(Excuse::Failed)),
                (2, 2, None)
            ]
        );
        // Job 1's attempt 1 ended well: its worker's death excuses the
        // rerun only if the finish had not committed.
        assert_eq!(finish_cut_off(&h, &BTreeSet::from([(1, 1)])), vec![]);
        let found = finish_cut_off(&h, &BTreeSet::new());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].job, Some(1));
        // Attempt 2 of job 1 was never run (its worker died after the
        // claim): a gap is allowed.
        for run in &mut h.executions {
            run.max_attempts = 10;
        }
        assert_eq!(attempts_rise(&h), vec![]);
        let repeated = history(&[1], vec![run(1, 2, 0, None, None), run(1, 2, 20, Some(30), Some(0))]);
        assert_eq!(attempts_rise(&repeated).len(), 1);
        let beyond = history(&[1], vec![run(1, 4, 0, Some(10), Some(0))]);
        assert!(attempts_rise(&beyond)[0].message.contains("beyond max_attempts"));
    }

    #[test]
    fn wrong_order_and_missing_dead_are_found() {
        let h = history(&[1, 2], vec![run(2, 1, 0, Some(10), Some(0)), run(1, 1, 11, Some(20), Some(0))]);
        assert_eq!(order(&h, &[1, 2]).len(), 1);
        let mut h = history(&[1], vec![run(1, 1, 0, Some(1), Some(3))]);
        h.final_jobs.insert(1, FinalJob { id: 1, state: "ready".into(), attempts: 1, max_attempts: 1 });
        assert_eq!(dead_after_max(&h, &[1]).len(), 1);
        h.final_jobs.insert(1, FinalJob { id: 1, state: "dead".into(), attempts: 1, max_attempts: 1 });
        assert_eq!(dead_after_max(&h, &[1]), vec![]);
    }
}
