//! The broken servers' flaws ([`ServeFlaw`]): the reference's `serve`
//! with an option edited, or with a layer of the harness's around its API
//! (`ukue::cli::serve::serve_with`), so that the `ukue` that ships holds
//! none of them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{from_fn, Next};
use axum::response::Response;
use axum::Router;
use ukue::cli::args::ServeArgs;
use ukue::cli::serve::serve_with;
use ukue::OpenOptions;

use super::broken::ServeFlaw;

/// Runs `serve` with `flaw`.
pub fn serve_flawed(options: OpenOptions, args: ServeArgs, flaw: ServeFlaw) -> anyhow::Result<()> {
    let Flawed { args, around } = flawed(&options, args, flaw)?;
    serve_with(options, args, around)?;
    if flaw == ServeFlaw::StopExitsNonZero {
        anyhow::bail!("stopped")
    }
    Ok(())
}

/// What a flawed server serves: the reference's API with these
/// arguments, inside this layer (the serve_requests fuzzer builds it in
/// its process).
pub struct Flawed {
    pub args: ServeArgs,
    pub around: Box<dyn FnOnce(Router) -> Router>,
}

fn layered(args: ServeArgs, around: impl FnOnce(Router) -> Router + 'static) -> anyhow::Result<Flawed> {
    Ok(Flawed { args, around: Box::new(around) })
}

