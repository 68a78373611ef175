//! Generating op sequences: the model (crate::check::model) as a
//! proptest-state-machine [`ReferenceStateMachine`]. Several logical
//! workers interleave adds, claims and holder steps across two queues and
//! a few priorities, and the clock moves to exactly the edges that matter:
//! one ms before, at, and one ms after each lease_until and run_at the
//! model knows of.

use proptest::prelude::*;
use proptest::sample::select;
use proptest_state_machine::ReferenceStateMachine;

use crate::check::model::{FailHow, JobState, Label, Model, Op, PurgeState};

/// How many logical workers a generated run has.
pub const WORKERS: u8 = 3;

const QUEUES: &[&str] = &["a", "b"];

/// The generator's state: the model (with every open run_at taken at the
/// start of its range) and the next free label.
#[derive(Debug, Clone)]
pub struct GenState {
    pub model: Model,
    pub next_label: Label,
}

pub struct Generator;

fn queue() -> impl Strategy<Value = String> {
    select(QUEUES).prop_map(str::to_string)
}

fn worker() -> impl Strategy<Value = u8> {
    0..WORKERS
}

/// The times worth moving the clock to: every lease_until and every edge
/// of every run_at range that is still ahead.
pub fn edges(model: &Model) -> Vec<i64> {
    let mut edges = Vec::new();
    for job in model.jobs.values() {
        match job.state {
            JobState::Running => edges.extend(job.lease_until),
            JobState::Ready => edges.extend([job.run_at.lo, job.run_at.hi]),
            _ => {}
        }
    }
    edges.retain(|e| *e > model.now - 1);
    edges.sort_unstable();
    edges.dedup();
    edges
}

/// Clock advances that land one ms before, at, or one ms after an edge.
fn advance(model: &Model) -> BoxedStrategy<Op> {
    let now = model.now;
    let plain = select(vec![1i64, 999, 1_000, 60_000]).prop_map(|ms| Op::Advance { ms });
    let edges = edges(model);
    if edges.is_empty() {
        return plain.boxed();
    }
    let to_edge = (select(edges), -1i64..=1).prop_filter_map("an edge in the past", move |(edge, off)| {
        let ms = edge + off - now;
        (ms > 0).then_some(Op::Advance { ms })
    });
    prop_oneof![1 => plain, 4 => to_edge].boxed()
}

impl ReferenceStateMachine for Generator {
    type State = GenState;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<GenState> {
        Just(GenState { model: Model::default(), next_label: 1 }).boxed()
    }

