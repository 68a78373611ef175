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
use ukue::cli::args::ServeArgs;
use ukue::cli::serve::{serve, serve_with};
use ukue::OpenOptions;

use super::broken::ServeFlaw;

/// Runs `serve` with `flaw`.
pub fn serve_flawed(options: OpenOptions, mut args: ServeArgs, flaw: ServeFlaw) -> anyhow::Result<()> {
    match flaw {
        ServeFlaw::None => serve(options, args),
        ServeFlaw::NoBodyLimit => {
            args.max_body = u64::MAX;
            serve(options, args)
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
            serve_with(options, args, move |api| api.layer(from_fn(open)))
        }
        ServeFlaw::KeepsAbandonedClaims => serve_with(options, args, |api| {
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
        ServeFlaw::RefusesUnread => serve_with(options, args, |api| {
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
        ServeFlaw::FinishesAbandonedClaims => {
            let file = args.file.clone();
            let opener = options.clone();
            let finish = move |request: Request, next: Next| {
                finish_abandoned(file.clone(), opener.clone(), request, next)
            };
            serve_with(options, args, move |api| api.layer(from_fn(finish)))
        }
    }
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
