//! http: a subject's `ukue serve` (API.md): every endpoint's status and
//! JSON shape, the same jobs through the CLI and HTTP, long polls, the
//! token, the body limit, bad requests, requests from web pages and other
//! hosts, and the refusals at startup; jobs delivered over HTTP and
//! through the file at once ([`delivery`]); a killed server and clients
//! that leave ([`faults`]). The items of spec/COMMAND.md §6 and §13, each
//! case naming the item it checks first: every refusal in a table
//! ([`refusals`]), an add's keys and what any body may be ([`adding`]),
//! claims and the calls about a held job ([`holding`]), listing and
//! tidying up ([`tidying`]), and `serve`'s options, guards and stop
//! ([`serving`]). A subject whose `serve` is missing is skipped, not
//! failed (`needs.serve`, subjects::server::missing_serve).
//!
//! Levels: `must` is what API.md states and the published server does;
//! where API.md names no status (a refused token, a body too large, a bad
//! request, another host), a `must` case takes any 4xx with a JSON error,
//! and `http/published-statuses` (`should`) asks for the published
//! server's own.

mod adding;
mod connections;
mod delivery;
mod faults;
mod holding;
mod refusals;
mod sequences;
mod serving;
mod tidying;

use serde_json::{json, Value};

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::server::{self, raw, Client, ServerProcess, Started};
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

/// The token the auth cases give the server.
const TOKEN: &str = "0f3a9c2b7d1e4f6a8b5c0d2e9f7a1b3c";

pub fn cases() -> Vec<Case> {
    let needs = Needs { serve: true, ..Needs::default() };
    let case = |id: &'static str, summary: &'static str, run: fn(&mut Ctx) -> CaseResult| Case {
        id,
        rule: rule(id),
        summary,
        needs,
        level: Level::Must,
        run,
    };
    let mut cases = vec![
        case("http/health", "GET /v1/health answers {ok: true, version, format_version: 1} with no token", health),
        case(
            "http/add-and-show",
            "a job added over HTTP is the same through the CLI, and a job the CLI adds is the same over HTTP",
            add_and_show,
        ),
        case("http/claim-ack", "claim answers the job with a token; ack finishes it; a second ack is 409", claim_ack),
        case(
            "http/fail-extend-release",
            "fail (backoff, retry_in, dead), extend and release answer as API.md says and the file agrees",
            fail_extend_release,
        ),
        case("http/wrong-token-409", "ack, fail, extend and release with another token (made up, or another held job's before or after it) answer 409 and change nothing, with and without serve --keep-done", wrong_token),
        case("http/long-poll", "a waiting claim gets the job another process adds once the server has read it; 204 once the wait is over when none comes", long_poll),
        case(
            "http/claims-race",
            "8 clients claim 120 jobs at once while 2 `work` processes take them too: each job is claimed exactly once",
            delivery::claims_race,
        ),
        case("http/auth", "with a token, every endpoint but /v1/health refuses a request without it or with a wrong one (4xx, a JSON error) and changes nothing", auth),
        case("http/body-limit", "a body over --max-body is refused (4xx, a JSON error) and adds nothing", body_limit),
        case(
            "http/bad-requests",
            "bad JSON, a priority out of range, a bad id, an unknown job or endpoint, a wrong method: each refused with a 4xx JSON error, nothing added",
            bad_requests,
        ),
        case("http/cross-origin", "a request from another site's web page that changes something answers 403", cross_origin),
        case("http/dns-rebinding", "without a token, a request addressed to another host name is refused (4xx, a JSON error)", dns_rebinding),
        case("http/no-token-beyond-loopback", "serve beyond loopback without a token is refused; --allow-no-token allows it", beyond_loopback),
        case("http/refuses-format-2", "serve refuses a format 2 file and leaves it byte for byte unchanged", refuses_format_2),
        Case {
            level: Level::Should,
            ..case("http/slow-client", "a client that sends its request slowly does not stop others being served", connections::slow_client)
        },
        Case {
            level: Level::Should,
            ..case(
                "http/keep-alive-after-refusal",
                "after a refusal, the connection answers the next request, or the refusal said Connection: close",
                connections::keep_alive_after_refusal,
            )
        },
        Case {
            level: Level::Should,
            ..case(
                "http/published-statuses",
                "refusals answer the published server's statuses: 401 token, 413 body, 400 bad JSON, unknown field, bad id or priority, 404 unknown job or endpoint, 405 method, 403 host",
                published_statuses,
            )
        },
    ];
    cases.push(Case {
        needs: Needs { slow: true, ..needs },
        ..case(
            "http/claim-wait-most",
            "a claim with a wait of 42 s on an empty queue answers 204 after 30 s, the most a claim waits",
            claim_wait_most,
        )
    });
    cases.extend(delivery::cases(case));
    cases.extend(faults::cases(case));
    cases.extend(refusals::cases(case));
    cases.extend(adding::cases(case));
    cases.extend(holding::cases(case));
    cases.extend(tidying::cases(case));
    cases.extend(serving::cases(case));
    cases.extend(sequences::cases(case));
    cases
}