/// The arguments and the layer of `flaw` (the reference's own for
/// [`ServeFlaw::None`] and for the flaws that show only when it stops).
pub fn flawed(options: &OpenOptions, mut args: ServeArgs, flaw: ServeFlaw) -> anyhow::Result<Flawed> {
    match flaw {
        ServeFlaw::None | ServeFlaw::StopExitsNonZero => layered(args, |api| api),
        ServeFlaw::NoBodyLimit => {
            args.max_body = u64::MAX;
            layered(args, |api| api)
        }
        ServeFlaw::Unauthenticated { method, prefix } => {
            // The reference checks the token; the flaw hands it the token
            // for requests the client sent without one.
            let bearer = match token(&args)? {
                Some(token) => Some(HeaderValue::from_str(&format!("Bearer {token}"))?),
                None => None,
            };
            let open = move |mut request: Request, next: Next| {
                let bearer = bearer.clone();
                async move {
                    let path = request.uri().path();
                    if let (Some(bearer), true) =
                        (bearer, request.method().as_str() == method && path.starts_with(prefix))
                    {
                        request.headers_mut().insert(header::AUTHORIZATION, bearer);
                    }
                    next.run(request).await
                }
            };
            layered(args, move |api| api.layer(from_fn(open)))
        }
        ServeFlaw::KeepsAbandonedClaims => layered(args, |api| {
            api.layer(from_fn(|request: Request, next: Next| async move {
                if request.uri().path() != "/v1/claim" {
                    return next.run(request).await;
                }
                // On a task of its own, the claim outlives a client that leaves.
                tokio::spawn(next.run(request))
                    .await
                    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
            }))
        }),
        ServeFlaw::RefusesUnread => layered(args, |api| {
            api.layer(from_fn(|request: Request, next: Next| async move {
                if request.method() != axum::http::Method::PUT {
                    return next.run(request).await;
                }
                let mut refused = Response::new(Body::from(r#"{"error": "PUT is not allowed here"}"#));
                *refused.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
                refused
                    .headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                refused
            }))
        }),
        ServeFlaw::NegativeDelayZero => edit_body(
            args,
            |m, p| m == "POST" && p == "/v1/jobs",
            |body| {
                if body["delay"].as_f64().is_some_and(|d| d < 0.0) {
                    body["delay"] = 0.into();
                }
            },
        ),
        // Before the routes: an outer router sends every request to the
        // API, through a layer that takes the sign off a step's id.
        ServeFlaw::IdSignDropped => layered(args, |api| {
            Router::new().fallback_service(api).layer(from_fn(
                |mut request: Request, next: Next| async move {
                    let path = request.uri().path();
                    let step = ["/ack", "/fail", "/extend", "/release"].iter().any(|s| path.ends_with(s));
                    if let Some(rest) = path.strip_prefix("/v1/jobs/-").filter(|_| step) {
                        if let Ok(uri) = format!("/v1/jobs/{rest}").parse() {
                            *request.uri_mut() = uri;
                        }
                    }
                    next.run(request).await
                },
            ))
        }),
        ServeFlaw::DurationsInMilliseconds => edit_body(
            args,
            |m, _| m == "POST",
            |body| {
                for key in ["delay", "lease", "wait", "retry_in"] {
                    if let Some(n) = body.get(key).and_then(serde_json::Value::as_f64) {
                        body[key] = (n / 1000.0).into();
                    }
                }
            },
        ),
        ServeFlaw::IgnoresRetryIn => edit_body(
            args,
            |m, p| m == "POST" && p.ends_with("/fail"),
            |body| {
                if let Some(body) = body.as_object_mut() {
                    body.remove("retry_in");
                }
            },
        ),
        ServeFlaw::RetryAllIgnoresQueue => edit_body(
            args,
            |m, p| m == "POST" && p == "/v1/retry",
            |body| {
                if let Some(body) = body.as_object_mut() {
                    body.remove("queue");
                }
            },
        ),
        ServeFlaw::RetryNotDeadConflict => layered(args, |api| {
            api.layer(from_fn(|request: Request, next: Next| async move {
                let retry = request.uri().path().ends_with("/retry") && request.uri().path() != "/v1/retry";
                let response = next.run(request).await;
                if retry && response.status() == StatusCode::NOT_FOUND {
                    return refusal(StatusCode::CONFLICT, "the job is not dead");
                }
                response
            }))
        }),
        ServeFlaw::JsonContentTypeOnly => layered(args, |api| {
            api.layer(from_fn(|request: Request, next: Next| async move {
                let json = request
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v.starts_with("application/json"));
                if request.method() == axum::http::Method::POST && !json {
                    return refusal(
                        StatusCode::UNSUPPORTED_MEDIA_TYPE,
                        "send Content-Type: application/json",
                    );
                }
                next.run(request).await
            }))
        }),
        ServeFlaw::ExpiredLeaseLost => {
            let file = args.file.clone();
            let opener = options.clone();
            let lost = move |request: Request, next: Next| {
                refuse_expired(file.clone(), opener.clone(), request, next)
            };
            layered(args, move |api| api.layer(from_fn(lost)))
        }
        ServeFlaw::LooksOnlyAtEnds => layered(args, |api| api.layer(from_fn(look_at_ends))),
        ServeFlaw::WaitUncapped => layered(args, |api| api.layer(from_fn(wait_past_cap))),
        ServeFlaw::ListLimitFifty => layered(args, |api| {
            api.layer(from_fn(|mut request: Request, next: Next| async move {
                let uri = request.uri();
                let query = uri.query().unwrap_or("");
                if uri.path() == "/v1/jobs" && !query.split('&').any(|kv| kv.starts_with("limit=")) {
                    let query =
                        if query.is_empty() { "limit=50".to_string() } else { format!("{query}&limit=50") };
                    if let Ok(edited) = format!("{}?{query}", uri.path()).parse() {
                        *request.uri_mut() = edited;
                    }
                }
                next.run(request).await
            }))
        }),
        ServeFlaw::IgnoresKeepDone => {
            args.keep_done = false;
            layered(args, |api| api)
        }
        ServeFlaw::HostPortChecked | ServeFlaw::HostsCheckedWithToken => {
            let port = args.addr.port;
            let tokened = token(&args)?.is_some();
            let check_port = flaw == ServeFlaw::HostPortChecked;
            let hosts = move |request: Request, next: Next| async move {
                let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
                let (name, given) = match host.rsplit_once(':') {
                    Some((name, p)) if !p.contains(']') => (name, Some(p)),
                    _ => (host, None),
                };
                let name = name.trim_start_matches('[').trim_end_matches(']');
                let refused = if check_port {
                    !tokened && given.is_some_and(|p| p != port.to_string())
                } else {
                    tokened && !["localhost", "127.0.0.1", "::1"].contains(&name)
                };
                if refused {
                    return refusal(
                        StatusCode::FORBIDDEN,
                        "this server only answers requests addressed to it",
                    );
                }
                next.run(request).await
            };
            layered(args, move |api| api.layer(from_fn(hosts)))
        }
        ServeFlaw::BodyLimitOneShort => {
            args.max_body = args.max_body.saturating_sub(1).max(1);
            layered(args, |api| api)
        }
        ServeFlaw::UntrimmedTokenFile => {
            if let Some(path) = args.token_file.take() {
                // Before any thread of the server's runs.
                std::env::set_var("UKUE_TOKEN", std::fs::read_to_string(path)?);
            }
            layered(args, |api| api)
        }
        ServeFlaw::StaleReads => {
            let cache: Cache = Arc::default();
            let stale = move |request: Request, next: Next| answer_stale(cache.clone(), request, next);
            layered(args, move |api| api.layer(from_fn(stale)))
        }
        ServeFlaw::TimesWithoutZeroMillis => edit_answers(args, super::broken::without_zero_millis),
        ServeFlaw::Base64Unpadded => {
            edit_answers(args, |v| super::broken::edit_base64(v, super::broken::b64_unpadded))
        }
        ServeFlaw::DefaultWait10s => edit_body(
            args,
            |m, p| m == "POST" && p == "/v1/claim",
            |body| {
                if body.get("wait").is_none() {
                    body["wait"] = 10.into();
                }
            },
        ),
        ServeFlaw::DefaultLease30s => edit_body(
            args,
            |m, p| m == "POST" && (p == "/v1/claim" || p.ends_with("/extend")),
            |body| {
                if body.get("lease").is_none() {
                    body["lease"] = 30.into();
                }
            },
        ),
        ServeFlaw::DefaultAttempts5 => edit_body(
            args,
            |m, p| m == "POST" && p == "/v1/jobs",
            |body| {
                if body.get("max_attempts").is_none_or(|n| n == 0) {
                    body["max_attempts"] = 5.into();
                }
            },
        ),
        ServeFlaw::PriorityEndsRefused => edit_body(
            args,
            |m, p| m == "POST" && p == "/v1/jobs",
            |body| match body.get("priority").and_then(serde_json::Value::as_i64) {
                Some(100) => body["priority"] = 101.into(),
                Some(-100) => body["priority"] = (-101).into(),
                _ => {}
            },
        ),
        ServeFlaw::FinishesAbandonedClaims => {
            let file = args.file.clone();
            let opener = options.clone();
            let finish = move |request: Request, next: Next| {
                finish_abandoned(file.clone(), opener.clone(), request, next)
            };
            layered(args, move |api| api.layer(from_fn(finish)))
        }
    }
}

/// A refusal as the reference writes one.
fn refusal(status: StatusCode, msg: &str) -> Response {
    let mut refused = Response::new(Body::from(serde_json::json!({ "error": msg }).to_string()));
    *refused.status_mut() = status;
    refused.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    refused
}

/// Serves with a layer that edits the JSON body of each request that
/// `applies` to (its method and path) before the reference reads it.
fn edit_body(
    args: ServeArgs,
    applies: fn(&str, &str) -> bool,
    edit: fn(&mut serde_json::Value),
) -> anyhow::Result<Flawed> {
    let layer = move |request: Request, next: Next| async move {
        if !applies(request.method().as_str(), request.uri().path()) {
            return next.run(request).await;
        }
        let (mut parts, body) = request.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
        let bytes = match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(mut value) => {
                edit(&mut value);
                axum::body::Bytes::from(value.to_string())
            }
            Err(_) => bytes,
        };
        parts.headers.remove(header::CONTENT_LENGTH);
        next.run(Request::from_parts(parts, Body::from(bytes))).await
    };
    layered(args, move |api| api.layer(from_fn(layer)))
}

