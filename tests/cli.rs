//! The `ukue` command line, as spec/COMMAND.md describes it.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::*;

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(args)).unwrap_or_else(|e| panic!("ukue {}: {e}", args.join(" ")))
}

fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value.as_object().expect("an object").keys().cloned().collect();
    keys.sort();
    keys
}

fn new_file(scratch: &Scratch) -> String {
    let path = scratch.path("jobs.ukue");
    let p = path_str(&path).to_string();
    assert_eq!(ok(&["init", &p]), format!("{p} is ready (ukue file format 1)\n"));
    p
}

fn add_stdin(args: &[&str], payload: &[u8]) -> String {
    let mut child =
        Command::new(ukue_bin()).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    let out = child.wait_with_output().unwrap();
    expect_status(&out, 0, "ukue add (stdin)");
    text(&out.stdout)
}

#[test]
fn version_and_init() {
    assert_eq!(ok(&["version"]), format!("ukue {} (file format 1)\n", env!("CARGO_PKG_VERSION")));
    let scratch = Scratch::new();
    let p = new_file(&scratch);
    // init again: still a ukue file, nothing lost.
    ok(&["add", &p, "q", "x"]);
    ok(&["init", &p]);
    assert_eq!(json(&["stats", &p, "--json"])["queues"][0]["ready"], 1);
}

