//! Claims and the calls about a held job: the claimed job's keys, leases
//! and their defaults, fail with and without retry_in, dead, release, the
//! 409 of a lost lease and the late call that still counts, and the
//! waiting claims that what this server does (and another program) wakes.
//! Jobs are written into the file (steps::setup), one queue each where a
//! backoff of the subject's choosing could otherwise pick the next claim.

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::{answer, expect, is_time, near, parse_time, same_json};
use crate::cases::steps::setup::{insert, Put};
use crate::cases::{Case, CaseResult};
use crate::subjects::ctx::{clip, Ctx};
use crate::subjects::observe::file::{row, rows_as_text, write, Row};
use crate::subjects::probe::now_ms;
use crate::subjects::server::{self, read_answer, server_sockets, Client, ESTABLISHED};
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

pub fn cases(case: impl Fn(&'static str, &'static str, fn(&mut Ctx) -> CaseResult) -> Case) -> Vec<Case> {
    vec![
        case(
            "http/claim-options",
            "a claimed job has exactly API.md's keys, agreeing with the file; leases (default 60 s) and extend's as seconds and Go strings; a negative wait is none",
            claim_options,
        ),
        case(
            "http/fail-options",
            "fail: `failed` for an empty error, the backoff, retry_in (30 s, 0, negative), dead on the last attempt or with dead: true; release due at once, its attempt uncounted; max_attempts 2 and 4 claimed exactly that often",
            fail_options,
        ),
        case(
            "http/lease-lost",
            "ack, fail, extend and release answer 409 and change nothing once the job is deleted, released, failed or reaped; a call after the lease ran out that nobody has taken back still counts",
            lease_lost,
        ),
        case(
            "http/claim-wakes",
            "a waiting claim gets the job that this server adds, releases, fails with retry_in 0 or retries, and one the CLI adds, at once or after the queue's claims found it empty for 2 s, each well before its wait ends",
            claim_wakes,
        ),
    ]
}

/// The keys of a claimed job, besides `payload` or `payload_base64`.
const CLAIMED_KEYS: [&str; 9] = [
    "id",
    "queue",
    "attempt",
    "max_attempts",
    "priority",
    "token",
    "lease_until",
    "created_at",
    "last_error",
];

/// A claim's answer agrees with the file: exactly API.md's keys, the
/// row's values, times as the API writes them.
fn check_claimed(job: &Map<String, Value>, r: &Row, what: &str) -> CaseResult {
    let keys: Vec<&str> = job.keys().map(String::as_str).collect();
    let payloads = keys.iter().filter(|k| **k == "payload" || **k == "payload_base64").count();
    let known = keys.iter().all(|k| CLAIMED_KEYS.contains(k) || *k == "payload" || *k == "payload_base64");
    ensure!(
        known && payloads == 1 && CLAIMED_KEYS.iter().all(|k| keys.contains(k)),
        format!("{what}: exactly the keys {CLAIMED_KEYS:?} and payload or payload_base64"),
        format!("{keys:?}")
    );
    for key in ["lease_until", "created_at"] {
        ensure!(
            is_time(&job[key]),
            format!("{what}: {key} a time such as 2026-10-06T09:00:00.000Z"),
            job[key].to_string()
        );
    }
    let last_error = match (&r.last_error, &job["last_error"]) {
        (None, Value::Null) => true,
        (None, Value::String(s)) => s.is_empty(),
        (Some(e), seen) => seen == e,
        (None, _) => false,
    };
    ensure!(
        last_error,
        format!(
            "{what}: last_error {}",
            r.last_error.as_deref().map_or("\"\" or null".into(), |e| format!("{e:?}"))
        ),
        job["last_error"].to_string()
    );
    let payload = std::str::from_utf8(&r.payload).map(|t| json!({"payload": t})).unwrap_or(Value::Null);
    ensure_eq!(
        (
            job["id"].as_i64(),
            job["queue"].as_str(),
            job["attempt"].as_i64(),
            job["max_attempts"].as_i64(),
            job["priority"].as_i64(),
            job["token"].as_str(),
            job["lease_until"].as_str().and_then(parse_time),
            job["created_at"].as_str().and_then(parse_time),
            job.get("payload"),
        ),
        (
            Some(r.id),
            Some(r.queue.as_str()),
            Some(r.attempts),
            Some(r.max_attempts),
            Some(r.priority),
            r.token.as_deref(),
            r.lease_until,
            Some(r.created_at),
            payload.get("payload"),
        ),
        format!("{what}: id, queue, attempt, max_attempts, priority, token, lease_until, created_at, payload as the file holds them")
    );
    Ok(())
}

