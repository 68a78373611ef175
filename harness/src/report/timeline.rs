//! The timeline of a case's history, as every report carries it: one lane
//! per worker process, one bar per run of a job (from its claim to its
//! end), coloured by how the run ended, and marks for what happened to the
//! workers and the leases (starts, restarts, kills, stops, reaps, a job
//! taken while its lease held, a lease's end). The runs the checkers blame
//! are flagged.
//!
//! It stays bounded whatever the history: past [`MAX_BARS`] runs, the runs
//! that tell the story (blamed, overlapping another run of their job, not
//! finished) are kept as bars, and the others are counted per lane and
//! time slice ([`Slice`]).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::history::{Blame, Execution, History, RunRef, WorkerEventKind};

/// At most this many runs are kept as bars.
pub const MAX_BARS: usize = 2000;
/// At most this many marks.
pub const MAX_MARKS: usize = 2000;
/// The runs left out are counted in this many slices of the timeline, a lane.
pub const SLICES: i64 = 80;
/// A claim time (the row's `updated_at` at the run's start) further than
/// this before the run's start is not the claim's (a program may not set it).
const CLAIM_BEFORE_START_MS: i64 = 5_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    /// Time 0 of the timeline, in milliseconds since 1970; every other time
    /// is milliseconds from it.
    pub origin_ms: i64,
    pub span_ms: i64,
    /// Runs in the history; `bars` holds all of them or, past [`MAX_BARS`],
    /// those that tell the story, and `slices` counts the rest.
    pub runs: usize,
    pub lanes: Vec<Lane>,
    pub bars: Vec<Bar>,
    pub marks: Vec<Mark>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slices: Vec<Slice>,
}

/// One worker process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lane {
    pub worker_pid: u32,
    pub from_ms: i64,
    pub to_ms: i64,
    /// Rows the lane needs so that its bars never overlap (a worker runs up
    /// to `--concurrency` commands at once).
    pub rows: u32,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEnd {
    /// Exit 0, still holding its job.
    Finished,
    /// A non-zero exit, still holding its job.
    Failed,
    /// It never recorded its end: killed (with its worker, or at the case's end).
    Killed,
    /// It no longer held its job at its end.
    LeaseLost,
}

impl RunEnd {
    pub fn of(run: &Execution) -> RunEnd {
        match (run.end_ms, run.held_at_end, run.exit) {
            (None, _, _) => RunEnd::Killed,
            (Some(_), Some(false), _) => RunEnd::LeaseLost,
            (Some(_), _, Some(0)) => RunEnd::Finished,
            (Some(_), _, _) => RunEnd::Failed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunEnd::Finished => "finished",
            RunEnd::Failed => "failed",
            RunEnd::Killed => "killed",
            RunEnd::LeaseLost => "lease lost",
        }
    }

    pub const ALL: [RunEnd; 4] = [RunEnd::Finished, RunEnd::Failed, RunEnd::Killed, RunEnd::LeaseLost];
}

/// One run of a job's command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bar {
    pub lane: u32,
    pub row: u32,
    pub job: i64,
    pub attempt: i64,
    pub pid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// When the claim took the job (the run's start when the file did not say).
    pub claim_ms: i64,
    /// When the command started.
    pub start_ms: i64,
    /// Where the bar ends: the run's recorded end; or, when it recorded
    /// none, its worker's kill or stop, else the timeline's end.
    pub end_ms: i64,
    /// Whether the run recorded its end.
    pub ended: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until_ms: Option<i64>,
    pub end: RunEnd,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blamed: bool,
}

