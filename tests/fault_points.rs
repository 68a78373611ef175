//! `ukue work` killed at each named point of a job's life (src/fault.rs,
//! armed by UKUE_FAULT): the file stays intact, and the job is claimable
//! again — at once when the claim never committed, otherwise once its
//! lease has run out and the backoff has passed, with its attempts
//! counted right.

mod common;
mod support;

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::ms;
use ukue::{fault, ManualClock, Millis, NewJob, State, Ukue};

/// The worker's lease. The checks after the crash move a manual clock past
/// it, so its length costs no time; long, so that a loaded machine never
/// lets it lapse (and the worker give the job up) before the crash point.
const LEASE: &str = "30s";

/// A job's row after the crash.
struct After {
    /// Keeps the temporary directory.
    _scratch: support::Scratch,
    path: PathBuf,
    job: i64,
    /// How many times the job's command ran.
    runs: usize,
    stderr: String,
}

/// Adds one job, runs `ukue work` with `UKUE_FAULT=point` and a command
/// that appends a line to a log and exits `exit`, and waits for the worker
/// to die of SIGKILL at the point.
fn crash_at(point: &str, exit: i32) -> After {
    let scratch = support::Scratch::new();
    let path = scratch.path("jobs.ukue");
    let job = Ukue::create(&path).unwrap().add(&NewJob::new("q", b"payload".to_vec())).unwrap();
    let log = scratch.path("runs.log");
    let stderr_path = scratch.path("worker.stderr");
    let mut worker = Command::new(support::ukue_bin())
        .args(["work", support::path_str(&path), "q", "--lease", LEASE, "--poll", "20ms"])
        .args(["--", "sh", "-c", &format!("echo ran >> \"$0\"; exit {exit}"), support::path_str(&log)])
        .env(fault::VAR, point)
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let mut status = None;
    let ended = support::wait_for(Duration::from_secs(20), || {
        status = worker.try_wait().unwrap();
        status.is_some()
    });
    if !ended {
        let _ = worker.kill();
        let _ = worker.wait();
    }
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(ended, "{point}: the worker did not crash within 20 s\n{stderr}");
    let status = status.unwrap();
    assert_eq!(status.signal(), Some(9), "{point}: the worker ended with {status}, not SIGKILL\n{stderr}");
    let runs = std::fs::read_to_string(&log).map(|t| t.lines().count()).unwrap_or(0);
    let after = After { _scratch: scratch, path, job, runs, stderr };
    after.assert_intact(point);
    after
}

impl After {
    /// FORMAT.md §7 on the file as the crash left it.
    fn assert_intact(&self, point: &str) {
        let conn = rusqlite::Connection::open(&self.path).unwrap();
        if let Err(e) = common::check_invariants(&conn) {
            panic!("{point}: the crash broke the file: {e}");
        }
    }

    /// The file on a clock that only moves when told.
    fn open_at(&self, now: Millis) -> (Ukue, ManualClock) {
        let clock = ManualClock::new(now);
        (Ukue::options().clock(clock.clone()).open(&self.path).unwrap(), clock)
    }

    fn job(&self) -> ukue::Job {
        Ukue::open(&self.path).unwrap().get(self.job).unwrap().expect("the job is still in the file")
    }

    /// The claim never committed: the job is ready, attempts 0, and the
    /// next claim takes it at once as attempt 1.
    fn assert_claimable_at_once(&self, point: &str) {
        let job = self.job();
        assert_eq!((job.state, job.attempts, job.lease_until), (State::Ready, 0, None), "{point}");
        let claimed = Ukue::open(&self.path).unwrap().claim("q", ms(60_000)).unwrap();
        let claimed = claimed.unwrap_or_else(|| panic!("{point}: the job is not claimable at once"));
        assert_eq!((claimed.id, claimed.attempt), (self.job, 1), "{point}");
    }

