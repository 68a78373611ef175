//! Samples of one step's cost on the small file and on the large one,
//! taken in rounds that interleave the two (in a seeded order), so that
//! the machine's slow moments fall on both alike. A cost is CPU time
//! (crate::subjects::observe::cpu), which a busy neighbour on the same
//! CPU does not stretch:
//!
//! - a step that is a process of its own (`add`, `list`) costs that
//!   process's CPU time less the median of the same program's `version`
//!   (its start-up), timed in the same rounds;
//! - a step that a long-running process repeats (`work`'s claims, `serve`'s
//!   answers) costs the CPU time that process spends in a window of it,
//!   once it has started and run a first job: no start-up in it at all.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::seq::SliceRandom;
use serde_json::json;

use super::files::{self, QUEUE};
use crate::subjects::ctx::{expect_success, path_str, Ctx};
use crate::subjects::observe::cpu;
use crate::subjects::server::{self, Client, ServerProcess};
use crate::subjects::worker::{start_command_worker, WorkerProcess};
use crate::subjects::Failure;

/// Rounds of samples: each takes one sample of each file.
pub const ROUNDS: usize = 7;
/// Rounds for a step timed as a whole process, whose start-up varies more
/// than its step costs.
pub const ONE_SHOT_ROUNDS: usize = 15;
/// An idle worker's window.
pub const WINDOW: Duration = Duration::from_millis(200);
/// How often an idle worker looks: ten looks a window. Long beside a look
/// through an index, so that a look that walks the file still fits
/// between two: a worker busy all the window would get only the CPU the
/// machine spared it, and show that, not what its looks cost.
pub const POLL: &str = "20ms";
/// Due jobs a worker runs in one sample.
pub const DUE: usize = 8;
/// Requests to a server in one sample.
pub const REQUESTS: usize = 20;

/// The two files of a case and their sizes.
pub struct Files {
    pub small: PathBuf,
    pub large: PathBuf,
    pub small_rows: u64,
    pub large_rows: u64,
}

impl Files {
    fn both(&self) -> [(&Path, u64); 2] {
        [(&self.small, self.small_rows), (&self.large, self.large_rows)]
    }
}

/// What a case sampled, in ms.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    /// What one sample is.
    pub unit: String,
    pub small: Vec<f64>,
    pub large: Vec<f64>,
    /// The median CPU time of `version`, taken off each sample of a step
    /// timed whole.
    pub noop_ms: Option<f64>,
    /// The coarsest clock the samples were read with.
    pub resolution_ms: f64,
}

impl Samples {
    fn new(unit: String) -> Samples {
        Samples { unit, ..Samples::default() }
    }

