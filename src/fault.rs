//! Test-only crash points, compiled in with the `fault-injection` feature.
//!
//! With the feature, when the environment variable `UKUE_FAULT` names one
//! of the points below, the process kills itself with SIGKILL as it
//! reaches that point: no destructor runs, no transaction is rolled back,
//! nothing is flushed — a crash, as a power cut or the OOM killer would
//! make it. Without the feature (any build but this crate's own tests) a
//! point is an empty inline function and the variable is never read, so
//! an application that embeds the library cannot be killed by it.
//!
//! tests/fault_points.rs crashes `ukue work` at each point and checks that
//! the file stays intact and the job runs again.

use rusqlite::Connection;

/// The variable that arms a point.
#[cfg(feature = "fault-injection")]
pub const VAR: &str = "UKUE_FAULT";

/// In the claim's transaction, after the take, before COMMIT.
pub const CLAIM_BEFORE_COMMIT: &str = "claim-before-commit";
/// After the claim has committed, before the job's work starts.
pub const AFTER_CLAIM: &str = "after-claim";
/// After the work, before the finish (or fail, or release).
pub const AFTER_WORK: &str = "after-work";
/// Inside the finish's commit, before it is durable.
pub const INSIDE_FINISH: &str = "inside-finish";
/// Inside the fail's commit, before it is durable.
pub const INSIDE_FAIL: &str = "inside-fail";

/// Every point, in the order a job meets them.
#[cfg(feature = "fault-injection")]
pub const POINTS: &[&str] = &[CLAIM_BEFORE_COMMIT, AFTER_CLAIM, AFTER_WORK, INSIDE_FINISH, INSIDE_FAIL];

/// The armed point, read once.
#[cfg(feature = "fault-injection")]
fn armed() -> Option<&'static str> {
    static ARMED: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ARMED.get_or_init(|| std::env::var(VAR).ok().filter(|v| !v.is_empty())).as_deref()
}

/// Crashes the process here when `name` is the armed point.
#[cfg(feature = "fault-injection")]
pub fn point(name: &str) {
    if armed() == Some(name) {
        crash();
    }
}

/// Without the feature: nothing, not even a read of the environment.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub(crate) fn point(_name: &str) {}

/// Dies at once, by SIGKILL (abort, should the signal somehow not land).
#[cfg(feature = "fault-injection")]
pub fn crash() -> ! {
    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    std::process::abort()
}

/// Runs `step`, a single autocommit statement on `conn`, and crashes
/// inside its commit when `name` is the armed point.
///
/// Finish and fail are one statement each, their own transaction (FORMAT.md
/// §5.2), so there is no moment between the statement and its commit at
/// which to call [`point`], and wrapping them in BEGIN … COMMIT for the
/// test would change the SQL that FORMAT.md pins. SQLite's commit hook
/// runs inside the commit instead: after the statement has changed the
/// pages in memory, and before any of the transaction reaches the WAL
/// (`vdbeCommit` calls the hook before `sqlite3BtreeCommitPhaseOne`).
/// Dying there leaves the step undone — the job still running under the
/// worker's token — exactly as a crash before the commit's fsync would.
#[cfg(feature = "fault-injection")]
pub(crate) fn in_commit<T>(conn: &Connection, name: &str, step: impl FnOnce() -> T) -> T {
    if armed() != Some(name) {
        return step();
    }
    conn.commit_hook(Some(|| -> bool { crash() }));
    let result = step();
    conn.commit_hook(None::<fn() -> bool>);
    result
}

/// Without the feature: the step alone.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub(crate) fn in_commit<T>(_conn: &Connection, _name: &str, step: impl FnOnce() -> T) -> T {
    step()
}
