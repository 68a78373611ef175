//! scale: steps whose cost must not grow with the file. FORMAT.md leaves
//! the indexes to each program and says that the steps' reads and writes
//! go through them (§3.2, §5.4): a program can keep every rule and still
//! scan the whole table at each claim, and pass every other case. Each
//! case here times one step on a small file and on a large one (the same
//! rows, many more of them), in interleaved rounds, and fails when the
//! large file's median cost is more than [`verdict::BOUND`] times the
//! small one's. All are `should`: the format states no speed.
//!
//! The files are made by the subject's `init` and filled behind its back
//! by one INSERT … SELECT ([`files`]); the costs are CPU times of the
//! subject's processes ([`sample`]), the verdict a ratio of medians
//! ([`verdict`]). `--scale-rows N` makes every large file N jobs.

mod files;
mod sample;
pub mod verdict;

use std::path::Path;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::shown::thousands;
use crate::subjects::ctx::Ctx;
use crate::subjects::Failure;

use files::Rows;
use sample::Files;

pub fn cases() -> Vec<Case> {
    let case = |id, rule, summary, run| Case {
        id,
        rule,
        summary,
        needs: Needs::default(),
        level: Level::Should,
        run,
    };
    let serve = Needs { serve: true, ..Needs::default() };
    vec![
        case(
            "scale/empty-claim",
            "5.4",
            "an empty claim (work finding nothing due) costs about the same with 100,000 delayed jobs as with 100",
            empty_claim,
        ),
        case(
            "scale/claim-delayed-higher",
            "5.4",
            "a claim of a due job costs about the same beside 100,000 delayed jobs of higher priority as beside 100",
            claim_delayed_higher,
        ),
        case(
            "scale/claim-delayed-lower",
            "5.4",
            "a claim of a due job costs about the same beside 100,000 delayed jobs of lower priority as beside 100",
            claim_delayed_lower,
        ),
        case(
            "scale/claim-done-dead",
            "5.4",
            "a claim of a due job (work --keep-done) costs about the same beside 100,000 done and dead jobs as beside 100",
            claim_done_dead,
        ),
        case(
            "scale/claim-running",
            "5.4",
            "an empty claim costs about the same with 100,000 running jobs whose leases hold as with 100: its reap finds the expired leases through an index",
            claim_running,
        ),
        case("scale/add", "5.3", "add costs about the same in a file of 1,000,000 jobs as in one of 1,000", add),
        case(
            "scale/list-deep",
            "5.10",
            "list --limit 10 --after N near the end of 1,000,000 jobs costs about the same as near the end of 100",
            list_deep,
        ),
        Case {
            needs: serve,
            ..case(
                "scale/http-empty-claim",
                "5.4",
                "over HTTP, a claim finding nothing due costs about the same with 100,000 delayed jobs as with 100",
                http_empty_claim,
            )
        },
        Case {
            needs: serve,
            ..case(
                "scale/http-claim",
                "5.4",
                "over HTTP, a claim and ack of a due job cost about the same beside 100,000 delayed jobs of higher priority as beside 100",
                http_claim,
            )
        },
    ]
}

/// How a case takes its samples.
#[derive(Clone, Copy)]
enum Sampler {
    /// An idle `work` on each file ([`sample::idle_workers`]).
    Idle,
    /// A `work` on each file given due jobs ([`sample::draining_workers`]).
    Drain { keep_done: bool },
    /// A process of the subject a sample ([`sample::one_shot`]).
    OneShot(fn(&Path, u64) -> Vec<String>),
    /// The subject's `serve` on each file ([`sample::servers`]).
    Http { due: bool },
}

/// One step at two sizes.
struct Plan {
    /// The step, in a few words.
    step: &'static str,
    /// What fills both files.
    rows: Rows,
    small: u64,
    /// The large file's jobs, unless `--scale-rows` says.
    large: u64,
    sampler: Sampler,
}

/// The sizes of the claims' and listings' files, and of add's.
const SMALL: u64 = 100;
const LARGE: u64 = 100_000;
const ADD_SMALL: u64 = 1_000;
const ADD_LARGE: u64 = 1_000_000;
/// A list that walks from the first job to N costs about 6 ms more at
/// 100,000 jobs, only 4 to 8 times the spread of a process's start-up,
/// which a loaded machine widens past the bound (seen in CI); at a
/// million it costs some 60 ms more.
const LIST_LARGE: u64 = 1_000_000;

