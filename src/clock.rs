//! Where the library's time comes from: the system, or a test's hand.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in time: milliseconds since 1970 UTC (FORMAT.md §1.5), as the
/// file stores it. Spans of time are [`Duration`]s.
pub type Millis = i64;

/// A source of the current time; every step reads `now` from one.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time.
    fn now_ms(&self) -> Millis;
}

/// The system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Millis {
        let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Millis::try_from(since.as_millis()).unwrap_or(Millis::MAX)
    }
}

/// A clock that moves only when told to; clones share the time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock that reads `start` until it is moved.
    pub fn new(start: Millis) -> Self {
        ManualClock(Arc::new(AtomicI64::new(start)))
    }
    /// Moves the clock to `now` (backwards too).
    pub fn set(&self, now: Millis) {
        self.0.store(now, Ordering::SeqCst);
    }
    /// Moves the clock forward by `by` (whole milliseconds).
    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(millis(by), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Millis {
        self.0.load(Ordering::SeqCst)
    }
}

/// A span in the file's unit: whole milliseconds, rounded down, and
/// `Millis::MAX` for one longer than the file can hold (the steps refuse
/// those, see [`crate::Invalid::TooLong`]).
pub(crate) fn millis(span: Duration) -> Millis {
    Millis::try_from(span.as_millis()).unwrap_or(Millis::MAX)
}
