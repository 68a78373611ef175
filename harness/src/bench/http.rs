//! The HTTP API (`ukue serve`) against the same steps in this process:
//! adds, and claim + ack, by several clients; one claim + ack's round trip
//! over loopback; the server's memory while it holds many waiting claims;
//! and a load run that must lose no job and answer no 5xx.
//!
//! The server is this binary run as `ukue-bench __serve FILE ADDR`, which
//! runs the library's `ukue serve` (the code the `ukue` command runs), so
//! that its memory and CPU are its own, read from /proc.

use std::collections::BTreeSet;
use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::{json, Value};
use ukue::{NewJob, Ukue};

use super::latency::Spread;
use super::load::{epoch_us, joined, Count, Rate, Role, LEASE, PAYLOAD, QUEUE};
use crate::subjects::server::{free_port, server_sockets, Client, ESTABLISHED};
use crate::subjects::Failure;

/// How long the server may take to listen, and to stop.
const STARTUP: Duration = Duration::from_secs(15);

/// The hidden child: `ukue serve FILE --addr ADDR`, through the library's
/// command line.
pub fn serve_child(file: &Path, addr: &str) -> Result<()> {
    let cli = <ukue::cli::args::Cli as clap::Parser>::try_parse_from([
        "ukue".as_ref(),
        "serve".as_ref(),
        file.as_os_str(),
        "--addr".as_ref(),
        addr.as_ref(),
    ])?;
    ukue::cli::run(cli.command, &ukue::OpenOptions::default(), &mut std::io::sink())
}

/// A `ukue serve` of the bench's, stopped (SIGTERM) when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    pub fn start(file: &Path) -> Result<Server> {
        let exe = std::env::current_exe().context("finding ukue-bench itself")?;
        let port = free_port()?;
        let child = Command::new(exe)
            .arg("__serve")
            .arg(file)
            .arg(format!("127.0.0.1:{port}"))
            .env_remove("UKUE_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting ukue serve")?;
        let mut server = Server { child, port };
        let deadline = Instant::now() + STARTUP;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = server.child.try_wait()? {
                bail!("ukue serve {} exited ({status}) before it listened", file.display());
            }
            if Instant::now() > deadline {
                bail!("ukue serve did not listen on port {port} within {STARTUP:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(server)
    }

    pub fn client(&self) -> Client {
        Client::keep_alive(self.port, None)
    }

    /// Its resident memory, in KiB (VmRSS).
    pub fn rss_kib(&self) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .context("no VmRSS in /proc/PID/status")
    }

    /// The CPU time it has used (user and system), in seconds.
    pub fn cpu_s(&self) -> Result<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))?;
        // The fields after the command's name, which is in parentheses.
        let fields: Vec<&str> =
            stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("").split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // utime and stime (fields 14 and 15), in the kernel's USER_HZ: 100.
        Ok((ticks(11) + ticks(12)) / 100.0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + STARTUP;
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The harness's client speaks in case failures; the bench in errors.
fn failed(f: Failure) -> anyhow::Error {
    anyhow::anyhow!("{}: {}", f.expected, f.seen)
}

/// The add's body: the payload of every figure, as its text.
fn add_body() -> Value {
    json!({"queue": QUEUE, "payload": String::from_utf8_lossy(PAYLOAD)})
}

fn claim_body() -> Value {
    json!({"queue": QUEUE, "lease": LEASE.as_secs()})
}

/// One step over HTTP: an add, or a claim and its ack. Ok(false) when
/// the queue is drained.
fn step(client: &Client, role: Role) -> Result<bool> {
    match role {
        Role::Add => {
            client.add(add_body()).map_err(failed)?;
            Ok(true)
        }
        Role::Work => match client.claim(claim_body()).map_err(failed)? {
            Some(job) => {
                let reply = client
                    .post(&format!("/v1/jobs/{}/ack", job["id"]), json!({"token": job["token"]}))
                    .map_err(failed)?;
                if reply.status != 200 {
                    bail!("ack of job {}: {}", job["id"], reply.show());
                }
                Ok(true)
            }
            None => Ok(false),
        },
        Role::Ceiling => bail!("the ceiling is not measured over HTTP"),
    }
}

/// Steps per second of `clients` HTTP clients at once (each its own
/// connection, kept alive), against a server started for the window.
pub fn rate(role: Role, file: &Path, clients: usize, seconds: f64) -> Result<Rate> {
    let server = Server::start(file)?;
    let start_us = epoch_us() + 50_000;
    let counts = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|_| {
                let client = server.client();
                scope.spawn(move || -> Result<Count> {
                    std::thread::sleep(Duration::from_micros(start_us.saturating_sub(epoch_us())));
                    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
                    let mut count = Count { steps: 0, start_us: epoch_us(), end_us: epoch_us(), busy: 0 };
                    while Instant::now() < deadline && step(&client, role)? {
                        count.steps += 1;
                        count.end_us = epoch_us();
                    }
                    Ok(count)
                })
            })
            .collect();
        joined(handles)
    })?;
    Ok(Rate::of(&counts))
}

