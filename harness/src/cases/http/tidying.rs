//! Looking and tidying up over HTTP: `GET /v1/jobs` with each of its query
//! keys and its limits, `GET /v1/stats`, and retry, retry-all, purge,
//! delete and `serve --keep-done`, each checked against the file. The jobs
//! are written into the file (steps::setup), in every state.

use std::path::Path;

use serde_json::{json, Value};

use super::{answer, expect, near, same_json, start};
use crate::cases::steps::contract::{check_job, STATS_KEYS};
use crate::cases::steps::setup::{insert, Put};
use crate::cases::{Case, CaseResult};
use crate::shown::rfc3339;
use crate::subjects::ctx::Ctx;
use crate::subjects::observe::file::{row, rows, Row};
use crate::subjects::probe::now_ms;
use crate::subjects::server::Client;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

pub fn cases(case: impl Fn(&'static str, &'static str, fn(&mut Ctx) -> CaseResult) -> Case) -> Vec<Case> {
    vec![
        case(
            "http/list-filters",
            "GET /v1/jobs lists JOBs in id order by queue, state, after and limit (100 when left out, at most 1000); GET /v1/stats counts each queue",
            list_filters,
        ),
        case(
            "http/tidy",
            "retry (attempts reset), retry-all of one queue or all, purge of dead or done jobs of one queue or all, delete in any state, and ack with serve --keep-done (409 with another token)",
            tidy,
        ),
    ]
}

/// The ids a list answers, each JOB checked against its row.
fn listed(client: &Client, file: &Path, query: &str) -> Result<Vec<i64>, Failure> {
    let what = format!("GET /v1/jobs{query}");
    let body = answer(&client.get(&format!("/v1/jobs{query}"))?, 200, &what)?;
    let keys: Vec<&String> = body.keys().collect();
    ensure_eq!(keys, vec!["jobs"], format!("{what}: the keys of the answer"));
    let jobs = body["jobs"]
        .as_array()
        .ok_or_else(|| Failure::fail(format!("{what}: a list of jobs"), body["jobs"].to_string()))?;
    let by_id: std::collections::BTreeMap<i64, Row> = rows(file)?.into_iter().map(|r| (r.id, r)).collect();
    let mut ids = Vec::new();
    for job in jobs {
        let id = job["id"].as_i64().unwrap_or(0);
        let r = by_id.get(&id).ok_or_else(|| {
            Failure::fail(
                format!("{what}: jobs of the file"),
                format!("job {id}, which the file does not hold"),
            )
        })?;
        check_job(job, r, &format!("{what}: job {id}"))?;
        ids.push(id);
    }
    Ok(ids)
}

