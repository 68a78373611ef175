//! `POST /v1/jobs` and what a server reads from any request: the keys of
//! an add and their defaults, durations as seconds or Go strings, times
//! with offsets, a body whatever its Content-Type, an empty body as `{}`.
//! The file says what each add stored.

use serde_json::{json, Value};

use super::{answer, near, parse_time, raw_request, same_json, start};
use crate::cases::steps::setup::{insert, Put};
use crate::cases::{Case, CaseResult};
use crate::ensure_eq;
use crate::subjects::ctx::Ctx;
use crate::subjects::observe::file::{row, Row};
use crate::subjects::probe::now_ms;
use crate::subjects::server::Client;
use crate::subjects::Failure;

pub fn cases(case: impl Fn(&'static str, &'static str, fn(&mut Ctx) -> CaseResult) -> Case) -> Vec<Case> {
    vec![case(
        "http/add-options",
        "an add's keys and defaults (priority 0, max_attempts 10, due at once), delays as seconds and Go strings, run_at with offsets and beside a delay of 0; bodies read whatever their Content-Type, an empty body as {}",
        add_options,
    )]
}

/// When an added job is due: `offset` ms after the add, or at a time.
#[derive(Debug, Clone, Copy)]
enum Due {
    After(i64),
    At(&'static str),
}

/// An add's body, and the priority, max_attempts and due time it stores.
const ADDS: &[(&str, i64, i64, Due)] = &[
    (r#"{"queue": "q"}"#, 0, 10, Due::After(0)),
    (r#"{"queue": "q", "max_attempts": 0}"#, 0, 10, Due::After(0)),
    (r#"{"queue": "q", "max_attempts": 1, "priority": -100}"#, -100, 1, Due::After(0)),
    (r#"{"queue": "q", "max_attempts": 25, "priority": 100, "delay": 0}"#, 100, 25, Due::After(0)),
    (r#"{"queue": "q", "delay": 0.5}"#, 0, 10, Due::After(500)),
    (r#"{"queue": "q", "delay": 90}"#, 0, 10, Due::After(90_000)),
    (r#"{"queue": "q", "delay": "1h30m"}"#, 0, 10, Due::After(5_400_000)),
    (r#"{"queue": "q", "delay": "250ms"}"#, 0, 10, Due::After(250)),
    (r#"{"queue": "q", "delay": "0"}"#, 0, 10, Due::After(0)),
    (r#"{"queue": "q", "run_at": "2030-10-06T11:00:00+02:00"}"#, 0, 10, Due::At("2030-10-06T09:00:00Z")),
    (r#"{"queue": "q", "run_at": "2030-10-06T09:00:00.250Z"}"#, 0, 10, Due::At("2030-10-06T09:00:00.250Z")),
    (r#"{"queue": "q", "run_at": "2020-01-01T00:00:00Z"}"#, 0, 10, Due::At("2020-01-01T00:00:00Z")),
    // Only a delay over 0 is refused beside run_at (`http.add-run-at`).
    (
        r#"{"queue": "q", "delay": 0, "run_at": "2030-10-06T09:00:00Z"}"#,
        0,
        10,
        Due::At("2030-10-06T09:00:00Z"),
    ),
];

/// A row's payload as text, for a message.
fn text(job: &Row) -> String {
    String::from_utf8_lossy(&job.payload).into_owned()
}

/// The row of the job that an answer `{"id": N}` names.
fn added(file: &std::path::Path, reply: &crate::subjects::server::Reply, what: &str) -> Result<Row, Failure> {
    let body = answer(reply, 201, what)?;
    let keys: Vec<&String> = body.keys().collect();
    ensure_eq!(keys, vec!["id"], format!("{what}: the keys of the answer {{\"id\": N}}"));
    let id = body["id"].as_i64().ok_or_else(|| Failure::fail(format!("{what}: an id"), reply.show()))?;
    row(file, id)?.ok_or_else(|| Failure::fail(format!("{what}: job {id} in the file"), "no such row"))
}

fn add_options(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = start(ctx, &[], &[])?;
    for (body, priority, max_attempts, due) in ADDS {
        let what = format!("POST /v1/jobs {body}");
        let before = now_ms();
        let reply = client.send("POST", "/v1/jobs", Some(body.as_bytes()), &[])?;
        let after = now_ms();
        let job = added(&file, &reply, &what)?;
        ensure_eq!(
            (job.state.as_str(), job.priority, job.max_attempts, job.attempts, text(&job)),
            ("ready", *priority, *max_attempts, 0, String::new()),
            format!("{what}: state, priority, max_attempts, attempts and (none given) an empty payload")
        );
        match due {
            Due::After(offset) => near(job.run_at, *offset, before, after, &format!("{what}: run_at"))?,
            Due::At(at) => ensure_eq!(Some(job.run_at), parse_time(at), format!("{what}: run_at, {at}")),
        }
    }
    read_whatever_content_type(&file, &client)?;
    empty_bodies(&file, &client)
}

/// A body is JSON whatever its Content-Type says, as `curl -d` sends it.
fn read_whatever_content_type(file: &std::path::Path, client: &Client) -> CaseResult {
    let types: [Option<&str>; 3] = [Some("application/x-www-form-urlencoded"), Some("text/plain"), None];
    for content_type in types {
        let headers: Vec<(&str, &str)> = content_type.map(|t| ("Content-Type", t)).into_iter().collect();
        let shown = content_type.map_or("no Content-Type".to_string(), |t| format!("Content-Type: {t}"));
        let what = format!("an add with {shown}");
        let reply =
            raw_request(client.port, "POST", "/v1/jobs", &headers, br#"{"queue": "form", "payload": "f"}"#)?;
        let job = added(file, &reply, &what)?;
        ensure_eq!((job.queue.as_str(), text(&job)), ("form", "f".to_string()), what);
        let what = format!("a claim with {shown}");
        let reply = raw_request(client.port, "POST", "/v1/claim", &headers, br#"{"queue": "form"}"#)?;
        let claimed = answer(&reply, 200, &what)?;
        ensure_eq!(claimed.get("id").and_then(Value::as_i64), Some(job.id), format!("{what}: the job added"));
    }
    Ok(())
}

/// An empty body, or one of whitespace, is `{}`.
fn empty_bodies(file: &std::path::Path, client: &Client) -> CaseResult {
    let ids = insert(file, &[Put::new("dead", "dead", now_ms())])?;
    let reply = raw_request(client.port, "POST", &format!("/v1/jobs/{}/retry", ids[0]), &[], b"")?;
    let body = answer(&reply, 200, "a retry of a dead job with no body")?;
    same_json(body, json!({"ok": true}), "the answer to a retry with no body")?;
    let state = row(file, ids[0])?.map(|r| r.state);
    ensure_eq!(state.as_deref(), Some("ready"), "the dead job after a retry with no body");
    for (what, bytes) in [("no body", b"".as_slice()), ("a body of whitespace", b" \n\t ".as_slice())] {
        let what = format!("POST /v1/retry with {what}");
        let body = answer(&raw_request(client.port, "POST", "/v1/retry", &[], bytes)?, 200, &what)?;
        same_json(body, json!({"retried": 0}), &what)?;
    }
    Ok(())
}
