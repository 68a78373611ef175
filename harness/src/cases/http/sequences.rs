//! Sequences over HTTP: every way a held job ends, on the attempt before
//! the last and on the last, after an earlier failure (a fail, a dead
//! fail, a lease reaped by another claim, a release); steps run twice
//! keep the last value (extend, fail, a claim after a release, a retry);
//! and every read, over HTTP and on the command line, shows each step
//! that returned before it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::cases::steps::rows::{brief, brief_all};
use crate::cases::steps::setup::{insert, Put};
use crate::cases::{Case, CaseResult};
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::file::{row, rows, Row};
use crate::subjects::probe::now_ms;
use crate::subjects::server::Client;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::{answer, near, start};

pub fn cases(case: impl Fn(&'static str, &'static str, fn(&mut Ctx) -> CaseResult) -> Case) -> Vec<Case> {
    vec![
        case(
            "http/paths-to-last-attempt",
            "after an earlier failure, fail, a dead fail, a lease reaped by another claim and release, on the attempt before the last and on the last: ready before the last, dead on it (release neither), last_error the step's",
            paths_to_last_attempt,
        ),
        case(
            "http/last-value-wins",
            "steps run twice keep the last value: a shorter extend after a longer one, a second fail's error and retry_in, a claim after a release (token, lease), a second death after a retry",
            last_value_wins,
        ),
        case(
            "http/reads-fresh",
            "after each step (adds, a claim, a fail, a retry, a delete, over HTTP and the CLI), GET /v1/stats, /v1/jobs and /v1/jobs/{id}, and stats, list and show --json, show it at once",
            reads_fresh,
        ),
    ]
}

/// What an earlier attempt left in `last_error`.
const EARLIER: &str = "an earlier failure";

fn the_row(file: &Path, id: i64) -> Result<Row, Failure> {
    row(file, id)?.ok_or_else(|| Failure::fail(format!("job {id} in the file"), "no such row"))
}

/// Claims the due job of `queue` with `lease`; its id, token and attempt.
fn claim(client: &Client, queue: &str, lease: Value) -> Result<(i64, String, i64), Failure> {
    let body = json!({"queue": queue, "lease": lease});
    let job = client
        .claim(body.clone())?
        .ok_or_else(|| Failure::fail(format!("POST /v1/claim {body}: a job, one is due"), "204"))?;
    let token = job["token"].as_str().unwrap_or_default().to_string();
    Ok((job["id"].as_i64().unwrap_or_default(), token, job["attempt"].as_i64().unwrap_or_default()))
}

/// Posts `body` to the step `step` of job `id`: its answer's object.
fn step(client: &Client, id: i64, step: &str, body: Value) -> Result<Map<String, Value>, Failure> {
    let path = format!("/v1/jobs/{id}/{step}");
    let reply = client.post(&path, body.clone())?;
    answer(&reply, 200, &format!("POST {path} {body}"))
}

/// Fails unless job `id` is in `state` with `attempts`, holds no token nor
/// lease, and its last_error is `error` (None: what a release leaves,
/// which FORMAT.md leaves to the program).
fn ended(file: &Path, id: i64, how: &str, state: &str, attempts: i64, error: Option<&str>) -> CaseResult {
    let r = the_row(file, id)?;
    ensure!(
        r.state == state
            && r.attempts == attempts
            && r.token.is_none()
            && r.lease_until.is_none()
            && error.is_none_or(|e| r.last_error.as_deref() == Some(e)),
        format!(
            "job {id} ({how}): {state}, attempts {attempts} of {}, no token nor lease{}",
            r.max_attempts,
            error.map(|e| format!(", last_error {e:?}")).unwrap_or_default()
        ),
        brief(&r)
    );
    Ok(())
}

