//! Every refusal of spec/COMMAND.md §13 that `http/bad-requests` leaves
//! out, as a table: each request, the item that refuses it, and the status
//! the published server gives it. `http/refusals` (must) asks each for a
//! 4xx status with a JSON error and the file unchanged; `http/refusal-statuses`
//! (should) for the published server's status, and for its headers (§13.7).
//!
//! The file holds a ready job (1) and a running one (2, whose token the
//! table's calls about a held job send), so that a refusal that changes
//! a job shows in its row.

use serde_json::{json, Value};

use super::{all_refused, at_published, expect, Refused, TOKEN};
use crate::cases::steps::setup::{insert, Put};
use crate::cases::{Case, CaseResult, Level};
use crate::ensure;
use crate::subjects::ctx::Ctx;
use crate::subjects::observe::file::rows_as_text;
use crate::subjects::probe::now_ms;
use crate::subjects::server::{self, Client};
use crate::subjects::Failure;

pub fn cases(case: impl Fn(&'static str, &'static str, fn(&mut Ctx) -> CaseResult) -> Case) -> Vec<Case> {
    vec![
        case(
            "http/refusals",
            "each bad input of §13 (JSON, durations, ids, paths, queue names, payloads, priority, attempts, delay, run_at, leases, tokens, list queries, states) is refused: 4xx, a JSON error, the file unchanged",
            refusals,
        ),
        Case {
            level: Level::Should,
            ..case(
                "http/refusal-statuses",
                "the refusals of http/refusals, and unknown keys, answer the published server's statuses, with WWW-Authenticate on 401, Allow on 405, and JSON answers say Content-Type and Cache-Control: no-store",
                refusal_statuses,
            )
        },
    ]
}

/// One refused request: the item that refuses it, what it is, method,
/// path, body, and the published server's status.
struct Bad {
    item: &'static str,
    what: &'static str,
    method: &'static str,
    path: String,
    body: Option<String>,
    published: u16,
}

fn bad(
    item: &'static str,
    what: &'static str,
    method: &'static str,
    path: &str,
    body: Option<Value>,
    published: u16,
) -> Bad {
    Bad { item, what, method, path: path.to_string(), body: body.map(|b| b.to_string()), published }
}

/// A body written as text (what `json!` cannot write: bad JSON, data after it).
fn text(item: &'static str, what: &'static str, path: &str, body: &str) -> Bad {
    Bad { item, what, method: "POST", path: path.to_string(), body: Some(body.to_string()), published: 400 }
}

/// The running job's id, and its token.
const HELD: i64 = 2;

