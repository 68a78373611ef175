//! Mixed delivery: workers over HTTP (the runner's own, and http_worker.py)
//! and the subject's `work` processes take jobs from one file while its
//! CLI, the HTTP API (and add_job.py) add them. Every job runs exactly
//! once: the probe records the HTTP workers' runs like any other (with
//! `UKUE_FILE`, whether the file showed the attempt holding its job), and
//! the same checkers judge the history (FORMAT.md §6.3).
//!
//! `http/claims-race` has HTTP clients that claim and hold jobs race the
//! subject's `work` processes for them.
//!
//! Mixed delivery runs in two rounds, so that each kind of worker is seen to run jobs
//! whatever the machine's speed: first the HTTP workers alone drain what
//! the producers add, then every worker at once while the producers add
//! more.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rand::Rng;
use serde_json::json;

use crate::cases::{Case, CaseResult};
use crate::check;
use crate::history::{Added, Execution};
use crate::shown::Shown;
use crate::subjects::ctx::Ctx;
use crate::subjects::http_worker;
use crate::subjects::observe::file::{job_count, rows};
use crate::subjects::server::Client;
use crate::subjects::worker::{start_worker, WorkerProcess};
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::super::common::{self, no_findings};

/// Jobs each producer adds in each round; with python fewer, as its
/// programs start slowly on a loaded machine (a round of http_worker.py
/// alone took a minute on one loaded CPU with 12 a producer).
const PER_PRODUCER: [usize; 2] = [12, 12];
const PER_PRODUCER_PYTHON: [usize; 2] = [4, 8];
/// The runner's HTTP workers, and the subject's `work` processes (each
/// with this concurrency): enough claimers at once that two of them meet
/// at one job, so that a claim outside BEGIN IMMEDIATE shows.
const RUNNER_WORKERS: usize = 4;
const CLI_WORKERS: usize = 3;
const CLI_CONCURRENCY: &str = "3";
/// How long a round's drain may take.
const DRAIN: Duration = Duration::from_secs(90);

pub fn cases(case: impl Fn(&'static str, &'static str, fn(&mut Ctx) -> CaseResult) -> Case) -> Vec<Case> {
    let mut with_python = case(
        "http/mixed-delivery-python",
        "the same with http_worker.py among the workers and add_job.py among the producers",
        mixed_delivery_python,
    );
    with_python.needs.python = true;
    vec![
        case(
            "http/mixed-delivery",
            "4 HTTP workers and 3 `work` processes × concurrency 3 drain one file while the CLI and HTTP add: each job runs exactly once",
            mixed_delivery,
        ),
        with_python,
    ]
}

fn mixed_delivery(ctx: &mut Ctx) -> CaseResult {
    let runs = mixed(ctx, false)?;
    ctx.notes.push(runs);
    Ok(())
}

fn mixed_delivery_python(ctx: &mut Ctx) -> CaseResult {
    let runs = mixed(ctx, true)?;
    ctx.notes.push(runs);
    Ok(())
}

/// Who adds jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Producer {
    Cli,
    Http,
    Python,
}

impl Producer {
    fn name(self) -> &'static str {
        match self {
            Producer::Cli => "the subject's add",
            Producer::Http => "POST /v1/jobs",
            Producer::Python => "add_job.py",
        }
    }
}