/// Jobs on the attempt before the last (2 of 3) and on the last (3 of 3),
/// each after an earlier failure, ended by fail, by fail with dead: true,
/// by a lease that runs out and another claim's reap, and by release.
fn paths_to_last_attempt(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = start(ctx, &[], &[])?;
    let now = now_ms();
    let put = |queue: &'static str, attempts: i64| {
        Put::new(queue, "ready", now).text(queue).attempts(attempts, 3).error(EARLIER)
    };
    insert(
        &file,
        &[
            put("fail-2", 1),
            put("fail-3", 2),
            put("dead-2", 1),
            put("reap-2", 1),
            put("reap-3", 2),
            put("release-3", 2),
        ],
    )?;
    let mut held = BTreeMap::new();
    for queue in ["fail-2", "fail-3", "dead-2", "release-3"] {
        held.insert(queue, claim(&client, queue, json!(600))?);
    }
    let mut reaped = Vec::new();
    for queue in ["reap-2", "reap-3"] {
        reaped.push(claim(&client, queue, json!("50ms"))?);
    }
    for (queue, (id, _, attempt)) in &held {
        let expected = if queue.ends_with('2') { 2 } else { 3 };
        ensure_eq!(*attempt, expected, format!("the claim of job {id} (queue {queue}): its attempt"));
    }
    let (id, token, _) = &held["fail-2"];
    let answered = step(&client, *id, "fail", json!({"token": token, "error": "failed again"}))?;
    ensure_eq!(
        answered["state"].as_str(),
        Some("ready"),
        format!("a fail of job {id} on attempt 2 of 3: the state answered")
    );
    ended(&file, *id, "failed on attempt 2 of 3", "ready", 2, Some("failed again"))?;
    let (id, token, _) = &held["fail-3"];
    let answered = step(&client, *id, "fail", json!({"token": token, "error": "failed again"}))?;
    ensure_eq!(
        answered["state"].as_str(),
        Some("dead"),
        format!("a fail of job {id} on attempt 3 of 3: the state answered")
    );
    ended(&file, *id, "failed on attempt 3 of 3", "dead", 3, Some("failed again"))?;
    let (id, token, _) = &held["dead-2"];
    step(&client, *id, "fail", json!({"token": token, "error": "failed for good", "dead": true}))?;
    ended(&file, *id, "failed with dead: true on attempt 2 of 3", "dead", 2, Some("failed for good"))?;
    let (id, token, _) = &held["release-3"];
    step(&client, *id, "release", json!({"token": token}))?;
    ended(&file, *id, "released on attempt 3 of 3", "ready", 2, None)?;
    // The short leases run out; a claim of another queue reaps them.
    let until = reaped.iter().filter_map(|(id, _, _)| row(&file, *id).ok().flatten()?.lease_until).max();
    ctx.wait_for("the 50 ms leases to run out", Duration::from_secs(10), || {
        Ok(until.is_none_or(|until| now_ms() > until + 20))
    })?;
    let other = client.claim(json!({"queue": "nothing-due"}))?;
    ensure!(other.is_none(), "a claim of a queue with no job: 204", format!("{other:?}"));
    for ((id, _, attempt), dead) in reaped.iter().zip([false, true]) {
        let r = the_row(&file, *id)?;
        let (state, how) = if dead {
            ("dead", "its lease ran out on attempt 3 of 3")
        } else {
            ("ready", "its lease ran out on attempt 2 of 3")
        };
        ensure!(
            r.state == state
                && r.attempts == *attempt
                && r.token.is_none()
                && r.last_error.as_deref().is_some_and(|e| !e.is_empty() && e != EARLIER),
            format!("job {id} ({how}), reaped by a claim of another queue: {state}, attempts {attempt}, no token, a last_error that notes the lease (not the earlier {EARLIER:?})"),
            brief(&r)
        );
    }
    Ok(())
}

