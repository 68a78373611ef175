//! The input checks of FORMAT.md §3.2, as typed errors.

use crate::clock::Millis;
use crate::error::Invalid;

pub const MAX_QUEUE_CHARS: usize = 200;

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

pub fn priority(priority: i64) -> Result<(), Invalid> {
    if (-100..=100).contains(&priority) {
        Ok(())
    } else {
        Err(Invalid::Priority(priority))
    }
}

pub fn max_attempts(max_attempts: i64) -> Result<(), Invalid> {
    if max_attempts >= 1 {
        Ok(())
    } else {
        Err(Invalid::MaxAttempts(max_attempts))
    }
}

pub fn lease(lease: Millis) -> Result<(), Invalid> {
    if lease >= 1 {
        Ok(())
    } else {
        Err(Invalid::Lease(lease))
    }
}

pub fn limit(limit: i64) -> Result<(), Invalid> {
    if (1..=1000).contains(&limit) {
        Ok(())
    } else {
        Err(Invalid::Limit(limit))
    }
}
