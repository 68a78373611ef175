//! A subject's `serve` process and a client of its HTTP API (API.md):
//! started on a free loopback port, ready once it accepts a connection.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ctx::{clip, path_str, Ctx};
use super::process::{Procs, Spawned};
use super::Subject;
use crate::shown::text;
use crate::subjects::Failure;

/// How long a server may take to listen.
pub const STARTUP: Duration = Duration::from_secs(15);
/// How long one request may take (the longest claim waits 30 s).
const REQUEST: Duration = Duration::from_secs(45);

/// A running `serve` of a subject.
pub struct ServerProcess {
    pub process: Spawned,
    pub port: u16,
    pub stderr_path: std::path::PathBuf,
}

impl ServerProcess {
    /// SIGKILL, as a crash or the OOM killer would, and waits for it to end.
    pub fn kill(&mut self) -> Result<(), Failure> {
        self.process.signal(nix::sys::signal::Signal::SIGKILL);
        match self.process.wait_timeout(STARTUP)? {
            Some(_) => Ok(()),
            None => Err(Failure::error("the server to end after SIGKILL", "it was still there")),
        }
    }
}

/// How a `serve` that was started ended up.
pub enum Started {
    Listening(ServerProcess),
    /// It exited before it accepted a connection.
    Exited {
        status: ExitStatus,
        stderr: String,
    },
}

pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port())
}

/// Starts `who serve FILE --addr ADDR EXTRA...` with `env`, and waits
/// until it accepts a connection on `port` or exits.
pub fn launch(
    procs: &Procs,
    dir: &Path,
    who: &Subject,
    file: &Path,
    addr_host: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Result<Started, Failure> {
    let port = free_port()?;
    let n = std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
    let stderr_path = dir.join(format!("serve-{n}.stderr"));
    let mut cmd = Command::new(&who.program);
    cmd.args(&who.args)
        .args(["serve", path_str(file), "--addr", &format!("{addr_host}:{port}")])
        .args(extra)
        .env_remove("UKUE_TOKEN")
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&stderr_path)?));
    let mut process = procs
        .spawn(&mut cmd)
        .map_err(|e| Failure::error(format!("{} serve to start", who.name), e.to_string()))?;
    let deadline = Instant::now() + STARTUP;
    // Every interface (`0.0.0.0`, or an empty host): reached on loopback.
    let connect_to = if addr_host == "0.0.0.0" || addr_host.is_empty() { "127.0.0.1" } else { addr_host };
    loop {
        if let Some(status) = process.child.try_wait()? {
            let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            return Ok(Started::Exited { status, stderr });
        }
        if TcpStream::connect((connect_to, port)).is_ok() {
            return Ok(Started::Listening(ServerProcess { process, port, stderr_path }));
        }
        if Instant::now() >= deadline {
            return Err(Failure::timeout(
                format!("{} serve to listen on port {port} within {} s", who.name, STARTUP.as_secs()),
                "it neither listened nor exited",
            ));
        }
        // A refused connect costs microseconds: look often, as a server
        // listens some tens of ms after its start.
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Starts the case's subject serving `file` on loopback; it must listen.
pub fn serve(ctx: &Ctx, file: &Path, extra: &[&str], env: &[(&str, &str)]) -> Result<ServerProcess, Failure> {
    match launch(&ctx.procs, &ctx.dir, ctx.subject(), file, "127.0.0.1", extra, env)? {
        Started::Listening(server) => Ok(server),
        Started::Exited { status, stderr } => Err(Failure::fail(
            format!("`serve {} --addr 127.0.0.1:PORT {}` to listen", path_str(file), extra.join(" ")),
            format!("it exited ({status}): {}", clip(&stderr)),
        )),
    }
}

/// Whether the subject has `serve`, for the runner. The rule
/// (spec/CONFORMANCE.md): `IMPL serve FILE --addr 127.0.0.1:PORT` on a
/// fresh file exits 2 (a usage error) before it listens: no `serve`, and
/// the http cases are skipped with the reason returned. Anything else
/// (it listens, exits otherwise, or hangs) runs the cases, so a broken
/// `serve` fails them rather than hiding.
pub fn missing_serve(dir: &Path, subject: &Subject, reference: &Subject) -> Option<String> {
    let procs = Procs::new(format!("ukue-serve-detect-{}", std::process::id()));
    let file = dir.join("serve-detect.ukue");
    let init = Command::new(&reference.program).args(&reference.args).arg("init").arg(&file).output();
    if !init.is_ok_and(|o| o.status.success()) {
        return None;
    }
    let started = launch(&procs, dir, subject, &file, "127.0.0.1", &[], &[]);
    let reason = match started {
        Ok(Started::Exited { status, stderr }) if status.code() == Some(2) => Some(format!(
            "the subject has no `serve`: `{} serve FILE --addr 127.0.0.1:PORT` exited 2 (a usage error) without listening: {}",
            subject.name,
            clip(stderr.lines().last().unwrap_or(""))
        )),
        _ => None,
    };
    procs.kill_all();
    let _ = std::fs::remove_file(&file);
    reason
}

/// An answer: its status, headers (names in lower case) and body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
    /// `{"error": "..."}`, as every refusal must be.
    pub fn is_json_error(&self) -> bool {
        self.json().is_some_and(|v| v["error"].is_string())
    }
    pub fn show(&self) -> String {
        format!("{} {}", self.status, clip(&self.text()))
    }
}

