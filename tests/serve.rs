//! `ukue serve`: the HTTP API of the published API.md, its security rules,
//! and its stop. Requests are written by hand (HTTP/1.1 over a socket), so
//! that a test can send any Host, Origin or body it likes.

mod support;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::*;

const DEADLINE: Duration = Duration::from_secs(20);

/// A running `ukue serve`, stopped (SIGKILL) when dropped.
struct Server {
    child: Child,
    port: u16,
    client: Client,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap().port()
}

fn start(file: &str, extra: &[&str], env: &[(&str, &str)]) -> Server {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(ukue_bin())
        .args(["serve", file, "--addr", &addr])
        .args(extra)
        .env_remove("UKUE_TOKEN")
        .envs(env.iter().copied())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = Server { child, port, client: Client(port) };
    let up = wait_for(DEADLINE, || {
        assert!(server.child.try_wait().unwrap().is_none(), "ukue serve exited before it listened");
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "ukue serve did not listen on {addr} within {DEADLINE:?}");
    server
}

struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {} {}", self.head, String::from_utf8_lossy(&self.body)))
    }
}

/// A client of the server on a port.
struct Client(u16);

impl std::ops::Deref for Server {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Client {
    /// One request on a fresh connection; `headers` replaces the defaults of the same name.
    fn raw(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
        let mut stream = TcpStream::connect(("127.0.0.1", self.0)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut head =
            format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: 127.0.0.1:{}\r\n", self.0));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        // A server may answer (413) before reading all of a large body.
        let _ = stream.write_all(body);
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        let split = bytes.windows(4).position(|w| w == b"\r\n\r\n").expect("an answer with a head");
        let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status");
        let mut body = bytes[split + 4..].to_vec();
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            body = unchunk(&body);
        }
        Answer { status, head, body }
    }

    fn call(&self, method: &str, path: &str, body: Value) -> Answer {
        self.raw(method, path, &[], body.to_string().as_bytes())
    }

    fn post(&self, path: &str, body: Value) -> Answer {
        self.call("POST", path, body)
    }