/// Steps run twice: each field the second sets is the second's.
fn last_value_wins(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = start(ctx, &[], &[])?;
    let now = now_ms();
    let put = |queue: &'static str| Put::new(queue, "ready", now).text(queue).attempts(0, 5);
    insert(&file, &[put("extend"), put("fail"), put("release"), put("retry")])?;

    let (id, token, _) = claim(&client, "extend", json!(600))?;
    step(&client, id, "extend", json!({"token": token, "lease": 300}))?;
    let before = now_ms();
    let answered = step(&client, id, "extend", json!({"token": token, "lease": 30}))?;
    let after = now_ms();
    let r = the_row(&file, id)?;
    let what = format!("job {id} extended by 300 s, then by 30 s");
    near(r.lease_until.unwrap_or(0), 30_000, before, after, &format!("{what}: lease_until"))?;
    ensure_eq!(
        answered["lease_until"].as_str().and_then(crate::shown::printed_time),
        r.lease_until,
        format!("{what}: the lease_until answered, as the file holds it")
    );

    let (id, token, _) = claim(&client, "fail", json!(600))?;
    step(&client, id, "fail", json!({"token": token, "error": "first failure", "retry_in": 0}))?;
    let (again, token, _) = claim(&client, "fail", json!(600))?;
    ensure_eq!(again, id, "a claim of queue fail after its job failed with retry_in 0: the job");
    let before = now_ms();
    step(&client, id, "fail", json!({"token": token, "error": "second failure", "retry_in": 3600}))?;
    let after = now_ms();
    let r = the_row(&file, id)?;
    let what =
        format!("job {id} failed twice (`first failure`, retry_in 0; `second failure`, retry_in 3600)");
    ensure_eq!(r.last_error.as_deref(), Some("second failure"), format!("{what}: last_error"));
    near(r.run_at, 3_600_000, before, after, &format!("{what}: run_at"))?;

    let (id, first, _) = claim(&client, "release", json!(600))?;
    step(&client, id, "release", json!({"token": first}))?;
    let before = now_ms();
    let (again, second, _) = claim(&client, "release", json!(120))?;
    let after = now_ms();
    ensure_eq!(again, id, "a claim of queue release after its job was released: the job");
    let r = the_row(&file, id)?;
    let what = format!("job {id} claimed (lease 600 s), released, claimed again (lease 120 s)");
    ensure!(
        second != first && r.token.as_deref() == Some(second.as_str()),
        format!("{what}: the second claim's token, new, in the file"),
        format!("tokens {first:?} then {second:?}; the file holds {:?}", r.token)
    );
    near(r.lease_until.unwrap_or(0), 120_000, before, after, &format!("{what}: lease_until"))?;

    let (id, token, _) = claim(&client, "retry", json!(600))?;
    step(&client, id, "fail", json!({"token": token, "error": "first death", "dead": true}))?;
    step(&client, id, "retry", json!({}))?;
    let (_, token, attempt) = claim(&client, "retry", json!(600))?;
    ensure_eq!(
        attempt,
        1,
        format!("job {id}, retried after its death, claimed: the attempt (counted from 0 again)")
    );
    step(&client, id, "fail", json!({"token": token, "error": "second death", "dead": true}))?;
    let r = the_row(&file, id)?;
    ensure_eq!(
        (r.state.as_str(), r.attempts, r.last_error.as_deref()),
        ("dead", 1, Some("second death")),
        format!("job {id}, dead, retried, dead again: (state, attempts, last_error)")
    );
    Ok(())
}

/// The counts of `stats`, per queue, from the file: (due or delayed,
/// running or expired, dead, done), as any way of reading must show them
/// (where the ready and delayed line falls is the reader's clock's).
fn counts_of(rows: &[Row]) -> BTreeMap<String, [i64; 4]> {
    let mut counts: BTreeMap<String, [i64; 4]> = BTreeMap::new();
    for r in rows {
        let at = match r.state.as_str() {
            "ready" => 0,
            "running" => 1,
            "dead" => 2,
            _ => 3,
        };
        counts.entry(r.queue.clone()).or_default()[at] += 1;
    }
    counts
}

