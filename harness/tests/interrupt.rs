//! Ctrl-C (SIGINT) stops the runner and every process it started,
//! including the commands that a subject's worker runs in groups of their own.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

/// Pids of live processes whose environment carries a marker of the
/// runner `runner` (markers are `RUNNER_PID-RUN-CASE` for a case's
/// processes, `RUNNER_PID-version` and such for the runner's own).
fn marked(runner: u32, case: &str) -> Vec<i32> {
    let prefix = format!("UKUE_CONFORMANCE_CASE={runner}-");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else { continue };
        let ours = |v: &[u8]| {
            v.strip_prefix(prefix.as_bytes())
                .is_some_and(|rest| case.is_empty() || rest.ends_with(case.as_bytes()))
        };
        if env.split(|b| *b == 0).any(ours) {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            if !stat.contains(") Z ") {
                pids.push(pid);
            }
        }
    }
    pids
}

fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

const CASE: &str = "leases/stopped-worker-loses-job";

#[test]
fn heavy_ctrl_c_leaves_no_process_behind() {
    // Other tests of this binary run suites too: only this test's runner
    // may be interrupted, so run it with a case no other test uses.
    let mut runner = Command::new(conformance())
        .args(["--impl", reference().to_str().unwrap(), "--cases", CASE])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = runner.id() as i32;
    // Wait for the case's workers and the probe they run.
    let started = wait_until(Duration::from_secs(30), || marked(pid as u32, CASE).len() >= 2);
    assert!(started, "the case did not start its workers");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGINT).unwrap();
    let ended = wait_until(Duration::from_secs(30), || runner.try_wait().unwrap().is_some());
    assert!(ended, "the runner did not stop on SIGINT");
    assert_eq!(runner.wait().unwrap().code(), Some(130));
    // The sweep killed the case's processes: a verdict on what it then
    // saw would be false.
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut runner.stdout.take().unwrap(), &mut stdout).unwrap();
    assert!(!stdout.contains("FAIL"), "a verdict on a case the interrupt ended:\n{stdout}");
    let left = marked(pid as u32, "");
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// `ukue-conformance mutants | head -1`: the runner's stdout closes while
/// it prints (the list is larger than a pipe holds), and it ends as
/// SIGPIPE would end it, status 141, without a panic's message.
#[test]
fn a_closed_stdout_ends_the_runner_quietly() {
    use std::io::BufRead;
    let mut child = Command::new(conformance())
        .arg("mutants")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(!first.is_empty());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