/// The case; on success, how many runs each kind of worker made.
fn mixed(ctx: &mut Ctx, python: bool) -> Result<String, Failure> {
    let file = ctx.init("jobs.ukue")?;
    let server = crate::subjects::server::serve(ctx, &file, &[], &[])?;
    let client = Client::new(server.port, None);
    let mut producers = vec![Producer::Cli, Producer::Http];
    if python {
        producers.push(Producer::Python);
    }
    // Payloads are scripts: a short, seeded sleep makes runs overlap.
    let mut rounds: Vec<Vec<(Producer, String)>> = Vec::new();
    let sizes = if python { PER_PRODUCER_PYTHON } else { PER_PRODUCER };
    for (round, size) in sizes.into_iter().enumerate() {
        let mut jobs = Vec::new();
        for &who in &producers {
            for i in 0..size {
                let sleep = ctx.rng.gen_range(0..40);
                jobs.push((who, format!("r{round}-{who:?}-{i} sleep:{sleep}")));
            }
        }
        rounds.push(jobs);
    }
    let shared: &Ctx = ctx;
    let (ctx, file) = (shared, file.as_path());
    let stop = AtomicBool::new(false);
    let mut added = Vec::new();
    let mut cli_workers: Vec<WorkerProcess> = Vec::new();
    let mut python_worker = None;
    let mut refused = Vec::new();
    let outcome = std::thread::scope(|scope| -> CaseResult {
        let mut runners = Vec::new();
        let mut rounds_run = || -> CaseResult {
            // Round 1: the HTTP workers alone; with python, http_worker.py
            // alone, so that it is seen to run jobs.
            if python {
                python_worker = Some(http_worker::start_python(ctx, server.port, file, "q")?);
            } else {
                runners.extend(spawn_runners(scope, ctx, &client, file, &stop));
            }
            added.extend(produce(ctx, &client, file, &rounds[0])?);
            drain(ctx, file, &mut cli_workers, &runners, "the HTTP workers alone")?;
            // Round 2: every worker at once, while the producers add.
            if python {
                runners.extend(spawn_runners(scope, ctx, &client, file, &stop));
            }
            for _ in 0..CLI_WORKERS {
                let options = ["--concurrency", CLI_CONCURRENCY, "--poll", "20ms", "--quiet"];
                cli_workers.push(start_worker(ctx, ctx.subject(), file, "q", &options)?);
            }
            let by_producer: Vec<_> = producers
                .iter()
                .map(|&who| {
                    let jobs: Vec<(Producer, String)> =
                        rounds[1].iter().filter(|(w, _)| *w == who).cloned().collect();
                    let client = &client;
                    scope.spawn(move || produce(ctx, client, file, &jobs))
                })
                .collect();
            for producer in by_producer {
                added.extend(
                    producer.join().unwrap_or_else(|_| Err(Failure::error("a producer", "panicked")))?,
                );
            }
            drain(ctx, file, &mut cli_workers, &runners, "every worker")
        };
        let result = rounds_run();
        // The runners stop after their claim in flight; an error of theirs
        // says more than a drain that did not end.
        stop.store(true, Ordering::SeqCst);
        for runner in runners {
            let tally =
                runner.join().unwrap_or_else(|_| Err(Failure::error("an HTTP worker", "panicked")))?;
            refused.extend(tally.refused);
        }
        result
    });
    stop.store(true, Ordering::SeqCst);
    let mut kinds: Vec<(u32, &str)> = vec![(std::process::id(), "the runner's HTTP workers")];
    kinds.extend(cli_workers.iter().map(|w| (w.process.pid() as u32, "`work`")));
    kinds.extend(python_worker.iter().map(|w| (w.process.pid() as u32, "http_worker.py")));
    let stopped: Vec<CaseResult> = cli_workers
        .into_iter()
        .chain(python_worker)
        .map(|worker| worker.stop(Duration::from_secs(30)))
        .collect();
    outcome?;
    stopped.into_iter().collect::<CaseResult>()?;
    let history = common::history(ctx, file, added)?;
    let runs = runs_by_kind(&history.executions, &kinds);
    let mut findings = check::exactly_once(&history);
    findings.extend(check::payloads(&history));
    // A holder's ack is refused only when the job was taken from it: the
    // checkers see that in the probe's records too, but say it anyway.
    findings.extend(refused.iter().map(|r| {
        check::finding(
            "ack refused",
            None,
            format!("{r} (the runner's HTTP worker held the job, its lease running)"),
        )
    }));
    let total = history.added.len();
    let shown = format!("runs: {runs}");
    let result = no_findings(
        &format!("each of the {total} jobs to run exactly once, with its payload, over HTTP or through the file ({shown})"),
        findings,
    );
    drop(server);
    result.map(|()| shown)
}

/// A runner's HTTP worker: a thread of the case.
type Runner<'scope> = std::thread::ScopedJoinHandle<'scope, Result<http_worker::Tally, Failure>>;

/// The runner's HTTP workers.
fn spawn_runners<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    ctx: &'scope Ctx,
    client: &'scope Client,
    file: &'scope std::path::Path,
    stop: &'scope AtomicBool,
) -> Vec<Runner<'scope>> {
    (0..RUNNER_WORKERS)
        .map(|_| scope.spawn(move || http_worker::work(ctx, client, file, "q", stop)))
        .collect()
}

/// Adds `jobs`, each through its producer, in order.
fn produce(
    ctx: &Ctx,
    client: &Client,
    file: &std::path::Path,
    jobs: &[(Producer, String)],
) -> Result<Vec<Added>, Failure> {
    jobs.iter()
        .map(|(who, payload)| {
            let job = ctx.past_busy(|| match who {
                Producer::Cli => ctx.add(ctx.subject(), file, "q", payload, &[]),
                Producer::Http => client.add(json!({"queue": "q", "payload": payload})),
                Producer::Python => ctx.python_add(file, "q", payload, &[]),
            })?;
            Ok(Added { job, payload: payload.clone(), by: who.name().to_string() })
        })
        .collect()
}

