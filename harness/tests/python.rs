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
        "work.command-untouched: empty arguments after `--` are dropped",
        "ukue.py",
        "args, tail = args[:at], args[at + 1:]",
        "args, tail = args[:at], [a for a in args[at + 1:] if a]",
        "cli/work-command-untouched",
    ),
    (
        "work.command-not-found: a command that cannot run is not looked for before jobs are claimed",
        "ukue.py",
        "if shutil.which(command[0]) is None:",
        "if False:",
        "cli/work-command-not-found",
    ),
    (
        "work.concurrency-bad: --concurrency 0 is taken",
        "ukue.py",
        "if fs[\"concurrency\"] < 1:",
        "if fs[\"concurrency\"] < 0:",
        "cli/work-bad-options",
    ),
    (
        "work.lease-bad: a lease of 1 or 2 ms is taken",
        "ukue.py",
        "if fs[\"lease\"] < 3 * NS_PER_MS:",
        "if fs[\"lease\"] < NS_PER_MS:",
        "cli/work-bad-options",
    ),
    (
        "work.poll-bad: --poll 0 is taken",
        "ukue.py",
        "if fs[\"poll\"] <= 0:",
        "if fs[\"poll\"] < 0:",
        "cli/work-bad-options",
    ),
    (
        "work.grace-bad: a negative grace of a second is taken",
        "ukue.py",
        "if fs[\"grace\"] < 0:",
        "if fs[\"grace\"] < -NS_PER_S:",
        "cli/work-bad-options",
    ),
    (
        "work.timeout-negative: a negative timeout of a second is taken",
        "ukue.py",
        "if fs[\"timeout\"] < 0:",
        "if fs[\"timeout\"] < -NS_PER_S:",
        "cli/work-bad-options",
    ),
    (
        "work.env-inherited: the command gets only the UKUE_* variables",
        "ukue.py",
        "env = dict(os.environ)",
        "env = {}",
        "cli/work-env-inherited",
    ),
    (
        "work.env-file: UKUE_FILE is made absolute",
        "ukue.py",
        "env.update(UKUE_FILE=self.file,",
        "env.update(UKUE_FILE=os.path.abspath(self.file),",
        "cli/work-env-inherited",
    ),
    (
        "work.output: the command's stdout is thrown away",
        "ukue.py",
        "stderr=subprocess.PIPE, env=env,",
        "stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,",
        "cli/work-output",
    ),
    (
        "work.quiet: --quiet is ignored",
        "ukue.py",
        "self.least = 1 if quiet else 0",
        "self.least = 0",
        "cli/work-output",
    ),
    (
        "work.exit-other: every failing status is permanent",
        "ukue.py",
        "status == EXIT_PERMANENT",
        "status != 0",
        "cli/work-exit-other",
    ),
    (
        "work.last-error: a failed attempt's last_error is empty",
        "ukue.py",
        "con, job[\"id\"], job[\"token\"], error, steps.now_ms(), permanent=permanent))",
        "con, job[\"id\"], job[\"token\"], \"\", steps.now_ms(), permanent=permanent))",
        "cli/work-exit-other",
    ),
    (
        "work.last-error-stderr: last_error holds none of the command's stderr",
        "ukue.py",
        "error = f\"{error}: {detail}\"",
        "error = error",
        "cli/work-last-error-text",
    ),
    (
        "work.timeout-reason: a timed-out attempt's last_error does not say so",
        "ukue.py",
        "error, permanent = f\"stopped after the {format_duration(self.timeout_ns)} timeout\", False",
        "error, permanent = \"stopped\", False",
        "cli/work-last-error-text",
    ),
    (
        "work.background-output: the worker waits until nothing holds the command's stderr",
        "ukue.py",
        "status, stopped, cancelled = self.supervise(con, job, child, lease)",
        "status, stopped, cancelled = self.supervise(con, job, child, lease); child._forwarder.join()",
        "cli/work-background-output",
    ),
    (
        "work.concurrency: two commands at once by default",
        "ukue.py",
        "fs.add(\"concurrency\", \"int\", 1, \"jobs to run at once\")",
        "fs.add(\"concurrency\", \"int\", 2, \"jobs to run at once\")",
        "cli/work-concurrency",
    ),
    (
        "work.concurrency: one command at a time, whatever --concurrency says",
        "ukue.py",
        "for n in range(self.concurrency)]",
        "for n in range(1)]",
        "cli/work-concurrency",
    ),
    (
        "work.lease: --lease is ignored, every lease is 1m",
        "ukue.py",
        "self.lease_ms = max(lease_ns // NS_PER_MS, 1)",
        "self.lease_ms = 60_000",
        "cli/work-lease",
    ),
    (
        "work.poll: an idle worker looks again every second, whatever --poll says",
        "ukue.py",
        "                wait = self.poll_s\n",
        "                wait = 1.0\n",
        "cli/work-poll",
    ),
    (
        "work.poll: an idle worker looks again every 3 s by default",
        "ukue.py",
        "fs.add(\"poll\", \"duration\", NS_PER_S,",
        "fs.add(\"poll\", \"duration\", 3 * NS_PER_S,",
        "cli/work-poll",
    ),
    (
        "work.stop: a stopped worker goes on claiming jobs",
        "ukue.py",
        "while not self.stopping.is_set():",
        "while True:",
        "cli/work-stop",
    ),
    (
        "work.stop: on SIGTERM running commands are stopped at once",
        "ukue.py",
        "grace_at = self.stopper.at + self.grace_s if stopping else None",
        "grace_at = self.stopper.at if stopping else None",
        "cli/work-stop",
    ),
    (
        "work.stop-exit: a stopped worker exits without waiting for its commands",
        "ukue.py",
        "while t.is_alive():",
        "while t.is_alive() and not self.stopping.is_set():",
        "cli/work-stop",
    ),
    (
        "work.stop-twice: a second SIGINT is ignored",
        "ukue.py",
        "signal.signal(signal.SIGINT, signal.SIG_DFL)",
        "signal.signal(signal.SIGINT, signal.SIG_IGN)",
        "cli/work-stop",
    ),
    (
        "work.stop-kill: SIGTERM and SIGKILL reach the command alone, not its group",
        "ukue.py",
        "os.killpg(self.pid, sig)",
        "os.kill(self.pid, sig)",
        "cli/work-stop-kill",
    ),
    (
        "work.stop-kill: SIGKILL comes with SIGTERM, not 10 s later",
        "ukue.py",
        "KILL_DELAY = 10.0",
        "KILL_DELAY = 0.0",
        "cli/work-stop-kill",
    ),
    (
        "work.lease-lost: a renewal that finds the job gone is taken for a passing error",
        "ukue.py",
        "if e.kind == \"lease_lost\":",
        "if False:",
        "cli/work-stop-kill",
    ),
    (
        "work.no-create: work creates a missing file",
        "ukue.py",
        "    with Opened(file):\n        pass",
        "    with Opened(file, create=True):\n        pass",
        "refusal/missing-path",
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