impl Bar {
    pub fn run(&self) -> RunRef {
        RunRef { job: self.job, attempt: self.attempt, pid: self.pid }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkKind {
    /// A job taken while another run's lease on it still held.
    Taken,
    /// A job claimed again after its holder's lease ran out.
    Reap,
    Kill,
    /// A worker started after a kill.
    Restart,
    /// The lease of a run that was killed or lost its job.
    LeaseEnd,
    Start,
    /// SIGTERM.
    Stop,
    Suspend,
    Resume,
}

impl MarkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MarkKind::Taken => "taken",
            MarkKind::Reap => "reap",
            MarkKind::Kill => "kill",
            MarkKind::Restart => "restart",
            MarkKind::LeaseEnd => "lease end",
            MarkKind::Start => "start",
            MarkKind::Stop => "stop",
            MarkKind::Suspend => "suspend",
            MarkKind::Resume => "resume",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    pub kind: MarkKind,
    pub at_ms: i64,
    pub lane: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<i64>,
    pub text: String,
}

/// The runs of one lane, in one slice of time, that are not bars.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slice {
    pub lane: u32,
    pub from_ms: i64,
    pub to_ms: i64,
    /// Runs by how they ended, in [`RunEnd::ALL`]'s order.
    pub ends: [u32; 4],
}

impl Slice {
    pub fn total(&self) -> u32 {
        self.ends.iter().sum()
    }
}

/// A run with what the timeline needs of it.
struct Placed<'a> {
    run: &'a Execution,
    lane: u32,
    claim: i64,
    end: i64,
    how: RunEnd,
}

impl Timeline {
    /// The timeline of `history`, its blamed runs flagged; None when it holds
    /// no run and no worker event.
    pub fn of(history: &History, blame: &Blame) -> Option<Timeline> {
        let runs = &history.executions;
        let events = &history.events;
        let times = runs
            .iter()
            .flat_map(|e| [Some(claim_of(e)), Some(e.start_ms), e.end_ms])
            .flatten()
            .chain(events.iter().map(|e| e.at_ms));
        let (first, last) = times.fold(None, |acc: Option<(i64, i64)>, t| {
            Some(acc.map_or((t, t), |(a, b)| (a.min(t), b.max(t))))
        })?;
        let origin = first;
        let span = (last - first).max(1);

        let mut lanes = Lanes::default();
        for event in events {
            lanes.touch(event.worker_pid, event.at_ms - origin);
        }
        let mut sorted: Vec<&Execution> = runs.iter().collect();
        sorted.sort_by_key(|e| (claim_of(e), e.pid));
        for run in &sorted {
            lanes.touch(run.worker_pid, claim_of(run) - origin);
            lanes.touch(run.worker_pid, run.end_ms.unwrap_or(run.start_ms) - origin);
        }
        // A worker's lane ends at its kill or stop.
        let mut ends: HashMap<u32, Vec<i64>> = HashMap::new();
        for event in
            events.iter().filter(|e| matches!(e.kind, WorkerEventKind::Killed | WorkerEventKind::Stopped))
        {
            ends.entry(event.worker_pid).or_default().push(event.at_ms - origin);
        }
        let placed: Vec<Placed> = sorted
            .iter()
            .map(|run| {
                let claim = claim_of(run) - origin;
                let end = match run.end_ms {
                    Some(end) => end - origin,
                    None => ends
                        .get(&run.worker_pid)
                        .and_then(|t| t.iter().copied().find(|&t| t >= run.start_ms - origin))
                        .unwrap_or(span),
                };
                Placed {
                    run,
                    lane: lanes.index(run.worker_pid),
                    claim,
                    end: end.max(claim),
                    how: RunEnd::of(run),
                }
            })
            .collect();
        let kept = keep(&placed, blame);

        let mut timeline = Timeline {
            origin_ms: origin,
            span_ms: span,
            runs: runs.len(),
            lanes: lanes.into_lanes(),
            bars: Vec::new(),
            marks: Vec::new(),
            slices: slices(&placed, &kept, span),
        };
        timeline.bars = bars(&placed, &kept, blame, origin, &mut timeline.lanes);
        timeline.marks = marks(history, &timeline, origin);
        Some(timeline)
    }

    /// The bars the checkers blame.
    pub fn blamed(&self) -> impl Iterator<Item = &Bar> {
        self.bars.iter().filter(|b| b.blamed)
    }

