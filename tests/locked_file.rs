//! Another connection holds the file's write lock for longer than the busy
//! timeout (5 s, FORMAT.md §4.1) just as a job's command ends: `ukue work`
//! keeps retrying the renewals and the finish until the lock is gone, and
//! the job runs exactly once.
//!
//! No write can commit while the lock is held — not a renewal either — so
//! with a 3 s lease the lease in the file runs out meanwhile. Nobody reaps
//! it (a reap needs the write lock too, and this worker is the only
//! claimer), and a holder whose lease ran out but was not reaped still
//! holds the job (FORMAT.md §5.5): the finish after the lock must be
//! accepted.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::*;
use ukue::{NewJob, Ukue};

/// The job's command: logs its run, says it is about to end, waits for
/// the test's "go", says it is exiting, and exits 0.
const COMMAND: &str = r#"echo run >> "$0/runs.log"
: > "$0/ready"
while [ ! -e "$0/go" ]; do sleep 0.01; done
: > "$0/exiting""#;

struct Running {
    child: Child,
    stderr: std::path::PathBuf,
}

impl Running {
    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// SIGTERM; the worker must exit 0 within 30 s.
    fn stop(mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let stopped = wait_for(Duration::from_secs(30), || !self.alive());
        if !stopped {
            let _ = self.child.kill();
        }
        assert!(stopped, "the worker did not stop within 30 s of SIGTERM");
        assert!(self.child.wait().unwrap().success(), "the worker failed:\n{}", self.stderr());
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_finish_locked_out_past_the_busy_timeout_is_retried_and_the_job_runs_once() {
    let scratch = Scratch::new();
    let dir = scratch.dir.path();
    let path = scratch.path("jobs.ukue");
    let job = Ukue::create(&path).unwrap().add(&NewJob::new("q", b"payload".to_vec())).unwrap();
    let stderr = scratch.path("worker.stderr");
    let child = Command::new(ukue_bin())
        .args(["work", path_str(&path), "q", "--lease", "3s", "--poll", "20ms"])
        .args(["--", "sh", "-c", COMMAND, path_str(dir)])
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut worker = Running { child, stderr };
    assert!(
        wait_for(Duration::from_secs(20), || dir.join("ready").exists()),
        "the job's command did not start:\n{}",
        worker.stderr()
    );

    // Take the write lock, then let the command end: the worker's finish
    // meets the lock.
    let locker = rusqlite::Connection::open(&path).unwrap();
    locker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let locked_at = Instant::now();
    let lease_until: i64 =
        locker.query_row("SELECT lease_until FROM ukue_jobs WHERE id = ?1", [job], |r| r.get(0)).unwrap();
    std::fs::write(dir.join("go"), "").unwrap();

    // Hold the lock until the worker has been refused, for a whole busy
    // timeout each, the finish, then a renewal, then the finish again (so
    // that a refused renewal is seen not to give the job up), and the
    // lease in the file has run out. The two steps share the worker's
    // connection, so this takes three busy timeouts.
    let mut dead = false;
    let held = wait_for(Duration::from_secs(60), || {
        dead = !worker.alive();
        dead || (dir.join("exiting").exists()
            && finish_refused_after_renew(&worker.stderr())
            && now_ms() > lease_until)
    });
    let lock_held = locked_at.elapsed();
    locker.execute_batch("COMMIT").unwrap();
    assert!(!dead, "the worker died while the file was locked:\n{}", worker.stderr());
    assert!(
        held,
        "the worker did not report a renewal, then a finish, refused by the lock:\n{}",
        worker.stderr()
    );
    assert!(lock_held > Duration::from_secs(5), "the lock was held {lock_held:?}, not past the busy timeout");

    let finished = wait_for(Duration::from_secs(20), || {
        Ukue::open(&path).unwrap().get(job).unwrap().is_none() && worker.stderr().contains("finished")
    });
    let log = worker.stderr();
    assert!(finished, "the job was not finished after the lock was released:\n{log}");
    let runs = std::fs::read_to_string(dir.join("runs.log")).unwrap_or_default();
    assert_eq!(runs.lines().count(), 1, "the job ran more than once:\n{log}");
    assert!(!log.contains("lease lost"), "the worker lost its lease:\n{log}");
    assert!(!log.contains("attempt 2"), "the job was claimed again:\n{log}");
    worker.stop();
}

/// The worker's log shows a refused renewal, then a refused finish.
fn finish_refused_after_renew(stderr: &str) -> bool {
    let lines: Vec<&str> = stderr.lines().collect();
    let renew = lines.iter().position(|l| l.contains("locked past the busy timeout; retrying the renew"));
    renew.is_some_and(|at| {
        lines[at..].iter().any(|l| l.contains("locked past the busy timeout; retrying the finish"))
    })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}
