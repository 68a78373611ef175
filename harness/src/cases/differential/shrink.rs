//! A sequence that shows a difference, cut to fewer steps that still
//! show one: chunks of steps dropped, halves first, then smaller ones
//! (delta debugging), within a budget of time.

use std::time::{Duration, Instant};

use super::step::Step;
use super::twin::{self, Difference};
use crate::subjects::ctx::Ctx;
use crate::subjects::Failure;

/// How long shrinking may take, at most.
const BUDGET: Duration = Duration::from_secs(40);

/// The shortest sequence found that still differs, and its difference.
pub fn shrink(ctx: &Ctx, steps: &[Step], found: Difference) -> Result<(Vec<Step>, Difference), Failure> {
    let deadline = Instant::now() + BUDGET.min(ctx.remaining().saturating_sub(Duration::from_secs(10)));
    let mut best: Vec<Step> = steps[..(found.step + 1).min(steps.len())].to_vec();
    let mut difference = found;
    let mut tries = 0;
    let mut size = best.len().div_ceil(2);
    while size >= 1 && Instant::now() < deadline {
        let mut start = 0;
        let mut cut = false;
        while start < best.len() && Instant::now() < deadline {
            let mut candidate = best.clone();
            candidate.drain(start..(start + size).min(best.len()));
            tries += 1;
            match twin::run(ctx, &format!("shrink-{tries}"), &candidate)? {
                Some(d) => {
                    best = candidate[..(d.step + 1).min(candidate.len())].to_vec();
                    difference = d;
                    cut = true;
                }
                None => start += size,
            }
        }
        if !cut {
            size /= 2;
        }
    }
    Ok((best, difference))
}