    fn transitions(state: &GenState) -> BoxedStrategy<Op> {
        let label = state.next_label;
        let model = &state.model;
        // Mostly valid input; now and then a value no step accepts.
        let priority = prop_oneof![
            8 => Just(0i64), 4 => Just(1), 4 => Just(-1), 1 => Just(100), 1 => Just(-100), 1 => Just(101)
        ];
        let max_attempts = prop_oneof![6 => Just(1i64), 6 => Just(2), 6 => Just(3), 1 => Just(0)];
        let delay =
            prop_oneof![12 => Just(0i64), 2 => Just(1), 2 => Just(1_000), 2 => Just(15_000), 1 => Just(-1)];
        let add = (worker(), queue(), priority, max_attempts, delay).prop_map(
            move |(worker, queue, priority, max_attempts, delay_ms)| Op::Add {
                worker,
                label,
                queue,
                priority,
                max_attempts,
                delay_ms,
            },
        );
        let lease = || prop_oneof![8 => Just(1_000i64), 4 => Just(5_000), 2 => Just(30_000), 4 => Just(1), 1 => Just(0)];
        // Claims mostly look in a queue where a job is due.
        let mut due: Vec<String> = model
            .jobs
            .values()
            .filter(|j| j.state == JobState::Ready && j.run_at.lo <= model.now)
            .map(|j| j.queue.clone())
            .collect();
        due.dedup();
        let claim_queue = if due.is_empty() {
            queue().boxed()
        } else {
            prop_oneof![3 => select(due), 1 => queue()].boxed()
        };
        let claim = (worker(), claim_queue, lease()).prop_map(move |(worker, queue, lease_ms)| Op::Claim {
            worker,
            label,
            queue,
            lease_ms,
        });
        let other = prop_oneof![
            (worker(), proptest::option::of(queue()))
                .prop_map(|(worker, queue)| Op::RetryAll { worker, queue }),
            (worker(), select(vec![PurgeState::Dead, PurgeState::Done]), proptest::option::of(queue()))
                .prop_map(|(worker, state, queue)| Op::Purge { worker, state, queue }),
            worker().prop_map(|worker| Op::Stats { worker }),
        ];
        let mut choices: Vec<(u32, BoxedStrategy<Op>)> =
            vec![(5, add.boxed()), (6, claim.boxed()), (5, advance(model)), (2, other.boxed())];

        // Holder steps use the tokens of claims that took a job, mostly of
        // those that hold one now.
        let claims: Vec<Label> =
            model.claims.iter().filter(|(_, id)| id.is_some()).map(|(l, _)| *l).collect();
        if !claims.is_empty() {
            let holding: Vec<Label> = model.jobs.values().filter_map(|j| j.holder).collect::<Vec<_>>();
            let pick = if holding.is_empty() {
                select(claims).boxed()
            } else {
                prop_oneof![3 => select(holding), 1 => select(claims)].boxed()
            };
            let holder = (worker(), pick, prop::bool::weighted(0.1), 0u8..8, any::<bool>(), lease())
                .prop_map(|(worker, claim, forged, which, keep_done, lease_ms)| match which {
                    0 | 1 => Op::Finish { worker, claim, keep_done, forged, job_of: None },
                    2 => Op::Fail { worker, claim, how: FailHow::Backoff, forged, job_of: None },
                    3 => Op::Fail { worker, claim, how: FailHow::After(lease_ms), forged, job_of: None },
                    4 => Op::Fail { worker, claim, how: FailHow::Permanent, forged, job_of: None },
                    5 | 6 => Op::Renew { worker, claim, lease_ms, forged, job_of: None },
                    _ => Op::Release { worker, claim, forged, job_of: None },
                });
            choices.push((8, holder.boxed()));
        }
        let jobs: Vec<Label> = model.adds.keys().copied().collect();
        if !jobs.is_empty() {
            let by_job = (worker(), select(jobs), any::<bool>()).prop_map(|(worker, job, retry)| {
                if retry {
                    Op::Retry { worker, job }
                } else {
                    Op::Delete { worker, job }
                }
            });
            choices.push((2, by_job.boxed()));
        }
        // Retries mostly of dead jobs.
        let dead: Vec<Label> = model
            .adds
            .iter()
            .filter(|(_, id)| model.jobs.get(id).is_some_and(|j| j.state == JobState::Dead))
            .map(|(label, _)| *label)
            .collect();
        if !dead.is_empty() {
            choices.push((
                2,
                (worker(), select(dead)).prop_map(|(worker, job)| Op::Retry { worker, job }).boxed(),
            ));
        }
        proptest::strategy::Union::new_weighted(choices).boxed()
    }

    fn preconditions(state: &GenState, op: &Op) -> bool {
        let model = &state.model;
        match op {
            Op::Add { label, .. } => !model.adds.contains_key(label) && !model.claims.contains_key(label),
            Op::Claim { label, .. } => !model.adds.contains_key(label) && !model.claims.contains_key(label),
            Op::Finish { claim, .. }
            | Op::Fail { claim, .. }
            | Op::Renew { claim, .. }
            | Op::Release { claim, .. } => model.claims.contains_key(claim),
            Op::Retry { job, .. } | Op::Delete { job, .. } => model.adds.contains_key(job),
            Op::Advance { ms } => *ms > 0,
            Op::RetryAll { .. } | Op::Purge { .. } | Op::Stats { .. } => true,
        }
    }

    fn apply(mut state: GenState, op: &Op) -> GenState {
        if let Op::Add { label, .. } | Op::Claim { label, .. } = op {
            state.next_label = state.next_label.max(label + 1);
        }
        state.model.apply_blind(op);
        state
    }
}