    fn get(&self, path: &str) -> Answer {
        self.raw("GET", path, &[], b"")
    }
}

fn unchunk(mut bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = bytes.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(std::str::from_utf8(&bytes[..eol]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.extend_from_slice(&bytes[eol + 2..eol + 2 + size]);
        bytes = &bytes[eol + 4 + size..];
    }
    out
}

fn new_file(scratch: &Scratch) -> String {
    let p = path_str(&scratch.path("jobs.ukue")).to_string();
    ok(&["init", &p]);
    p
}

fn expect(answer: &Answer, status: u16, what: &str) {
    assert_eq!(answer.status, status, "{what}: {} {}", answer.head, String::from_utf8_lossy(&answer.body));
    if status >= 400 {
        assert!(answer.json()["error"].is_string(), "{what}: an error is a JSON body");
    }
}

#[test]
fn every_endpoint_and_the_cli_see_the_same_jobs() {
    let scratch = Scratch::new();
    let file = new_file(&scratch);
    let server = start(&file, &[], &[]);
    let health = server.get("/v1/health");
    expect(&health, 200, "health");
    assert_eq!(health.json(), json!({"ok": true, "version": env!("CARGO_PKG_VERSION"), "format_version": 1}));

    let added = server.post("/v1/jobs", json!({"queue": "q", "payload": {"to": "a"}, "priority": 5}));
    expect(&added, 201, "add");
    let id = added.json()["id"].as_i64().unwrap();
    let shown: Value = serde_json::from_str(&ok(&["show", &file, &id.to_string(), "--json"])).unwrap();
    assert_eq!(shown["payload"], r#"{"to":"a"}"#, "any other JSON value is stored as compact JSON text");
    assert_eq!(server.get(&format!("/v1/jobs/{id}")).json(), shown, "the same job through the CLI and HTTP");
    let binary = server.post("/v1/jobs", json!({"queue": "b", "payload_base64": "/wA=", "delay": "1h"}));
    expect(&binary, 201, "add base64");
    let listed = server.get("/v1/jobs?queue=b&state=delayed");
    assert_eq!(listed.json()["jobs"][0]["payload_base64"], "/wA=");

    let claimed = server.post("/v1/claim", json!({"queue": "q", "lease": 30}));
    expect(&claimed, 200, "claim");
    let job = claimed.json();
    let mut keys: Vec<&str> = job.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "attempt",
            "created_at",
            "id",
            "last_error",
            "lease_until",
            "max_attempts",
            "payload",
            "priority",
            "queue",
            "token"
        ]
    );
    assert_eq!((job["id"].as_i64(), job["attempt"].as_i64()), (Some(id), Some(1)));
    let token = job["token"].as_str().unwrap();
    let path = |step: &str| format!("/v1/jobs/{id}/{step}");
    expect(&server.post(&path("extend"), json!({"token": token, "lease": "2m"})), 200, "extend");
    expect(&server.post(&path("ack"), json!({"token": "0".repeat(32)})), 409, "ack with a wrong token");
    let failed = server.post(&path("fail"), json!({"token": token, "error": "boom", "retry_in": 0}));
    expect(&failed, 200, "fail");
    assert_eq!(failed.json()["state"], "ready");
    expect(&server.post(&path("release"), json!({"token": token})), 409, "release after fail");
    let again = server.post("/v1/claim", json!({"queue": "q"})).json();
    assert_eq!(again["attempt"], 2);
    assert_eq!(again["last_error"], "boom");
    let failed = server.post(&path("fail"), json!({"token": again["token"], "dead": true}));
    assert_eq!(failed.json(), json!({"state": "dead"}));
    let stats = server.get("/v1/stats").json();
    let cli: Value = serde_json::from_str(&ok(&["stats", &file, "--json"])).unwrap();
    assert_eq!(stats, cli, "stats through HTTP and the CLI");
    expect(&server.post(&path("retry"), json!({})), 200, "retry a dead job");
    expect(&server.post(&path("retry"), json!({})), 404, "retry a job that is not dead");
    let held = server.post("/v1/claim", json!({"queue": "q"})).json();
    expect(&server.post(&path("ack"), json!({"token": held["token"]})), 200, "ack");
    expect(&server.get(&format!("/v1/jobs/{id}")), 404, "an acked job is gone");
    assert_eq!(server.post("/v1/retry", json!({})).json(), json!({"retried": 0}));
    assert_eq!(server.post("/v1/purge", json!({"state": "done"})).json(), json!({"deleted": 0}));
    let other = binary.json()["id"].as_i64().unwrap();
    expect(&server.raw("DELETE", &format!("/v1/jobs/{other}"), &[], b""), 200, "delete");
    expect(&server.raw("DELETE", &format!("/v1/jobs/{other}"), &[], b""), 404, "delete twice");
    expect(&server.post("/v1/claim", json!({"queue": "q"})), 204, "claim on an empty queue");
}

#[test]
fn bad_requests_are_json_errors() {
    let scratch = Scratch::new();
    let file = new_file(&scratch);
    let server = start(&file, &["--max-body", "1000"], &[]);
    expect(&server.raw("POST", "/v1/jobs", &[], b"{\"queue\": "), 400, "bad JSON");
    expect(&server.post("/v1/jobs", json!({"queue": "q", "colour": 1})), 400, "an unknown field");
    expect(&server.post("/v1/jobs", json!({"queue": ""})), 400, "no queue");
    expect(&server.post("/v1/jobs", json!({"queue": "q", "priority": 101})), 400, "priority out of range");
    expect(
        &server.post("/v1/jobs", json!({"queue": "q", "payload": "x".repeat(2000)})),
        413,
        "a body over the limit",
    );
    expect(&server.post("/v1/jobs/abc/ack", json!({"token": "t"})), 400, "a bad id");
    expect(&server.post("/v1/jobs/0/ack", json!({"token": "t"})), 400, "id 0");
    expect(&server.post("/v1/jobs/5/ack", json!({})), 400, "no token");
    expect(&server.get("/v1/jobs/99"), 404, "an unknown job");
    expect(&server.get("/v1/nothing"), 404, "an unknown endpoint");
    expect(&server.raw("PUT", "/v1/claim", &[], b""), 405, "a wrong method");
    expect(&server.get("/v1/jobs?limit=0"), 400, "limit 0");
    expect(&server.get("/v1/jobs?state=bogus"), 400, "a bad state");
    expect(&server.post("/v1/claim", json!({"queue": "q", "lease": 0})), 400, "lease 0");
    expect(&server.post("/v1/purge", json!({"state": "ready"})), 400, "purge ready");
    // As the published server: a negative delay, and a delay with a run_at, are refused.
    expect(&server.post("/v1/jobs", json!({"queue": "q", "delay": -5})), 400, "a negative delay");
    let both = json!({"queue": "q", "delay": "1h", "run_at": "2030-01-01T00:00:00Z"});
    expect(&server.post("/v1/jobs", both), 400, "a delay and a run_at");
    assert!(ok(&["list", &file]).lines().count() <= 1, "no job was added by a refused request");
    // A negative wait in Go's syntax is none, as a negative number is.
    expect(&server.post("/v1/claim", json!({"queue": "q", "wait": "-1s"})), 204, "a wait of -1s");
}

#[test]
fn a_list_takes_100_jobs_unless_told_and_1000_at_most() {
    let scratch = Scratch::new();
    let file = new_file(&scratch);
    for _ in 0..101 {
        ok(&["add", &file, "q", "x"]);
    }
    let server = start(&file, &[], &[]);
    let count =
        |query: &str| server.get(&format!("/v1/jobs{query}")).json()["jobs"].as_array().unwrap().len();
    assert_eq!(count(""), 100, "the API's default limit (the CLI's is 50)");
    assert_eq!(count("?limit=5000"), 101, "a limit over 1000 is taken as 1000, not refused");
}

#[test]
fn the_token_file_guards_the_endpoints_but_health() {
    let scratch = Scratch::new();
    let file = new_file(&scratch);
    let token_file = scratch.path("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let server = start(&file, &["--token-file", path_str(&token_file)], &[("UKUE_TOKEN", "ignored")]);
    expect(&server.get("/v1/health"), 200, "health needs no token");
    // Every endpoint is the http family's `http/auth` (harness/tests/broken.rs runs it on this server).
    for (method, path) in [("POST", "/v1/claim"), ("DELETE", "/v1/jobs/1")] {
        let none = server.raw(method, path, &[], b"{}");
        expect(&none, 401, &format!("{method} {path} without a token"));
        assert!(none.head.to_ascii_lowercase().contains("www-authenticate: bearer"), "{}", none.head);
        let wrong = server.raw(method, path, &[("Authorization", "Bearer s3cret-tokem")], b"{}");
        expect(&wrong, 401, &format!("{method} {path} with a wrong token"));
    }
    let good = [("Authorization", "Bearer s3cret-token")];
    expect(&server.raw("POST", "/v1/jobs", &good, br#"{"queue": "q"}"#), 201, "add with the token");
    expect(
        &server.raw("GET", "/v1/stats", &[("Authorization", "Bearer ignored")], b""),
        401,
        "UKUE_TOKEN loses to --token-file",
    );
}

#[test]
fn requests_from_web_pages_and_other_hosts_are_refused() {
    let scratch = Scratch::new();
    let file = new_file(&scratch);
    let server = start(&file, &[], &[]);
    let add = br#"{"queue": "q"}"#;
    let port = server.port;
    let same_origin = format!("http://127.0.0.1:{port}");
    expect(&server.raw("POST", "/v1/jobs", &[("Sec-Fetch-Site", "cross-site")], add), 403, "cross-site");
    expect(&server.raw("POST", "/v1/jobs", &[("Origin", "http://evil.example")], add), 403, "another origin");
    expect(&server.raw("POST", "/v1/jobs", &[("Origin", &same_origin)], add), 201, "the same origin");
    expect(&server.raw("POST", "/v1/jobs", &[("Sec-Fetch-Site", "same-origin")], add), 201, "same-origin");
    expect(
        &server.raw("GET", "/v1/stats", &[("Sec-Fetch-Site", "cross-site")], b""),
        200,
        "a read from another site",
    );
    let evil = format!("evil.example:{port}");
    expect(&server.raw("GET", "/v1/stats", &[("Host", &evil)], b""), 403, "a DNS name pointing here");
    expect(&server.raw("POST", "/v1/jobs", &[("Host", &evil)], add), 403, "a DNS name pointing here (add)");
    // Any port: a tunnel's (`ssh -L 8080:localhost:PORT`) is not the server's.
    for host in
        [format!("localhost:{port}"), format!("[::1]:{port}"), "localhost:8080".into(), "127.0.0.1".into()]
    {
        expect(&server.raw("GET", "/v1/stats", &[("Host", &host)], b""), 200, &host);
    }
    assert_eq!(server.get("/v1/stats").json()["queues"][0]["ready"], 2, "only the two allowed adds");
}

#[test]
fn with_a_token_any_host_is_answered() {
    let scratch = Scratch::new();
    let file = new_file(&scratch);
    let server = start(&file, &[], &[("UKUE_TOKEN", "s3cret")]);
    let evil = format!("evil.example:{}", server.port);
    let headers = [("Host", evil.as_str()), ("Authorization", "Bearer s3cret")];
    expect(&server.raw("GET", "/v1/stats", &headers, b""), 200, "a DNS name pointing here, with the token");
}

#[test]
fn startup_refusals() {
    let scratch = Scratch::new();
    let file = new_file(&scratch);
    let refused = Command::new(ukue_bin())
        .args(["serve", &file, "--addr", &format!("0.0.0.0:{}", free_port())])
        .env_remove("UKUE_TOKEN")
        .output()
        .unwrap();
    expect_status(&refused, 1, "serve beyond loopback without a token");
    assert!(text(&refused.stderr).starts_with("ukue serve: listening beyond this machine needs a token"));
    let usage = ukue(&["serve", &file, "--addr", "nonsense"]);
    expect_status(&usage, 2, "serve --addr nonsense");

    let v2 = scratch.path("v2.ukue");
    ok(&["init", path_str(&v2)]);
    rusqlite::Connection::open(&v2)
        .unwrap()
        .execute("UPDATE ukue_meta SET value = '2' WHERE key = 'format_version'", [])
        .unwrap();
    let before = std::fs::read(&v2).unwrap();
    let out = ukue(&["serve", path_str(&v2), "--addr", &format!("127.0.0.1:{}", free_port())]);
    expect_status(&out, 1, "serve a format 2 file");
    assert!(text(&out.stderr).contains("format 2"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&v2).unwrap(), before, "a refused file is unchanged");
    assert!(!scratch.path("v2.ukue-wal").exists());
}

#[test]
fn a_waiting_claim_wakes_for_new_jobs_and_a_stop_ends_it() {
    let scratch = Scratch::new();
    let file = new_file(&scratch);
    let mut server = start(&file, &[], &[]);
    let port = server.port;
    std::thread::scope(|s| {
        let waiting = s.spawn(|| server.post("/v1/claim", json!({"queue": "q", "wait": 25})));
        // The claim waits until a job comes: it cannot be answered before.
        let started = Instant::now();
        ok(&["add", &file, "q", "from the CLI"]);
        let answer = waiting.join().unwrap();
        expect(&answer, 200, "a claim waiting for another process's add");
        assert_eq!(answer.json()["payload"], "from the CLI");
        assert!(started.elapsed() < Duration::from_secs(25), "woken before the wait ran out");
    });

    // SIGTERM: the server stops, a waiting claim ends, nothing held is lost.
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let body = json!({"queue": "q", "wait": 30}).to_string();
    let request = format!(
        "POST /v1/claim HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    // Whether the claim reached the server first or not, it must end.
    kill(server.child.id(), "TERM");
    let stopped = wait_for(DEADLINE, || server.child.try_wait().unwrap().is_some());
    assert!(stopped, "ukue serve did not stop within {DEADLINE:?} of SIGTERM");
    assert_eq!(server.child.wait().unwrap().code(), Some(0), "ukue serve exits 0 after SIGTERM");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 204"),
        "a waiting claim ends with 204 (or its connection closes): {answer}"
    );
    let running = ok(&["list", &file, "--state", "running"]);
    assert_eq!(running.lines().count(), 2, "the job claimed earlier is still held: {running}");
}

#[test]
fn a_client_that_leaves_a_waiting_claim_takes_no_job() {
    let scratch = Scratch::new();
    let file = new_file(&scratch);
    let server = start(&file, &[], &[]);
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let body = json!({"queue": "q", "wait": 20}).to_string();
    let head = format!(
        "POST /v1/claim HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\n\r\n",
        server.port,
        body.len()
    );
    stream.write_all(format!("{head}{body}").as_bytes()).unwrap();
    // The request is in; the health answer on a second connection shows the server is reading.
    expect(&server.get("/v1/health"), 200, "health");
    drop(stream);
    ok(&["add", &file, "q", "x"]);
    // Waiting claims poll every 250 ms: give several rounds, then the job must still be ready.
    let claimed =
        wait_for(Duration::from_secs(3), || ok(&["list", &file, "--state", "running"]).lines().count() > 1);
    assert!(!claimed, "a claim whose client left took the job");
    let job = server.post("/v1/claim", json!({"queue": "q"}));
    expect(&job, 200, "the job is there for the next claim");
}

/// Reads one answer with a Content-Length from a kept-alive connection.
fn read_one(stream: &mut TcpStream) -> (u16, String) {
    let mut bytes = Vec::new();
    let mut byte = [0u8; 1];
    while !bytes.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "the connection ended after {bytes:?}");
        bytes.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&bytes).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .expect("a content-length");
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).unwrap();
    (head.split(' ').nth(1).unwrap().parse().unwrap(), head)
}

/// A refusal given before the body has come (a wrong method, a guard)
/// still reads it, so the connection answers the next request; a body over
/// the limit closes the connection, saying so.
#[test]
fn a_refusal_keeps_the_connection_or_says_it_closes() {
    let scratch = Scratch::new();
    let file = new_file(&scratch);
    let server = start(&file, &["--max-body", "100"], &[]);
    for (method, path, extra) in
        [("PUT", "/v1/claim", ""), ("POST", "/v1/jobs", "Sec-Fetch-Site: cross-site\r\n")]
    {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        stream.set_read_timeout(Some(DEADLINE)).unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{extra}Content-Length: 2\r\n\r\n",
            server.port
        );
        stream.write_all(head.as_bytes()).unwrap();
        // The body comes later, as from a slow client.
        std::thread::sleep(Duration::from_millis(200));
        stream.write_all(b"{}").unwrap();
        let (status, head) = read_one(&mut stream);
        assert!(
            (400..500).contains(&status) && !head.contains("connection: close"),
            "{method} {path}: {head}"
        );
        let health = format!("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n", server.port);
        stream.write_all(health.as_bytes()).unwrap();
        assert_eq!(read_one(&mut stream).0, 200, "the next request on the connection after {method} {path}");
    }
    let big = format!(r#"{{"queue": "q", "payload": "{}"}}"#, "x".repeat(200));
    let answer = server.raw("POST", "/v1/jobs", &[], big.as_bytes());
    expect(&answer, 413, "a body over --max-body");
    assert!(answer.head.to_ascii_lowercase().contains("connection: close"), "{}", answer.head);
}

fn kill(pid: u32, signal: &str) {
    let status = Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status().unwrap();
    assert!(status.success());
}

/// clients/python/http_worker.py runs each job once over HTTP: exit 0
/// acks, 65 sends to dead, another exit fails the attempt; SIGTERM stops it.
#[test]
fn the_python_http_worker() {
    let scratch = Scratch::new();
    let file = new_file(&scratch);
    let server = start(&file, &[], &[]);
    let log = scratch.path("ran.log");
    let script =
        format!(r#"p=$(cat); echo "$UKUE_JOB_ID $UKUE_ATTEMPT $p" >> {}; exit ${{p#exit }}"#, path_str(&log));
    for payload in ["exit 0", "exit 65", "exit 3", "exit 0"] {
        ok(&["add", &file, "q", payload]);
    }
    let mut worker = Command::new("python3")
        .arg(repo().join("clients/python/http_worker.py"))
        .args(["q", "--url", &format!("http://127.0.0.1:{}", server.port), "--wait", "1", "--lease", "5"])
        .args(["--", "sh", "-c", &script])
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs (CI installs it)");
    let settled = wait_for(DEADLINE, || {
        let listed: Value = serde_json::from_str(&ok(&["list", &file, "--json"])).unwrap();
        let jobs = listed["jobs"].as_array().unwrap().clone();
        jobs.len() == 2 && jobs.iter().all(|j| j["state"] != "running" && j["attempts"] == 1)
    });
    kill(worker.id(), "TERM");
    let stopped = wait_for(DEADLINE, || worker.try_wait().unwrap().is_some());
    let _ = worker.kill();
    let status = worker.wait().unwrap();
    assert!(settled, "the worker did not settle the four jobs: {}", ok(&["list", &file]));
    assert!(stopped && status.success(), "http_worker.py stops with 0 on SIGTERM: {status}");
    let ran = std::fs::read_to_string(&log).unwrap();
    assert_eq!(ran.lines().count(), 4, "each job ran once: {ran}");
    let show = |id: &str| -> Value { serde_json::from_str(&ok(&["show", &file, id, "--json"])).unwrap() };
    assert_eq!(show("2")["state"], "dead");
    assert_eq!(show("3")["state"], "ready");
    assert_eq!(show("3")["last_error"], "exit status 3");
}