/// Serves with a layer that edits the JSON of every answer.
fn edit_answers(args: ServeArgs, edit: fn(&mut serde_json::Value)) -> anyhow::Result<Flawed> {
    let layer = move |request: Request, next: Next| async move {
        let (mut parts, body) = next.run(request).await.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
        let bytes = match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(mut value) => {
                edit(&mut value);
                axum::body::Bytes::from(format!("{value}\n"))
            }
            Err(_) => bytes,
        };
        parts.headers.remove(header::CONTENT_LENGTH);
        Response::from_parts(parts, Body::from(bytes))
    };
    layered(args, move |api| api.layer(from_fn(layer)))
}

/// What a stale server answered to each GET, and when.
type Cache = Arc<
    std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, StatusCode, axum::body::Bytes)>>,
>;

/// How long a stale server answers a read from its cache.
const STALE_FOR: std::time::Duration = std::time::Duration::from_secs(5);

/// A read (GET /v1/stats, /v1/jobs, /v1/jobs/{id}) answered as the same
/// request was less than [`STALE_FOR`] ago, else served and kept.
async fn answer_stale(cache: Cache, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if request.method() != axum::http::Method::GET || !(path == "/v1/stats" || path.starts_with("/v1/jobs")) {
        return next.run(request).await;
    }
    let key = request.uri().to_string();
    let kept = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key).cloned();
    if let Some((at, status, bytes)) = kept.filter(|(at, _, _)| at.elapsed() < STALE_FOR) {
        let _ = at;
        let mut response = Response::new(Body::from(bytes));
        *response.status_mut() = status;
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        return response;
    }
    let (parts, body) = next.run(request).await.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let now = std::time::Instant::now();
    cache.lock().unwrap_or_else(|p| p.into_inner()).insert(key, (now, parts.status, bytes.clone()));
    Response::from_parts(parts, Body::from(bytes))
}