    /// One bar as a line of text: job, attempt, pid, worker, times, how it
    /// ended, the token.
    pub fn bar_text(&self, bar: &Bar) -> String {
        let worker = self.lanes.get(bar.lane as usize).map_or(0, |l| l.worker_pid);
        let end =
            if bar.ended { secs(bar.end_ms) } else { format!("{} (no end recorded)", secs(bar.end_ms)) };
        let mut text = format!(
            "job {} attempt {} (pid {}, worker {worker}): claimed {}, started {}, ended {end}, {}",
            bar.job,
            bar.attempt,
            bar.pid,
            secs(bar.claim_ms),
            secs(bar.start_ms),
            bar.end.as_str()
        );
        if let Some(exit) = bar.exit {
            text.push_str(&format!(" (exit {exit})"));
        }
        if let Some(lease) = bar.lease_until_ms {
            text.push_str(&format!(", lease until {}", secs(lease)));
        }
        if let Some(token) = &bar.token {
            text.push_str(&format!(", token {token}"));
        }
        if bar.blamed {
            text.push_str(" [blamed]");
        }
        text
    }

    /// The whole timeline as text (for JUnit and other plain-text readers):
    /// each lane with its bars, then the marks and the slices.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let mut out = format!(
            "timeline: {} worker processes, {} runs ({} drawn), {} s, from {} ms since 1970\n",
            self.lanes.len(),
            self.runs,
            self.bars.len(),
            secs(self.span_ms),
            self.origin_ms
        );
        for (i, lane) in self.lanes.iter().enumerate() {
            let _ = writeln!(
                out,
                "worker {} ({} to {} s)",
                lane.worker_pid,
                secs(lane.from_ms),
                secs(lane.to_ms)
            );
            for bar in self.bars.iter().filter(|b| b.lane as usize == i) {
                let _ = writeln!(out, "  {}", self.bar_text(bar));
            }
            for slice in self.slices.iter().filter(|s| s.lane as usize == i) {
                let _ = writeln!(out, "  {}", slice_text(slice));
            }
        }
        for mark in &self.marks {
            let worker = self.lanes.get(mark.lane as usize).map_or(0, |l| l.worker_pid);
            let _ = writeln!(
                out,
                "{} s {} (worker {worker}): {}",
                secs(mark.at_ms),
                mark.kind.as_str(),
                mark.text
            );
        }
        out
    }
}