/// One claim + ack's round trip over HTTP, and the same claim + finish in
/// this process, each with one due job in the file, in turns.
#[derive(Debug, Clone, Copy)]
pub struct RoundTrip {
    pub http: Spread,
    pub in_process: Spread,
}

pub fn round_trip(file: &Path, samples: usize) -> Result<RoundTrip> {
    let server = Server::start(file)?;
    let client = server.client();
    let mut ukue = Ukue::open(file)?;
    let job = NewJob::new(QUEUE, PAYLOAD.to_vec());
    let (mut http, mut here) = (Vec::new(), Vec::new());
    const WARMUP: usize = 5;
    for i in 0..samples + WARMUP {
        ukue.add(&job)?;
        let start = Instant::now();
        if !step(&client, Role::Work)? {
            bail!("the job just added was not claimed over HTTP");
        }
        let over_http = start.elapsed();
        ukue.add(&job)?;
        let start = Instant::now();
        let Some(claimed) = ukue.claim(QUEUE, LEASE)? else { bail!("the job just added was not claimed") };
        ukue.finish(claimed.id, &claimed.token, false)?;
        if i >= WARMUP {
            http.push(over_http);
            here.push(start.elapsed());
        }
    }
    Ok(RoundTrip { http: Spread::of(http), in_process: Spread::of(here) })
}

/// The server's memory and CPU while it holds waiting claims.
#[derive(Debug, Clone, Serialize)]
pub struct Polls {
    pub polls: usize,
    pub rss_idle_kib: u64,
    pub rss_polling_kib: u64,
    /// (rss_polling − rss_idle) ÷ polls.
    pub per_poll_kib: f64,
    /// CPU seconds the server used a second while they waited: cores kept busy.
    pub cpu_while_waiting: f64,
    pub held_s: f64,
}

/// Opens `polls` connections, each with a claim that waits 30 s on an
/// empty queue, and reads the server's memory once it has read them all,
/// and its CPU over `hold`.
pub fn polls(file: &Path, polls: usize, hold: Duration) -> Result<Polls> {
    raise_open_files(polls as u64 + 256);
    let server = Server::start(file)?;
    let health = server.client().get("/v1/health").map_err(failed)?;
    if health.status != 200 {
        bail!("GET /v1/health: {}", health.show());
    }
    let rss_idle_kib = server.rss_kib()?;
    let body = json!({"queue": "nothing-comes", "wait": 30}).to_string();
    let request = format!(
        "POST /v1/claim HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        server.port,
        body.len()
    );
    let mut streams = Vec::with_capacity(polls);
    for _ in 0..polls {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port))?;
        stream.write_all(request.as_bytes())?;
        streams.push(stream);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let socks = server_sockets(server.port).context("reading /proc/net/tcp")?;
        let open = socks.iter().filter(|s| s.state == ESTABLISHED).count();
        if open >= polls && socks.iter().all(|s| s.unread == 0) {
            break;
        }
        if Instant::now() > deadline {
            bail!("the server read {open} of {polls} waiting claims within 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (cpu_before, at) = (server.cpu_s()?, Instant::now());
    std::thread::sleep(hold);
    let (cpu_after, held) = (server.cpu_s()?, at.elapsed());
    let rss_polling_kib = server.rss_kib()?;
    drop(streams);
    Ok(Polls {
        polls,
        rss_idle_kib,
        rss_polling_kib,
        per_poll_kib: rss_polling_kib.saturating_sub(rss_idle_kib) as f64 / polls.max(1) as f64,
        cpu_while_waiting: (cpu_after - cpu_before) / held.as_secs_f64(),
        held_s: held.as_secs_f64(),
    })
}

/// Raises this process's soft limit on open files towards `want` (up to
/// the hard limit), for the connections of [`polls`].
fn raise_open_files(want: u64) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < want {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, want.min(hard), hard);
        }
    }
}

/// What a load run did: every answer counted, every job accounted for.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadRun {
    pub seconds: f64,
    pub producers: usize,
    pub workers: usize,
    pub requests: u64,
    pub added: u64,
    pub acked: u64,
    /// Added and never acked, once the workers drained the queue.
    pub lost: u64,
    /// Acked twice.
    pub twice: u64,
    pub five_xx: u64,
    /// Answers neither expected nor 5xx, and requests with no answer.
    pub errors: u64,
    /// The first of those, to say what went wrong.
    pub first_error: Option<String>,
}

#[derive(Default)]
struct Tally {
    requests: u64,
    five_xx: u64,
    errors: u64,
    first_error: Option<String>,
}