#[test]
fn add_prints_the_id_and_takes_options_anywhere() {
    let scratch = Scratch::new();
    let p = new_file(&scratch);
    assert_eq!(ok(&["add", &p, "q", "one"]), "1\n");
    assert_eq!(ok(&["add", "--priority", "-7", &p, "--attempts", "3", "q", "two"]), "2\n");
    assert_eq!(add_stdin(&["add", &p, "q"], b"from stdin"), "3\n");
    assert_eq!(add_stdin(&["add", &p, "q", "-"], b"dash"), "4\n");
    assert_eq!(ok(&["add", &p, "q", "later", "--delay", "1h30m"]), "5\n");
    assert_eq!(ok(&["add", &p, "q", "then", "--at", "2030-01-02T03:04:05.678Z"]), "6\n");
    let jobs = json(&["list", &p, "--json"]);
    let jobs = jobs["jobs"].as_array().unwrap();
    let payloads: Vec<&str> = jobs.iter().map(|j| j["payload"].as_str().unwrap()).collect();
    assert_eq!(payloads, ["one", "two", "from stdin", "dash", "later", "then"]);
    assert_eq!(jobs[1]["priority"], -7);
    assert_eq!(jobs[1]["max_attempts"], 3);
    assert_eq!(jobs[5]["run_at"], "2030-01-02T03:04:05.678Z");
    let delayed = json(&["list", &p, "--json", "--state", "delayed"]);
    let ids: Vec<i64> =
        delayed["jobs"].as_array().unwrap().iter().map(|j| j["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [5, 6]);
}

#[test]
fn add_creates_a_missing_file() {
    let scratch = Scratch::new();
    let path = scratch.path("new.ukue");
    assert_eq!(ok(&["add", path_str(&path), "q", "x"]), "1\n");
    let file = ukue::Ukue::open(&path).unwrap();
    let (app_id, mode): (i64, String) = file
        .connection()
        .query_row("SELECT (SELECT application_id FROM pragma_application_id), (SELECT journal_mode FROM pragma_journal_mode)", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((app_id, mode.as_str()), (0x756B7565, "wal"));
}

#[test]
fn bad_input_is_a_usage_error_and_writes_nothing() {
    let scratch = Scratch::new();
    let missing = scratch.path("never.ukue");
    let m = path_str(&missing);
    let long = "q".repeat(201);
    let cases: &[&[&str]] = &[
        &["add", m, "", "x"],
        &["add", m, &long, "x"],
        &["add", m, "q", "x", "--priority", "101"],
        &["add", m, "q", "x", "--priority", "-101"],
        &["add", m, "q", "x", "--attempts", "0"],
        &["add", m, "q", "x", "--delay", "soon"],
        &["add", m, "q", "x", "--at", "tomorrow"],
        &["add", m, "q", "x", "--frobnicate"],
        &["work", m, "q"],
        &["work", m, "q", "--lease", "0s", "--", "true"],
        &["work", m, "q", "--concurrency", "0", "--", "true"],
        &["list", m, "--state", "sleeping"],
        &["list", m, "--limit", "1001"],
        &["purge", m, "--state", "ready"],
        &["delete", m],
        &["show", m, "x"],
        &["frobnicate", m],
    ];
    for args in cases {
        let out = ukue(args);
        expect_status(&out, 2, &format!("ukue {}", args.join(" ")));
        assert!(!text(&out.stderr).is_empty(), "ukue {}: no message", args.join(" "));
    }
    assert!(scratch.files().is_empty(), "left behind: {:?}", scratch.files());
    // And an existing file is left exactly as it was.
    let p = new_file(&scratch);
    let before = std::fs::read(&p).unwrap();
    for args in [&["add", &p, "", "x"][..], &["add", &p, "q", "x", "--priority", "101"][..]] {
        expect_status(&ukue(args), 2, &args.join(" "));
    }
    assert!(before == std::fs::read(&p).unwrap(), "a refused add changed the file");
}

#[test]
fn a_delay_of_0_goes_with_at_and_any_other_is_refused() {
    let scratch = Scratch::new();
    let p = new_file(&scratch);
    assert_eq!(ok(&["add", &p, "q", "x", "--delay", "0", "--at", "2030-01-02T03:04:05.678Z"]), "1\n");
    assert_eq!(json(&["show", &p, "1", "--json"])["run_at"], "2030-01-02T03:04:05.678Z");
    let out = ukue(&["add", &p, "q", "x", "--delay", "1s", "--at", "2030-01-02T03:04:05.678Z"]);
    expect_status(&out, 1, "ukue add --delay 1s --at TIME");
    assert!(text(&out.stderr).starts_with("ukue add: "), "{}", text(&out.stderr));
    assert_eq!(json(&["list", &p, "--json"])["jobs"].as_array().unwrap().len(), 1);
}

#[test]
fn list_of_no_jobs_says_so() {
    let scratch = Scratch::new();
    let p = new_file(&scratch);
    assert_eq!(ok(&["list", &p]), "no jobs\n");
    assert_eq!(ok(&["stats", &p]), "no jobs\n");
}

#[test]
fn json_shapes_follow_the_contract() {
    let scratch = Scratch::new();
    let p = new_file(&scratch);
    ok(&["add", &p, "q", "text"]);
    add_stdin(&["add", &p, "q"], &[0xff, 0x00, 0x01]);
    let stats = json(&["stats", &p, "--json"]);
    assert_eq!(keys(&stats), ["queues"]);
    assert_eq!(
        keys(&stats["queues"][0]),
        ["dead", "delayed", "done", "expired", "oldest_due", "queue", "ready", "running"]
    );
    let job_keys = [
        "attempts",
        "created_at",
        "id",
        "last_error",
        "lease_until",
        "max_attempts",
        "priority",
        "queue",
        "run_at",
        "state",
        "updated_at",
    ];
    let shown = json(&["show", &p, "1", "--json"]);
    let mut expected: Vec<&str> = job_keys.to_vec();
    expected.push("payload");
    expected.sort();
    assert_eq!(keys(&shown), expected);
    assert_eq!(shown["payload"], "text");
    assert_eq!(shown["lease_until"], Value::Null);
    let created = shown["created_at"].as_str().unwrap();
    assert!(created.len() == 24 && created.ends_with('Z') && created.as_bytes()[19] == b'.', "{created}");
    let binary = json(&["show", &p, "2", "--json"]);
    assert_eq!(binary["payload_base64"], "/wAB");
    assert!(binary.get("payload").is_none());
    let list = json(&["list", &p, "--json", "--limit", "1", "--after", "1"]);
    assert_eq!(list["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(list["jobs"][0]["id"], 2);
}

#[test]
fn human_output_escapes_control_characters() {
    let scratch = Scratch::new();
    let p = new_file(&scratch);
    ok(&["add", &p, "q\x1b[31m", "pay\x1b[2Jload\n"]);
    for args in [&["show", &p, "1"][..], &["list", &p][..], &["stats", &p][..]] {
        let out = ok(args);
        assert!(!out.contains('\x1b'), "ukue {}: raw escape in {out:?}", args.join(" "));
        assert!(out.contains("\\x1b"), "ukue {}: {out:?}", args.join(" "));
    }
}

#[test]
fn retry_purge_and_delete() {
    let scratch = Scratch::new();
    let p = new_file(&scratch);
    for i in 0..4 {
        ok(&["add", &p, if i < 2 { "a" } else { "b" }, "x", "--attempts", "1"]);
    }
    {
        let mut file = ukue::Ukue::open(&p).unwrap();
        for queue in ["a", "a", "b", "b"] {
            let job = file.claim(queue, ms(60_000)).unwrap().unwrap();
            file.fail(job.id, &job.token, "boom", ukue::Retry::Backoff).unwrap();
        }
    }
    assert_eq!(json(&["list", &p, "--json", "--state", "dead"])["jobs"].as_array().unwrap().len(), 4);
    assert_eq!(ok(&["retry", &p, "1"]), "job 1 is ready again\n");
    let out = ukue(&["retry", &p, "1"]);
    expect_status(&out, 1, "retry of a ready job");
    assert!(text(&out.stderr).starts_with("ukue retry: job 1 is ready, not dead"), "{}", text(&out.stderr));
    assert_eq!(ok(&["retry", &p, "--all", "--queue", "a"]), "1 dead job(s) ready again\n");
    let shown = json(&["show", &p, "2", "--json"]);
    assert_eq!((shown["state"].as_str(), shown["attempts"].as_i64()), (Some("ready"), Some(0)));
    assert_eq!(ok(&["purge", &p, "--state", "dead", "--queue", "b"]), "deleted 2 dead job(s)\n");
    assert_eq!(ok(&["delete", &p, "1", "2"]), "deleted job 1\ndeleted job 2\n");
    let out = ukue(&["delete", &p, "2"]);
    expect_status(&out, 1, "delete of a missing job");
    assert_eq!(ok(&["stats", &p]), "no jobs\n");
    let out = ukue(&["show", &p, "9"]);
    expect_status(&out, 1, "show of a missing job");
    assert!(text(&out.stderr).starts_with("ukue show: job 9: no such job"));
}

/// Starts `ukue work` on `p`; the caller stops it.
fn start_work(dir: &std::path::Path, args: &[&str]) -> std::process::Child {
    Command::new(ukue_bin())
        .arg("work")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn stop(mut child: std::process::Child) -> String {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    let finished = wait_for(Duration::from_secs(30), || child.try_wait().unwrap().is_some());
    if !finished {
        let _ = child.kill();
        panic!("ukue work did not stop within 30 s of SIGTERM");
    }
    let out = child.wait_with_output().unwrap();
    expect_status(&out, 0, "ukue work after SIGTERM");
    text(&out.stderr)
}

fn job_state(p: &str, id: i64) -> Option<Value> {
    let file = ukue::Ukue::open(p).ok()?;
    let job = file.get(id).ok()??;
    Some(
        serde_json::json!({"state": job.state.as_str(), "attempts": job.attempts, "last_error": job.last_error}),
    )
}

#[test]
fn work_runs_each_job_with_its_payload_and_environment() {
    let scratch = Scratch::new();
    let p = new_file(&scratch);
    ok(&["add", &p, "q", "first", "--attempts", "4"]);
    ok(&["add", &p, "q", "second"]);
    let script = r#"printf '%s|%s|%s|%s|%s|%s|%s\n' "$UKUE_FILE" "$UKUE_QUEUE" "$UKUE_JOB_ID" "$UKUE_ATTEMPT" "$UKUE_MAX_ATTEMPTS" "$(cat)" "$1" >> log"#;
    let worker = start_work(
        scratch.dir.path(),
        &[&p, "q", "--poll", "20ms", "--", "sh", "-c", script, "sh", "--literal-arg"],
    );
    let log = scratch.path("log");
    let done = wait_for(Duration::from_secs(20), || {
        std::fs::read_to_string(&log).map(|t| t.lines().count() == 2).unwrap_or(false)
    });
    stop(worker);
    assert!(done, "two jobs did not run");
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(lines, format!("{p}|q|1|1|4|first|--literal-arg\n{p}|q|2|1|10|second|--literal-arg\n"));
    assert_eq!(ok(&["stats", &p]), "no jobs\n", "finished jobs are deleted");
}

#[test]
fn work_sends_failures_to_backoff_or_dead_and_keeps_done() {
    let scratch = Scratch::new();
    let p = new_file(&scratch);
    ok(&["add", &p, "q", "0"]);
    ok(&["add", &p, "q", "65"]);
    ok(&["add", &p, "q", "3"]);
    ok(&["add", &p, "q", "3", "--attempts", "1"]);
    let worker = start_work(
        scratch.dir.path(),
        &[&p, "q", "--keep-done", "--poll", "20ms", "--", "sh", "-c", "exit $(cat)"],
    );
    let settled = wait_for(Duration::from_secs(20), || {
        (1..=4).all(|id| job_state(&p, id).is_some_and(|j| j["state"] != "running" && j["attempts"] == 1))
    });
    let log = stop(worker);
    assert!(settled, "jobs did not settle: {log}");
    let states: Vec<Value> = (1..=4).map(|id| job_state(&p, id).unwrap()).collect();
    assert_eq!(states[0]["state"], "done");
    assert_eq!(states[1]["state"], "dead", "exit 65 is permanent");
    assert!(states[1]["last_error"].as_str().unwrap().contains("65"));
    assert_eq!(states[2]["state"], "ready", "exit 3 retries after the backoff");
    assert_eq!(states[2]["last_error"], "exit status 3");
    assert_eq!(states[3]["state"], "dead", "the last attempt failed");
    let shown = json(&["show", &p, "3", "--json"]);
    let run_at = shown["run_at"].as_str().unwrap();
    let updated = shown["updated_at"].as_str().unwrap();
    assert!(run_at > updated, "backoff puts run_at ({run_at}) after the failure ({updated})");
}

#[test]
fn a_stopped_worker_gives_its_job_back_and_kills_the_whole_group() {
    let scratch = Scratch::new();
    let p = new_file(&scratch);
    ok(&["add", &p, "q", "x"]);
    // The command starts a grandchild that would outlive it, and records its pid.
    let script = "sleep 300 & echo $! > grandchild; wait";
    let worker = start_work(
        scratch.dir.path(),
        &[&p, "q", "--grace", "100ms", "--poll", "20ms", "--", "sh", "-c", script],
    );
    let pid_file = scratch.path("grandchild");
    let started = wait_for(Duration::from_secs(20), || {
        std::fs::read_to_string(&pid_file).map(|t| t.ends_with('\n')).unwrap_or(false)
    });
    assert!(started, "the command did not start");
    let log = stop(worker);
    let job = job_state(&p, 1).unwrap();
    assert_eq!(job["state"], "ready", "{log}");
    assert_eq!(job["attempts"], 0, "a given-back job's attempt is not counted");
    let grandchild: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let gone = wait_for(Duration::from_secs(15), || {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(grandchild), None).is_err()
            || std::fs::read_to_string(format!("/proc/{grandchild}/stat")).is_ok_and(|s| s.contains(") Z "))
    });
    assert!(gone, "the command's process group was not stopped");
}

#[test]
fn a_command_past_its_timeout_is_stopped_and_the_attempt_fails() {
    let scratch = Scratch::new();
    let p = new_file(&scratch);
    ok(&["add", &p, "q", "x"]);
    let worker = start_work(
        scratch.dir.path(),
        &[&p, "q", "--timeout", "200ms", "--poll", "20ms", "--", "sleep", "60"],
    );
    let failed = wait_for(Duration::from_secs(20), || {
        job_state(&p, 1).is_some_and(|j| j["state"] == "ready" && j["attempts"] == 1)
    });
    let log = stop(worker);
    assert!(failed, "the job did not fail: {log}");
    assert_eq!(job_state(&p, 1).unwrap()["last_error"], "timed out");
}

fn ms(n: u64) -> std::time::Duration {
    std::time::Duration::from_millis(n)
}
