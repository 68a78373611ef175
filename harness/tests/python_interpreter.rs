//! The runner finds the Python interpreter once, at the start: a version
//! manager's `python3` shim (pyenv's is a shell script) first on PATH is
//! started to ask where its interpreter lives, and then never again, not
//! for each add_job.py, nor for each command of a Python subject whose
//! `#!` line names `python3`.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use support::*;

/// The python3 that PATH finds now, before the shim goes in front of it.
fn python3_on_path() -> PathBuf {
    let path = std::env::var_os("PATH").expect("PATH is set");
    std::env::split_paths(&path).map(|d| d.join("python3")).find(|p| p.is_file()).expect("python3 on PATH")
}

/// A directory holding a `python3` that notes each start in `calls`, then
/// runs the real one; and PATH with that directory first.
fn counting_shim(dir: &Path) -> (PathBuf, String) {
    let shims = dir.join("shims");
    std::fs::create_dir(&shims).unwrap();
    let calls = dir.join("calls");
    let shim = shims.join("python3");
    let text = format!(
        "#!/bin/sh\necho \"$$ $*\" >> '{}'\nexec '{}' \"$@\"\n",
        calls.display(),
        python3_on_path().display()
    );
    std::fs::write(&shim, text).unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(
        std::iter::once(shims).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    (calls, path.into_string().unwrap())
}

fn calls(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file).unwrap_or_default().lines().map(str::to_string).collect()
}

/// The last line: the run's summary (each case's line has an id).
fn summary(reports: &[serde_json::Value]) -> &serde_json::Value {
    reports.iter().find(|r| r.get("id").is_none() && r.get("run").is_some()).expect("a summary line")
}

/// The cases that ran, each of which must have passed.
fn passed(reports: &[serde_json::Value], stderr: &str) -> Vec<String> {
    let cases: Vec<&serde_json::Value> = reports.iter().filter(|r| r.get("id").is_some()).collect();
    for r in &cases {
        assert_eq!(r["status"], "pass", "{r}\n{stderr}");
    }
    cases.iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
}

/// The Python cases: add_job.py as a producer (interop), and
/// http_worker.py (http) with add_job.py too.
const PYTHON_CASES: [&str; 4] = ["--cases", "interop/python-*", "--cases", "http/mixed-delivery-python"];

#[test]
fn a_python3_shim_starts_once_not_once_a_producer() {
    if !have("python3") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (calls_file, path) = counting_shim(dir.path());
    let (code, reports, stderr) = run_suite(&PYTHON_CASES, &[("PATH", &path)]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(passed(&reports, &stderr).len(), 2, "{stderr}");
    let calls = calls(&calls_file);
    // One start to ask the shim for its interpreter; the adds of both
    // cases and http_worker.py went to the interpreter directly.
    assert_eq!(calls.len(), 1, "the shim's starts: {calls:?}");
    assert!(calls[0].contains("import sys"), "the one start asked for sys.executable: {calls:?}");
    let python = summary(&reports)["run"]["python"].as_str().expect("the run names its python").to_string();
    assert!(Path::new(&python).is_absolute() && !python.contains("/shims/"), "{python}");
}

#[test]
fn a_python_subject_runs_by_its_interpreter_named_as_given() {
    if !have("python3") {
        return;
    }
    let ukue_py =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients/python/ukue.py").canonicalize().unwrap();
    let first = std::fs::read_to_string(&ukue_py).unwrap().lines().next().unwrap().to_string();
    assert_eq!(
        first, "#!/usr/bin/env python3",
        "ukue.py's #! line changed: this test no longer shows the shim"
    );
    let dir = tempfile::tempdir().unwrap();
    let (calls_file, path) = counting_shim(dir.path());
    let impl_arg = ukue_py.to_str().unwrap();
    let (code, reports, stderr) = run_suite(
        &["--impl", impl_arg, "--cases", "interop/*", "--cases", "steps/add-*"],
        &[("PATH", &path)],
    );
    assert_eq!(code, 0, "{stderr}");
    let ran = passed(&reports, &stderr);
    assert!(ran.len() >= 5, "{ran:?}");
    // One start for --python's default, one for the subject's `#!` line;
    // before, every command of ukue.py and every add of add_job.py started
    // the shim (about 50 in these cases).
    let calls = calls(&calls_file);
    assert_eq!(calls.len(), 2, "the shim's starts: {calls:?}");
    let run = &summary(&reports)["run"];
    assert_eq!(run["implementation"], impl_arg, "the report names the subject as given");
    let interpreter = run["implementation_interpreter"].as_str().expect("the interpreter it runs by");
    assert!(!interpreter.contains("/shims/"), "{interpreter}");
    assert_eq!(run["implementation_version"].as_str().map(|v| v.starts_with("ukue")), Some(true), "{run}");

    // The replay command names ukue.py, and replays the case with it.
    let failing = dir.path().join("ukue.py");
    std::fs::copy(&ukue_py, &failing).unwrap();
    std::fs::copy(ukue_py.with_file_name("ukue_steps.py"), dir.path().join("ukue_steps.py")).unwrap();
    let text = std::fs::read_to_string(&failing).unwrap();
    assert_eq!(text.matches("\"add\": cmd_add,").count(), 1, "ukue.py's table of commands changed");
    std::fs::write(&failing, text.replacen("\"add\": cmd_add,", "\"add\": cmd_stats,", 1)).unwrap();
    std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, reports, stderr) =
        run_suite(&["--impl", failing.to_str().unwrap(), "--cases", "steps/add-stored"], &[("PATH", &path)]);
    assert_eq!(code, 1, "{stderr}");
    let case = reports.iter().find(|r| r["id"] == "steps/add-stored").expect("the case");
    assert_ne!(case["status"], "pass", "{case}");
    let replay = case["replay"].as_str().expect("a replay command");
    assert!(replay.contains(&format!("--impl {}", failing.display())), "{replay}");
    let again = std::process::Command::new("sh")
        .args(["-c", &format!("{replay} --format json")])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1), "{}", String::from_utf8_lossy(&again.stderr));
    let out = String::from_utf8_lossy(&again.stdout);
    assert!(
        out.lines().any(|l| l.contains("\"id\":\"steps/add-stored\"") && l.contains("\"status\":\"fail\"")),
        "{out}"
    );
}
