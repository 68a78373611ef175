//! The second implementation, clients/python/ukue.py: the whole suite
//! passes it (its `should` warnings are the published command's own, and
//! listed), and a copy with one statement edited fails the case meant to
//! catch that edit.

mod support;

use std::path::{Path, PathBuf};

use support::*;

fn python_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients/python")
}

/// Runs the suite against `ukue` with `args`, strict, with the Python
/// command's known warnings as expected failures.
fn run_python(ukue: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, Vec<serde_json::Value>, String) {
    let known = python_dir().join("known-warnings.txt");
    let mut all = vec!["--impl", ukue.to_str().unwrap()];
    all.extend(args);
    all.extend(["--strict", "--expected-failures", known.to_str().unwrap()]);
    run_suite(&all, env)
}

#[test]
fn heavy_the_whole_suite_passes_the_python_command() {
    if !have("python3") {
        return;
    }
    let (code, reports, stderr) = run_python(&python_dir().join("ukue.py"), &["--jobs", "2"], &[]);
    let bad: Vec<String> = reports
        .iter()
        .filter(|r| {
            r.get("status")
                .is_some_and(|s| !["pass", "skipped", "expected_failure"].contains(&s.as_str().unwrap_or("")))
        })
        .map(|r| r.to_string())
        .collect();
    assert!(bad.is_empty(), "cases that did not pass the Python command:\n{}\n{stderr}", bad.join("\n"));
    assert_eq!(code, 0, "{stderr}");
    let expected: Vec<&str> = reports
        .iter()
        .filter(|r| r["status"] == "expected_failure")
        .map(|r| r["level"].as_str().unwrap())
        .collect();
    assert!(expected.iter().all(|l| *l == "should"), "a known failure is a `should` case only: {expected:?}");
}

/// (what the edit breaks, file, text, replacement, the case meant to catch it)
const EDITS: &[(&str, &str, &str, &str, &str)] = &[
    (
        "the pick takes the lowest priority first",
        "ukue_steps.py",
        "SELECT max(priority) FROM ukue_jobs WHERE queue = ? AND state = 'ready'\",",
        "SELECT min(priority) FROM ukue_jobs WHERE queue = ? AND state = 'ready'\",",
        "steps/claim-order-priority",
    ),
    (
        "finish does not check the token",
        "ukue_steps.py",
        "\"DELETE FROM ukue_jobs WHERE id = ? AND state = 'running' AND token = ?\"",
        "\"DELETE FROM ukue_jobs WHERE id = ? AND state = 'running' AND (token = ? OR 1)\"",
        "leases/stopped-worker-loses-job",
    ),
    (
        "a claim does not count the attempt",
        "ukue_steps.py",
        "SET state = 'running', attempts = attempts + 1,",
        "SET state = 'running', attempts = attempts,",
        "steps/dead-after-max-attempts",
    ),
    (
        "a claim never reaps an expired lease",
        "ukue_steps.py",
        "WHERE state = 'running' AND (lease_until IS NULL OR lease_until <= ?)\", (now,)",
        "WHERE 0 AND state = 'running' AND (lease_until IS NULL OR lease_until <= ?)\", (now,)",
        "steps/lease-reaped-counted",
    ),
    (
        "format_version read with spaces around it (' 1' is 1)",
        "ukue_steps.py",
        r#"if not re.fullmatch(r"[+-]?[0-9]+", text):"#,
        r#"if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", text):"#,
        "sweep/format-versions",
    ),
    (
        "a queue name's length counted in bytes",
        "ukue_steps.py",
        "if len(queue) > MAX_QUEUE_CHARS:",
        "if len(queue.encode('utf-8')) > MAX_QUEUE_CHARS:",
        "sweep/queue-names",
    ),
    ("durations in µs (U+00B5) are not read", "ukue.py", r#""\u00b5s": 1_000, "#, "", "sweep/delay"),
    (
        "payload_base64 in URL-safe base64",
        "ukue.py",
        r#"base64.b64encode(job["payload"])"#,
        r#"base64.urlsafe_b64encode(job["payload"])"#,
        "sweep/payload-json",
    ),
    (
        "a PAYLOAD argument stripped of spaces and line ends",
        "ukue.py",
        "payload = os.fsencode(pos[2])",
        "payload = os.fsencode(pos[2]).strip()",
        "sweep/payload-argument",
    ),
    (
        "add reads only the first 64 KiB of stdin",
        "ukue.py",
        "return sys.stdin.buffer.read()",
        "return sys.stdin.buffer.read(65536)",
        "sweep/payload-stdin",
    ),
    (
        "work hands its command only the first 64 KiB of a payload",
        "ukue.py",
        r#"child = Child(self.command, env, job["payload"])"#,
        r#"child = Child(self.command, env, job["payload"][:65536])"#,
        "sweep/work-stdin",
    ),
    (
        "a number with a + sign is not read (`--priority +5`)",
        "ukue.py",
        r#"if s[:1] in ("+", "-"):"#,
        r#"if s[:1] == "-":"#,
        "sweep/priority",
    ),
    (
        "the tables are added without the switch to WAL",
        "ukue_steps.py",
        r#"con.execute("PRAGMA journal_mode = WAL").fetchall()"#,
        r#"con.execute("PRAGMA journal_mode").fetchall()"#,
        "sweep/app-databases",
    ),
];

#[test]
fn heavy_each_edited_python_statement_fails_the_case_meant_to_catch_it() {
    if !have("python3") {
        return;
    }
    let mut escaped = Vec::new();
    for (what, file, from, to, case) in EDITS {
        let dir = tempfile::tempdir().unwrap();
        for name in ["ukue.py", "ukue_steps.py"] {
            std::fs::copy(python_dir().join(name), dir.path().join(name)).unwrap();
        }
        let target = dir.path().join(file);
        let text = std::fs::read_to_string(&target).unwrap();
        assert_eq!(
            text.matches(from).count(),
            1,
            "{file} no longer holds {from:?} once: the edit `{what}` rotted"
        );
        std::fs::write(&target, text.replacen(from, to, 1)).unwrap();
        let (code, reports, stderr) = run_python(&dir.path().join("ukue.py"), &["--cases", case], &[]);
        let status =
            reports.iter().find(|r| r["id"] == *case).and_then(|r| r["status"].as_str()).unwrap_or("missing");
        if code != 1 || !["fail", "timeout", "error"].contains(&status) {
            escaped.push(format!("{what}: {case} was {status} (exit {code}) {stderr}"));
        }
    }
    assert!(escaped.is_empty(), "edited Python commands the suite passed:\n{}", escaped.join("\n"));
}