fn list_filters(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let now = now_ms();
    let puts = [
        Put::new("a", "ready", now),                                 // 1
        Put::new("a", "ready", now).run_at(now + 3_600_000),         // 2, delayed
        Put::new("a", "running", now),                               // 3
        Put::new("a", "dead", now),                                  // 4
        Put::new("a", "done", now),                                  // 5
        Put::new("b", "ready", now).run_at(now - 7_000),             // 6
        Put::new("b", "dead", now),                                  // 7
        Put::new("b", "done", now),                                  // 8
        Put::new("b", "running", now).lease(now - 5_000, "run-out"), // 9, its lease run out
    ];
    ensure_eq!(insert(&file, &puts)?, (1..=9).collect::<Vec<i64>>(), "the ids of the jobs written");
    let server = crate::subjects::server::serve(ctx, &file, &[], &[])?;
    let client = Client::new(server.port, None);
    let all: Vec<i64> = (1..=9).collect();
    let expected: [(&str, Vec<i64>); 17] = [
        ("", all.clone()),
        ("?queue=&state=&after=&limit=", all.clone()),
        ("?queue=a", vec![1, 2, 3, 4, 5]),
        ("?queue=b", vec![6, 7, 8, 9]),
        ("?queue=c", vec![]),
        ("?state=ready", vec![1, 6]),
        ("?state=delayed", vec![2]),
        ("?state=running", vec![3, 9]),
        ("?state=dead", vec![4, 7]),
        ("?state=done", vec![5, 8]),
        ("?after=5", vec![6, 7, 8, 9]),
        ("?after=0", all.clone()),
        ("?after=9", vec![]),
        ("?limit=2", vec![1, 2]),
        ("?queue=a&state=dead", vec![4]),
        ("?after=2&limit=2", vec![3, 4]),
        ("?queue=b&state=done&after=7&limit=1", vec![8]),
    ];
    for (query, ids) in expected {
        ensure_eq!(listed(&client, &file, query)?, ids, format!("the ids GET /v1/jobs{query} lists"));
    }
    stats(&client, now)?;

    // The limits: 1100 more jobs, written at once.
    let many: Vec<Put> = (0..1100).map(|_| Put::new("many", "ready", now)).collect();
    let ids = insert(&file, &many)?;
    for (query, n) in [("", 100), ("&limit=1000", 1000), ("&limit=5000", 1000), ("&limit=1001", 1000)] {
        let query = format!("?queue=many{query}");
        let got = listed(&client, &file, &query)?;
        let first = &ids[..n];
        ensure!(
            got == first,
            format!(
                "GET /v1/jobs{query}: the first {n} jobs of the queue, ids {} to {}",
                first[0],
                first[n - 1]
            ),
            format!("{} jobs, ids {:?} to {:?}", got.len(), got.first(), got.last())
        );
    }
    Ok(())
}

/// `GET /v1/stats` of the jobs of [`list_filters`].
fn stats(client: &Client, now: i64) -> CaseResult {
    let body = answer(&client.get("/v1/stats")?, 200, "GET /v1/stats")?;
    let counts = |queue: &str, ready, delayed, running, expired, oldest: i64| {
        json!({
            "queue": queue, "ready": ready, "delayed": delayed, "running": running, "expired": expired,
            "dead": 1, "done": 1, "oldest_due": rfc3339(oldest),
        })
    };
    let expected =
        json!({"queues": [counts("a", 1, 1, 1, 0, now - 1_000), counts("b", 1, 0, 0, 1, now - 7_000)]});
    for q in body["queues"].as_array().into_iter().flatten() {
        let keys: Vec<&str> =
            q.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        ensure!(
            STATS_KEYS.iter().all(|k| keys.contains(k)) && keys.len() == STATS_KEYS.len(),
            format!("GET /v1/stats: each queue with exactly the keys {STATS_KEYS:?}"),
            q.to_string()
        );
    }
    same_json(body, expected, "GET /v1/stats")?;
    Ok(())
}

fn the_row(file: &Path, id: i64) -> Result<Row, Failure> {
    row(file, id)?.ok_or_else(|| Failure::fail(format!("job {id} in the file"), "no such row"))
}

/// Posts `body` (None: no body) and checks the answer is `expected`.
fn posted(client: &Client, path: &str, body: Option<Value>, expected: Value) -> CaseResult {
    let what = format!("POST {path} {}", body.as_ref().map_or("with no body".to_string(), Value::to_string));
    let bytes = body.map(|b| b.to_string());
    let reply = client.send("POST", path, bytes.as_deref().map(str::as_bytes), &[])?;
    let got = answer(&reply, 200, &what)?;
    same_json(got, expected, &format!("{what}: the answer"))?;
    Ok(())
}

/// The states of the file's jobs, by id.
fn states(file: &Path) -> Result<Vec<(i64, String)>, Failure> {
    Ok(rows(file)?.into_iter().map(|r| (r.id, r.state)).collect())
}

