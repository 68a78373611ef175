//! What goes over the wire: request bodies, answers, and errors as JSON.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

use crate::cli::{duration, time};
use crate::{Claimed, Error};

/// An answer with a status and a JSON body.
pub fn json(status: StatusCode, value: impl Serialize) -> Response {
    let mut response = (status, axum::Json(value)).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A refused request: `{"error": "..."}` with a 4xx or 5xx status.
#[derive(Debug)]
pub struct ApiError(pub StatusCode, pub String);

impl ApiError {
    pub fn bad(msg: impl Into<String>) -> ApiError {
        ApiError(StatusCode::BAD_REQUEST, msg.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json(self.0, serde_json::json!({ "error": self.1 }))
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let status = match &e {
            Error::Invalid(_) => StatusCode::BAD_REQUEST,
            Error::LeaseLost { .. } => StatusCode::CONFLICT,
            Error::JobNotFound { .. } | Error::NotDead { .. } => StatusCode::NOT_FOUND,
            e if e.is_busy() => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status.is_server_error() {
            eprintln!("ukue serve: {e}");
        }
        let msg = match &e {
            Error::LeaseLost { .. } => {
                "this worker no longer holds the job: its lease ran out, or it was finished or deleted".into()
            }
            e => e.to_string(),
        };
        ApiError(status, msg)
    }
}

/// Reads a body of at most `limit` bytes.
pub async fn read_body(body: Body, limit: usize) -> Result<axum::body::Bytes, ApiError> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => Err(ApiError(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than {limit} bytes"),
        )),
        Err(_) => Err(ApiError::bad("could not read the request body")),
    }
}

/// Reads a JSON body of at most `limit` bytes; an empty body is `{}`, and
/// fields the endpoint does not know are refused.
pub async fn read_json<T: DeserializeOwned>(body: Body, limit: usize) -> Result<T, ApiError> {
    let bytes = read_body(body, limit).await?;
    let text: &[u8] = if bytes.trim_ascii().is_empty() { b"{}" } else { &bytes };
    serde_json::from_slice(text).map_err(|e| ApiError::bad(format!("bad JSON: {e}")))
}

/// A length of time: a number of seconds or a Go duration string.
#[derive(Debug, Clone, Copy)]
pub struct Seconds(pub f64);

impl Seconds {
    /// As a duration; negative is zero.
    pub fn duration(self) -> Duration {
        Duration::try_from_secs_f64(self.0.max(0.0)).unwrap_or(Duration::MAX)
    }
}

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        let secs = match Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom(r#"a duration must be a number of seconds or a string such as "90s""#)
        })? {
            Raw::Number(n) => n,
            // Go's syntax has a sign; what a negative duration means is the endpoint's.
            Raw::Text(t) => match t.strip_prefix('-') {
                Some(magnitude) if !magnitude.starts_with(['-', '+']) => {
                    -duration::parse(magnitude).map_err(serde::de::Error::custom)?.as_secs_f64()
                }
                _ => duration::parse(&t).map_err(serde::de::Error::custom)?.as_secs_f64(),
            },
        };
        if !secs.is_finite() || secs.abs() > 1e9 {
            return Err(serde::de::Error::custom("duration out of range"));
        }
        Ok(Seconds(secs))
    }
}

/// A payload in a request: a JSON string is stored as its text, any other
/// value as compact JSON text.
#[derive(Debug)]
pub struct Payload(pub Vec<u8>);

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        if raw.get().starts_with('"') {
            let text: String = serde_json::from_str(raw.get()).map_err(serde::de::Error::custom)?;
            return Ok(Payload(text.into_bytes()));
        }
        Ok(Payload(compact(raw.get())))
    }
}

/// JSON text without the whitespace between tokens, keys in the order sent
/// (as the published server's json.Compact).
fn compact(json: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for &b in json.as_bytes() {
        if in_string {
            out.push(b);
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if !b.is_ascii_whitespace() {
            in_string = b == b'"';
            out.push(b);
        }
    }
    out
}

pub fn decode_base64(text: &str) -> Result<Vec<u8>, ApiError> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|_| ApiError::bad("payload_base64 is not valid base64"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddRequest {
    #[serde(default)]
    pub queue: String,
    pub payload: Option<Payload>,
    pub payload_base64: Option<String>,
    pub delay: Option<Seconds>,
    pub run_at: Option<String>,
    #[serde(default)]
    pub max_attempts: i64,
    #[serde(default)]
    pub priority: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimRequest {
    #[serde(default)]
    pub queue: String,
    pub lease: Option<Seconds>,
    pub wait: Option<Seconds>,
}

/// The body of ack, fail, extend and release.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeldRequest {
    #[serde(default)]
    pub token: String,
    #[serde(default)]
    pub error: String,
    pub retry_in: Option<Seconds>,
    #[serde(default)]
    pub dead: bool,
    pub lease: Option<Seconds>,
}

/// The body of `POST /v1/retry` and `POST /v1/purge`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkRequest {
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub queue: String,
}

#[cfg(test)]
mod tests {
    #[test]
    fn compact_keeps_order_and_strings() {
        let text = r#"{ "z" : [1, 2], "a": "x \" y\\", "b": {} }"#;
        assert_eq!(String::from_utf8(super::compact(text)).unwrap(), r#"{"z":[1,2],"a":"x \" y\\","b":{}}"#);
    }

    #[test]
    fn durations_are_seconds_or_go_strings_with_a_sign() {
        let secs = |text: &str| serde_json::from_str::<super::Seconds>(text).map(|s| s.0).ok();
        assert_eq!(secs("30"), Some(30.0));
        assert_eq!(secs("0.5"), Some(0.5));
        assert_eq!(secs(r#""1h30m""#), Some(5400.0));
        assert_eq!(secs(r#""-5s""#), Some(-5.0));
        assert_eq!(secs(r#""+5s""#), Some(5.0));
        assert_eq!(secs("-5"), Some(-5.0));
        for bad in [r#""soon""#, r#""5""#, r#""-""#, r#""--5s""#, r#""-+5s""#, "true", "1e10"] {
            assert_eq!(secs(bad), None, "{bad}");
        }
    }
}

/// A claimed job as API.md shows it.
#[derive(Serialize)]
pub struct ClaimedJson {
    id: i64,
    queue: String,
    attempt: i64,
    max_attempts: i64,
    priority: i64,
    token: String,
    lease_until: String,
    created_at: String,
    last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload_base64: Option<String>,
}

impl From<Claimed> for ClaimedJson {
    fn from(job: Claimed) -> Self {
        let (payload, payload_base64) = crate::cli::output::payload_fields(&job.payload);
        ClaimedJson {
            id: job.id,
            queue: job.queue,
            attempt: job.attempt,
            max_attempts: job.max_attempts,
            priority: job.priority,
            token: job.token,
            lease_until: time::format(job.lease_until),
            created_at: time::format(job.created_at),
            last_error: job.last_error,
            payload,
            payload_base64,
        }
    }
}