/// Waits until the file holds no job; a worker that ends meanwhile (a
/// `work` process by itself, a runner's HTTP worker on an error) fails
/// the case.
fn drain(
    ctx: &Ctx,
    file: &std::path::Path,
    workers: &mut [WorkerProcess],
    runners: &[Runner],
    who: &str,
) -> CaseResult {
    ctx.wait_for(&format!("{who} to run every job of the file"), DRAIN, || {
        for worker in workers.iter_mut() {
            worker.still_running("the subject's `work` to keep running until stopped")?;
        }
        if runners.iter().any(|r| r.is_finished()) {
            return Err(Failure::error("the runner's HTTP workers to keep running", "one ended"));
        }
        Ok(job_count(file)? == 0)
    })
}

/// How many runs each kind of worker made (`kinds`: a worker's pid and
/// its kind), for the report: `30 by the runner's HTTP workers, 18 by …`.
fn runs_by_kind(runs: &[Execution], kinds: &[(u32, &str)]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for run in runs {
        let kind = kinds.iter().find(|(pid, _)| *pid == run.worker_pid).map_or("another process", |(_, k)| k);
        match counts.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => counts.push((kind, 1)),
        }
    }
    counts.iter().map(|(kind, n)| format!("{n} by {kind}")).collect::<Vec<_>>().join(", ")
}

/// Jobs of `http/claims-race`, and its clients.
const RACED: usize = 120;
const CLAIMERS: usize = 8;

/// HTTP clients claim (and hold) jobs as fast as they can while `work`
/// processes take them too: no job is claimed twice over HTTP, or both
/// over HTTP and by a `work` process, or run twice, and every job is taken.
pub fn claims_race(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = super::start(ctx, &[], &[])?;
    for i in 0..RACED {
        client.add(json!({"queue": "q", "payload": format!("job {i}")}))?;
    }
    let options = ["--concurrency", CLI_CONCURRENCY, "--poll", "20ms", "--quiet"];
    let mut workers = (0..2)
        .map(|_| start_worker(ctx, ctx.subject(), &file, "q", &options))
        .collect::<Result<Vec<_>, _>>()?;
    let claimed: Result<Vec<i64>, Failure> = std::thread::scope(|scope| {
        let claimers: Vec<_> = (0..CLAIMERS)
            .map(|_| {
                let (client, ctx) = (&client, &*ctx);
                scope.spawn(move || -> Result<Vec<i64>, Failure> {
                    let mut got = Vec::new();
                    while let Some(job) =
                        ctx.past_busy(|| client.claim(json!({"queue": "q", "lease": 120})))?
                    {
                        got.push(job["id"].as_i64().unwrap_or(-1));
                    }
                    Ok(got)
                })
            })
            .collect();
        let mut all = Vec::new();
        for c in claimers {
            all.extend(c.join().unwrap_or_else(|_| Err(Failure::error("a client thread", "it panicked")))?);
        }
        Ok(all)
    });
    let held: BTreeSet<i64> = claimed.as_ref().map(|c| c.iter().copied().collect()).unwrap_or_default();
    // The `work` processes finish what they took: then the file holds the held jobs only.
    let finished = claimed.as_ref().map_err(Clone::clone).and_then(|_| {
        ctx.wait_for("the `work` processes to finish the jobs they took", DRAIN, || {
            for worker in workers.iter_mut() {
                worker.still_running("the subject's `work` to keep running until stopped")?;
            }
            Ok(rows(&file)?.iter().all(|r| held.contains(&r.id)))
        })
    });
    for worker in workers {
        worker.stop(Duration::from_secs(30))?;
    }
    let claimed = claimed?;
    finished?;
    let ran: Vec<i64> = common::executions(ctx)?.iter().map(|e| e.job).collect();
    let twice = |ids: &[i64]| {
        let mut seen = BTreeSet::new();
        ids.iter().filter(|id| !seen.insert(**id)).copied().collect::<BTreeSet<i64>>()
    };
    let (claimed_twice, ran_twice) = (twice(&claimed), twice(&ran));
    let ran: BTreeSet<i64> = ran.into_iter().collect();
    let both: BTreeSet<i64> = held.intersection(&ran).copied().collect();
    ensure!(
        claimed_twice.is_empty() && ran_twice.is_empty() && both.is_empty(),
        format!("each of {RACED} jobs claimed once: over HTTP, or by a `work` process"),
        format!(
            "claimed twice over HTTP: {}; run twice by `work`: {}; claimed over HTTP and run by `work`: {}",
            claimed_twice.shown(),
            ran_twice.shown(),
            both.shown()
        )
    );
    ensure_eq!(
        held.len() + ran.len(),
        RACED,
        format!("jobs taken ({} over HTTP, {} by `work`)", held.len(), ran.len())
    );
    let running = rows(&file)?.iter().filter(|r| r.state == "running").count();
    ensure_eq!(running, held.len(), "jobs the file shows running: those held over HTTP");
    ctx.notes.push(format!("{} claimed over HTTP, {} run by `work`", held.len(), ran.len()));
    Ok(())
}