/// The FORMAT.md section a case checks: the step it drives, or §1.4 (other
/// machines go through `ukue serve`) for what guards the server.
fn rule(id: &str) -> &'static str {
    match id.trim_start_matches("http/") {
        "add-and-show" => "5.3",
        "claim-ack" | "wrong-token-409" => "5.5",
        "fail-extend-release" => "5.6",
        "long-poll" | "claims-race" | "server-killed" | "poll-disconnect" | "poll-disconnect-gives-back" => {
            "5.4"
        }
        "mixed-delivery" | "mixed-delivery-python" => "6.3",
        "refuses-format-2" => "2.3",
        "claim-wait-most" => "http.claim-wait-most",
        // The cases of spec/COMMAND.md §6 and §13 name the item they check first.
        "refusals" => "http.refusal-4xx",
        "refusal-statuses" => "http.status-400",
        "add-options" => "http.add",
        "claim-options" => "http.claim-lease",
        "fail-options" => "http.fail-retry-in",
        "lease-lost" => "http.lease-lost",
        "claim-wakes" => "http.claim-wait",
        "list-filters" => "http.list",
        "tidy" => "http.retry-all",
        "hosts" => "http.hosts",
        "body-exact" => "http.max-body",
        "serve-options" => "serve.token",
        "stop" => "serve.stop",
        "paths-to-last-attempt" => "http.fail-dead",
        "last-value-wins" => "http.extend",
        "reads-fresh" => "http.stats",
        _ => "1.4",
    }
}