fn tidy(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = start(ctx, &["--keep-done"], &[])?;
    let now = now_ms();
    let puts = [
        Put::new("a", "dead", now).attempts(3, 3), // 1
        Put::new("a", "dead", now).attempts(2, 5), // 2
        Put::new("b", "dead", now).attempts(4, 4), // 3
        Put::new("a", "done", now),                // 4
        Put::new("b", "done", now),                // 5
        Put::new("c", "ready", now),               // 6
        Put::new("c", "ready", now),               // 7
    ];
    insert(&file, &puts)?;
    let before = now_ms();
    posted(&client, "/v1/jobs/1/retry", None, json!({"ok": true}))?;
    let after = now_ms();
    let r = the_row(&file, 1)?;
    ensure_eq!((r.state.as_str(), r.attempts), ("ready", 0), "job 1 after its retry: ready, attempts 0");
    near(r.run_at, 0, before, after, "job 1's run_at after its retry")?;
    posted(&client, "/v1/retry", Some(json!({"queue": "a"})), json!({"retried": 1}))?;
    ensure_eq!(the_row(&file, 3)?.state, "dead", "job 3, of queue b, after a retry of queue a's dead jobs");
    posted(&client, "/v1/retry", Some(json!({"state": "dead"})), json!({"retried": 1}))?;
    let r = the_row(&file, 3)?;
    ensure_eq!((r.state.as_str(), r.attempts), ("ready", 0), "job 3 after a retry of every dead job");
    posted(&client, "/v1/retry", None, json!({"retried": 0}))?;

    posted(&client, "/v1/purge", Some(json!({"state": "done", "queue": "a"})), json!({"deleted": 1}))?;
    ensure!(
        row(&file, 4)?.is_none() && row(&file, 5)?.is_some(),
        "job 4 (queue a, done) purged, job 5 (queue b, done) kept",
        format!("{:?}", states(&file)?)
    );
    // With --keep-done an ack keeps the job as done, and only with the
    // job's own token.
    let job = client
        .claim(json!({"queue": "c"}))?
        .ok_or_else(|| Failure::fail("a claim of queue c: job 6", "204"))?;
    let held = the_row(&file, 6)?;
    expect(
        &client.post("/v1/jobs/6/ack", json!({"token": "f".repeat(32)}))?,
        409,
        "an ack of job 6 with another token (serve --keep-done)",
    )?;
    ensure_eq!(the_row(&file, 6)?, held, "job 6 after an ack with another token (serve --keep-done)");
    expect(&client.post("/v1/jobs/6/ack", json!({"token": job["token"]}))?, 200, "the ack of job 6")?;
    ensure_eq!(job["id"].as_i64(), Some(6), "the job claimed");
    ensure_eq!(the_row(&file, 6)?.state, "done", "job 6 after its ack (serve --keep-done)");
    posted(&client, "/v1/purge", Some(json!({"state": "done"})), json!({"deleted": 2}))?;
    let job = client
        .claim(json!({"queue": "c"}))?
        .ok_or_else(|| Failure::fail("a claim of queue c: job 7", "204"))?;
    expect(
        &client.post("/v1/jobs/7/fail", json!({"token": job["token"], "dead": true}))?,
        200,
        "the fail of job 7",
    )?;
    posted(&client, "/v1/purge", Some(json!({"state": "dead", "queue": "b"})), json!({"deleted": 0}))?;
    posted(&client, "/v1/purge", Some(json!({"state": "dead"})), json!({"deleted": 1}))?;
    ensure_eq!(
        states(&file)?,
        vec![(1, "ready".to_string()), (2, "ready".to_string()), (3, "ready".to_string())],
        "the jobs left"
    );
    // Delete in any state: a running one.
    let job =
        client.claim(json!({"queue": "a"}))?.ok_or_else(|| Failure::fail("a claim of queue a", "204"))?;
    let id = job["id"].as_i64().unwrap_or(0);
    let deleted = client.send("DELETE", &format!("/v1/jobs/{id}"), None, &[])?;
    ensure_eq!(
        answer(&deleted, 200, "DELETE of a running job").map(Value::Object)?,
        json!({"ok": true}),
        "DELETE's answer"
    );
    ensure!(row(&file, id)?.is_none(), format!("job {id}, running, deleted"), "it is still in the file");
    Ok(())
}