    fn push(&mut self, which: usize, ms: f64) {
        if which == 0 { &mut self.small } else { &mut self.large }.push(ms);
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The order of one round: `n` things shuffled by the case's seed.
fn order(ctx: &mut Ctx, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut ctx.rng);
    order
}

/// A process's CPU time so far, which must still be running.
fn cpu_of(pid: i32, what: &str) -> Result<cpu::Reading, Failure> {
    cpu::in_flight(pid).ok_or_else(|| Failure::fail(format!("{what} to keep running"), "it is gone"))
}

/// `work FILE q --poll 5ms --quiet [--keep-done] -- true` on each file,
/// each once it has run a first job.
fn workers(ctx: &Ctx, files: &Files, keep_done: bool) -> Result<Vec<WorkerProcess>, Failure> {
    let mut options = vec!["--poll", POLL, "--quiet"];
    if keep_done {
        options.push("--keep-done");
    }
    let subject = ctx.subject().clone();
    let mut started = Vec::new();
    for (file, _) in files.both() {
        started.push(start_command_worker(ctx, &subject, file, QUEUE, &options, &["true"])?);
    }
    for (file, _) in files.both() {
        let first = files::add_due(file, 1)?;
        files::wait_finished(ctx, file, &first, Duration::from_secs(60))?;
    }
    Ok(started)
}

fn stop(workers: Vec<WorkerProcess>) -> Result<(), Failure> {
    for worker in workers {
        worker.stop(Duration::from_secs(30))?;
    }
    Ok(())
}

/// An idle worker on each file: the CPU time each spends in a window, both
/// windows at once.
pub fn idle_workers(ctx: &mut Ctx, files: &Files) -> Result<Samples, Failure> {
    let workers = workers(ctx, files, false)?;
    let mut samples =
        Samples::new(format!("CPU ms of an idle `work --poll {POLL}` in a {} ms window", WINDOW.as_millis()));
    for _ in 0..ROUNDS {
        let before = workers
            .iter()
            .map(|w| cpu_of(w.process.pid(), "the idle worker"))
            .collect::<Result<Vec<_>, _>>()?;
        // The window measured, not a wait for anything.
        std::thread::sleep(WINDOW);
        for (i, worker) in workers.iter().enumerate() {
            let after = cpu_of(worker.process.pid(), "the idle worker")?;
            samples.push(i, ms(after.time.saturating_sub(before[i].time)));
            samples.resolution_ms = samples.resolution_ms.max(ms(after.resolution));
        }
    }
    stop(workers)?;
    Ok(samples)
}

/// A worker on each file, given [`DUE`] due jobs at a time: the CPU time it
/// spends from their add until it has run them all (its commands are
/// processes of their own, not counted).
pub fn draining_workers(ctx: &mut Ctx, files: &Files, keep_done: bool) -> Result<Samples, Failure> {
    let workers = workers(ctx, files, keep_done)?;
    let mut samples = Samples::new(format!("CPU ms of `work` claiming and finishing {DUE} due jobs"));
    let both = files.both();
    for _ in 0..ROUNDS {
        for i in order(ctx, 2) {
            let pid = workers[i].process.pid();
            let before = cpu_of(pid, "the worker")?;
            let ids = files::add_due(both[i].0, DUE)?;
            files::wait_finished(ctx, both[i].0, &ids, Duration::from_secs(60))?;
            let after = cpu_of(pid, "the worker")?;
            samples.push(i, ms(after.time.saturating_sub(before.time)));
            samples.resolution_ms = samples.resolution_ms.max(ms(after.resolution));
        }
    }
    stop(workers)?;
    Ok(samples)
}

/// One process a sample, `args(file, rows)` of the subject: its CPU time
/// less the median of `version`'s, timed in the same rounds.
pub fn one_shot(
    ctx: &mut Ctx,
    files: &Files,
    args: fn(&Path, u64) -> Vec<String>,
) -> Result<Samples, Failure> {
    let subject = ctx.subject().clone();
    let both = files.both();
    let example = args(Path::new("FILE"), 0);
    let mut samples = Samples::new(format!(
        "CPU ms of one `{}` process, less `version`'s",
        example.iter().take(1).cloned().collect::<Vec<_>>().join(" ")
    ));
    let mut noop = Vec::new();
    let mut timed: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    // A first round untimed: the first process to open a file just filled
    // pays for what the ones after it find done (some ms more).
    for round in 0..=ONE_SHOT_ROUNDS {
        for which in order(ctx, 3) {
            let words = match which {
                0 => vec!["version".to_string()],
                n => args(both[n - 1].0, both[n - 1].1),
            };
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let (out, time) = ctx.run_measured(&subject, &words, None)?;
            expect_success(&subject, &words, &out)?;
            match which {
                _ if round == 0 => {}
                0 => noop.push(ms(time)),
                n => timed[n - 1].push(ms(time)),
            }
        }
    }
    let noop = super::verdict::median(&noop);
    samples.noop_ms = Some(noop);
    samples.small = timed[0].iter().map(|t| t - noop).collect();
    samples.large = timed[1].iter().map(|t| t - noop).collect();
    // wait4 counts in microseconds.
    samples.resolution_ms = 0.001;
    Ok(samples)
}

/// `IMPL add FILE q scale`.
pub fn add_args(file: &Path, _rows: u64) -> Vec<String> {
    vec!["add".into(), path_str(file).into(), QUEUE.into(), "scale".into()]
}

/// `IMPL list FILE --limit 10 --after N --json`, N twenty ids before the
/// file's last.
pub fn list_args(file: &Path, rows: u64) -> Vec<String> {
    let after = rows.saturating_sub(20).to_string();
    vec![
        "list".into(),
        path_str(file).into(),
        "--limit".into(),
        "10".into(),
        "--after".into(),
        after,
        "--json".into(),
    ]
}

/// The subject's `serve` on each file: the CPU time it spends answering
/// [`REQUESTS`] claims (of due jobs, each then acked; or on a queue with
/// nothing due).
pub fn servers(ctx: &mut Ctx, files: &Files, due: bool) -> Result<Samples, Failure> {
    let mut servers: Vec<(ServerProcess, Client)> = Vec::new();
    for (file, _) in files.both() {
        let server = server::serve(ctx, file, &[], &[])?;
        let client = Client::keep_alive(server.port, None);
        // A first answer: whatever a server sets up on its first request is
        // set up before the first sample.
        claims(&client, file, 1, due)?;
        servers.push((server, client));
    }
    let what = if due { "claims of due jobs, each acked" } else { "claims finding nothing due" };
    let mut samples = Samples::new(format!("CPU ms of `serve` answering {REQUESTS} {what}"));
    let both = files.both();
    for _ in 0..ROUNDS {
        for i in order(ctx, 2) {
            let (server, client) = &servers[i];
            let pid = server.process.pid();
            let before = cpu_of(pid, "the server")?;
            claims(client, both[i].0, REQUESTS, due)?;
            let after = cpu_of(pid, "the server")?;
            samples.push(i, ms(after.time.saturating_sub(before.time)));
            samples.resolution_ms = samples.resolution_ms.max(ms(after.resolution));
        }
    }
    Ok(samples)
}

/// `count` claims over HTTP: of due jobs added first, each acked; or on a
/// queue with nothing due, each answered 204.
fn claims(client: &Client, file: &Path, count: usize, due: bool) -> Result<(), Failure> {
    if due {
        files::add_due(file, count)?;
    }
    for _ in 0..count {
        let claimed = client.claim(json!({"queue": QUEUE, "lease": 60}))?;
        match (claimed, due) {
            (Some(job), true) => {
                let id = job["id"].as_i64().unwrap_or_default();
                let reply = client.post(&format!("/v1/jobs/{id}/ack"), json!({"token": job["token"]}))?;
                if reply.status != 200 {
                    return Err(Failure::fail(format!("the ack of job {id} to answer 200"), reply.show()));
                }
            }
            (None, false) => {}
            (claimed, _) => {
                return Err(Failure::fail(
                    if due { "a due job for each claim" } else { "204: nothing due" },
                    format!("{claimed:?}"),
                ))
            }
        }
    }
    Ok(())
}