fn empty_claim(ctx: &mut Ctx) -> CaseResult {
    let rows = Rows::Delayed { priority: 0 };
    measure(ctx, Plan { step: "an empty claim", rows, small: SMALL, large: LARGE, sampler: Sampler::Idle })
}

fn claim_delayed_higher(ctx: &mut Ctx) -> CaseResult {
    let rows = Rows::Delayed { priority: 10 };
    let sampler = Sampler::Drain { keep_done: false };
    measure(
        ctx,
        Plan {
            step: "a claim beside delayed jobs of higher priority",
            rows,
            small: SMALL,
            large: LARGE,
            sampler,
        },
    )
}

fn claim_delayed_lower(ctx: &mut Ctx) -> CaseResult {
    let rows = Rows::Delayed { priority: -10 };
    let sampler = Sampler::Drain { keep_done: false };
    measure(
        ctx,
        Plan {
            step: "a claim beside delayed jobs of lower priority",
            rows,
            small: SMALL,
            large: LARGE,
            sampler,
        },
    )
}

fn claim_done_dead(ctx: &mut Ctx) -> CaseResult {
    let sampler = Sampler::Drain { keep_done: true };
    measure(
        ctx,
        Plan {
            step: "a claim beside done and dead jobs",
            rows: Rows::DoneAndDead,
            small: SMALL,
            large: LARGE,
            sampler,
        },
    )
}

fn claim_running(ctx: &mut Ctx) -> CaseResult {
    measure(
        ctx,
        Plan {
            step: "an empty claim beside running jobs",
            rows: Rows::Running,
            small: SMALL,
            large: LARGE,
            sampler: Sampler::Idle,
        },
    )
}

fn add(ctx: &mut Ctx) -> CaseResult {
    let rows = Rows::Delayed { priority: 0 };
    let sampler = Sampler::OneShot(sample::add_args);
    measure(ctx, Plan { step: "an add", rows, small: ADD_SMALL, large: ADD_LARGE, sampler })
}

fn list_deep(ctx: &mut Ctx) -> CaseResult {
    let rows = Rows::Delayed { priority: 0 };
    let sampler = Sampler::OneShot(sample::list_args);
    measure(ctx, Plan { step: "a list deep in the file", rows, small: SMALL, large: LIST_LARGE, sampler })
}

fn http_empty_claim(ctx: &mut Ctx) -> CaseResult {
    let rows = Rows::Delayed { priority: 0 };
    let sampler = Sampler::Http { due: false };
    measure(ctx, Plan { step: "an empty claim over HTTP", rows, small: SMALL, large: LARGE, sampler })
}

fn http_claim(ctx: &mut Ctx) -> CaseResult {
    let rows = Rows::Delayed { priority: 10 };
    let sampler = Sampler::Http { due: true };
    measure(ctx, Plan { step: "a claim and ack over HTTP", rows, small: SMALL, large: LARGE, sampler })
}

/// Makes the two files, samples the step on both, and fails when the
/// large file's cost is past the bound. The figures go to the reports
/// whatever the verdict.
fn measure(ctx: &mut Ctx, plan: Plan) -> CaseResult {
    let large_rows = ctx.scale_rows.unwrap_or(plan.large);
    let files = Files {
        small: files::make(ctx, "small.ukue", plan.rows, plan.small, true)?,
        large: files::make(ctx, "large.ukue", plan.rows, large_rows, false)?,
        small_rows: plan.small,
        large_rows,
    };
    let samples = match plan.sampler {
        Sampler::Idle => sample::idle_workers(ctx, &files)?,
        Sampler::Drain { keep_done } => sample::draining_workers(ctx, &files, keep_done)?,
        Sampler::OneShot(args) => sample::one_shot(ctx, &files, args)?,
        Sampler::Http { due } => sample::servers(ctx, &files, due)?,
    };
    let scaling = verdict::scaling(plan.step, &files, samples);
    ctx.notes.push(scaling.line());
    ctx.scale = Some(scaling.clone());
    if scaling.passes() {
        return Ok(());
    }
    Err(Failure::fail(
        format!(
            "{} to cost at most ×{} as much with {} jobs as with {} (a step through an index costs about the same; a scan of the file grows with it)",
            plan.step,
            scaling.bound,
            thousands(scaling.large_rows),
            thousands(scaling.small_rows)
        ),
        scaling.line(),
    ))
}
