//! Workers over HTTP, taking jobs from a subject's `serve` as `ukue work`
//! takes them from the file: the runner's own ([`work`]: claims, runs the
//! probe with the job's payload and environment, acks or fails), and
//! clients/python/http_worker.py running the probe ([`start_python`]).
//! Both run the probe with `UKUE_FILE` set, so its records say whether the
//! file showed the attempt holding its job, as for any other worker.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine;
use serde_json::{json, Value};

use super::ctx::{path_str, Ctx, COMMAND_TIMEOUT};
use super::server::Client;
use super::worker::{probe_log, WorkerProcess};
use crate::subjects::{Failure, LOCKED};

/// The lease the HTTP workers ask for: long enough that nothing is reaped.
pub const LEASE_S: u64 = 60;
/// How long one of their claims waits for a job (so a stop is seen soon).
const WAIT_S: u64 = 1;
/// The probe's exit status that sends a job to dead, as `ukue work`.
const PERMANENT: i32 = 65;

/// What a runner's HTTP worker did.
#[derive(Debug, Default)]
pub struct Tally {
    pub ran: usize,
    /// Acks and fails the server refused (409: the job was no longer this
    /// worker's), as `job 7: ack: 409 …`. The probe's records show the
    /// same from the file's side, for the checkers.
    pub refused: Vec<String>,
}

/// The runner's HTTP worker: claims jobs of `queue` until `stop` is set,
/// runs the probe for each, and acks it (exit 0) or fails it.
pub fn work(
    ctx: &Ctx,
    client: &Client,
    file: &Path,
    queue: &str,
    stop: &AtomicBool,
) -> Result<Tally, Failure> {
    let mut tally = Tally::default();
    while !stop.load(Ordering::SeqCst) {
        let claim = || client.claim(json!({"queue": queue, "lease": LEASE_S, "wait": WAIT_S}));
        let Some(job) = ctx.past_busy(claim)? else {
            continue;
        };
        let id = job["id"].as_i64().unwrap_or(-1);
        let status = run_probe(ctx, file, &job)?;
        let (step, body) = match status {
            0 => ("ack", json!({"token": job["token"]})),
            PERMANENT => ("fail", json!({"token": job["token"], "error": "exit 65", "dead": true})),
            other => ("fail", json!({"token": job["token"], "error": format!("exit {other}")})),
        };
        // A busy answer changed nothing: the job is still held, and the
        // step is taken again.
        let reply = ctx.past_busy(|| {
            let reply = client.post(&format!("/v1/jobs/{id}/{step}"), body.clone())?;
            match reply.status {
                500.. if reply.text().contains(LOCKED) => {
                    Err(Failure::fail(format!("{step} of job {id}"), reply.show()))
                }
                _ => Ok(reply),
            }
        })?;
        if reply.status != 200 {
            tally.refused.push(format!("job {id}: {step}: {}", reply.show()));
        }
        tally.ran += 1;
    }
    Ok(tally)
}

/// Runs the probe for a claimed job as `ukue work` runs its command:
/// payload on stdin, the job in its environment. Returns its exit status.
fn run_probe(ctx: &Ctx, file: &Path, job: &Value) -> Result<i32, Failure> {
    let payload = match (job["payload"].as_str(), job["payload_base64"].as_str()) {
        (Some(text), _) => text.as_bytes().to_vec(),
        (None, Some(b64)) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| Failure::fail("a claimed job's payload_base64 to be base64", e.to_string()))?,
        (None, None) => Vec::new(),
    };
    let text = |key: &str| job[key].as_i64().map(|n| n.to_string()).unwrap_or_default();
    let mut cmd = Command::new(&ctx.subjects.probe);
    cmd.arg(probe_log(ctx))
        .env("UKUE_FILE", file)
        .env("UKUE_QUEUE", job["queue"].as_str().unwrap_or(""))
        .env("UKUE_JOB_ID", text("id"))
        .env("UKUE_ATTEMPT", text("attempt"))
        .env("UKUE_MAX_ATTEMPTS", text("max_attempts"))
        .current_dir(&ctx.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut probe =
        ctx.procs.spawn(&mut cmd).map_err(|e| Failure::error("the probe to start", e.to_string()))?;
    if let Some(mut stdin) = probe.child.stdin.take() {
        let _ = stdin.write_all(&payload);
    }
    match probe.wait_timeout(COMMAND_TIMEOUT)? {
        Some(status) => Ok(status.code().unwrap_or(-1)),
        None => Err(Failure::error("the probe to end", format!("still running after {COMMAND_TIMEOUT:?}"))),
    }
}

/// Starts `python3 http_worker.py QUEUE --url … -- ukue-probe LOG` against
/// the server on `port`, with `UKUE_FILE` for the probe.
pub fn start_python(ctx: &Ctx, port: u16, file: &Path, queue: &str) -> Result<WorkerProcess, Failure> {
    let python = ctx.subjects.python_http_worker.as_ref().ok_or_else(|| {
        Failure::error("python3 for http_worker.py", "no python (the case should be skipped)")
    })?;
    let n = std::fs::read_dir(&ctx.dir).map(|d| d.count()).unwrap_or(0);
    let stderr_path = ctx.path(&format!("http-worker-{n}.stderr"));
    let url = format!("http://127.0.0.1:{port}");
    let (lease, wait) = (LEASE_S.to_string(), WAIT_S.to_string());
    let log = probe_log(ctx);
    let mut cmd = Command::new(&python.program);
    cmd.args(&python.args)
        .args([queue, "--url", &url, "--lease", &lease, "--wait", &wait, "--quiet", "--"])
        .args([path_str(&ctx.subjects.probe), path_str(&log)])
        .env("UKUE_FILE", file)
        .env_remove("UKUE_TOKEN")
        .current_dir(&ctx.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&stderr_path)?));
    let process =
        ctx.procs.spawn(&mut cmd).map_err(|e| Failure::error("http_worker.py to start", e.to_string()))?;
    Ok(WorkerProcess::started(ctx, process, stderr_path))
}
