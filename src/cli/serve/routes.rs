//! The endpoints of API.md, each a thin layer over [`super::store`].

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::json;
// tokio's clock is std's, save in a runtime whose time is paused, where a
// claim's wait passes at once (the serve_requests fuzzer waits out 30 s so).
use tokio::time::Instant;

use super::guard::{self, Hosts};
use super::store::{FailRetry, POLL};
use super::wire::{
    self, read_json, AddRequest, ApiError, BulkRequest, ClaimRequest, ClaimedJson, HeldRequest,
};
use super::{Server, MAX_WAIT};
use crate::cli::output::{JobJson, ListJson, StatsJson};
use crate::cli::time;
use crate::job::DEFAULT_LEASE;
use crate::{Claim, Failed, ListFilter, ListState, NewJob, State as JobState};

type Answer = Result<Response, ApiError>;
type Srv = State<Arc<Server>>;

pub fn router(server: Arc<Server>, hosts: Option<Hosts>) -> Router {
    let max_body = server.max_body;
    let router = Router::new()
        .route("/v1/health", get(health))
        .route("/v1/jobs", post(add).get(list))
        .route("/v1/jobs/{id}", get(show).delete(delete))
        .route("/v1/jobs/{id}/ack", post(ack))
        .route("/v1/jobs/{id}/fail", post(fail))
        .route("/v1/jobs/{id}/extend", post(extend))
        .route("/v1/jobs/{id}/release", post(release))
        .route("/v1/jobs/{id}/retry", post(retry))
        .route("/v1/claim", post(claim))
        .route("/v1/stats", get(stats))
        .route("/v1/retry", post(retry_all))
        .route("/v1/purge", post(purge))
        .route_layer(from_fn_with_state(server.clone(), guard::auth))
        .fallback(|| async {
            ApiError(StatusCode::NOT_FOUND, "no such endpoint; the API is described in API.md".into())
        })
        .layer(from_fn(guard::json_405))
        .layer(from_fn(guard::cross_origin))
        .with_state(server);
    let router = match hosts {
        Some(hosts) => router.layer(from_fn_with_state(Arc::new(hosts), guard::host_check)),
        None => router,
    };
    router.layer(from_fn_with_state(max_body, guard::whole_body))
}

fn ok() -> Response {
    wire::json(StatusCode::OK, json!({ "ok": true }))
}

async fn health() -> Response {
    wire::json(
        StatusCode::OK,
        json!({ "ok": true, "version": env!("CARGO_PKG_VERSION"), "format_version": crate::FORMAT_VERSION }),
    )
}

/// A job id from the path: a positive whole number.
fn job_id(text: &str) -> Result<i64, ApiError> {
    text.parse()
        .ok()
        .filter(|id| *id >= 1)
        .ok_or_else(|| ApiError::bad("the job id must be a positive whole number"))
}

fn lease(given: Option<wire::Seconds>) -> Result<Duration, ApiError> {
    match given {
        None => Ok(DEFAULT_LEASE),
        Some(s) if s.0 <= 0.0 => Err(ApiError::bad("lease must be positive")),
        Some(s) => Ok(s.duration()),
    }
}

