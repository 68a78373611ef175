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

/// FORMAT.md §7: every `sql invariant` block of the page, each of which
/// returns the rows that break it.
pub fn check_invariants(conn: &Connection) -> Result<(), String> {
    check_invariants_of(&Spec::builtin(), conn)
}

/// Like [`check_invariants`], with the invariants of `spec` (an edited page).
pub fn check_invariants_of(spec: &Spec, conn: &Connection) -> Result<(), String> {
    let mut broken = Vec::new();
    for invariant in spec.invariants() {
        let rows = invariant.violations(conn).map_err(|e| format!("{}: {e}", invariant.name))?;
        if !rows.is_empty() {
            let rows: Vec<String> = rows.iter().map(ToString::to_string).collect();
            broken.push(format!("{}: {}", invariant.name, rows.join("; ")));
        }
    }
    if broken.is_empty() {
        Ok(())
    } else {
        Err(broken.join("\n"))
    }
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

/// `n` milliseconds, the unit of the file.
pub fn ms(n: u64) -> std::time::Duration {
    std::time::Duration::from_millis(n)
}
