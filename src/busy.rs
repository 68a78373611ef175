//! Waiting for a busy file (FORMAT.md §4.1). SQLite's own busy handler
//! sleeps 1, 2, 5 … up to 100 ms between tries, so with several writers a
//! waiting one sleeps through the moments the lock is free (ukue-bench
//! measured four writers at three quarters of one writer's commits). This
//! handler tries again every millisecond.
//!
//! The busy timeout is there for a writer that holds the file and does not
//! let go; a file that many programs take turns to write is busy, not
//! stuck. SQLite's lock is not fair, so with dozens of writers on a few
//! cores one of them can find it taken at every try for seconds on end
//! (seen with 32 workers and 32 producers on 2 cores: adds failed with
//! `database is locked`). So the wait gives up only after the timeout has
//! passed with no other program committing (the file and its `-wal`
//! unchanged), and at most after [`CAP`] timeouts in all.

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// The longest wait, in busy timeouts, however busy the file.
pub const CAP: u32 = 12;

/// What the handler of one connection needs: the timeout, the files whose
/// changes show another program's commits, and the wait under way. Owned
/// by the [`Ukue`](crate::Ukue) whose connection calls it, which outlives
/// the handler (see [`Waiter::install`]).
#[derive(Debug)]
pub struct Waiter {
    budget: Duration,
    files: [PathBuf; 2],
    wait: Cell<Option<Wait>>,
}

#[derive(Debug, Clone, Copy)]
struct Wait {
    started: Instant,
    changed_at: Instant,
    seen: Option<[Stamp; 2]>,
}

/// A file's length and modification time, which a commit changes.
type Stamp = Option<(u64, i64, i64)>;

fn stamp(path: &Path) -> Stamp {
    std::fs::metadata(path).ok().map(|m| (m.len(), m.mtime(), m.mtime_nsec()))
}

impl Waiter {
    /// Installs a handler on `conn` for a busy timeout of `budget_ms`
    /// (none when it is 0). `path` is the file's path, as `conn` opened it.
    /// The caller keeps the waiter for as long as `conn` may run
    /// statements with it, and calls [`Waiter::remove`] before it drops
    /// the waiter and keeps the connection.
    pub fn install(conn: &Connection, budget_ms: i64, path: &Path) -> Option<Box<Waiter>> {
        let budget = u64::try_from(budget_ms).ok().filter(|&ms| ms > 0)?;
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let waiter = Box::new(Waiter {
            budget: Duration::from_millis(budget),
            files: [path.to_path_buf(), PathBuf::from(wal)],
            wait: Cell::new(None),
        });
        let data = &*waiter as *const Waiter as *mut c_void;
        // SAFETY: the handle is the live connection's, and `data` points to
        // the boxed waiter, which does not move and which the owner keeps
        // until the connection is dropped or the handler removed.
        unsafe {
            rusqlite::ffi::sqlite3_busy_handler(conn.handle(), Some(poll), data);
        }
        Some(waiter)
    }

    /// Takes the handler off `conn`, which then fails at once on a busy
    /// file, so that the waiter may be dropped while the connection lives.
    pub fn remove(conn: &Connection) {
        // SAFETY: as in `install`; no handler is left to read the waiter.
        unsafe {
            rusqlite::ffi::sqlite3_busy_handler(conn.handle(), None, std::ptr::null_mut());
        }
    }

    fn stamps(&self) -> [Stamp; 2] {
        [stamp(&self.files[0]), stamp(&self.files[1])]
    }

    /// Whether to try again, `tries` tries into a wait, at `now`.
    fn again(&self, tries: c_int, now: Instant) -> bool {
        let mut wait = match self.wait.get() {
            Some(wait) if tries > 0 => wait,
            _ => Wait { started: now, changed_at: now, seen: None },
        };
        // A stat every 16 tries is enough to see commits, and cheap.
        if tries % 16 == 0 {
            let stamps = self.stamps();
            if wait.seen.is_some_and(|seen| seen != stamps) {
                wait.changed_at = now;
            }
            wait.seen = Some(stamps);
        }
        self.wait.set(Some(wait));
        now.duration_since(wait.changed_at) < self.budget
            && now.duration_since(wait.started) < self.budget * CAP
    }
}

/// SQLite calls this with the connection's waiter and how many times it
/// has called it in this wait.
extern "C" fn poll(waiter: *mut c_void, tries: c_int) -> c_int {
    // SAFETY: `install` passed a pointer to a waiter that outlives the
    // handler; SQLite calls it on the thread running the statement, the
    // only one using the connection (and so the waiter) then.
    let waiter = unsafe { &*(waiter as *const Waiter) };
    if waiter.again(tries, Instant::now()) {
        std::thread::sleep(Duration::from_millis(1));
        1
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter(dir: &Path, budget_ms: u64) -> Waiter {
        let path = dir.join("jobs.ukue");
        std::fs::write(&path, b"x").unwrap();
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        Waiter {
            budget: Duration::from_millis(budget_ms),
            files: [path, PathBuf::from(wal)],
            wait: Cell::new(None),
        }
    }

    fn commit(waiter: &Waiter) {
        let wal = &waiter.files[1];
        let len = std::fs::metadata(wal).map_or(0, |m| m.len());
        std::fs::write(wal, vec![0; len as usize + 1]).unwrap();
    }

    #[test]
    fn a_wait_gives_up_after_the_timeout_without_a_commit() {
        let dir = tempfile::tempdir().unwrap();
        let w = waiter(dir.path(), 50);
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        assert!(w.again(0, t0));
        assert!(w.again(16, at(49)));
        assert!(!w.again(32, at(50)), "no other program committed for the whole timeout");
        // A new wait starts afresh.
        assert!(w.again(0, at(60)));
    }

    #[test]
    fn another_programs_commit_starts_the_timeout_again_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let w = waiter(dir.path(), 50);
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        assert!(w.again(0, t0));
        commit(&w);
        assert!(w.again(16, at(40)), "a commit seen at 40 ms");
        assert!(w.again(32, at(89)), "49 ms after the commit");
        // Tries between the stat's turns see nothing new.
        commit(&w);
        assert!(!w.again(33, at(90)), "50 ms after the last commit seen");
        let w = waiter(dir.path(), 50);
        let mut ms = 0;
        assert!(w.again(0, t0));
        let mut tries = 16;
        while w.again(tries, at(ms)) {
            commit(&w);
            ms += 40;
            tries += 16;
        }
        assert_eq!(ms, 600, "a file that never stops changing: the wait ends at {CAP} timeouts");
    }
}