fn opt(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

async fn add(State(server): Srv, body: Body) -> Answer {
    let req: AddRequest = read_json(body, server.max_body).await?;
    let payload = match (req.payload, req.payload_base64) {
        (Some(_), Some(_)) => return Err(ApiError::bad("send payload or payload_base64, not both")),
        (_, Some(b64)) => wire::decode_base64(&b64)?,
        (Some(p), None) => p.0,
        (None, None) => Vec::new(),
    };
    let mut job = NewJob::new(req.queue, payload).priority(req.priority);
    if req.max_attempts != 0 {
        job = job.max_attempts(req.max_attempts);
    }
    if let Some(delay) = req.delay {
        if delay.0 < 0.0 {
            return Err(ApiError::bad("delay can't be negative"));
        }
        if delay.0 > 0.0 && req.run_at.is_some() {
            return Err(ApiError::bad("give a delay or a run_at, not both"));
        }
        job = job.delay(delay.duration());
    }
    if let Some(at) = req.run_at {
        job = job
            .run_at(time::parse(&at).map_err(|_| {
                ApiError::bad("run_at must be an RFC 3339 time such as 2026-10-06T09:00:00Z")
            })?);
    }
    let id = server.store.add(job).await?;
    Ok(wire::json(StatusCode::CREATED, json!({ "id": id })))
}

async fn claim(State(server): Srv, body: Body) -> Answer {
    let req: ClaimRequest = read_json(body, server.max_body).await?;
    let lease = lease(req.lease)?;
    let wait = req.wait.map_or(Duration::ZERO, |w| w.duration().min(MAX_WAIT));
    let deadline = Instant::now() + wait;
    let mut stop = server.stop.clone();
    let waiting = server.store.wait_on(&req.queue);
    // A claim looks at once, and whenever it is woken; when its timer runs
    // out, when it is the queue's turn (store::Waiters).
    let mut woken = true;
    loop {
        // Listen before looking, so a job added while the claim runs wakes us.
        let due = waiting.waiters.due();
        tokio::pin!(due);
        due.as_mut().enable();
        let mut next_due = None;
        if let Some(look) = waiting.waiters.look(woken) {
            match server.store.claim(req.queue.clone(), lease).await? {
                Claim::Job(job) => {
                    look.found(true);
                    return Ok(wire::json(StatusCode::OK, ClaimedJson::from(job)));
                }
                Claim::Empty { next_due: at } => {
                    look.found(false);
                    next_due = at;
                }
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || *stop.borrow() {
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        let mut nap = left.min(POLL);
        if let Some(at) = next_due {
            let until = at.saturating_sub(server.store.now_ms()).max(1);
            nap = nap.min(Duration::from_millis(until as u64));
        }
        tokio::select! {
            _ = due => woken = true,
            _ = tokio::time::sleep(nap) => woken = false,
            _ = stop.wait_for(|s| *s) => return Ok(StatusCode::NO_CONTENT.into_response()),
        }
    }
}

/// The id and body of a call about a held job; the token is required.
async fn held(server: &Server, id: &str, body: Body) -> Result<(i64, HeldRequest), ApiError> {
    let id = job_id(id)?;
    let req: HeldRequest = read_json(body, server.max_body).await?;
    if req.token.is_empty() {
        return Err(ApiError::bad("token is required; it comes with the claimed job"));
    }
    Ok((id, req))
}

async fn ack(State(server): Srv, Path(id): Path<String>, body: Body) -> Answer {
    let (id, req) = held(&server, &id, body).await?;
    server.store.ack(id, req.token).await?;
    Ok(ok())
}

async fn fail(State(server): Srv, Path(id): Path<String>, body: Body) -> Answer {
    let (id, req) = held(&server, &id, body).await?;
    let retry = match (req.dead, req.retry_in) {
        (true, _) => FailRetry::Never,
        (false, Some(after)) => FailRetry::After(after.duration()),
        (false, None) => FailRetry::Backoff,
    };
    let error = if req.error.is_empty() { "failed".to_string() } else { req.error };
    Ok(match server.store.fail(id, req.token, error, retry).await? {
        Failed::Ready { run_at } => {
            wire::json(StatusCode::OK, json!({ "state": "ready", "run_at": time::format(run_at) }))
        }
        Failed::Dead => wire::json(StatusCode::OK, json!({ "state": "dead" })),
    })
}

async fn extend(State(server): Srv, Path(id): Path<String>, body: Body) -> Answer {
    let (id, req) = held(&server, &id, body).await?;
    let until = server.store.extend(id, req.token, lease(req.lease)?).await?;
    Ok(wire::json(StatusCode::OK, json!({ "lease_until": time::format(until) })))
}

async fn release(State(server): Srv, Path(id): Path<String>, body: Body) -> Answer {
    let (id, req) = held(&server, &id, body).await?;
    server.store.release(id, req.token).await?;
    Ok(ok())
}

async fn show(State(server): Srv, Path(id): Path<String>) -> Answer {
    let id = job_id(&id)?;
    match server.store.get(id).await? {
        Some(job) => Ok(wire::json(StatusCode::OK, JobJson::from(&job))),
        None => Err(crate::Error::JobNotFound { id }.into()),
    }
}

async fn delete(State(server): Srv, Path(id): Path<String>) -> Answer {
    server.store.delete(job_id(&id)?).await?;
    Ok(ok())
}

async fn retry(State(server): Srv, Path(id): Path<String>) -> Answer {
    match server.store.retry(job_id(&id)?).await {
        Ok(()) => Ok(ok()),
        Err(crate::Error::JobNotFound { .. } | crate::Error::NotDead { .. }) => {
            Err(ApiError(StatusCode::NOT_FOUND, "no dead job with that id".into()))
        }
        Err(e) => Err(e.into()),
    }
}

/// The jobs `GET /v1/jobs` lists without a limit (API.md's server: not
/// the CLI's 50), and the most it lists: a larger limit is taken as this.
const LIST_LIMIT: i64 = 100;
const LIST_LIMIT_MOST: i64 = 1000;

#[derive(Deserialize)]
struct ListQuery {
    queue: Option<String>,
    state: Option<String>,
    after: Option<String>,
    limit: Option<String>,
}

async fn list(
    State(server): Srv,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Answer {
    let Query(q) = query.map_err(|e| ApiError::bad(e.body_text()))?;
    let mut filter = ListFilter { queue: q.queue.and_then(opt), limit: LIST_LIMIT, ..ListFilter::default() };
    if let Some(state) = q.state.and_then(opt) {
        filter.state = Some(state.parse::<ListState>().map_err(ApiError::bad)?);
    }
    if let Some(after) = q.after.and_then(opt) {
        filter.after = after
            .parse()
            .ok()
            .filter(|a| *a >= 0)
            .ok_or_else(|| ApiError::bad("after must be a whole number"))?;
    }
    if let Some(limit) = q.limit.and_then(opt) {
        filter.limit = limit
            .parse()
            .ok()
            .filter(|l: &i64| *l >= 1)
            .ok_or_else(|| ApiError::bad("limit must be a positive whole number"))?
            .min(LIST_LIMIT_MOST);
    }
    let jobs = server.store.list(filter).await?;
    Ok(wire::json(StatusCode::OK, ListJson { jobs: jobs.iter().map(JobJson::from).collect() }))
}

async fn stats(State(server): Srv) -> Answer {
    Ok(wire::json(StatusCode::OK, StatsJson::new(&server.store.stats().await?)))
}

async fn retry_all(State(server): Srv, body: Body) -> Answer {
    let req: BulkRequest = read_json(body, server.max_body).await?;
    if !req.state.is_empty() && req.state != "dead" {
        return Err(ApiError::bad(r#"only dead jobs can be retried; leave state out or send "dead""#));
    }
    let n = server.store.retry_all(opt(req.queue)).await?;
    Ok(wire::json(StatusCode::OK, json!({ "retried": n })))
}

async fn purge(State(server): Srv, body: Body) -> Answer {
    let req: BulkRequest = read_json(body, server.max_body).await?;
    let state: JobState = req.state.parse().map_err(|_| ApiError::bad("state must be dead or done"))?;
    let n = server.store.purge(state, opt(req.queue)).await?;
    Ok(wire::json(StatusCode::OK, json!({ "deleted": n })))
}