/// A call about a held job (`/v1/jobs/{id}/ack` …) whose lease has run
/// out, by the file, answers 409.
async fn refuse_expired(file: PathBuf, options: OpenOptions, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let held = ["/ack", "/fail", "/extend", "/release"].iter().any(|step| path.ends_with(step));
    let id =
        path.strip_prefix("/v1/jobs/").and_then(|rest| rest.split('/').next()).and_then(|id| id.parse().ok());
    if let (true, Some(id)) = (held, id) {
        let lease = tokio::task::spawn_blocking(move || options.open(&file).and_then(|f| f.get(id)))
            .await
            .ok()
            .and_then(Result::ok)
            .flatten()
            .and_then(|job| job.lease_until);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        if lease.is_some_and(|until| until <= now) {
            return refusal(StatusCode::CONFLICT, "the lease ran out");
        }
    }
    next.run(request).await
}

/// A claim with a `wait` sleeps it out, then looks once.
async fn look_at_ends(request: Request, next: Next) -> Response {
    if request.uri().path() != "/v1/claim" {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return next.run(Request::from_parts(parts, Body::from(bytes))).await;
    };
    let wait = value.get("wait").and_then(serde_json::Value::as_f64).unwrap_or(0.0);
    if let Some(body) = value.as_object_mut() {
        body.remove("wait");
    }
    // A first look, as a claim that finds a job at once answers.
    let first = Request::from_parts(parts.clone(), Body::from(value.to_string()));
    let response = next.clone().run(first).await;
    if response.status() != StatusCode::NO_CONTENT || wait <= 0.0 {
        return response;
    }
    tokio::time::sleep(std::time::Duration::from_secs_f64(wait.min(30.0))).await;
    parts.headers.remove(header::CONTENT_LENGTH);
    next.run(Request::from_parts(parts, Body::from(value.to_string()))).await
}

/// A claim whose `wait` is over 30 s first waits out what is over, then
/// goes to the reference (which waits up to 30 s more).
async fn wait_past_cap(request: Request, next: Next) -> Response {
    if request.uri().path() != "/v1/claim" {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let wait = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("wait").and_then(serde_json::Value::as_f64))
        .unwrap_or(0.0);
    if wait > 30.0 {
        tokio::time::sleep(std::time::Duration::from_secs_f64(wait - 30.0)).await;
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// The token as the reference reads it: `--token-file`, or `UKUE_TOKEN`.
fn token(args: &ServeArgs) -> anyhow::Result<Option<String>> {
    if let Some(path) = &args.token_file {
        return Ok(Some(std::fs::read_to_string(path)?.trim().to_string()));
    }
    Ok(std::env::var("UKUE_TOKEN").ok().filter(|t| !t.is_empty()))
}

/// Sets its flag when the request's future is dropped before the answer
/// came (the client left); taken once the answer is there.
struct Leaving(Option<Arc<AtomicBool>>);

impl Drop for Leaving {
    fn drop(&mut self) {
        if let Some(left) = self.0.take() {
            left.store(true, Ordering::SeqCst);
        }
    }
}

/// A claim on a task of its own; a job it takes after its client left is
/// finished (deleted) with the claim's token.
async fn finish_abandoned(file: PathBuf, options: OpenOptions, request: Request, next: Next) -> Response {
    if request.uri().path() != "/v1/claim" {
        return next.run(request).await;
    }
    let left = Arc::new(AtomicBool::new(false));
    let mut leaving = Leaving(Some(left.clone()));
    let claim = tokio::spawn(async move {
        let response = next.run(request).await;
        if !left.load(Ordering::SeqCst) || response.status() != StatusCode::OK {
            return response;
        }
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
        if let Ok(job) = serde_json::from_slice::<serde_json::Value>(&bytes) {
            if let (Some(id), Some(token)) = (job["id"].as_i64(), job["token"].as_str().map(String::from)) {
                let _ = tokio::task::spawn_blocking(move || {
                    options.open(&file).and_then(|mut f| f.finish(id, &token, false))
                })
                .await;
            }
        }
        Response::from_parts(parts, Body::from(bytes))
    });
    let response = claim.await.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    leaving.0 = None;
    response
}