impl Tally {
    /// Counts an answer; true when it was `want`.
    fn answer(
        &mut self,
        what: &str,
        reply: Result<crate::subjects::server::Reply, Failure>,
        want: &[u16],
    ) -> Option<crate::subjects::server::Reply> {
        self.requests += 1;
        let problem = match reply {
            Ok(r) if want.contains(&r.status) => return Some(r),
            Ok(r) if r.status >= 500 => {
                self.five_xx += 1;
                format!("{what}: {}", r.show())
            }
            Ok(r) => {
                self.errors += 1;
                format!("{what}: {}", r.show())
            }
            Err(f) => {
                self.errors += 1;
                format!("{what}: {}: {}", f.expected, f.seen)
            }
        };
        self.first_error.get_or_insert(problem);
        None
    }
}

/// `producers` clients add jobs for `seconds` while `workers` clients
/// claim (waiting up to 1 s) and ack them; then the workers drain the
/// queue. Loopback only, bounded in time.
pub fn load_run(file: &Path, producers: usize, workers: usize, seconds: f64) -> Result<LoadRun> {
    let server = Server::start(file)?;
    let adding = AtomicBool::new(true);
    let working = AtomicBool::new(true);
    let tally = Mutex::new(Tally::default());
    let added = Mutex::new(Vec::new());
    let acked = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..producers {
            let client = server.client();
            let (adding, tally, added) = (&adding, &tally, &added);
            scope.spawn(move || {
                let (mut mine, mut counts) = (Vec::new(), Tally::default());
                while adding.load(Ordering::SeqCst) {
                    let reply = counts.answer("POST /v1/jobs", client.post("/v1/jobs", add_body()), &[201]);
                    if let Some(id) = reply.and_then(|r| r.json()).and_then(|v| v["id"].as_i64()) {
                        mine.push(id);
                    }
                }
                added.lock().unwrap_or_else(|p| p.into_inner()).extend(mine);
                merge(tally, counts);
            });
        }
        for _ in 0..workers {
            let client = server.client();
            let (working, tally, acked) = (&working, &tally, &acked);
            scope.spawn(move || {
                let (mut mine, mut counts) = (Vec::new(), Tally::default());
                let body = json!({"queue": QUEUE, "lease": LEASE.as_secs(), "wait": 1});
                while working.load(Ordering::SeqCst) {
                    let Some(job) =
                        counts.answer("POST /v1/claim", client.post("/v1/claim", body.clone()), &[200, 204])
                    else {
                        continue;
                    };
                    let Some((id, token)) =
                        job.json().and_then(|v| Some((v["id"].as_i64()?, v["token"].clone())))
                    else {
                        continue;
                    };
                    let path = format!("/v1/jobs/{id}/ack");
                    if counts.answer(&path, client.post(&path, json!({"token": token})), &[200]).is_some() {
                        mine.push(id);
                    }
                }
                acked.lock().unwrap_or_else(|p| p.into_inner()).extend(mine);
                merge(tally, counts);
            });
        }
        std::thread::sleep(Duration::from_secs_f64(seconds));
        adding.store(false, Ordering::SeqCst);
        // Then the workers drain what is left, within a bound.
        let reader = crate::subjects::observe::file::open_read_only(file)?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let drained = loop {
            let left: i64 = reader.query_row("SELECT count(*) FROM ukue_jobs", [], |r| r.get(0))?;
            if left == 0 || Instant::now() > deadline {
                break left == 0;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        working.store(false, Ordering::SeqCst);
        if !drained {
            eprintln!("ukue-bench: the load run's workers did not drain the queue within 60 s");
        }
        Ok(())
    })?;
    let tally = tally.into_inner().unwrap_or_else(|p| p.into_inner());
    let added: BTreeSet<i64> = added.into_inner().unwrap_or_else(|p| p.into_inner()).into_iter().collect();
    let acked = acked.into_inner().unwrap_or_else(|p| p.into_inner());
    let unique: BTreeSet<i64> = acked.iter().copied().collect();
    Ok(LoadRun {
        seconds: started.elapsed().as_secs_f64(),
        producers,
        workers,
        requests: tally.requests,
        added: added.len() as u64,
        acked: unique.len() as u64,
        lost: added.difference(&unique).count() as u64,
        twice: (acked.len() - unique.len()) as u64,
        five_xx: tally.five_xx,
        errors: tally.errors,
        first_error: tally.first_error,
    })
}

fn merge(into: &Mutex<Tally>, counts: Tally) {
    let mut t = into.lock().unwrap_or_else(|p| p.into_inner());
    t.requests += counts.requests;
    t.five_xx += counts.five_xx;
    t.errors += counts.errors;
    if t.first_error.is_none() {
        t.first_error = counts.first_error;
    }
}