fn the_row(file: &Path, id: i64) -> Result<Row, Failure> {
    row(file, id)?.ok_or_else(|| Failure::fail(format!("job {id} in the file"), "no such row"))
}

/// Posts `body` to `path` and reads the answer's object; our clock before and after.
fn timed(
    client: &Client,
    path: &str,
    body: Value,
    status: u16,
) -> Result<(Map<String, Value>, i64, i64), Failure> {
    let what = format!("POST {path} {body}");
    let before = now_ms();
    let reply = client.post(path, body)?;
    let after = now_ms();
    Ok((answer(&reply, status, &what)?, before, after))
}

fn claim_options(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let now = now_ms();
    let mut puts = vec![Put::new("q", "ready", now).attempts(1, 4).priority(3).error("SMTP server said 451")];
    puts.extend((0..4).map(|_| Put::new("q", "ready", now).text("ünïcode ✓")));
    insert(&file, &puts)?;
    let server = server::serve(ctx, &file, &[], &[])?;
    let client = Client::new(server.port, None);
    // The short lease last: a later claim would reap it.
    let leases = [
        (None, 60_000),
        (Some(json!("90s")), 90_000),
        (Some(json!("1m30s")), 90_000),
        (Some(json!(7)), 7_000),
        (Some(json!(1.5)), 1_500),
    ];
    let mut held = Vec::new();
    for (lease, ms) in leases {
        let mut body = json!({"queue": "q"});
        if let Some(lease) = &lease {
            body["lease"] = lease.clone();
        }
        let what = format!("POST /v1/claim {body}");
        let (job, before, after) = timed(&client, "/v1/claim", body, 200)?;
        let id = job
            .get("id")
            .and_then(Value::as_i64)
            .ok_or_else(|| Failure::fail(format!("{what}: an id"), Value::Object(job.clone()).to_string()))?;
        let r = the_row(&file, id)?;
        check_claimed(&job, &r, &what)?;
        near(r.lease_until.unwrap_or(0), ms, before, after, &format!("{what}: lease_until"))?;
        held.push((id, job["token"].as_str().unwrap_or("").to_string()));
    }
    // Let the clock pass the claims, so that an extend that leaves
    // updated_at as the claim set it shows.
    let claimed = the_row(&file, held[held.len() - 1].0)?.updated_at;
    while now_ms() < claimed + 2 * super::CLOCK_SLACK_MS + 10 {
        std::thread::sleep(Duration::from_millis(5));
    }
    for ((id, token), (lease, ms)) in
        held.iter().zip([(None, 60_000), (Some(json!("2m")), 120_000), (Some(json!(0.25)), 250)])
    {
        let mut body = json!({"token": token});
        if let Some(lease) = &lease {
            body["lease"] = lease.clone();
        }
        let path = format!("/v1/jobs/{id}/extend");
        let what = format!(
            "POST {path} with lease {}",
            lease.as_ref().map_or("left out".to_string(), Value::to_string)
        );
        let (answer, before, after) = timed(&client, &path, body, 200)?;
        let keys: Vec<&String> = answer.keys().collect();
        ensure_eq!(keys, vec!["lease_until"], format!("{what}: the keys of the answer"));
        ensure!(
            is_time(&answer["lease_until"]),
            format!("{what}: lease_until a time"),
            answer["lease_until"].to_string()
        );
        let r = the_row(&file, *id)?;
        ensure_eq!(
            answer["lease_until"].as_str().and_then(parse_time),
            r.lease_until,
            format!("{what}: lease_until, as the file holds it")
        );
        near(r.lease_until.unwrap_or(0), ms, before, after, &format!("{what}: lease_until"))?;
        near(r.updated_at, 0, before, after, &format!("{what}: updated_at"))?;
    }
    for wait in [json!(-1), json!("-1s")] {
        let reply = client.post("/v1/claim", json!({"queue": "empty", "wait": wait}))?;
        ensure!(
            reply.status == 204 && reply.body.is_empty(),
            format!("a claim of an empty queue with wait {wait} (none): 204 with no body"),
            reply.show()
        );
    }
    Ok(())
}

