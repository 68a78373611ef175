//! Formats of the contract (spec/COMMAND.md): the JSON of a job
//! and of the counts, times in RFC 3339, payloads in base64.

use base64::prelude::{Engine as _, BASE64_STANDARD};
use serde_json::{json, Value};

use crate::cases::CaseResult;
use crate::shown::{rfc3339, Shown};
use crate::subjects::ctx::clip;
use crate::subjects::observe::file::Row;
use crate::subjects::probe::now_ms;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

/// Standard base64, with padding, as the contract's `payload_base64`.
fn base64(bytes: &[u8]) -> String {
    BASE64_STANDARD.encode(bytes)
}

/// The keys of a JOB in the contract, besides `payload` / `payload_base64`.
const JOB_KEYS: [&str; 11] = [
    "id",
    "queue",
    "state",
    "priority",
    "attempts",
    "max_attempts",
    "run_at",
    "lease_until",
    "last_error",
    "created_at",
    "updated_at",
];

pub(crate) const STATS_KEYS: [&str; 8] =
    ["queue", "ready", "delayed", "running", "expired", "dead", "done", "oldest_due"];

/// The JOB object the contract gives for a row.
fn job_json(r: &Row) -> Value {
    let mut job = json!({
        "id": r.id,
        "queue": r.queue,
        "state": r.state,
        "priority": r.priority,
        "attempts": r.attempts,
        "max_attempts": r.max_attempts,
        "run_at": rfc3339(r.run_at),
        "lease_until": r.lease_until.map(rfc3339),
        "last_error": r.last_error,
        "created_at": rfc3339(r.created_at),
        "updated_at": rfc3339(r.updated_at),
    });
    match std::str::from_utf8(&r.payload) {
        Ok(text) => job["payload"] = json!(text),
        Err(_) => job["payload_base64"] = json!(base64(&r.payload)),
    }
    job
}

/// The keys of a JSON object, or a failure when it is none.
pub(crate) fn object_keys<'a>(value: &'a Value, what: &str) -> Result<Vec<&'a str>, Failure> {
    let object = value
        .as_object()
        .ok_or_else(|| Failure::fail(format!("{what} to be a JSON object"), clip(&value.to_string())))?;
    Ok(object.keys().map(String::as_str).collect())
}

/// Fails unless `seen` is the contract's JOB for `r`: exactly its keys,
/// the same values, times in RFC 3339 UTC with milliseconds, and the
/// payload as `payload` when UTF-8, else as `payload_base64` (the other of
/// the two absent or null).
pub(crate) fn check_job(seen: &Value, r: &Row, what: &str) -> CaseResult {
    let keys = object_keys(seen, what)?;
    let missing: Vec<&str> = JOB_KEYS.iter().copied().filter(|k| !keys.contains(k)).collect();
    let extra: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| !JOB_KEYS.contains(k) && *k != "payload" && *k != "payload_base64")
        .collect();
    ensure!(
        missing.is_empty() && extra.is_empty(),
        format!("{what}: exactly the keys {} and payload or payload_base64", JOB_KEYS.shown()),
        format!("missing {}, unknown {}: {}", missing.shown(), extra.shown(), clip(&seen.to_string()))
    );
    let expected = job_json(r);
    let mut wrong = Vec::new();
    for key in JOB_KEYS.iter().chain(["payload", "payload_base64"].iter()) {
        let want = expected.get(*key).unwrap_or(&Value::Null);
        let got = seen.get(*key).unwrap_or(&Value::Null);
        if want != got && !published_variant(key, got, r) {
            wrong.push(format!("{key} {got} (expected {want})"));
        }
    }
    ensure!(
        wrong.is_empty(),
        format!("{what}: {expected}"),
        format!("{}; in {}", wrong.join(", "), clip(&seen.to_string()))
    );
    Ok(())
}

/// What the published command prints where the reference prints otherwise
/// (spec/COMMAND.md): `""` for a job that never failed, and
/// `delayed` as the state of a ready job whose run_at is still ahead.
fn published_variant(key: &str, got: &Value, r: &Row) -> bool {
    match key {
        "last_error" => r.last_error.is_none() && got == "",
        "state" => r.state == "ready" && r.run_at > now_ms() && got == "delayed",
        _ => false,
    }
}

/// The `jobs` array of `list --json`, with the top-level keys checked.
pub(crate) fn listed<'a>(value: &'a Value, what: &str) -> Result<&'a Vec<Value>, Failure> {
    let keys = object_keys(value, what)?;
    ensure_eq!(keys, vec!["jobs"], format!("{what}: the top-level keys"));
    value["jobs"]
        .as_array()
        .ok_or_else(|| Failure::fail(format!("{what}: `jobs` to be an array"), clip(&value.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_encodes() {
        assert_eq!(base64(&[0xff, 0x00]), "/wA=");
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"hi\n"), "aGkK");
    }
}