/// A client of one server, with the token it sends (if any).
#[derive(Clone)]
pub struct Client {
    pub port: u16,
    pub token: Option<String>,
    agent: ureq::Agent,
}

impl Client {
    /// A client that opens a connection for each request, as curl and
    /// Python's urllib do: a server may close a kept-alive connection
    /// between two requests, and a POST sent on it then has no answer
    /// (whether the server should say so first is `http/keep-alive-after-refusal`'s).
    pub fn new(port: u16, token: Option<&str>) -> Client {
        Client::with(port, token, 0)
    }

    /// A client that keeps its connections alive (the bench's).
    pub fn keep_alive(port: u16, token: Option<&str>) -> Client {
        Client::with(port, token, 8)
    }

    fn with(port: u16, token: Option<&str>, idle: usize) -> Client {
        let agent = ureq::AgentBuilder::new()
            .timeout(REQUEST)
            .redirects(0)
            .max_idle_connections(idle)
            .max_idle_connections_per_host(idle)
            .build();
        Client { port, token: token.map(String::from), agent }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// One request; `headers` are sent as given (a Host among them replaces the usual one).
    pub fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        headers: &[(&str, &str)],
    ) -> Result<Reply, Failure> {
        let mut req = self.agent.request(method, &self.url(path));
        if let Some(token) = &self.token {
            req = req.set("Authorization", &format!("Bearer {token}"));
        }
        for (k, v) in headers {
            req = req.set(k, v);
        }
        if body.is_some() {
            req = req.set("Content-Type", "application/json");
        }
        let result = match body {
            Some(bytes) => req.send_bytes(bytes),
            None => req.call(),
        };
        let response = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => {
                return Err(Failure::fail(format!("an answer to {method} {path}"), format!("no answer: {e}")))
            }
        };
        let status = response.status();
        let headers = response
            .headers_names()
            .into_iter()
            .filter_map(|n| response.header(&n).map(|v| (n.to_ascii_lowercase(), v.to_string())))
            .collect();
        let mut body = Vec::new();
        response.into_reader().take(16 << 20).read_to_end(&mut body)?;
        Ok(Reply { status, headers, body })
    }

    pub fn post(&self, path: &str, body: Value) -> Result<Reply, Failure> {
        self.send("POST", path, Some(body.to_string().as_bytes()), &[])
    }

    pub fn get(&self, path: &str) -> Result<Reply, Failure> {
        self.send("GET", path, None, &[])
    }

    /// `POST /v1/jobs`; the new id.
    pub fn add(&self, body: Value) -> Result<i64, Failure> {
        let reply = self.post("/v1/jobs", body.clone())?;
        let id = reply.json().and_then(|v| v["id"].as_i64());
        match (reply.status, id) {
            (201, Some(id)) => Ok(id),
            _ => Err(Failure::fail(format!("POST /v1/jobs {body}: 201 {{\"id\": N}}"), reply.show())),
        }
    }

    /// `POST /v1/claim`: the job, or None on 204.
    pub fn claim(&self, body: Value) -> Result<Option<Value>, Failure> {
        let reply = self.post("/v1/claim", body.clone())?;
        match (reply.status, reply.json()) {
            (204, _) => Ok(None),
            (200, Some(job)) if job["id"].is_i64() && job["token"].is_string() => Ok(Some(job)),
            _ => Err(Failure::fail(format!("POST /v1/claim {body}: 200 with a job, or 204"), reply.show())),
        }
    }
}