/// Every refusal, `token` being the held job's.
fn table(token: &str) -> Vec<Bad> {
    let add = |item, what, body: Value| bad(item, what, "POST", "/v1/jobs", Some(body), 400);
    let claim = |item, what, body: Value| bad(item, what, "POST", "/v1/claim", Some(body), 400);
    let held = |item, what, step: &str, body: Value| {
        bad(item, what, "POST", &format!("/v1/jobs/{HELD}/{step}"), Some(body), 400)
    };
    let get = |item, what, path: &str, published| bad(item, what, "GET", path, None, published);
    let negated = |what, step: &str, body| {
        bad("http.id", what, "POST", &format!("/v1/jobs/-{HELD}/{step}"), Some(body), 400)
    };
    let long_queue = "q".repeat(201);
    vec![
        add("http.bad-json", "a priority of the wrong kind", json!({"queue": "q", "priority": "high"})),
        add("http.bad-json", "a priority with a fraction", json!({"queue": "q", "priority": 1.5})),
        add("http.bad-json", "a queue that is a number", json!({"queue": 5})),
        text("http.bad-json", "data after the object", "/v1/jobs", r#"{"queue": "q"} trailing"#),
        text(
            "http.bad-json",
            "a second object after the first",
            "/v1/jobs",
            r#"{"queue": "q"}{"queue": "q"}"#,
        ),
        text("http.bad-json", "an array", "/v1/jobs", r#"[{"queue": "q"}]"#),
        text("http.bad-json", "a claim of bad JSON", "/v1/claim", r#"{"queue": "#),
        add("http.duration", "a delay of \"soon\"", json!({"queue": "q", "delay": "soon"})),
        add("http.duration", "a delay of \"5\" (no unit)", json!({"queue": "q", "delay": "5"})),
        add("http.duration", "a delay of true", json!({"queue": "q", "delay": true})),
        claim("http.duration", "a lease of 1e10 seconds", json!({"queue": "q", "lease": 1e10})),
        claim("http.duration", "a wait of \"later\"", json!({"queue": "q", "wait": "later"})),
        // Go's syntax has one sign: the magnitude after a `-` has none.
        claim("http.duration", "a wait of \"-+1s\" (two signs)", json!({"queue": "q", "wait": "-+1s"})),
        claim("http.duration", "a wait of \"--1s\" (two signs)", json!({"queue": "q", "wait": "--1s"})),
        held(
            "http.duration",
            "a fail with a retry_in of \"x\"",
            "fail",
            json!({"token": token, "retry_in": "x"}),
        ),
        get("http.id", "GET /v1/jobs/0", "/v1/jobs/0", 400),
        get("http.id", "GET /v1/jobs/-1", "/v1/jobs/-1", 400),
        get("http.id", "GET /v1/jobs/1.5", "/v1/jobs/1.5", 400),
        get("http.id", "GET /v1/jobs/9223372036854775808", "/v1/jobs/9223372036854775808", 400),
        bad("http.id", "an ack of job 0", "POST", "/v1/jobs/0/ack", Some(json!({"token": token})), 400),
        bad("http.id", "DELETE /v1/jobs/abc", "DELETE", "/v1/jobs/abc", None, 400),
        bad("http.id", "a retry of job -2", "POST", "/v1/jobs/-2/retry", None, 400),
        // The held job's id negated, with its token: a program that drops
        // the sign would act on the held job.
        negated("an ack of job -2, with job 2's token", "ack", json!({"token": token})),
        negated("a fail of job -2, with job 2's token", "fail", json!({"token": token, "error": "x"})),
        negated("an extend of job -2, with job 2's token", "extend", json!({"token": token, "lease": 60})),
        negated("a release of job -2, with job 2's token", "release", json!({"token": token})),
        get("http.unknown-path", "GET /v2/jobs", "/v2/jobs", 404),
        bad(
            "http.unknown-path",
            "POST /v1/jobs/1/frobnicate",
            "POST",
            "/v1/jobs/1/frobnicate",
            Some(json!({})),
            404,
        ),
        bad("http.unknown-path", "DELETE /v1/stats", "DELETE", "/v1/stats", None, 405),
        bad("http.unknown-path", "PUT /v1/jobs", "PUT", "/v1/jobs", Some(json!({"queue": "q"})), 405),
        get("http.unknown-path", "GET /v1/claim", "/v1/claim", 405),
        add("http.add-queue", "an add without a queue", json!({"payload": "x"})),
        add("http.add-queue", "an empty queue", json!({"queue": ""})),
        add("http.add-queue", "a queue of 201 characters", json!({"queue": long_queue})),
        add("http.add-queue", "a queue with a NUL", json!({"queue": "a\u{0}b"})),
        add(
            "http.payload-both",
            "payload and payload_base64",
            json!({"queue": "q", "payload": "x", "payload_base64": "eA=="}),
        ),
        add(
            "http.payload-both",
            "payload_base64 that is not base64",
            json!({"queue": "q", "payload_base64": "%%%"}),
        ),
        add(
            "http.payload-both",
            "payload_base64 without its padding",
            json!({"queue": "q", "payload_base64": "AP8"}),
        ),
        add("http.add-priority", "priority -101", json!({"queue": "q", "priority": -101})),
        add("http.add-max-attempts", "max_attempts -1", json!({"queue": "q", "max_attempts": -1})),
        add("http.add-delay", "a delay of -5", json!({"queue": "q", "delay": -5})),
        add("http.add-delay", "a delay of \"-5s\"", json!({"queue": "q", "delay": "-5s"})),
        add("http.add-run-at", "a run_at of \"tomorrow\"", json!({"queue": "q", "run_at": "tomorrow"})),
        add(
            "http.add-run-at",
            "a delay and a run_at",
            json!({"queue": "q", "delay": "1h", "run_at": "2030-01-01T00:00:00Z"}),
        ),
        claim("http.claim", "a claim of an empty queue name", json!({"queue": ""})),
        claim("http.claim", "a claim without a queue", json!({"lease": 30})),
        claim("http.claim-lease", "a lease of 0", json!({"queue": "q", "lease": 0})),
        claim("http.claim-lease", "a lease of -1", json!({"queue": "q", "lease": -1})),
        claim("http.claim-lease", "a lease of \"0s\"", json!({"queue": "q", "lease": "0s"})),
        claim("http.claim-lease", "a lease under a millisecond", json!({"queue": "q", "lease": 0.0005})),
        held("http.held", "an ack without a token", "ack", json!({})),
        held("http.held", "an ack with an empty token", "ack", json!({"token": ""})),
        held("http.held", "a fail without a token", "fail", json!({"error": "x"})),
        held("http.held", "an extend without a token", "extend", json!({"lease": 60})),
        held("http.held", "a release without a token", "release", json!({})),
        held("http.extend", "an extend with a lease of 0", "extend", json!({"token": token, "lease": 0})),
        held(
            "http.extend",
            "an extend with a lease under a millisecond",
            "extend",
            json!({"token": token, "lease": 0.0005}),
        ),
        get("http.list-bad", "a list of state waiting", "/v1/jobs?state=waiting", 400),
        get("http.list-bad", "a list after -1", "/v1/jobs?after=-1", 400),
        get("http.list-bad", "a list after abc", "/v1/jobs?after=abc", 400),
        get("http.list-bad", "a list of limit 0", "/v1/jobs?limit=0", 400),
        get("http.list-bad", "a list of limit -5", "/v1/jobs?limit=-5", 400),
        get("http.list-bad", "a list of limit abc", "/v1/jobs?limit=abc", 400),
        bad("http.unknown-job", "DELETE /v1/jobs/999", "DELETE", "/v1/jobs/999", None, 404),
        bad("http.unknown-job", "a retry of job 999", "POST", "/v1/jobs/999/retry", None, 404),
        bad("http.retry", "a retry of a ready job", "POST", "/v1/jobs/1/retry", None, 404),
        bad("http.retry", "a retry of a running job", "POST", &format!("/v1/jobs/{HELD}/retry"), None, 404),
        bad(
            "http.retry-all",
            "a retry of every done job",
            "POST",
            "/v1/retry",
            Some(json!({"state": "done"})),
            400,
        ),
        bad(
            "http.retry-all",
            "a retry of every ready job",
            "POST",
            "/v1/retry",
            Some(json!({"state": "ready"})),
            400,
        ),
        bad("http.purge", "a purge without a state", "POST", "/v1/purge", Some(json!({})), 400),
        bad("http.purge", "a purge of ready jobs", "POST", "/v1/purge", Some(json!({"state": "ready"})), 400),
        bad(
            "http.purge",
            "a purge of running jobs",
            "POST",
            "/v1/purge",
            Some(json!({"state": "running"})),
            400,
        ),
        bad(
            "http.purge",
            "a purge of delayed jobs",
            "POST",
            "/v1/purge",
            Some(json!({"state": "delayed"})),
            400,
        ),
    ]
}

/// Requests with a key the endpoint does not know (`http.unknown-field`,
/// a `should`: API.md does not say).
fn unknown_keys(token: &str) -> Vec<Bad> {
    vec![
        bad(
            "http.unknown-field",
            "an add with \"dealy\"",
            "POST",
            "/v1/jobs",
            Some(json!({"queue": "q", "dealy": "1h"})),
            400,
        ),
        bad(
            "http.unknown-field",
            "a claim with \"leese\"",
            "POST",
            "/v1/claim",
            Some(json!({"queue": "q", "leese": 5})),
            400,
        ),
        bad(
            "http.unknown-field",
            "an ack with \"tokn\"",
            "POST",
            &format!("/v1/jobs/{HELD}/ack"),
            Some(json!({"token": token, "tokn": 1})),
            400,
        ),
        bad(
            "http.unknown-field",
            "a purge with \"queu\"",
            "POST",
            "/v1/purge",
            Some(json!({"state": "dead", "queu": "q"})),
            400,
        ),
    ]
}

/// A file with a ready job (1) and a running one (2), served by the
/// subject with `env`; the held job's token.
fn setup(
    ctx: &mut Ctx,
    env: &[(&str, &str)],
) -> Result<(std::path::PathBuf, server::ServerProcess, String), Failure> {
    let file = ctx.init("jobs.ukue")?;
    let now = now_ms();
    let ids = insert(&file, &[Put::new("q", "ready", now), Put::new("q", "running", now)])?;
    ensure!(ids == [1, HELD], "jobs 1 and 2 written", format!("ids {ids:?}"));
    let token = format!("token-q-{now}");
    let server = server::serve(ctx, &file, &[], env)?;
    Ok((file, server, token))
}

fn send(client: &Client, rows: &[Bad]) -> Result<Vec<Refused>, Failure> {
    rows.iter()
        .map(|b| {
            let reply = client.send(b.method, &b.path, b.body.as_deref().map(str::as_bytes), &[])?;
            Ok(Refused { what: format!("{} ({})", b.what, b.item), reply, published: b.published })
        })
        .collect()
}

/// The file's rows as text are still `before`.
fn unchanged(file: &std::path::Path, before: &[String]) -> CaseResult {
    let after = rows_as_text(file)?;
    ensure!(
        after == before,
        format!("the file's jobs as they were before the refused requests: {before:?}"),
        format!("{after:?}")
    );
    Ok(())
}

fn refusals(ctx: &mut Ctx) -> CaseResult {
    let (file, server, token) = setup(ctx, &[])?;
    let before = rows_as_text(&file)?;
    let client = Client::new(server.port, None);
    all_refused(&send(&client, &table(&token))?)?;
    unchanged(&file, &before)
}

fn refusal_statuses(ctx: &mut Ctx) -> CaseResult {
    let (file, server, token) = setup(ctx, &[("UKUE_TOKEN", TOKEN)])?;
    let before = rows_as_text(&file)?;
    let client = Client::new(server.port, Some(TOKEN));
    let mut rows = table(&token);
    rows.extend(unknown_keys(&token));
    at_published(&send(&client, &rows)?)?;
    unchanged(&file, &before)?;

    let refused = Client::new(server.port, None).get("/v1/stats")?;
    expect(&refused, 401, "GET /v1/stats without the token")?;
    ensure!(
        refused.header("www-authenticate") == Some(r#"Bearer realm="ukue""#),
        r#"401 with WWW-Authenticate: Bearer realm="ukue""#,
        format!("WWW-Authenticate: {:?}", refused.header("www-authenticate"))
    );
    let wrong_method = client.send("PUT", "/v1/jobs", Some(b"{}"), &[])?;
    let allow = wrong_method.header("allow").unwrap_or("").to_ascii_uppercase();
    ensure!(
        wrong_method.status == 405 && allow.contains("GET") && allow.contains("POST"),
        "PUT /v1/jobs: 405 with an Allow header naming GET and POST",
        format!("{} with Allow: {:?}", wrong_method.status, wrong_method.header("allow"))
    );
    for (what, reply) in
        [("GET /v1/stats", client.get("/v1/stats")?), ("a refused add", client.post("/v1/jobs", json!({}))?)]
    {
        let content_type = reply.header("content-type").unwrap_or("");
        ensure!(
            content_type.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
                && reply.header("cache-control") == Some("no-store"),
            format!("{what}: Content-Type: application/json and Cache-Control: no-store"),
            format!("Content-Type: {content_type:?}, Cache-Control: {:?}", reply.header("cache-control"))
        );
    }
    Ok(())
}
