//! The input checks of FORMAT.md §3.2, as typed errors. The steps run
//! them; they are public for programs that check input before a step (the
//! step driver checks a queue name that a step would take as "any").

use std::time::Duration;

use crate::clock::millis;
use crate::error::Invalid;

/// The longest queue name, in characters.
pub const MAX_QUEUE_CHARS: usize = 200;

/// A queue name: 1 to 200 characters, no NUL.
pub fn queue(queue: &str) -> Result<(), Invalid> {
    let chars = queue.chars().count();
    if !(1..=MAX_QUEUE_CHARS).contains(&chars) {
        return Err(Invalid::QueueLength(chars));
    }
    if queue.contains('\0') {
        return Err(Invalid::QueueNul);
    }
    Ok(())
}

/// A priority: -100 to 100.
pub fn priority(priority: i64) -> Result<(), Invalid> {
    if (-100..=100).contains(&priority) {
        Ok(())
    } else {
        Err(Invalid::Priority(priority))
    }
}

/// A max_attempts: at least 1.
pub fn max_attempts(max_attempts: i64) -> Result<(), Invalid> {
    if max_attempts >= 1 {
        Ok(())
    } else {
        Err(Invalid::MaxAttempts(max_attempts))
    }
}

/// A lease: at least one whole millisecond.
pub fn lease(lease: Duration) -> Result<(), Invalid> {
    if millis(lease) >= 1 {
        Ok(())
    } else {
        Err(Invalid::Lease(lease))
    }
}

/// A list limit: 1 to 1000.
pub fn limit(limit: i64) -> Result<(), Invalid> {
    if (1..=1000).contains(&limit) {
        Ok(())
    } else {
        Err(Invalid::Limit(limit))
    }
}
