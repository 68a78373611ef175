//! The step-driver protocol: both drivers say hello, and give the same
//! answers (tokens and messages aside) to one scripted session, refused
//! files and bad requests included. The one difference allowed is the
//! run_at a give-back leaves: the reference keeps it, the Python driver
//! (which follows the published command) sets it to now.

mod support;

use std::path::Path;

use serde_json::{json, Value};
use ukue_harness::subjects::driver::client::{DriverCommand, DriverProcess};
use ukue_harness::subjects::driver::{CAP_NOW_MS, PROTOCOL_VERSION};

const NOW: i64 = 1_700_000_000_000;

fn drivers() -> Vec<DriverCommand> {
    let mut all = vec![DriverCommand::parse(env!("CARGO_BIN_EXE_ukue-driver")).unwrap()];
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients/python/ukue_driver.py");
    if support::have("python3") {
        all.push(DriverCommand::parse(&format!("python3 {}", script.display())).unwrap());
    }
    all
}

/// The session: request lines, with `DIR` standing for a scratch folder.
fn session() -> Vec<Value> {
    let at = |ms: i64| NOW + ms;
    vec![
        json!({"op": "add", "queue": "a", "payload": "x", "now_ms": at(0)}),
        json!({"op": "open", "path": "DIR/missing.ukue", "now_ms": at(0)}),
        json!({"op": "open", "path": "DIR/version-2.ukue", "now_ms": at(0)}),
        json!({"op": "open", "path": "DIR/not-sqlite.ukue", "create": true, "now_ms": at(0)}),
        json!({"op": "open", "path": "DIR/plain.db", "now_ms": at(0)}),
        json!({"op": "open", "path": "DIR/version-not-utf8.ukue", "now_ms": at(0)}),
        json!({"op": "open", "path": "DIR/new.ukue", "create": true, "now_ms": at(0)}),
        json!({"op": "add", "queue": "a", "payload": "low", "priority": -5, "now_ms": at(0)}),
        json!({"op": "add", "queue": "a", "payload": "high", "priority": 5, "max_attempts": 2, "now_ms": at(0)}),
        json!({"op": "add", "queue": "b", "payload": "later", "delay_ms": 5000, "now_ms": at(0)}),
        json!({"op": "add", "queue": "", "payload": "x", "now_ms": at(0)}),
        json!({"op": "add", "queue": "a", "payload": "x", "priority": 101, "now_ms": at(0)}),
        json!({"op": "add", "queue": "a", "payload": "x", "max_attempts": 0, "now_ms": at(0)}),
        json!({"op": "add", "queue": "a", "payload": "x", "delay_ms": -1, "now_ms": at(0)}),
        json!({"op": "claim", "queue": "b", "lease_ms": 1000, "now_ms": at(1)}),
        json!({"op": "claim", "queue": "a", "lease_ms": 0, "now_ms": at(1)}),
        json!({"op": "claim", "queue": "a", "lease_ms": i64::MAX, "now_ms": at(1)}),
        json!({"op": "claim", "queue": "a", "lease_ms": 1000, "now_ms": at(1)}),
        json!({"op": "renew", "id": 2, "token": "TOKEN1", "lease_ms": 2000, "now_ms": at(2)}),
        json!({"op": "renew", "id": 2, "token": "wrong", "lease_ms": 2000, "now_ms": at(2)}),
        json!({"op": "fail", "id": 2, "token": "TOKEN1", "error": "boom", "retry_in_ms": 10, "now_ms": at(3)}),
        json!({"op": "fail", "id": 2, "token": "TOKEN1", "error": "again", "now_ms": at(3)}),
        json!({"op": "claim", "queue": "a", "lease_ms": 1000, "now_ms": at(13)}),
        json!({"op": "release", "id": 2, "token": "TOKEN2", "now_ms": at(14)}),
        json!({"op": "claim", "queue": "a", "lease_ms": 1000, "now_ms": at(15)}),
        json!({"op": "fail", "id": 2, "token": "TOKEN3", "error": "last", "retry_in_ms": 10, "now_ms": at(16)}),
        json!({"op": "stats", "now_ms": at(16)}),
        json!({"op": "retry", "id": 1, "now_ms": at(17)}),
        json!({"op": "retry", "id": 99, "now_ms": at(17)}),
        json!({"op": "retry", "id": 2, "now_ms": at(17)}),
        json!({"op": "retry", "id": 2, "all": true, "now_ms": at(17)}),
        json!({"op": "claim", "queue": "a", "lease_ms": 1000, "now_ms": at(18)}),
        json!({"op": "finish", "id": 2, "token": "TOKEN4", "keep_done": true, "now_ms": at(19)}),
        json!({"op": "finish", "id": 2, "token": "TOKEN4", "now_ms": at(19)}),
        json!({"op": "purge", "state": "done", "queue": "a", "now_ms": at(20)}),
        json!({"op": "purge", "state": "ready", "now_ms": at(20)}),
        json!({"op": "claim", "queue": "a", "lease_ms": 1, "now_ms": at(21)}),
        json!({"op": "claim", "queue": "b", "lease_ms": 1000, "now_ms": at(22)}),
        json!({"op": "permanent-fail", "now_ms": at(22)}),
        json!({"op": "fail", "id": 1, "token": "TOKEN5", "permanent": true, "now_ms": at(22)}),
        json!({"op": "retry", "all": true, "queue": "b", "now_ms": at(23)}),
        json!({"op": "retry", "all": true, "now_ms": at(23)}),
        json!({"op": "delete", "id": 1, "now_ms": at(24)}),
        json!({"op": "delete", "id": 1, "now_ms": at(24)}),
        json!({"op": "stats", "now_ms": at(5001)}),
        json!({"op": "claim", "queue": "a", "now_ms": at(24)}),
    ]
}

