//! concurrency: worker processes of the subject drain a queue while the
//! subject, the reference and add_job.py add more, all on one file.
//! Every job runs exactly once, one holder at a time, undisturbed.
//! `--processes N` makes it N workers and N producers (taking turns as
//! the subject, the reference and add_job.py).

use std::time::Duration;

use rand::Rng;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::check;
use crate::history::Added;
use crate::subjects::ctx::Ctx;
use crate::subjects::observe::file::job_count;
use crate::subjects::worker::start_worker;
use crate::subjects::Failure;
use crate::subjects::Subject;

use super::common::{self, no_findings};

pub fn cases() -> Vec<Case> {
    vec![Case {
        id: "concurrency/drain-while-adding",
        rule: "6.3",
        summary: "3 workers × concurrency 3 drain jobs that 3 producers add at once: each runs exactly once",
        needs: Needs::default(),
        level: Level::Must,
        run: drain_while_adding,
    }]
}

const WORKERS: usize = 3;
const CONCURRENCY: &str = "3";
const BEFORE: usize = 45;
const PER_PRODUCER: usize = 30;
/// The drain's time with the default processes; each job beyond them adds
/// [`DRAIN_PER_JOB`].
const DRAIN: Duration = Duration::from_secs(90);
const DRAIN_PER_JOB: Duration = Duration::from_millis(100);

fn drain_while_adding(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let subject = ctx.subject().clone();
    // Payloads are scripts: a short, seeded sleep makes runs overlap.
    let payload = |ctx: &mut Ctx, by: &str, i: usize| format!("{by}-{i} sleep:{}", ctx.rng.gen_range(0..30));
    let mut added = Vec::new();
    for i in 0..BEFORE {
        let p = payload(ctx, "subject", i);
        let job = ctx.add(&subject, &file, "q", &p, &[])?;
        added.push(Added { job, payload: p, by: subject.name.clone() });
    }
    let mut kinds = vec![subject.clone(), ctx.reference().clone()];
    kinds.extend(ctx.subjects.python.clone());
    let producer_count = ctx.processes.unwrap_or(kinds.len());
    let worker_count = ctx.processes.unwrap_or(WORKERS);
    let mut producers: Vec<(Subject, Vec<String>)> = Vec::new();
    for p in 0..producer_count {
        let who = kinds[p % kinds.len()].clone();
        // The default run's payloads as they were; the extra producers' tell them apart.
        let by = if p < kinds.len() { format!("{}-late", who.name) } else { format!("{}-late{p}", who.name) };
        let payloads = (0..PER_PRODUCER).map(|i| payload(ctx, &by, i)).collect();
        producers.push((who, payloads));
    }
    let workers = (0..worker_count)
        .map(|_| {
            start_worker(
                ctx,
                &subject,
                &file,
                "q",
                &["--concurrency", CONCURRENCY, "--poll", "20ms", "--quiet"],
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let ctx_ref: &Ctx = ctx;
    let file_ref = file.as_path();
    let produced: Vec<Result<Vec<Added>, Failure>> = std::thread::scope(|scope| {
        let handles: Vec<_> = producers
            .iter()
            .map(|(who, payloads)| {
                scope.spawn(move || {
                    payloads
                        .iter()
                        .map(|p| {
                            let job = ctx_ref.past_busy(|| {
                                if who.name == "add_job.py" {
                                    ctx_ref.python_add(file_ref, "q", p, &[])
                                } else {
                                    ctx_ref.add(who, file_ref, "q", p, &[])
                                }
                            })?;
                            Ok(Added { job, payload: p.clone(), by: who.name.clone() })
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Failure::error("a producer", "panicked"))))
            .collect()
    });
    for batch in produced {
        added.extend(batch?);
    }
    let total = added.len();
    let default_total = BEFORE + kinds.len() * PER_PRODUCER;
    let limit = DRAIN + DRAIN_PER_JOB * total.saturating_sub(default_total) as u32;
    let drained = ctx.wait_for(&format!("{total} jobs to be drained"), limit, || Ok(job_count(&file)? == 0));
    for worker in workers {
        worker.stop(Duration::from_secs(30))?;
    }
    common::note_contention(ctx, worker_count, producer_count, total);
    drained?;
    let history = common::history(ctx, &file, added)?;
    let mut findings = check::exactly_once(&history);
    findings.extend(check::payloads(&history));
    no_findings(&format!("each of the {total} jobs to run exactly once, with its own payload"), findings)
}
