//! The legal variants' `serve` (crate::subjects::variants): the
//! reference's API inside layers of the harness's, each taking another
//! choice the contract allows, so that the `ukue` that ships has none.
//!
//! From the inside out: a claim that outlives its client, the JSON of
//! requests and answers, the statuses and headers, and the delay.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{from_fn, Next};
use axum::response::Response;
use serde_json::value::RawValue;
use ukue::cli::args::ServeArgs;
use ukue::cli::serve::serve_with;
use ukue::OpenOptions;

use super::broken::ServeFlaw;
use super::broken_serve::{flawed, Flawed};
use super::variant_cli::{edit_jobs, JobEdits};
use super::variants::{Choice, Variant};

/// How late `serve-150ms-late` answers.
const LATE: Duration = Duration::from_millis(150);

/// Whether `variant` changes anything of `serve`.
pub fn changes_serve(variant: &Variant) -> bool {
    use Choice::*;
    [ServeLate, KeepsAbandonedClaims, UnknownFieldsAccepted, OtherStatuses, NoAnswerHeaders, LongToken]
        .into_iter()
        .chain([DelayedShown, EmptyLastError])
        .any(|c| variant.has(c))
}

/// Runs `serve` as `variant` serves.
pub fn serve(variant: &'static Variant, options: OpenOptions, args: ServeArgs) -> anyhow::Result<()> {
    let Flawed { args, around: abandoned } = if variant.has(Choice::KeepsAbandonedClaims) {
        flawed(&options, args, ServeFlaw::KeepsAbandonedClaims)?
    } else {
        flawed(&options, args, ServeFlaw::None)?
    };
    let max_body = usize::try_from(args.max_body).unwrap_or(usize::MAX);
    serve_with(options, args, move |api| {
        let mut api = abandoned(api);
        if edits_requests(variant) {
            api = api.layer(from_fn(move |request: Request, next: Next| {
                edit_request(variant, max_body, request, next)
            }));
        }
        if edits_answers(variant) {
            api = api.layer(from_fn(move |request: Request, next: Next| edit_answer(variant, request, next)));
        }
        if variant.has(Choice::OtherStatuses) {
            api = api.layer(from_fn(other_status));
        }
        if variant.has(Choice::NoAnswerHeaders) {
            api = api.layer(from_fn(plain_headers));
        }
        if variant.has(Choice::ServeLate) {
            api = api.layer(from_fn(|request: Request, next: Next| async move {
                // The variant's behaviour: slow, not wrong.
                tokio::time::sleep(LATE).await;
                next.run(request).await
            }));
        }
        api
    })
}

fn edits_requests(variant: &Variant) -> bool {
    variant.has(Choice::UnknownFieldsAccepted) || variant.has(Choice::LongToken)
}

fn edits_answers(variant: &Variant) -> bool {
    variant.has(Choice::DelayedShown) || variant.has(Choice::EmptyLastError) || variant.has(Choice::LongToken)
}

/// The keys each endpoint reads (`POST` only; the others take no body).
fn known_keys(path: &str) -> Option<&'static [&'static str]> {
    let step = path.strip_prefix("/v1/jobs/").and_then(|rest| rest.split_once('/')).map(|(_, step)| step);
    Some(match (path, step) {
        ("/v1/jobs", _) => {
            &["queue", "payload", "payload_base64", "delay", "run_at", "max_attempts", "priority"]
        }
        ("/v1/claim", _) => &["queue", "lease", "wait"],
        ("/v1/retry" | "/v1/purge", _) => &["state", "queue"],
        (_, Some("ack" | "fail" | "extend" | "release")) => &["token", "error", "retry_in", "dead", "lease"],
        (_, Some("retry")) => &[],
        _ => return None,
    })
}

/// A request body as its keys and their values' text as sent (so that a
/// payload's JSON keeps its keys' order and its numbers' spelling).
type Fields = BTreeMap<String, Box<RawValue>>;

