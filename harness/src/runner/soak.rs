//! Soak runs (`--repeat N`, `--duration D`): the selected cases again and
//! again, each pass with a fresh seed derived from the run's seed, so that
//! a failure in pass 37 replays alone with that pass's seed.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{case_seed, run, CaseReport, Config, RunInfo};
use crate::cases::Case;
use crate::report::Reporter;

/// How long a soak goes on.
#[derive(Debug, Clone, Copy, Default)]
pub struct Soak {
    /// At most this many passes.
    pub repeat: Option<u32>,
    /// Starts no pass once this much time has gone.
    pub duration: Option<Duration>,
}

impl Soak {
    /// Whether this is a soak at all (otherwise one pass on the run's seed).
    pub fn is_on(&self) -> bool {
        self.repeat.is_some() || self.duration.is_some()
    }
}

/// The seed of soak pass `iteration` (from 1).
pub fn iteration_seed(run_seed: u64, iteration: u32) -> u64 {
    case_seed(run_seed, &format!("soak pass {iteration}"))
}

/// Runs the passes; `replay(seed)` is the replay prefix of a pass with that
/// seed. Stops after a pass with a failure when `config.fail_fast`.
pub fn soak(
    config: &Config,
    soak: Soak,
    cases: &[Case],
    skipped: &[(Case, String)],
    reporter: &Mutex<&mut dyn Reporter>,
    replay: impl Fn(u64) -> String,
) -> Vec<CaseReport> {
    let started = Instant::now();
    let mut reports = Vec::new();
    for iteration in 1.. {
        let over_time = soak.duration.is_some_and(|d| started.elapsed() >= d);
        if soak.repeat.is_some_and(|n| iteration > n) || over_time {
            break;
        }
        let seed = iteration_seed(config.seed, iteration);
        let info = RunInfo { seed, ..config.info.clone() };
        let pass = Config { seed, replay: replay(seed), iteration: Some(iteration), info, ..config.clone() };
        reporter.lock().unwrap_or_else(|p| p.into_inner()).begin(cases.len() + skipped.len(), &pass.info);
        let done = run(&pass, cases, skipped, reporter);
        let bad = done.iter().any(|r| r.status.is_bad());
        reports.extend(done);
        if bad && config.fail_fast {
            break;
        }
    }
    reports
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pass_has_its_own_seed() {
        let seeds: std::collections::BTreeSet<u64> = (1..=100).map(|i| iteration_seed(7, i)).collect();
        assert_eq!(seeds.len(), 100);
        assert_eq!(iteration_seed(7, 3), iteration_seed(7, 3));
        assert_ne!(iteration_seed(7, 3), iteration_seed(8, 3));
    }
}