/// The server's side of one TCP connection to a port, from /proc/net/tcp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerSocket {
    /// The kernel's state: 1 established, 8 close-wait (the client closed,
    /// the server has not), …
    pub state: u8,
    /// Bytes that came in and the server has not read yet.
    pub unread: u64,
}

pub const ESTABLISHED: u8 = 0x01;
pub const CLOSE_WAIT: u8 = 0x08;

/// The server's side of every connection to `port` on 127.0.0.1 (the
/// listening socket left out); None when /proc/net/tcp cannot be read.
pub fn server_sockets(port: u16) -> Option<Vec<ServerSocket>> {
    let text = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let local = format!("0100007F:{port:04X}");
    Some(
        text.lines()
            .skip(1)
            .filter_map(|line| {
                let cols: Vec<&str> = line.split_whitespace().collect();
                let state = u8::from_str_radix(cols.get(3)?, 16).ok()?;
                let unread = u64::from_str_radix(cols.get(4)?.split_once(':')?.1, 16).ok()?;
                (*cols.get(1)? == local && state != 0x0A).then_some(ServerSocket { state, unread })
            })
            .collect(),
    )
}

/// Writes `bytes` raw to the server and reads its answer (for what a
/// client library will not send: a body past a limit, a request cut short).
pub fn raw(port: u16, bytes: &[u8]) -> Result<Reply, Failure> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(REQUEST))?;
    let _ = stream.write_all(bytes);
    read_answer(&mut stream)
}

/// Reads one answer from `stream`: its head, then a body of its
/// Content-Length, chunked, or (with neither) up to the end. A read that
/// fails ends the answer, as the end of the connection would.
pub fn read_answer(stream: &mut TcpStream) -> Result<Reply, Failure> {
    let mut buf = Vec::new();
    let more = |stream: &mut TcpStream, buf: &mut Vec<u8>| {
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).unwrap_or(0);
        buf.extend_from_slice(&chunk[..n]);
        n > 0
    };
    let split = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if !more(stream, &mut buf) {
            let seen = format!("the connection ended after {}", text(&clip(&String::from_utf8_lossy(&buf))));
            return Err(Failure::fail("an HTTP answer", seen));
        }
    };
    let head = String::from_utf8_lossy(&buf[..split]).into_owned();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.to_ascii_lowercase());
    let mut body = buf.split_off(split + 4);
    if let Some(len) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        while body.len() < len && more(stream, &mut body) {}
        body.truncate(len);
    } else if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        while !(body.starts_with(b"0\r\n\r\n") || body.ends_with(b"\r\n0\r\n\r\n")) && more(stream, &mut body)
        {
        }
        body = unchunk(&body);
    } else if status != 204 && status != 304 {
        while more(stream, &mut body) {}
    }
    Ok(Reply { status, headers, body })
}

/// A chunked body's bytes.
fn unchunk(mut bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line) = bytes.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&bytes[..line])
            .ok()
            .and_then(|l| usize::from_str_radix(l.split(';').next().unwrap_or("").trim(), 16).ok())
            .unwrap_or(0);
        let start = line + 2;
        if size == 0 || start + size > bytes.len() {
            break;
        }
        out.extend_from_slice(&bytes[start..start + size]);
        bytes = &bytes[(start + size + 2).min(bytes.len())..];
    }
    out
}
