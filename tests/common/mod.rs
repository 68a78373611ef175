//! Helpers shared by the integration tests: temporary files, a file opened
//! on a [`ManualClock`], and the file invariants of FORMAT.md §7.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::Connection;
use ukue::{Access, ManualClock, Millis, Spec, Ukue};

/// A time well after 1970, so that `now - something` stays positive.
pub const T0: Millis = 1_700_000_000_000;

/// A path in a fresh temporary directory; the directory goes with it.
pub struct TempPath {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl TempPath {
    pub fn new(name: &str) -> TempPath {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join(name);
        TempPath { dir, path }
    }
}

/// Creates a ukue file at `path`, running `spec`, on a clock that only
/// moves when the test says so.
pub fn create_with(path: &Path, spec: Arc<Spec>, clock: &ManualClock) -> ukue::Result<Ukue> {
    Ukue::options().clock(clock.clone()).spec(spec).access(Access::Create).open(path)
}

/// A new file at `path` on a manual clock starting at `start`.
pub fn create_manual(path: &Path, start: Millis) -> (Ukue, ManualClock) {
    let clock = ManualClock::new(start);
    let file = create_with(path, Spec::builtin(), &clock).expect("create a ukue file");
    (file, clock)
}

/// FORMAT.md §7, as far as a program can see it: integrity, the running
/// state exactly with a token and a lease, attempts in range, and no id
/// ever handed out twice.
pub fn check_invariants(conn: &Connection) -> Result<(), String> {
    let err = |e: rusqlite::Error| e.to_string();
    let integrity: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(err)?;
    if integrity != ["ok"] {
        return Err(format!("integrity_check: {integrity:?}"));
    }
    let bad_lease: Vec<(i64, String)> = conn
        .prepare(
            "SELECT id, state FROM ukue_jobs
             WHERE (state = 'running') != (token IS NOT NULL AND lease_until IS NOT NULL)
                OR (state != 'running' AND (token IS NOT NULL OR lease_until IS NOT NULL))",
        )
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .map_err(err)?;
    if !bad_lease.is_empty() {
        return Err(format!("jobs whose token/lease_until do not match their state: {bad_lease:?}"));
    }
    let bad_attempts: Vec<(i64, i64, i64)> = conn
        .prepare(
            "SELECT id, attempts, max_attempts FROM ukue_jobs WHERE attempts < 0 OR attempts > max_attempts",
        )
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect())
        .map_err(err)?;
    if !bad_attempts.is_empty() {
        return Err(format!("jobs with attempts out of range (id, attempts, max): {bad_attempts:?}"));
    }
    let (max_id, seq): (Option<i64>, Option<i64>) = conn
        .query_row(
            "SELECT (SELECT max(id) FROM ukue_jobs),
                    (SELECT seq FROM sqlite_sequence WHERE name = 'ukue_jobs')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(err)?;
    if let Some(max_id) = max_id {
        match seq {
            Some(seq) if seq >= max_id => {}
            _ => return Err(format!("sqlite_sequence.seq {seq:?} is below the largest id {max_id}")),
        }
    }
    Ok(())
}

/// Panics with the broken invariant.
pub fn assert_invariants(conn: &Connection) {
    if let Err(e) = check_invariants(conn) {
        panic!("FORMAT.md §7 invariant broken: {e}");
    }
}

/// One value of a one-row query, for short checks.
pub fn query_i64(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

pub fn query_string(conn: &Connection, sql: &str) -> String {
    conn.query_row(sql, [], |r| r.get(0)).unwrap_or_else(|e| panic!("{sql}: {e}"))
}
