//! The defaults that no other case sees as values ([`values::DEFAULTS`]
//! names the case of each): `work`'s `--timeout` (none: a command runs on
//! past 50 s) and `--grace` (30 s after SIGTERM, then the command is
//! stopped and its job given back), `serve`'s `--addr` (127.0.0.1:7660)
//! and a claim's `wait` (none).

use std::net::{Ipv4Addr, TcpListener};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::cases::common;
use crate::cases::steps::rows::{brief_all, row_present};
use crate::cases::steps::running::{alive, still_working};
use crate::cases::CaseResult;
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::observe::file::{job_count, row, rows};
use crate::subjects::server::Client;
use crate::subjects::worker::start_worker;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

/// How long the job of the worker without `--timeout` runs: past a
/// default of 50 s; a program whose default limit is longer passes.
const LONG_RUN_MS: u64 = 55_000;
/// The published grace, and the margins around it that the case allows:
/// the command must still run a little before it, and be stopped and its
/// job given back a little after it.
const GRACE: Duration = Duration::from_secs(30);
const GRACE_EARLY: Duration = Duration::from_secs(3);
const GRACE_LATE: Duration = Duration::from_secs(8);

/// `work.timeout` and `work.stop`, as defaults: a worker without
/// `--timeout` lets a command run 55 s and finishes its job; a worker
/// without `--grace`, stopped by SIGTERM, lets its command run on until
/// about 30 s, then stops it and gives its job back.
pub fn work(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let subject = ctx.subject().clone();
    let long = ctx.add(&subject, &file, "long", &format!("sleep:{LONG_RUN_MS} runs-55-s"), &[])?;
    let graced = ctx.add(&subject, &file, "graced", "sleep:120000 runs-past-the-grace", &[])?;
    let options = ["--poll", "20ms", "--lease", "3s"];
    let mut long_worker = start_worker(ctx, &subject, &file, "long", &options)?;
    let mut graced_worker = start_worker(ctx, &subject, &file, "graced", &["--poll", "20ms"])?;
    let mut pid = None;
    ctx.wait_for("both jobs' commands to start", Duration::from_secs(20), || {
        still_working(&mut [&mut long_worker, &mut graced_worker])?;
        let runs = common::executions(ctx)?;
        pid = runs.iter().find(|e| e.job == graced).map(|e| e.pid);
        Ok(pid.is_some() && runs.iter().any(|e| e.job == long))
    })?;
    let pid = pid.unwrap_or_default();
    let stopped = Instant::now();
    graced_worker.process.signal(nix::sys::signal::Signal::SIGTERM);
    // Until a little before the grace ends, the command runs on and the
    // job stays running; then it is stopped and the job given back.
    let mut given_back = None;
    while stopped.elapsed() < GRACE + GRACE_LATE {
        let r = row_present(&file, graced)?;
        let running = r.state == "running";
        if stopped.elapsed() < GRACE - GRACE_EARLY {
            ensure!(
                running && alive(pid),
                format!(
                    "`work` without --grace (30s), stopped by SIGTERM: job {graced}'s command (pid {pid}) to run on, \
                     its job running, for {} s",
                    (GRACE - GRACE_EARLY).as_secs()
                ),
                format!("after {:.1} s: command alive {}, job {}", stopped.elapsed().as_secs_f64(), alive(pid), brief_all(&[r]))
            );
        } else if !running {
            given_back = Some((stopped.elapsed(), r));
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let Some((after, r)) = given_back else {
        return Err(Failure::fail(
            format!(
                "`work` without --grace (30s), stopped by SIGTERM: job {graced} given back within {} s",
                (GRACE + GRACE_LATE).as_secs()
            ),
            format!("still running: {}", brief_all(&rows(&file)?)),
        ));
    };
    ensure_eq!(
        (r.state.as_str(), r.attempts),
        ("ready", 0),
        format!(
            "job {graced}, given back {:.1} s after SIGTERM: (state, attempts), uncounted",
            after.as_secs_f64()
        )
    );
    let worker_end = graced_worker.process.wait_timeout(Duration::from_secs(15))?;
    ensure!(
        worker_end.is_some_and(|s| s.success()),
        "the stopped worker to exit 0 once its job is given back",
        format!("{worker_end:?}: {}", clip(&graced_worker.stderr()))
    );
    let what = format!(
        "`work` without --timeout to let job {long}'s command run {} s and finish the job",
        LONG_RUN_MS / 1000
    );
    ctx.wait_for(&what, Duration::from_secs(60), || {
        still_working(&mut [&mut long_worker])?;
        Ok(row(&file, long)?.is_none_or(|r| r.state != "running"))
    })?;
    long_worker.stop(Duration::from_secs(15))?;
    ensure!(row(&file, long)?.is_none(), what, brief_all(&rows(&file)?));
    Ok(())
}

/// The published server's port when `--addr` is left out.
const DEFAULT_PORT: u16 = 7660;
/// How long the case waits for that port to be free (another run of the
/// suite on this machine may hold it for a moment).
const PORT_WAIT: Duration = Duration::from_secs(60);
/// How soon a claim without `wait` on an empty queue must answer: at
/// once, with room for a loaded machine.
const NO_WAIT: Duration = Duration::from_secs(4);

/// `serve.addr` and `http.claim-wait` as defaults: `serve FILE` without
/// `--addr` answers on 127.0.0.1:7660 (a job added there lands in this
/// file), and a claim without `wait` of an empty queue answers 204 at once.
pub fn serve(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let subject = ctx.subject().clone();
    let deadline = Instant::now() + PORT_WAIT;
    let stderr_path = ctx.path("serve-default.stderr");
    let (mut server, client) = loop {
        // Free for a moment: a run of the suite beside this one lets it go
        // within a second or two.
        while TcpListener::bind((Ipv4Addr::LOCALHOST, DEFAULT_PORT)).is_err() {
            // Not the subject's doing: the case cannot run here (an error,
            // not a failure); `--skip sweep/serve-defaults` leaves it out.
            if Instant::now() >= deadline {
                return Err(Failure::error(
                    format!("port {DEFAULT_PORT} of 127.0.0.1 free, for `serve` without --addr"),
                    format!("another program held it for {} s", PORT_WAIT.as_secs()),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut cmd = std::process::Command::new(&subject.program);
        cmd.args(&subject.args)
            .args(["serve", path_str(&file)])
            .env_remove("UKUE_TOKEN")
            .current_dir(&ctx.dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::from(std::fs::File::create(&stderr_path)?));
        let mut server =
            ctx.procs.spawn(&mut cmd).map_err(|e| Failure::error("serve to start", e.to_string()))?;
        let client = Client::new(DEFAULT_PORT, None);
        let listening = Instant::now() + Duration::from_secs(15);
        let answered = loop {
            if server.child.try_wait()?.is_some() {
                break false;
            }
            if client.get("/v1/health").is_ok_and(|r| r.status == 200) {
                break true;
            }
            if Instant::now() >= listening {
                return Err(Failure::fail(
                    format!(
                        "`serve FILE` without --addr to listen on 127.0.0.1:{DEFAULT_PORT} (its default)"
                    ),
                    format!(
                        "nothing answered there in 15 s; stderr: {}",
                        clip(&std::fs::read_to_string(&stderr_path).unwrap_or_default())
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // A server that answers may still be another run's, which bound
        // the port between our look and our serve's bind (ours then exits):
        // a job added there must land in this file.
        if answered {
            let marker = format!("through the default address to {}", path_str(&file));
            let reply = client.post("/v1/jobs", json!({"queue": "q", "payload": marker}))?;
            let id = reply.json().and_then(|answer| answer["id"].as_i64()).unwrap_or(0);
            if row(&file, id)?.is_some_and(|r| r.payload == marker.as_bytes()) {
                break (server, client);
            }
            ensure!(
                server.wait_timeout(Duration::from_secs(2))?.is_some(),
                format!(
                    "a job added through 127.0.0.1:{DEFAULT_PORT} to land in the file that `serve FILE` \
                     (no --addr) serves"
                ),
                format!(
                    "not in it ({}): another program answers there, and this serve runs on",
                    reply.show()
                )
            );
        }
        // Exited: the port was taken between the look and the bind, by
        // another run; try again while the deadline allows.
        ensure!(
            Instant::now() < deadline,
            format!("`serve FILE` without --addr to listen on 127.0.0.1:{DEFAULT_PORT}"),
            format!("it exited: {}", clip(&std::fs::read_to_string(&stderr_path).unwrap_or_default()))
        );
        let _ = server.wait_timeout(Duration::from_secs(1));
    };
    let empty = job_count(&file)?;
    let asked = Instant::now();
    let reply = client.post("/v1/claim", json!({"queue": "empty"}))?;
    let took = asked.elapsed();
    ensure!(
        reply.status == 204 && took < NO_WAIT,
        format!(
            "a claim without wait of a queue with no job: 204 at once (wait 0 by default), within {} s",
            NO_WAIT.as_secs()
        ),
        format!("{} after {:.1} s", reply.show(), took.as_secs_f64())
    );
    ensure_eq!(job_count(&file)?, empty, "jobs after a claim of an empty queue");
    server.signal(nix::sys::signal::Signal::SIGTERM);
    let _ = server.wait_timeout(Duration::from_secs(10));
    Ok(())
}