/// The counts a `stats` JSON shows, in [`counts_of`]'s terms.
fn counts_shown(stats: &Value) -> BTreeMap<String, [i64; 4]> {
    let n = |q: &Value, key: &str| q[key].as_i64().unwrap_or(-1);
    stats["queues"]
        .as_array()
        .map(|queues| {
            queues
                .iter()
                .map(|q| {
                    let queue = q["queue"].as_str().unwrap_or_default().to_string();
                    (
                        queue,
                        [
                            n(q, "ready") + n(q, "delayed"),
                            n(q, "running") + n(q, "expired"),
                            n(q, "dead"),
                            n(q, "done"),
                        ],
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// (id, state as the file holds it, attempts) of each job a JOB list shows
/// (a `delayed` job is a ready one).
fn jobs_shown(jobs: &Value) -> Vec<(i64, String, i64)> {
    jobs.as_array().map(|jobs| jobs.iter().map(job_shown).collect()).unwrap_or_default()
}

fn job_shown(job: &Value) -> (i64, String, i64) {
    let state = match job["state"].as_str().unwrap_or_default() {
        "delayed" => "ready",
        state => state,
    };
    (job["id"].as_i64().unwrap_or_default(), state.to_string(), job["attempts"].as_i64().unwrap_or(-1))
}

/// Fails unless every way of reading shows the file as it is now, after
/// `after`; `touched` is the job the step was about.
fn reads_agree(ctx: &Ctx, file: &Path, client: &Client, after: &str, touched: i64) -> CaseResult {
    let now = rows(file)?;
    let counts = counts_of(&now);
    let jobs: Vec<(i64, String, i64)> = now.iter().map(|r| (r.id, r.state.clone(), r.attempts)).collect();
    let one = now.iter().find(|r| r.id == touched).map(|r| (r.id, r.state.clone(), r.attempts));
    let get = |path: &str| -> Result<(u16, Value), Failure> {
        let reply = client.get(path)?;
        Ok((reply.status, reply.json().unwrap_or(Value::Null)))
    };
    let what = |how: &str| format!("{how}, right after {after} returned (the file: {})", brief_all(&now));
    let (_, stats) = get("/v1/stats")?;
    ensure_eq!(
        counts_shown(&stats),
        counts.clone(),
        what("GET /v1/stats: (ready + delayed, running + expired, dead, done) per queue")
    );
    let (_, listed) = get("/v1/jobs?limit=1000")?;
    ensure_eq!(
        jobs_shown(&listed["jobs"]),
        jobs.clone(),
        what("GET /v1/jobs: (id, state, attempts) of each job")
    );
    let (status, shown) = get(&format!("/v1/jobs/{touched}"))?;
    let seen = (status == 200).then(|| job_shown(&shown));
    ensure_eq!(
        seen,
        one.clone(),
        what(&format!("GET /v1/jobs/{touched}: (id, state, attempts), null for a 404"))
    );
    let f = path_str(file);
    let stats = ctx.json(ctx.subject(), &["stats", f, "--json"])?;
    ensure_eq!(
        counts_shown(&stats),
        counts,
        what("`stats --json`: (ready + delayed, running + expired, dead, done) per queue")
    );
    let listed = ctx.json(ctx.subject(), &["list", f, "--json", "--limit", "1000"])?;
    ensure_eq!(jobs_shown(&listed["jobs"]), jobs, what("`list --json`: (id, state, attempts) of each job"));
    if let Some(one) = one {
        let shown = ctx.json(ctx.subject(), &["show", f, &touched.to_string(), "--json"])?;
        ensure_eq!(job_shown(&shown), one, what(&format!("`show {touched} --json`: (id, state, attempts)")));
    }
    Ok(())
}

/// Each step, over HTTP or on the command line, then every read; a read
/// first, so that a server that keeps its answers has one to keep.
fn reads_fresh(ctx: &mut Ctx) -> CaseResult {
    let (file, _server, client) = start(ctx, &[], &[])?;
    let who = ctx.subject().clone();
    let first = client.add(json!({"queue": "q", "payload": "first"}))?;
    reads_agree(ctx, &file, &client, "an add over HTTP", first)?;
    let second = ctx.add(&who, &file, "q", "second", &[])?;
    reads_agree(ctx, &file, &client, "an add on the command line", second)?;
    let (id, token, _) = claim(&client, "q", json!(600))?;
    reads_agree(ctx, &file, &client, "a claim over HTTP", id)?;
    step(&client, id, "fail", json!({"token": token, "error": "failed", "dead": true}))?;
    reads_agree(ctx, &file, &client, "a fail (dead) over HTTP", id)?;
    ctx.ok(&who, &["retry", path_str(&file), &id.to_string()])?;
    reads_agree(ctx, &file, &client, "a retry on the command line", id)?;
    let other = if id == first { second } else { first };
    let reply = client.send("DELETE", &format!("/v1/jobs/{other}"), None, &[])?;
    answer(&reply, 200, &format!("DELETE /v1/jobs/{other}"))?;
    reads_agree(ctx, &file, &client, "a delete over HTTP", other)?;
    ctx.ok(&who, &["delete", path_str(&file), &id.to_string()])?;
    reads_agree(ctx, &file, &client, "a delete on the command line", id)
}