/// Unknown keys dropped (`UnknownFieldsAccepted`), and a long token
/// (`LongToken`) given back as the library's own. A body that is not one
/// JSON object, or is over the limit, goes on as it came, for the
/// reference to refuse.
async fn edit_request(variant: &'static Variant, max_body: usize, request: Request, next: Next) -> Response {
    let keys = known_keys(request.uri().path());
    if request.method() != Method::POST || keys.is_none() {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let mut edited = false;
    let fields = (bytes.len() <= max_body).then(|| serde_json::from_slice::<Fields>(&bytes).ok()).flatten();
    if let (Some(mut fields), Some(keys)) = (fields, keys) {
        if variant.has(Choice::UnknownFieldsAccepted) {
            let before = fields.len();
            fields.retain(|key, _| keys.contains(&key.as_str()));
            edited |= fields.len() != before;
        }
        if variant.has(Choice::LongToken) {
            let token = fields.get("token").and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
            if let Some(short) = token.as_deref().and_then(library_token) {
                if let Ok(raw) = serde_json::value::to_raw_value(short) {
                    fields.insert("token".into(), raw);
                    edited = true;
                }
            }
        }
        if edited {
            let text = serde_json::to_vec(&fields).unwrap_or_else(|_| bytes.to_vec());
            parts.headers.remove(header::CONTENT_LENGTH);
            return next.run(Request::from_parts(parts, Body::from(text))).await;
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// The token as the variant stores and hands it out: the library's 32
/// hex digits in upper case, then as they are (crate::subjects::variants).
pub fn long_token(short: &str) -> String {
    format!("{}{short}", short.to_uppercase())
}

/// The library's token inside a long one; None for any other text.
fn library_token(long: &str) -> Option<&str> {
    let (upper, short) = long.split_at_checked(long.len() / 2)?;
    (long.len() == 64 && upper == short.to_uppercase() && short == short.to_lowercase()).then_some(short)
}

/// A JSON answer with its JOBs shown as the variant shows them, and a
/// claim's token long.
async fn edit_answer(variant: &'static Variant, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let claim = path == "/v1/claim";
    let jobs = request.method() == Method::GET && (path == "/v1/jobs" || path.starts_with("/v1/jobs/"));
    let response = next.run(request).await;
    if !(claim || jobs) || response.status() != StatusCode::OK {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    if jobs {
        edit_jobs(&mut value, JobEdits::of(variant));
    }
    if claim {
        if variant.has(Choice::EmptyLastError) && value.get("last_error").is_some_and(|e| e.is_null()) {
            value["last_error"] = "".into();
        }
        if let (true, Some(token)) = (variant.has(Choice::LongToken), value["token"].as_str()) {
            value["token"] = long_token(token).into();
        }
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(serde_json::to_vec(&value).map(Bytes::from).unwrap_or(bytes)))
}

/// Other 4xx statuses than the published server's (http.status-*): each
/// still a refusal with its `{"error": …}` body.
async fn other_status(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let browser =
        request.headers().contains_key("sec-fetch-site") || request.headers().contains_key(header::ORIGIN);
    let mut response = next.run(request).await;
    let job_path = path.starts_with("/v1/jobs/");
    let status = match response.status() {
        StatusCode::BAD_REQUEST => StatusCode::UNPROCESSABLE_ENTITY,
        StatusCode::UNAUTHORIZED => {
            response.headers_mut().remove(header::WWW_AUTHENTICATE);
            StatusCode::FORBIDDEN
        }
        // A host refused; a browser's cross-site request keeps its 403
        // (http.cross-site, a must).
        StatusCode::FORBIDDEN if !browser => StatusCode::MISDIRECTED_REQUEST,
        StatusCode::NOT_FOUND if job_path => StatusCode::GONE,
        StatusCode::NOT_FOUND => StatusCode::BAD_REQUEST,
        StatusCode::METHOD_NOT_ALLOWED => {
            response.headers_mut().remove(header::ALLOW);
            StatusCode::BAD_REQUEST
        }
        StatusCode::PAYLOAD_TOO_LARGE => StatusCode::BAD_REQUEST,
        other => other,
    };
    *response.status_mut() = status;
    response
}

/// JSON answers without the published server's headers.
async fn plain_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.remove(header::CACHE_CONTROL);
    if headers.contains_key(header::CONTENT_TYPE) {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_token_holds_the_librarys() {
        let short = "0123456789abcdef0123456789abcdef";
        let long = long_token(short);
        assert_eq!(long.len(), 64);
        assert_eq!(library_token(&long), Some(short));
        assert_eq!(library_token(short), None);
        assert_eq!(library_token(&long.to_lowercase()), None);
    }

    #[test]
    fn unknown_keys_are_known_per_endpoint() {
        assert!(known_keys("/v1/jobs").unwrap().contains(&"payload_base64"));
        assert!(known_keys("/v1/jobs/7/fail").unwrap().contains(&"retry_in"));
        assert_eq!(known_keys("/v1/jobs/7/retry"), Some(&[][..]));
        assert_eq!(known_keys("/v1/stats"), None);
    }
}