    /// The claim committed and nothing after it did: the job is running,
    /// attempt 1, until its lease runs out; then a claim reaps it (a
    /// failed attempt) and, once the backoff has passed, takes it as
    /// attempt 2.
    fn assert_reaped_then_claimable(&self, point: &str) {
        let job = self.job();
        assert_eq!((job.state, job.attempts), (State::Running, 1), "{point}: {}", self.stderr);
        assert_eq!(job.last_error, None, "{point}: no fail was recorded");
        let lease_until = job.lease_until.expect("a running job has a lease");

        let (mut file, clock) = self.open_at(lease_until - 1);
        assert!(file.claim("q", ms(60_000)).unwrap().is_none(), "{point}: taken while its lease held");
        assert_eq!(self.job().state, State::Running, "{point}: reaped before its lease ran out");

        clock.set(lease_until);
        assert!(file.claim("q", ms(60_000)).unwrap().is_none(), "{point}: due again before the backoff");
        let reaped = self.job();
        assert_eq!((reaped.state, reaped.attempts), (State::Ready, 1), "{point}: the expiry counts");
        assert_eq!(reaped.last_error.as_deref(), Some("lease expired (attempt 1 of 10)"), "{point}");
        assert!(
            (lease_until + 10_000..=lease_until + 11_000).contains(&reaped.run_at),
            "{point}: due {} ms after the reap, expected 10 s plus at most 10%",
            reaped.run_at - lease_until
        );

        clock.set(reaped.run_at);
        let claimed = file.claim("q", ms(60_000)).unwrap();
        let claimed = claimed.unwrap_or_else(|| panic!("{point}: not claimable after the backoff"));
        assert_eq!((claimed.id, claimed.attempt), (self.job, 2), "{point}");
        drop(file);
        self.assert_intact(point);
    }
}

#[test]
fn every_point_is_tested() {
    assert_eq!(
        fault::POINTS,
        [
            fault::CLAIM_BEFORE_COMMIT,
            fault::AFTER_CLAIM,
            fault::AFTER_WORK,
            fault::INSIDE_FINISH,
            fault::INSIDE_FAIL
        ],
        "a new point needs a test below"
    );
}

#[test]
fn crash_inside_the_claim_before_commit() {
    let after = crash_at(fault::CLAIM_BEFORE_COMMIT, 0);
    assert_eq!(after.runs, 0, "the command must not start before the claim commits");
    after.assert_claimable_at_once(fault::CLAIM_BEFORE_COMMIT);
}

#[test]
fn crash_after_the_claim_before_the_work() {
    let after = crash_at(fault::AFTER_CLAIM, 0);
    assert_eq!(after.runs, 0, "the crash came before the command");
    assert!(after.stderr.contains("attempt 1 started"), "the claim committed: {}", after.stderr);
    after.assert_reaped_then_claimable(fault::AFTER_CLAIM);
}

#[test]
fn crash_after_the_work_before_the_finish() {
    let after = crash_at(fault::AFTER_WORK, 0);
    assert_eq!(after.runs, 1, "the command ran once");
    after.assert_reaped_then_claimable(fault::AFTER_WORK);
}

/// The hook fires inside the finish's commit, before it is durable: the
/// DELETE never happened, so the job is still there, running under the
/// dead worker's token — not gone.
#[test]
fn crash_inside_the_finish() {
    let after = crash_at(fault::INSIDE_FINISH, 0);
    assert_eq!(after.runs, 1, "the command ran once");
    assert!(!after.stderr.contains("finished"), "the finish was not reported: {}", after.stderr);
    after.assert_reaped_then_claimable(fault::INSIDE_FINISH);
}

/// Likewise for a failed run: the fail (which would have set last_error
/// and a backoff) never committed.
#[test]
fn crash_inside_the_fail() {
    let after = crash_at(fault::INSIDE_FAIL, 3);
    assert_eq!(after.runs, 1, "the command ran once");
    after.assert_reaped_then_claimable(fault::INSIDE_FAIL);
}

/// A point that is not armed does nothing: the job runs and finishes.
#[test]
fn an_unarmed_point_changes_nothing() {
    let scratch = support::Scratch::new();
    let path = scratch.path("jobs.ukue");
    Ukue::create(&path).unwrap().add(&NewJob::new("q", b"payload".to_vec())).unwrap();
    let mut worker = Command::new(support::ukue_bin())
        .args(["work", support::path_str(&path), "q", "--lease", LEASE, "--poll", "20ms", "--quiet"])
        .args(["--", "true"])
        .env(fault::VAR, "no-such-point")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let finished =
        support::wait_for(Duration::from_secs(20), || Ukue::open(&path).unwrap().get(1).unwrap().is_none());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(worker.id() as i32), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    let stopped = support::wait_for(Duration::from_secs(20), || worker.try_wait().unwrap().is_some());
    if !stopped {
        let _ = worker.kill();
    }
    assert!(finished, "the job did not finish");
    assert!(stopped && worker.wait().unwrap().success(), "the worker did not stop cleanly");
}
