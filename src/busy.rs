//! Waiting for a busy file (FORMAT.md §4.1). SQLite's own busy handler
//! sleeps 1, 2, 5 … up to 100 ms between tries, so with several writers a
//! waiting one sleeps through the moments the lock is free (ukue-bench
//! measured four writers at three quarters of one writer's commits). This
//! handler tries again every millisecond for the same time in all.

use std::ffi::{c_int, c_void};
use std::time::Duration;

use rusqlite::Connection;

/// SQLite calls this with the budget in ms (passed as the user-data
/// pointer's value) and how many times it has called it for this wait.
extern "C" fn poll(budget_ms: *mut c_void, tries: c_int) -> c_int {
    if (tries.max(0) as usize) < budget_ms as usize {
        std::thread::sleep(Duration::from_millis(1));
        1
    } else {
        0
    }
}

/// Installs the handler on `conn`, for `budget_ms` (none when it is 0).
pub fn poll_while_busy(conn: &Connection, budget_ms: i64) {
    let budget = usize::try_from(budget_ms).unwrap_or(0);
    // SAFETY: the handle is the live connection's; the handler keeps no
    // state beyond the integer it is given, so nothing can dangle.
    unsafe {
        let handler: Option<unsafe extern "C" fn(*mut c_void, c_int) -> c_int> =
            if budget > 0 { Some(poll) } else { None };
        rusqlite::ffi::sqlite3_busy_handler(conn.handle(), handler, budget as *mut c_void);
    }
}