/// Runs the session; the answers with tokens numbered in order of
/// appearance and messages dropped.
fn answers(cmd: &DriverCommand) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/refusal");
    std::fs::copy(fixtures.join("format-version-2.ukue"), dir.path().join("version-2.ukue")).unwrap();
    std::fs::copy(fixtures.join("not-sqlite.ukue"), dir.path().join("not-sqlite.ukue")).unwrap();
    std::fs::copy(fixtures.join("plain-sqlite.db"), dir.path().join("plain.db")).unwrap();
    // format_version TEXT that is not UTF-8 (found by the open_bytes fuzzer).
    let not_utf8 = fixtures.join("../fuzz/open_bytes/regression-format-version-not-utf8");
    std::fs::copy(&not_utf8, dir.path().join("version-not-utf8.ukue")).unwrap();
    let mut driver = DriverProcess::start(cmd, Some(&dir.path().join("stderr"))).unwrap();
    assert_eq!(driver.hello.protocol, PROTOCOL_VERSION, "{:?}", driver.hello);
    assert!(driver.hello.has(CAP_NOW_MS), "{:?}", driver.hello);
    let mut tokens: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for request in session() {
        let mut line = request.to_string().replace("DIR", dir.path().to_str().unwrap());
        for (n, token) in tokens.iter().enumerate() {
            line = line.replace(&format!("\"TOKEN{}\"", n + 1), &format!("\"{token}\""));
        }
        let reply = driver.request_line(&line).unwrap();
        let mut answer: Value = serde_json::from_str(&reply).unwrap_or_else(|e| panic!("{reply:?}: {e}"));
        let obj = answer.as_object_mut().unwrap();
        // A null field may be left out (the protocol reads both alike).
        obj.retain(|_, v| !v.is_null());
        if !obj["ok"].as_bool().unwrap() {
            assert!(obj.remove("message").is_some_and(|m| m.is_string()), "{reply}");
        }
        if let Some(token) = obj.get_mut("job").and_then(|j| j.get_mut("token")) {
            let value = token.as_str().unwrap().to_string();
            assert!(value.len() >= 32 && !tokens.contains(&value), "a fresh token of 128 bits: {value}");
            tokens.push(value);
            *token = json!(format!("TOKEN{}", tokens.len()));
        }
        out.push(json!({"request": request, "answer": answer}));
    }
    // Refused files are left as they were.
    assert_eq!(
        std::fs::read(dir.path().join("version-2.ukue")).unwrap(),
        std::fs::read(fixtures.join("format-version-2.ukue")).unwrap()
    );
    out
}

#[test]
fn both_drivers_answer_the_session_alike() {
    let all = drivers();
    let reference = answers(&all[0]);
    let kinds = |want: &str| reference.iter().filter(|a| a["answer"]["error"] == want).count();
    // The session reaches every error kind but `error`.
    for kind in ["lease_lost", "not_found", "refused", "invalid"] {
        assert!(kinds(kind) >= 1, "the session never answers {kind}");
    }
    let ok = |i: usize| reference[i]["answer"]["ok"].as_bool().unwrap();
    assert!(!ok(0), "a request before open: {}", reference[0]);
    assert_eq!(reference[5]["answer"]["error"], "refused", "{}", reference[5]);
    assert_eq!(reference[17]["answer"]["job"]["payload"], "high", "priority first: {}", reference[17]);
    for other in &all[1..] {
        let seen = answers(other);
        for (i, (want, got)) in reference.iter().zip(&seen).enumerate() {
            let got = &allow_release_run_at(&reference[..i], want, got);
            assert_eq!(got, want, "{} answers differently from ukue-driver", other.display());
        }
    }
}

/// A give-back may keep the job's run_at (the reference) or set it to the
/// release's now (the published command, which the Python driver follows):
/// a claim's answer that differs from `want` only in a run_at that some
/// earlier release of that job set is taken as `want`.
fn allow_release_run_at(before: &[Value], want: &Value, got: &Value) -> Value {
    let (Some(job), Some(wanted)) = (got["answer"].get("job"), want["answer"].get("job")) else {
        return got.clone();
    };
    let released_at = |at: &Value| {
        before.iter().any(|b| {
            b["request"]["op"] == "release"
                && b["request"]["id"] == job["id"]
                && b["request"]["now_ms"] == *at
        })
    };
    let mut same = job.clone();
    same["run_at"] = wanted["run_at"].clone();
    if same == *wanted && released_at(&job["run_at"]) {
        let mut got = got.clone();
        got["answer"]["job"] = same;
        return got;
    }
    got.clone()
}