/// Claims the one job of `queue`: its id, attempt and token.
fn claim_one(client: &Client, queue: &str) -> Result<(i64, i64, String), Failure> {
    let job = client
        .claim(json!({"queue": queue, "lease": 300}))?
        .ok_or_else(|| Failure::fail(format!("a claim of queue {queue}: its job"), "204"))?;
    match (job["id"].as_i64(), job["attempt"].as_i64(), job["token"].as_str()) {
        (Some(id), Some(attempt), Some(token)) => Ok((id, attempt, token.to_string())),
        _ => Err(Failure::fail("a claimed job with id, attempt and token", job.to_string())),
    }
}

/// A fail that leaves the job ready: the answer is exactly
/// `{"state": "ready", "run_at": TIME}`, TIME the row's, `offset` ms after
/// the fail when given; the row's last_error is `error`.
fn failed_ready(
    client: &Client,
    file: &Path,
    id: i64,
    body: Value,
    offset: Option<i64>,
    error: &str,
) -> CaseResult {
    let what = format!("a fail {body}");
    let (answer, before, after) = timed(client, &format!("/v1/jobs/{id}/fail"), body, 200)?;
    let keys: Vec<&String> = answer.keys().collect();
    ensure!(
        answer["state"] == "ready" && is_time(&answer["run_at"]) && keys.len() == 2,
        format!(r#"{what}: {{"state": "ready", "run_at": TIME}}"#),
        Value::Object(answer.clone()).to_string()
    );
    let r = the_row(file, id)?;
    ensure_eq!(
        (r.state.as_str(), r.last_error.as_deref(), answer["run_at"].as_str().and_then(parse_time)),
        ("ready", Some(error), Some(r.run_at)),
        format!("{what}: the row's state, last_error, and run_at as answered")
    );
    match offset {
        Some(offset) => near(r.run_at, offset, before, after, &format!("{what}: run_at")),
        None => {
            ensure!(
                r.run_at >= before - super::CLOCK_SLACK_MS,
                format!("{what}: due after the backoff, not before the fail"),
                format!("run_at {} ms, the fail sent at {before} ms", r.run_at)
            );
            Ok(())
        }
    }
}

fn failed_dead(client: &Client, file: &Path, id: i64, body: Value, error: &str) -> CaseResult {
    let what = format!("a fail {body}");
    let (answer, _, _) = timed(client, &format!("/v1/jobs/{id}/fail"), body, 200)?;
    same_json(answer, json!({"state": "dead"}), &format!("{what}: the answer"))?;
    let r = the_row(file, id)?;
    ensure_eq!(
        (r.state.as_str(), r.last_error.as_deref()),
        ("dead", Some(error)),
        format!("{what}: the row's state and last_error")
    );
    Ok(())
}

fn fail_options(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let now = now_ms();
    let puts = [
        Put::new("a", "ready", now).attempts(0, 3),
        Put::new("b", "ready", now).attempts(0, 3),
        Put::new("c", "ready", now).attempts(0, 1),
        Put::new("d", "ready", now).attempts(0, 3),
    ];
    let ids = insert(&file, &puts)?;
    let server = server::serve(ctx, &file, &[], &[])?;
    let client = Client::new(server.port, None);

    let (a, _, token) = claim_one(&client, "a")?;
    failed_ready(&client, &file, a, json!({"token": token}), None, "failed")?;
    let (b, _, token) = claim_one(&client, "b")?;
    failed_ready(
        &client,
        &file,
        b,
        json!({"token": token, "error": "", "retry_in": 30}),
        Some(30_000),
        "failed",
    )?;
    let (c, _, token) = claim_one(&client, "c")?;
    failed_dead(&client, &file, c, json!({"token": token, "error": "boom", "retry_in": 0}), "boom")?;

    let (d, first, token) = claim_one(&client, "d")?;
    failed_ready(
        &client,
        &file,
        d,
        json!({"token": token, "error": "try again", "retry_in": -5}),
        Some(0),
        "try again",
    )?;
    let (again, second, token) = claim_one(&client, "d")?;
    ensure_eq!(
        (again, second),
        (d, first + 1),
        "the claim after a fail with retry_in -5: the job at once, its next attempt"
    );
    let held_run_at = the_row(&file, d)?.run_at;
    let before = now_ms();
    let released = client.post(&format!("/v1/jobs/{d}/release"), json!({"token": token}))?;
    let after = now_ms();
    expect(&released, 200, "release")?;
    ensure_eq!(released.json(), Some(json!({"ok": true})), "release's answer");
    let r = the_row(&file, d)?;
    ensure_eq!(
        (r.state.as_str(), r.attempts, r.lease_until, r.token.as_deref()),
        ("ready", first, None, None),
        "the released job: ready, the released attempt uncounted, no lease, no token"
    );
    // FORMAT.md §5.8: a release keeps run_at or sets it to now; either way
    // the job is due at once, which the claim below shows.
    if r.run_at != held_run_at {
        near(r.run_at, 0, before, after, "the released job's run_at, unless it kept its own")?;
    }
    let (third, attempt, token) = claim_one(&client, "d")?;
    ensure_eq!(
        (third, attempt),
        (d, second),
        "the claim after the release: the job at once, the released attempt again"
    );
    failed_dead(
        &client,
        &file,
        d,
        json!({"token": token, "error": "no such address", "dead": true, "retry_in": 30}),
        "no such address",
    )?;
    ensure_eq!(ids.len(), 4, "jobs written");
    attempts_exact(&client, &file)
}

/// A job of max_attempts N, failed with retry_in 0 on every claim, is
/// claimed exactly N times, attempts 1 to N: ready after each fail but the
/// last, dead after it (FORMAT.md §5.6, both sides of `attempts >=
/// max_attempts`).
fn attempts_exact(client: &Client, file: &Path) -> CaseResult {
    for (queue, most) in [("n2", 2), ("n4", 4)] {
        let id = insert(file, &[Put::new(queue, "ready", now_ms()).attempts(0, most)])?[0];
        for attempt in 1..=most {
            let (claimed, seen, token) = claim_one(client, queue)?;
            ensure_eq!(
                (claimed, seen),
                (id, attempt),
                format!(
                    "claim {attempt} of job {id} (max_attempts {most}, failed with retry_in 0 each time)"
                )
            );
            let body = json!({"token": token, "error": format!("try {attempt}"), "retry_in": 0});
            if attempt < most {
                failed_ready(client, file, id, body, Some(0), &format!("try {attempt}"))?;
            } else {
                failed_dead(client, file, id, body, &format!("try {attempt}"))?;
            }
        }
    }
    Ok(())
}

/// Each call about a held job, with `token`, answers 409, and the file is
/// as it was.
fn all_409(client: &Client, file: &Path, id: i64, token: &str, why: &str) -> CaseResult {
    let before = rows_as_text(file)?;
    for (step, body) in [
        ("ack", json!({"token": token})),
        ("fail", json!({"token": token, "error": "late"})),
        ("extend", json!({"token": token, "lease": 600})),
        ("release", json!({"token": token})),
    ] {
        expect(
            &client.post(&format!("/v1/jobs/{id}/{step}"), body)?,
            409,
            &format!("{step} of job {id} {why}"),
        )?;
    }
    let after = rows_as_text(file)?;
    ensure!(
        before == after,
        format!("the file unchanged by the 409s of job {id} {why}: {before:?}"),
        format!("{after:?}")
    );
    Ok(())
}

/// Moves job `id`'s lease into the past, as if it ran out.
fn expire(file: &Path, id: i64) -> CaseResult {
    write(file)?.execute(
        "UPDATE ukue_jobs SET lease_until = ?1 WHERE id = ?2",
        rusqlite::params![now_ms() - 5_000, id],
    )?;
    Ok(())
}

fn lease_lost(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let now = now_ms();
    let queues = ["deleted", "released", "failed", "late-ack", "late-extend", "reaped"];
    insert(&file, &queues.map(|q| Put::new(q, "ready", now)))?;
    let server = server::serve(ctx, &file, &[], &[])?;
    let client = Client::new(server.port, None);

    all_409(&client, &file, 999, &"f".repeat(32), "(no such job)")?;
    let (id, _, token) = claim_one(&client, "deleted")?;
    expect(&client.send("DELETE", &format!("/v1/jobs/{id}"), None, &[])?, 200, "DELETE of a held job")?;
    all_409(&client, &file, id, &token, "once deleted")?;
    let (id, _, token) = claim_one(&client, "released")?;
    expect(&client.post(&format!("/v1/jobs/{id}/release"), json!({"token": token}))?, 200, "release")?;
    all_409(&client, &file, id, &token, "once released")?;
    let (id, _, token) = claim_one(&client, "failed")?;
    let failed = client.post(&format!("/v1/jobs/{id}/fail"), json!({"token": token, "retry_in": 3600}))?;
    expect(&failed, 200, "fail")?;
    all_409(&client, &file, id, &token, "once failed")?;

    // Run out, and nobody has put them back: the holder's call still counts.
    let (id, _, token) = claim_one(&client, "late-ack")?;
    expire(&file, id)?;
    let acked = client.post(&format!("/v1/jobs/{id}/ack"), json!({"token": token}))?;
    expect(&acked, 200, "an ack after the lease ran out, before any claim put the job back")?;
    ensure!(
        row(&file, id)?.is_none(),
        format!("job {id} deleted by its ack (serve without --keep-done)"),
        "it is still in the file"
    );
    let (id, _, token) = claim_one(&client, "late-extend")?;
    expire(&file, id)?;
    let before = now_ms();
    let extended = client.post(&format!("/v1/jobs/{id}/extend"), json!({"token": token, "lease": 300}))?;
    let after = now_ms();
    expect(&extended, 200, "an extend after the lease ran out, before any claim put the job back")?;
    let r = the_row(&file, id)?;
    ensure_eq!(r.state.as_str(), "running", "the job extended after its lease ran out");
    near(r.lease_until.unwrap_or(0), 300_000, before, after, "its lease_until")?;
    expect(
        &client.post(&format!("/v1/jobs/{id}/ack"), json!({"token": token}))?,
        200,
        "the ack after the extend",
    )?;

    // Reaped: a claim finds its lease run out and puts it back.
    let (id, _, token) = claim_one(&client, "reaped")?;
    expire(&file, id)?;
    let again = client.claim(json!({"queue": "reaped", "lease": 300}))?;
    let new_token = again.as_ref().and_then(|j| j["token"].as_str().map(String::from));
    ensure!(
        new_token.as_deref() != Some(token.as_str()),
        "a claim after the lease ran out to hand out a new token, if any",
        "the old token"
    );
    all_409(&client, &file, id, &token, "once reaped")?;
    if let Some(new_token) = new_token {
        expect(
            &client.post(&format!("/v1/jobs/{id}/ack"), json!({"token": new_token}))?,
            200,
            "the new holder's ack",
        )?;
    }
    Ok(())
}

/// How long a waiting claim of `http/claim-wakes` waits, and how soon
/// after what makes a job due it must be answered: well before the wait
/// ends, so that a server that looks only when the wait ends fails, and
/// with seconds to spare on a loaded machine.
const WAIT_S: u64 = 20;
const ANSWERED_WITHIN: Duration = Duration::from_secs(10);

/// A claim of `queue` waiting `wait_s`, sent raw; returned once the
/// server has read it (where /proc/net/tcp shows it), to read its answer.
pub(super) fn waiting_claim(ctx: &Ctx, port: u16, queue: &str, wait_s: u64) -> Result<TcpStream, Failure> {
    let body = json!({"queue": queue, "wait": wait_s, "lease": 300}).to_string();
    let request = format!(
        "POST /v1/claim HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(wait_s + 25)))?;
    stream.write_all(request.as_bytes())?;
    ctx.wait_for("the server to read the waiting claim", Duration::from_secs(10), || {
        Ok(server_sockets(port).is_none_or(|socks| {
            socks.iter().any(|s| s.state == ESTABLISHED)
                && socks.iter().all(|s| s.state != ESTABLISHED || s.unread == 0)
        }))
    })?;
    Ok(stream)
}

/// The waiting claim's answer: job `id`, within [`ANSWERED_WITHIN`] of `since`.
fn woken(mut stream: TcpStream, id: i64, since: Instant, by: &str) -> CaseResult {
    let reply = read_answer(&mut stream)?;
    let took = since.elapsed();
    let what = format!("a claim waiting {WAIT_S} s, once {by}");
    let job = answer(&reply, 200, &what)?;
    ensure_eq!(job.get("id").and_then(Value::as_i64), Some(id), format!("{what}: the job"));
    ensure!(
        took <= ANSWERED_WITHIN,
        format!("{what}: answered within {} s", ANSWERED_WITHIN.as_secs()),
        format!("answered after {:.1} s", took.as_secs_f64())
    );
    Ok(())
}

fn claim_wakes(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let dead = insert(&file, &[Put::new("w", "dead", now_ms())])?[0];
    let server = server::serve(ctx, &file, &[], &[])?;
    let port = server.port;
    let client = Client::new(port, None);

    let stream = waiting_claim(ctx, port, "w", WAIT_S)?;
    let since = Instant::now();
    let id = client.add(json!({"queue": "w", "payload": "through the server"}))?;
    woken(stream, id, since, "this server adds a job")?;

    let stream = waiting_claim(ctx, port, "w", WAIT_S)?;
    let since = Instant::now();
    let id = ctx.add(ctx.subject(), &file, "w", "through the CLI", &[])?;
    woken(stream, id, since, "the CLI adds a job to the file")?;

    // The same, once the queue's waiting claims have looked on their own and
    // found nothing: a second claim of the queue, waiting 2 s, answers 204
    // only after such looks (a server that stopped looking after its first
    // empty one, its claims left to their wait, fails here).
    let stream = waiting_claim(ctx, port, "w", WAIT_S)?;
    let empty = client.claim(json!({"queue": "w", "wait": 2}))?;
    ensure!(
        empty.is_none(),
        "204 for a second claim waiting 2 s on the empty queue",
        format!("a job: {}", clip(&empty.unwrap_or_default().to_string()))
    );
    let since = Instant::now();
    let id = ctx.add(ctx.subject(), &file, "w", "through the CLI, later", &[])?;
    woken(stream, id, since, "the CLI adds a job after the queue's claims found it empty for 2 s")?;

    for (by, step, body) in [
        ("this server releases a held job", "release", json!({})),
        ("this server fails a held job with retry_in 0", "fail", json!({"retry_in": 0})),
    ] {
        let id = client.add(json!({"queue": "w", "payload": step}))?;
        let (held, _, token) = claim_one(&client, "w")?;
        ensure_eq!(held, id, "the claimed job");
        let stream = waiting_claim(ctx, port, "w", WAIT_S)?;
        let since = Instant::now();
        let mut body = body;
        body["token"] = json!(token);
        expect(&client.post(&format!("/v1/jobs/{id}/{step}"), body)?, 200, step)?;
        woken(stream, id, since, by)?;
    }

    let stream = waiting_claim(ctx, port, "w", WAIT_S)?;
    let since = Instant::now();
    expect(
        &client.send("POST", &format!("/v1/jobs/{dead}/retry"), None, &[])?,
        200,
        "a retry of the dead job",
    )?;
    woken(stream, dead, since, "this server retries a dead job")
}