/// `0.123 s`-style seconds of a timeline time.
pub fn secs(ms: i64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

/// A slice as text: where, and its runs by how they ended.
pub fn slice_text(slice: &Slice) -> String {
    let counts: Vec<String> = RunEnd::ALL
        .iter()
        .zip(slice.ends)
        .filter(|(_, n)| *n > 0)
        .map(|(end, n)| format!("{n} {}", end.as_str()))
        .collect();
    format!(
        "{} more runs from {} to {} s, not drawn one by one: {}",
        slice.total(),
        secs(slice.from_ms),
        secs(slice.to_ms),
        counts.join(", ")
    )
}

/// When the claim took the job: the row's `updated_at` at the run's start,
/// when that is plausible, else the start.
fn claim_of(run: &Execution) -> i64 {
    run.claimed_ms
        .filter(|&t| t <= run.start_ms && t >= run.start_ms - CLAIM_BEFORE_START_MS)
        .unwrap_or(run.start_ms)
}

/// Lanes in the order their workers first appear.
#[derive(Default)]
struct Lanes {
    index: HashMap<u32, u32>,
    lanes: Vec<Lane>,
}

impl Lanes {
    fn touch(&mut self, worker_pid: u32, at: i64) {
        let next = self.lanes.len() as u32;
        let i = *self.index.entry(worker_pid).or_insert(next);
        if i == next {
            self.lanes.push(Lane { worker_pid, from_ms: at, to_ms: at, rows: 1 });
        }
        let lane = &mut self.lanes[i as usize];
        lane.from_ms = lane.from_ms.min(at);
        lane.to_ms = lane.to_ms.max(at);
    }

    fn index(&self, worker_pid: u32) -> u32 {
        self.index[&worker_pid]
    }

    fn into_lanes(self) -> Vec<Lane> {
        self.lanes
    }
}

/// Which runs become bars: all of them up to [`MAX_BARS`]; past it, the
/// blamed, then those overlapping another run of their job, then those
/// that did not finish, then the rest, each tier thinned evenly when it
/// does not fit.
fn keep(placed: &[Placed], blame: &Blame) -> Vec<bool> {
    if placed.len() <= MAX_BARS {
        return vec![true; placed.len()];
    }
    let overlapping = overlapping(placed);
    let tier = |i: usize| {
        let p = &placed[i];
        if blame.blames(&RunRef::from(p.run)) {
            0
        } else if overlapping[i] {
            1
        } else if p.how != RunEnd::Finished {
            2
        } else {
            3
        }
    };
    let mut tiers: [Vec<usize>; 4] = Default::default();
    for i in 0..placed.len() {
        tiers[tier(i)].push(i);
    }
    let mut kept = vec![false; placed.len()];
    let mut budget = MAX_BARS;
    for members in tiers {
        let take = members.len().min(budget);
        for k in 0..take {
            // Evenly spread over the tier (all of it when it fits).
            kept[members[k * members.len() / take.max(1)]] = true;
        }
        budget -= take;
    }
    kept
}

/// Whether each run overlaps another run of its job in time.
fn overlapping(placed: &[Placed]) -> Vec<bool> {
    let mut by_job: Vec<usize> = (0..placed.len()).collect();
    by_job.sort_by_key(|&i| (placed[i].run.job, placed[i].claim));
    let mut out = vec![false; placed.len()];
    for pair in by_job.windows(2) {
        let (a, b) = (&placed[pair[0]], &placed[pair[1]]);
        if a.run.job == b.run.job && b.claim < a.end {
            out[pair[0]] = true;
            out[pair[1]] = true;
        }
    }
    out
}

/// The kept runs as bars, each in the first row of its lane free at its claim.
fn bars(placed: &[Placed], kept: &[bool], blame: &Blame, origin: i64, lanes: &mut [Lane]) -> Vec<Bar> {
    let mut free_at: Vec<Vec<i64>> = vec![Vec::new(); lanes.len()];
    let mut bars = Vec::new();
    for (p, _) in placed.iter().zip(kept).filter(|(_, k)| **k) {
        let rows = &mut free_at[p.lane as usize];
        let row = match rows.iter().position(|&free| free <= p.claim) {
            Some(row) => row,
            None => {
                rows.push(0);
                rows.len() - 1
            }
        };
        rows[row] = p.end.max(p.claim + 1);
        let run = p.run;
        bars.push(Bar {
            lane: p.lane,
            row: row as u32,
            job: run.job,
            attempt: run.attempt,
            pid: run.pid,
            token: run.token.clone(),
            claim_ms: p.claim,
            start_ms: run.start_ms - origin,
            end_ms: p.end,
            ended: run.end_ms.is_some(),
            lease_until_ms: run.lease_until.map(|t| t - origin),
            end: p.how,
            exit: run.exit,
            blamed: blame.blames(&RunRef::from(run)),
        });
    }
    for (lane, rows) in lanes.iter_mut().zip(&free_at) {
        lane.rows = (rows.len() as u32).max(1);
    }
    bars
}

/// The marks: what the harness did to the workers, and for the drawn runs
/// that were killed or lost their job, the lease's end and how the job
/// passed to its next run.
fn marks(history: &History, timeline: &Timeline, origin: i64) -> Vec<Mark> {
    let lane_of: HashMap<u32, u32> =
        timeline.lanes.iter().enumerate().map(|(i, l)| (l.worker_pid, i as u32)).collect();
    let mut marks = Vec::new();
    let mut killed_before = false;
    for event in &history.events {
        let kind = match event.kind {
            WorkerEventKind::Started if killed_before => MarkKind::Restart,
            WorkerEventKind::Started => MarkKind::Start,
            WorkerEventKind::Stopped => MarkKind::Stop,
            WorkerEventKind::Killed => MarkKind::Kill,
            WorkerEventKind::Suspended => MarkKind::Suspend,
            WorkerEventKind::Resumed => MarkKind::Resume,
        };
        killed_before |= event.kind == WorkerEventKind::Killed;
        let text = match kind {
            MarkKind::Restart => format!("worker {} started after a kill", event.worker_pid),
            MarkKind::Kill => format!("worker {} SIGKILLed with every process it started", event.worker_pid),
            MarkKind::Stop => format!("worker {} sent SIGTERM", event.worker_pid),
            MarkKind::Suspend => format!("worker {} stopped (SIGSTOP)", event.worker_pid),
            MarkKind::Resume => format!("worker {} continued (SIGCONT)", event.worker_pid),
            _ => format!("worker {} started", event.worker_pid),
        };
        marks.push(Mark {
            kind,
            at_ms: event.at_ms - origin,
            lane: lane_of[&event.worker_pid],
            job: None,
            text,
        });
    }
    // Each job's drawn runs in claim order: after one that was killed or
    // lost the job, the next one either took it while the lease held, or
    // after the lease ran out (a reap).
    let mut by_job: BTreeMap<i64, Vec<&Bar>> = BTreeMap::new();
    for bar in &timeline.bars {
        by_job.entry(bar.job).or_default().push(bar);
    }
    for (job, runs) in by_job.iter_mut() {
        // Attempts rise with each take, whatever the clocks of the takes say.
        runs.sort_by_key(|b| (b.attempt, b.claim_ms));
        for pair in runs.windows(2) {
            let (before, after) = (pair[0], pair[1]);
            if !matches!(before.end, RunEnd::Killed | RunEnd::LeaseLost) {
                continue;
            }
            // Without the lease the run saw, its end is the last moment it held.
            let held_until = before.lease_until_ms.unwrap_or(before.end_ms);
            let lease =
                before.lease_until_ms.map(|l| format!(" (lease until {} s)", secs(l))).unwrap_or_default();
            let (kind, text) = if after.claim_ms < held_until {
                (
                    MarkKind::Taken,
                    format!(
                        "attempt {} took job {job} while attempt {} still held it{lease}",
                        after.attempt, before.attempt
                    ),
                )
            } else {
                (
                    MarkKind::Reap,
                    format!(
                        "job {job} claimed again as attempt {} after attempt {}'s hold ended{lease}",
                        after.attempt, before.attempt
                    ),
                )
            };
            marks.push(Mark { kind, at_ms: after.claim_ms, lane: after.lane, job: Some(*job), text });
        }
        for bar in runs.iter().filter(|b| matches!(b.end, RunEnd::Killed | RunEnd::LeaseLost)) {
            if let Some(lease) = bar.lease_until_ms.filter(|&t| (0..=timeline.span_ms).contains(&t)) {
                marks.push(Mark {
                    kind: MarkKind::LeaseEnd,
                    at_ms: lease,
                    lane: bar.lane,
                    job: Some(*job),
                    text: format!("the lease of job {job} attempt {} ended (as last seen)", bar.attempt),
                });
            }
        }
    }
    if marks.len() > MAX_MARKS {
        marks.sort_by_key(|m| m.kind);
        marks.truncate(MAX_MARKS);
    }
    marks.sort_by_key(|m| (m.at_ms, m.kind));
    marks
}

/// The runs that are not bars, counted per lane and slice of time.
fn slices(placed: &[Placed], kept: &[bool], span: i64) -> Vec<Slice> {
    let width = (span + SLICES - 1) / SLICES;
    let mut counts: BTreeMap<(u32, i64), [u32; 4]> = BTreeMap::new();
    for (p, _) in placed.iter().zip(kept).filter(|(_, k)| !**k) {
        let slot = (p.claim / width.max(1)).min(SLICES - 1);
        let ends = counts.entry((p.lane, slot)).or_default();
        ends[RunEnd::ALL.iter().position(|e| *e == p.how).unwrap_or(0)] += 1;
    }
    counts
        .into_iter()
        .map(|((lane, slot), ends)| Slice {
            lane,
            from_ms: slot * width,
            to_ms: ((slot + 1) * width).min(span),
            ends,
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::history::{WorkerEvent, WorkerEventKind};

    /// A history of `runs` runs by 40 workers (a tenth killed, each
    /// restarted), every 50th job run twice at once.
    pub(crate) fn big_history(runs: usize) -> History {
        let mut h = History::default();
        let t0 = 1_800_000_000_000;
        for w in 0..40u32 {
            h.events.push(WorkerEvent { at_ms: t0, worker_pid: 100 + w, kind: WorkerEventKind::Started });
        }
        for i in 0..runs {
            let worker = 100 + (i % 40) as u32;
            let start = t0 + (i as i64) * 9;
            // Every 50th job runs twice at once; the first run loses it.
            let again = i % 50 == 1;
            let job = if again { i as i64 } else { i as i64 + 1 };
            let killed = i % 97 == 0;
            h.executions.push(Execution {
                job,
                attempt: 1 + again as i64,
                max_attempts: 10,
                pid: 10_000 + i as u32,
                worker_pid: worker,
                start_ms: start,
                end_ms: (!killed).then_some(start + 300),
                held_at_start: Some(true),
                reaped_before_start: false,
                held_at_end: (!killed).then_some(i % 50 != 0),
                exit: (!killed).then_some(0),
                token: Some(format!("{:032x}", i * 7919)),
                token_type: Some("text".into()),
                claimed_ms: Some(start - 2),
                lease_until: Some(start + 60_000),
                ..Default::default()
            });
            if killed {
                h.events.push(WorkerEvent {
                    at_ms: start + 100,
                    worker_pid: worker,
                    kind: WorkerEventKind::Killed,
                });
            }
        }
        h
    }

    fn blame(runs: &[&Execution]) -> Blame {
        let mut blame = Blame { runs: runs.iter().map(|e| RunRef::from(*e)).collect(), jobs: Vec::new() };
        blame.runs.sort();
        blame
    }

    #[test]
    fn every_run_is_a_bar_in_a_row_of_its_workers_lane() {
        let h = big_history(200);
        let t = Timeline::of(&h, &blame(&[&h.executions[3]])).unwrap();
        assert_eq!((t.runs, t.bars.len(), t.lanes.len()), (200, 200, 40));
        assert!(t.slices.is_empty());
        assert_eq!(t.blamed().map(|b| b.pid).collect::<Vec<_>>(), [10_003]);
        assert_eq!(t.bars.iter().filter(|b| b.end == RunEnd::LeaseLost).count(), 3, "runs 50, 100, 150");
        // No two bars of one row of one lane overlap.
        for a in &t.bars {
            for b in t.bars.iter().filter(|b| (b.lane, b.row) == (a.lane, a.row) && b.pid != a.pid) {
                assert!(a.end_ms <= b.claim_ms || b.end_ms <= a.claim_ms, "{a:?} {b:?}");
            }
        }
        let killed = t.bars.iter().find(|b| b.pid == 10_000).unwrap();
        assert_eq!((killed.end, killed.ended, killed.end_ms), (RunEnd::Killed, false, 100 + 2));
        assert!(t.marks.iter().any(|m| m.kind == MarkKind::Kill));
        let taken: Vec<Option<i64>> =
            t.marks.iter().filter(|m| m.kind == MarkKind::Taken).map(|m| m.job).collect();
        // Job 1's first run was killed (it is run 0), the others lost their job.
        assert_eq!(
            taken,
            [Some(1), Some(51), Some(101), Some(151)],
            "each second run took its job while the first held it"
        );
        assert!(t.text().contains("job 4 attempt 1 (pid 10003"), "{}", t.text());
    }

    #[test]
    fn a_big_history_is_thinned_keeping_the_blamed_runs() {
        let h = big_history(10_000);
        let blamed = [&h.executions[7_001], &h.executions[7_002]];
        let t = Timeline::of(&h, &blame(&blamed)).unwrap();
        assert_eq!(t.runs, 10_000);
        assert_eq!(t.bars.len(), MAX_BARS);
        let sliced: u32 = t.slices.iter().map(Slice::total).sum();
        assert_eq!(sliced as usize + t.bars.len(), 10_000, "every run is a bar or counted in a slice");
        assert!(t.slices.len() <= t.lanes.len() * SLICES as usize);
        assert_eq!(t.blamed().count(), 2);
        assert!(t.marks.len() <= MAX_MARKS);
        // Runs that overlapped (400), were killed (104) or lost their job
        // (197: every 50th, but for 3 killed) tell more than the rest, and
        // are all kept.
        assert_eq!(t.bars.iter().filter(|b| b.end == RunEnd::Killed).count(), 104);
        assert_eq!(t.bars.iter().filter(|b| b.end == RunEnd::LeaseLost).count(), 197);
    }
}