/// A fresh file served by the subject on loopback, with a client.
fn start(
    ctx: &mut Ctx,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Result<(std::path::PathBuf, ServerProcess, Client), Failure> {
    start_on(ctx, "jobs.ukue", extra, env)
}

/// As [`start`], on a file of its own name: a second server in one case.
fn start_on(
    ctx: &mut Ctx,
    name: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Result<(std::path::PathBuf, ServerProcess, Client), Failure> {
    let file = ctx.init(name)?;
    let server = server::serve(ctx, &file, extra, env)?;
    let token = env.iter().find(|(k, _)| *k == "UKUE_TOKEN").map(|(_, v)| *v);
    let client = Client::new(server.port, token);
    Ok((file, server, client))
}

fn expect(reply: &server::Reply, status: u16, what: &str) -> CaseResult {
    ensure!(reply.status == status, format!("{what}: {status}"), format!("{what}: {}", reply.show()));
    if status >= 400 {
        ensure!(reply.is_json_error(), format!("{what}: a JSON body {{\"error\": \"...\"}}"), reply.show());
    }
    Ok(())
}

fn show(ctx: &Ctx, file: &std::path::Path, id: i64) -> Result<Value, Failure> {
    ctx.json(ctx.subject(), &["show", path_str(file), &id.to_string(), "--json"])
}

/// One text field of `show --json`.
fn field(ctx: &Ctx, file: &std::path::Path, id: i64, key: &str) -> Result<Option<String>, Failure> {
    Ok(show(ctx, file, id)?[key].as_str().map(String::from))
}

/// The fields a job has both in `show --json` and `GET /v1/jobs/{id}`.
const SAME: &[&str] =
    &["id", "queue", "state", "priority", "attempts", "max_attempts", "run_at", "payload", "payload_base64"];

fn same_job(cli: &Value, http: &Value, what: &str) -> CaseResult {
    for key in SAME {
        ensure_eq!(&http[key], &cli[key], format!("{what}: {key} over HTTP and through the CLI"));
    }
    Ok(())
}

fn health(ctx: &mut Ctx) -> CaseResult {
    let (_, _server, client) = start(ctx, &[], &[("UKUE_TOKEN", TOKEN)])?;
    let bare = Client::new(client.port, None);
    let reply = bare.get("/v1/health")?;
    expect(&reply, 200, "GET /v1/health without a token")?;
    let body = reply.json().unwrap_or(Value::Null);
    ensure!(
        body["ok"] == true && body["format_version"] == 1 && body["version"].is_string(),
        r#"{"ok": true, "version": "...", "format_version": 1}"#,
        reply.show()
    );
    Ok(())
}

fn add_and_show(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = start(ctx, &[], &[])?;
    // Written by hand: the keys' order and the spaces are what the server must keep and drop.
    let body =
        br#"{"queue": "mail", "payload": {"to": "a@b.c", "n": [1, 2]}, "priority": 7, "max_attempts": 3}"#;
    let reply = client.send("POST", "/v1/jobs", Some(body), &[])?;
    expect(&reply, 201, "POST /v1/jobs")?;
    let id = reply
        .json()
        .and_then(|v| v["id"].as_i64())
        .ok_or_else(|| Failure::fail("{\"id\": N}", reply.show()))?;
    let cli = show(ctx, &file, id)?;
    ensure_eq!(
        cli["payload"].as_str(),
        Some(r#"{"to":"a@b.c","n":[1,2]}"#),
        "a JSON object payload, stored as compact JSON text"
    );
    ensure_eq!(
        (cli["queue"].as_str(), cli["priority"].as_i64(), cli["max_attempts"].as_i64()),
        (Some("mail"), Some(7), Some(3)),
        "queue, priority, max_attempts"
    );
    let text = client.add(json!({"queue": "mail", "payload": "plain text"}))?;
    ensure_eq!(
        field(ctx, &file, text, "payload")?,
        Some("plain text".to_string()),
        "a JSON string payload, stored as its text"
    );
    let binary = client.add(json!({"queue": "mail", "payload_base64": "AP8Q", "delay": "1h"}))?;
    let cli_binary = show(ctx, &file, binary)?;
    ensure_eq!(
        cli_binary["payload_base64"].as_str(),
        Some("AP8Q"),
        "a payload_base64 payload, stored as its bytes"
    );
    // The published command shows a ready job that is not yet due as `delayed`.
    ensure!(
        matches!(cli_binary["state"].as_str(), Some("ready" | "delayed")),
        "a delayed job's state: ready, or delayed as the published command shows it",
        cli_binary["state"].to_string()
    );

    let added = ctx.add(ctx.subject(), &file, "mail", "from the CLI", &[])?;
    for id in [id, binary, added] {
        let reply = client.get(&format!("/v1/jobs/{id}"))?;
        expect(&reply, 200, "GET /v1/jobs/{id}")?;
        same_job(&show(ctx, &file, id)?, &reply.json().unwrap_or(Value::Null), &format!("job {id}"))?;
    }
    let listed = client.get("/v1/jobs?queue=mail&state=delayed")?;
    let jobs = listed.json().and_then(|v| v["jobs"].as_array().cloned()).unwrap_or_default();
    ensure!(
        jobs.len() == 1 && jobs[0]["id"] == binary,
        format!("GET /v1/jobs?state=delayed: job {binary} alone"),
        listed.show()
    );
    let stats = client.get("/v1/stats")?.json().unwrap_or(Value::Null);
    let cli_stats = ctx.json(ctx.subject(), &["stats", path_str(&file), "--json"])?;
    ensure_eq!(
        &stats["queues"][0]["ready"],
        &cli_stats["queues"][0]["ready"],
        "stats ready over HTTP and through the CLI"
    );
    ensure_eq!(
        &stats["queues"][0]["delayed"],
        &cli_stats["queues"][0]["delayed"],
        "stats delayed over HTTP and through the CLI"
    );
    Ok(())
}

fn claim_ack(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = start(ctx, &[], &[])?;
    let id = ctx.add(ctx.subject(), &file, "q", "work", &[])?;
    let job =
        client.claim(json!({"queue": "q", "lease": 30}))?.ok_or_else(|| Failure::fail("a job", "204"))?;
    for key in [
        "id",
        "queue",
        "payload",
        "attempt",
        "max_attempts",
        "priority",
        "token",
        "lease_until",
        "created_at",
        "last_error",
    ] {
        ensure!(job.get(key).is_some(), format!("the claimed job to carry {key}"), job.to_string());
    }
    ensure_eq!(
        (job["id"].as_i64(), job["attempt"].as_i64(), job["payload"].as_str()),
        (Some(id), Some(1), Some("work")),
        "the claimed job"
    );
    ensure_eq!(field(ctx, &file, id, "state")?, Some("running".to_string()), "the claimed job in the file");
    let ack = json!({"token": job["token"]});
    let reply = client.post(&format!("/v1/jobs/{id}/ack"), ack.clone())?;
    expect(&reply, 200, "ack")?;
    ensure_eq!(reply.json(), Some(json!({"ok": true})), "ack's answer");
    let listed = ctx.json(ctx.subject(), &["list", path_str(&file), "--state", "running", "--json"])?;
    ensure!(
        listed["jobs"].as_array().is_some_and(|j| j.is_empty()),
        "no running job after the ack",
        listed.to_string()
    );
    expect(&client.post(&format!("/v1/jobs/{id}/ack"), ack)?, 409, "a second ack")?;
    ensure!(client.claim(json!({"queue": "q"}))?.is_none(), "204 on an empty queue", "a job");
    Ok(())
}

fn fail_extend_release(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = start(ctx, &[], &[])?;
    let id = ctx.add(ctx.subject(), &file, "q", "x", &["--attempts", "3"])?;
    let path = |step: &str| format!("/v1/jobs/{id}/{step}");
    let job =
        client.claim(json!({"queue": "q", "lease": "10s"}))?.ok_or_else(|| Failure::fail("a job", "204"))?;
    let extended = client.post(&path("extend"), json!({"token": job["token"], "lease": 120}))?;
    expect(&extended, 200, "extend")?;
    let until = extended.json().and_then(|v| v["lease_until"].as_str().map(String::from)).unwrap_or_default();
    ensure!(
        until.as_str() > job["lease_until"].as_str().unwrap_or(""),
        format!("extend's lease_until past the claim's {}", job["lease_until"]),
        extended.show()
    );
    let failed =
        client.post(&path("fail"), json!({"token": job["token"], "error": "boom", "retry_in": 0}))?;
    expect(&failed, 200, "fail with retry_in 0")?;
    let body = failed.json().unwrap_or(Value::Null);
    ensure!(
        body["state"] == "ready" && body["run_at"].is_string(),
        r#"{"state": "ready", "run_at": "..."}"#,
        failed.show()
    );
    let cli = show(ctx, &file, id)?;
    ensure_eq!(
        (cli["state"].as_str(), cli["last_error"].as_str()),
        (Some("ready"), Some("boom")),
        "the failed job in the file"
    );
    let again = client.claim(json!({"queue": "q"}))?.ok_or_else(|| Failure::fail("the job again", "204"))?;
    ensure_eq!(again["attempt"].as_i64(), Some(2), "the second claim's attempt");
    expect(&client.post(&path("release"), json!({"token": again["token"]}))?, 200, "release")?;
    ensure_eq!(field(ctx, &file, id, "state")?, Some("ready".to_string()), "the released job");
    let third = client.claim(json!({"queue": "q"}))?.ok_or_else(|| Failure::fail("the job again", "204"))?;
    let dead = client.post(&path("fail"), json!({"token": third["token"], "dead": true}))?;
    ensure_eq!(dead.json(), Some(json!({"state": "dead"})), "fail with dead: true");
    ensure_eq!(field(ctx, &file, id, "state")?, Some("dead".to_string()), "the job in the file");
    expect(&client.post(&path("retry"), json!({}))?, 200, "retry a dead job")?;
    ensure_eq!(field(ctx, &file, id, "state")?, Some("ready".to_string()), "the retried job");
    let deleted = client.send("DELETE", &format!("/v1/jobs/{id}"), None, &[])?;
    expect(&deleted, 200, "DELETE")?;
    // Refused (`http.unknown-job`); that it is a 404 is `http.status-404`, a should.
    all_refused(&[Refused {
        what: format!("GET /v1/jobs/{id} of the deleted job"),
        reply: client.get(&format!("/v1/jobs/{id}"))?,
        published: 404,
    }])
}

/// Three held jobs; each step on the middle one with made-up tokens (the
/// least and the greatest of 32 hex digits) and with the tokens of the
/// jobs before and after it (a statement that finds the row by other than
/// `id = :id` would take those) answers 409, and no job changes. Then each holder acks its own.
/// Against `serve`, then `serve --keep-done`, whose ack keeps the job as
/// done (a statement of its own, FORMAT.md §5.5).
fn wrong_token(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = start(ctx, &[], &[])?;
    crossed_tokens(ctx, &file, &client, "")?;
    let (file, _server, client) = start_on(ctx, "keep-done.ukue", &["--keep-done"], &[])?;
    crossed_tokens(ctx, &file, &client, " (serve --keep-done)")
}

/// Three jobs held; each holder step of the middle one with another token
/// (made up, or another held job's before or after it) answers 409 and
/// changes no row; then each is acked with its own.
fn crossed_tokens(ctx: &Ctx, file: &std::path::Path, client: &Client, serving: &str) -> CaseResult {
    let mut held = Vec::new();
    for payload in ["first", "middle", "last"] {
        let id = ctx.add(ctx.subject(), file, "q", payload, &[])?;
        let job = client.claim(json!({"queue": "q"}))?.ok_or_else(|| Failure::fail("a job", "204"))?;
        let token = job["token"].as_str().ok_or_else(|| Failure::fail("a token", job.to_string()))?;
        ensure_eq!(job["id"].as_i64(), Some(id), "the claimed job: the one just added");
        held.push((id, token.to_string()));
    }
    let before = crate::subjects::observe::file::rows_as_text(file)?;
    let id = held[1].0;
    let others = [
        // Below and above every token of 32 hex digits: a statement that
        // compares the token by order would take one of the two.
        ("a made-up token of zeros", "0".repeat(32)),
        ("a made-up token of f's", "f".repeat(32)),
        ("the token of the job before", held[0].1.clone()),
        ("the token of the job after", held[2].1.clone()),
    ];
    for (whose, other) in &others {
        for (step, body) in [
            ("ack", json!({"token": other})),
            ("fail", json!({"token": other, "error": "no"})),
            ("extend", json!({"token": other, "lease": 600})),
            ("release", json!({"token": other})),
        ] {
            let what = format!("{step} of job {id} with {whose}{serving}");
            expect(&client.post(&format!("/v1/jobs/{id}/{step}"), body)?, 409, &what)?;
            let now = crate::subjects::observe::file::rows_as_text(file)?;
            ensure!(
                now == before,
                format!("every job as it was after {what}: {before:?}"),
                format!("{now:?}")
            );
        }
    }
    for (id, token) in held {
        expect(
            &client.post(&format!("/v1/jobs/{id}/ack"), json!({"token": token}))?,
            200,
            &format!("ack with the token{serving}"),
        )?;
    }
    Ok(())
}

/// A claim with `wait` answers 204 only once the wait is over, and gets a
/// job another process adds while it waits. The job is added once the
/// server has read the waiting claim (holding::waiting_claim), so that a
/// server that does not wait answers 204 first, every time.
fn long_poll(ctx: &mut Ctx) -> CaseResult {
    let (file, server, client) = start(ctx, &[], &[])?;
    let asked = std::time::Instant::now();
    let empty = client.claim(json!({"queue": "q", "wait": 1}))?;
    let waited = asked.elapsed();
    ensure!(empty.is_none(), "204 after a wait with no job", "a job");
    // A server's own timer may fire a hair before the client's.
    ensure!(
        waited >= std::time::Duration::from_millis(950),
        "a claim with wait 1 on an empty queue to answer 204 once the wait is over (http.claim-empty)",
        format!("204 after {:.3} s", waited.as_secs_f64())
    );
    let mut stream = holding::waiting_claim(ctx, server.port, "q", 25)?;
    let id = ctx.add(ctx.subject(), &file, "q", "late", &[])?;
    let reply = server::read_answer(&mut stream)?;
    let job = answer(&reply, 200, &format!("the claim waiting 25 s, once another process added job {id}"))?;
    ensure_eq!(job.get("id").and_then(Value::as_i64), Some(id), "the job the waiting claim got");
    Ok(())
}

fn claim_wait_most(ctx: &mut Ctx) -> CaseResult {
    let (_file, _server, client) = start(ctx, &[], &[])?;
    let asked = std::time::Instant::now();
    let job = client.claim(json!({"queue": "q", "wait": 42}))?;
    let waited = asked.elapsed();
    ensure!(
        job.is_none(),
        "204: no job was added",
        format!("a job: {}", clip(&job.unwrap_or_default().to_string()))
    );
    // 30 s by the server's timer; the margin above it is for a loaded
    // machine, and stays well under the 42 s asked.
    ensure!(
        (29.0..=37.0).contains(&waited.as_secs_f64()),
        "the claim to wait 30 s (the most a claim waits), not the 42 s it asked: 204 after 29 to 37 s",
        format!("204 after {:.1} s", waited.as_secs_f64())
    );
    Ok(())
}

/// Every endpoint of API.md, with a body each accepts.
const ENDPOINTS: &[(&str, &str)] = &[
    ("POST", "/v1/jobs"),
    ("GET", "/v1/jobs"),
    ("GET", "/v1/jobs/1"),
    ("DELETE", "/v1/jobs/1"),
    ("POST", "/v1/jobs/1/ack"),
    ("POST", "/v1/jobs/1/fail"),
    ("POST", "/v1/jobs/1/extend"),
    ("POST", "/v1/jobs/1/release"),
    ("POST", "/v1/jobs/1/retry"),
    ("POST", "/v1/claim"),
    ("GET", "/v1/stats"),
    ("POST", "/v1/retry"),
    ("POST", "/v1/purge"),
];

/// A refused request: what it was, the answer, and the status the
/// published server gives it.
struct Refused {
    what: String,
    reply: server::Reply,
    published: u16,
}

/// Each request with no token and with a wrong one, to a server that has one.
fn without_token(port: u16) -> Result<Vec<Refused>, Failure> {
    let bare = Client::new(port, None);
    let wrong = Client::new(port, Some(&TOKEN.replace('0', "1")));
    let mut refused = Vec::new();
    for (method, path) in ENDPOINTS {
        let body =
            (*method == "POST").then_some(br#"{"queue": "q", "token": "t", "state": "dead"}"#.as_slice());
        for (who, c) in [("no token", &bare), ("a wrong token", &wrong)] {
            let reply = c.send(method, path, body, &[])?;
            refused.push(Refused { what: format!("{method} {path} with {who}"), reply, published: 401 });
        }
    }
    Ok(refused)
}

/// A 2000-byte add to a server started with `--max-body 1000`.
fn over_limit(port: u16, token: Option<&str>) -> Result<Refused, Failure> {
    let reply = add_of_size(port, token, 2000)?;
    Ok(Refused { what: "a 2000-byte body with --max-body 1000".into(), reply, published: 413 })
}

/// An add whose body is `{"queue": "q", "payload": "xx…"}` of exactly
/// `size` bytes (at least 30), written raw: a client library may not send
/// a body past a limit, nor wait for the answer before it has sent it all.
fn add_of_size(port: u16, token: Option<&str>, size: usize) -> Result<server::Reply, Failure> {
    let frame = json!({"queue": "q", "payload": ""}).to_string().len();
    let body = json!({"queue": "q", "payload": "x".repeat(size.saturating_sub(frame))}).to_string();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let mut request = format!(
        "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body.as_bytes());
    raw(port, &request)
}

/// A request written raw, with exactly the headers given (no
/// Content-Type unless one is among them, as `curl -d` sends its own).
fn raw_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<server::Reply, Failure> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len()));
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    raw(port, &request)
}

/// Whether `value` is a time as the API writes it: RFC 3339 in UTC with
/// milliseconds, `2026-10-06T09:00:00.000Z`.
fn is_time(value: &Value) -> bool {
    value.as_str().is_some_and(|t| {
        let b = t.as_bytes();
        let digits = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
        b.len() == 24
            && digits(0..4)
            && digits(5..7)
            && digits(8..10)
            && digits(11..13)
            && digits(14..16)
            && digits(17..19)
            && digits(20..23)
            && [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':'), (19, b'.'), (23, b'Z')]
                .iter()
                .all(|&(at, c)| b[at] == c)
            && parse_time(t).is_some()
    })
}

/// An answer's object is `expected`; both shown as JSON.
fn same_json(seen: serde_json::Map<String, Value>, expected: Value, what: &str) -> CaseResult {
    let seen = Value::Object(seen);
    ensure!(seen == expected, format!("{what}: {expected}"), format!("{what}: {seen}"));
    Ok(())
}

/// Slack for a time the server writes against our clock around the
/// request (the same clock, rounded to the millisecond).
const CLOCK_SLACK_MS: i64 = 50;

/// `seen` is `offset` ms after a moment between `before` and `after` (our
/// clock around the request that set it), as a time the server takes
/// when it serves the request and adds `offset` to.
fn near(seen: i64, offset: i64, before: i64, after: i64, what: &str) -> CaseResult {
    let at = seen - offset;
    ensure!(
        at >= before - CLOCK_SLACK_MS && at <= after + CLOCK_SLACK_MS,
        format!("{what}: {offset} ms after the request (sent at {before} ms, answered at {after} ms)"),
        format!("{seen} ms: {} ms after it was sent", seen - before)
    );
    Ok(())
}

/// Milliseconds since 1970 of an RFC 3339 time.
fn parse_time(text: &str) -> Option<i64> {
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

/// The JSON object of an answer with `status`, or a failure saying what came.
fn answer(reply: &server::Reply, status: u16, what: &str) -> Result<serde_json::Map<String, Value>, Failure> {
    expect(reply, status, what)?;
    match reply.json() {
        Some(Value::Object(object)) => Ok(object),
        _ => Err(Failure::fail(format!("{what}: a JSON object"), reply.show())),
    }
}

/// A bad request: what it is, method, path, body, the published status.
type BadRequest = (&'static str, &'static str, &'static str, Option<&'static [u8]>, u16);

/// Requests API.md says nothing to answer but a refusal, each of a kind.
fn bad_ones(client: &Client) -> Result<Vec<Refused>, Failure> {
    let requests: [BadRequest; 6] = [
        ("bad JSON", "POST", "/v1/jobs", Some(b"{\"queue\": "), 400),
        ("priority 101", "POST", "/v1/jobs", Some(br#"{"queue": "q", "priority": 101}"#), 400),
        ("a job id that is not a number", "POST", "/v1/jobs/abc/ack", Some(br#"{"token": "t"}"#), 400),
        ("an unknown job", "GET", "/v1/jobs/999", None, 404),
        ("an unknown endpoint", "GET", "/v1/nothing-here", None, 404),
        ("PUT /v1/claim", "PUT", "/v1/claim", Some(b"{}"), 405),
    ];
    requests
        .into_iter()
        .map(|(what, method, path, body, published)| {
            Ok(Refused { what: what.into(), reply: client.send(method, path, body, &[])?, published })
        })
        .collect()
}

/// Requests addressed to another host name, to a server without a token.
fn other_host(client: &Client) -> Result<Vec<Refused>, Failure> {
    let evil = format!("evil.example:{}", client.port);
    Ok(vec![
        Refused {
            what: "GET /v1/stats addressed to evil.example".into(),
            reply: client.send("GET", "/v1/stats", None, &[("Host", &evil)])?,
            published: 403,
        },
        Refused {
            what: "an add addressed to evil.example".into(),
            reply: client.send("POST", "/v1/jobs", Some(br#"{"queue": "q"}"#), &[("Host", &evil)])?,
            published: 403,
        },
    ])
}

/// Each was refused: a 4xx status and a JSON error (API.md: errors are
/// `{"error": "..."}` with a 4xx or 5xx status; a refusal is the client's).
fn all_refused(refused: &[Refused]) -> CaseResult {
    for r in refused {
        ensure!(
            (400..500).contains(&r.reply.status) && r.reply.is_json_error(),
            format!("{}: refused with a 4xx status and a JSON body {{\"error\": \"...\"}}", r.what),
            format!("{}: {}", r.what, r.reply.show())
        );
    }
    Ok(())
}

/// The file holds exactly `jobs` jobs: refused requests added nothing.
fn holds_jobs(ctx: &Ctx, file: &std::path::Path, jobs: usize, what: &str) -> CaseResult {
    let listed = ctx.json(ctx.subject(), &["list", path_str(file), "--json"])?;
    let n = listed["jobs"].as_array().map_or(0, Vec::len);
    ensure!(n == jobs, format!("{jobs} jobs in the file {what}"), listed.to_string());
    Ok(())
}

fn auth(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = start(ctx, &[], &[("UKUE_TOKEN", TOKEN)])?;
    let id = ctx.add(ctx.subject(), &file, "q", "x", &[])?;
    ensure_eq!(id, 1, "the first job's id");
    all_refused(&without_token(client.port)?)?;
    let cli = show(ctx, &file, 1)?;
    ensure_eq!(cli["state"].as_str(), Some("ready"), "the job after every refused request");
    holds_jobs(ctx, &file, 1, "after every refused request")?;
    expect(&client.get("/v1/stats")?, 200, "GET /v1/stats with the token")?;
    Ok(())
}

fn body_limit(ctx: &mut Ctx) -> CaseResult {
    let (file, server, _client) = start(ctx, &["--max-body", "1000"], &[])?;
    all_refused(&[over_limit(server.port, None)?])?;
    holds_jobs(ctx, &file, 0, "after a refused add")
}

fn bad_requests(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = start(ctx, &[], &[])?;
    all_refused(&bad_ones(&client)?)?;
    holds_jobs(ctx, &file, 0, "after refused requests")
}

/// The statuses of the published server, where API.md names none.
fn published_statuses(ctx: &mut Ctx) -> CaseResult {
    let (file, guarded, client) = start(ctx, &["--max-body", "1000"], &[("UKUE_TOKEN", TOKEN)])?;
    let mut refused = without_token(guarded.port)?;
    refused.push(over_limit(guarded.port, Some(TOKEN))?);
    refused.extend(bad_ones(&client)?);
    refused.push(Refused {
        what: "an add with an unknown field".into(),
        reply: client.post("/v1/jobs", json!({"queue": "q", "colour": "red"}))?,
        published: 400,
    });
    holds_jobs(ctx, &file, 0, "after refused requests")?;
    let open = server::serve(ctx, &file, &[], &[])?;
    refused.extend(other_host(&Client::new(open.port, None))?);
    at_published(&refused)?;
    holds_jobs(ctx, &file, 0, "after refused requests")
}

/// Each refusal has the published server's status.
fn at_published(refused: &[Refused]) -> CaseResult {
    for r in refused {
        ensure!(
            r.reply.status == r.published,
            format!("{}: {} as the published server answers", r.what, r.published),
            format!("{}: {}", r.what, r.reply.show())
        );
    }
    Ok(())
}

fn cross_origin(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = start(ctx, &[], &[])?;
    let add = br#"{"queue": "q"}"#.as_slice();
    expect(
        &client.send("POST", "/v1/jobs", Some(add), &[("Sec-Fetch-Site", "cross-site")])?,
        403,
        "an add from another site (Sec-Fetch-Site)",
    )?;
    expect(
        &client.send("POST", "/v1/jobs", Some(add), &[("Origin", "http://evil.example")])?,
        403,
        "an add from another origin (Origin)",
    )?;
    let listed = ctx.json(ctx.subject(), &["list", path_str(&file), "--json"])?;
    ensure!(
        listed["jobs"].as_array().is_some_and(|j| j.is_empty()),
        "no job added from another site",
        listed.to_string()
    );
    expect(
        &client.send("POST", "/v1/jobs", Some(add), &[("Sec-Fetch-Site", "same-origin")])?,
        201,
        "an add from the same origin",
    )?;
    Ok(())
}

fn dns_rebinding(ctx: &mut Ctx) -> CaseResult {
    let (file, server, client) = start(ctx, &[], &[])?;
    all_refused(&other_host(&client)?)?;
    holds_jobs(ctx, &file, 0, "after adds addressed to another host")?;
    let local = format!("localhost:{}", server.port);
    expect(
        &client.send("GET", "/v1/stats", None, &[("Host", &local)])?,
        200,
        "GET /v1/stats addressed to localhost",
    )?;
    Ok(())
}

fn beyond_loopback(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let subject = ctx.subject().clone();
    match server::launch(&ctx.procs, &ctx.dir, &subject, &file, "0.0.0.0", &[], &[])? {
        Started::Exited { status, .. } if !status.success() => {}
        Started::Exited { status, stderr } => {
            return Err(Failure::fail(
                "serve --addr 0.0.0.0:PORT without a token to be refused",
                format!("it exited ({status}): {}", clip(&stderr)),
            ))
        }
        Started::Listening(_) => {
            return Err(Failure::fail(
                "serve --addr 0.0.0.0:PORT without a token to be refused",
                "it listened",
            ))
        }
    }
    match server::launch(&ctx.procs, &ctx.dir, &subject, &file, "0.0.0.0", &["--allow-no-token"], &[])? {
        Started::Listening(_) => Ok(()),
        Started::Exited { status, stderr } => Err(Failure::fail(
            "serve --addr 0.0.0.0:PORT --allow-no-token to listen",
            format!("it exited ({status}): {}", clip(&stderr)),
        )),
    }
}

fn refuses_format_2(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("v2.ukue")?;
    rusqlite::Connection::open(&file)?
        .execute("UPDATE ukue_meta SET value = '2' WHERE key = 'format_version'", [])?;
    let before = std::fs::read(&file)?;
    let subject = ctx.subject().clone();
    match server::launch(&ctx.procs, &ctx.dir, &subject, &file, "127.0.0.1", &[], &[])? {
        Started::Exited { status, .. } if !status.success() => {}
        Started::Exited { status, .. } => {
            return Err(Failure::fail("serve to refuse a format 2 file", format!("it exited ({status})")))
        }
        Started::Listening(_) => return Err(Failure::fail("serve to refuse a format 2 file", "it listened")),
    }
    let after = std::fs::read(&file)?;
    ensure!(
        before == after,
        "the refused file byte for byte unchanged",
        crate::cases::common::bytes_diff(&before, &after)
    );
    Ok(())
}
