//! What a scale case measured (crate::cases::scale): the cost of one
//! step on a small and on a large file, each sample, their medians, the
//! ratio and its bound. The case makes it, its context carries it to the
//! case's report, and every report shows it (crate::report::scale).

use serde::{Deserialize, Serialize};

use crate::shown::thousands;

/// What a scale case measured (crate::cases::scale).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scaling {
    /// The step, in a few words: `an empty claim (work finding nothing due)`.
    pub step: String,
    /// What one sample is: `CPU ms of work in a 150 ms window`.
    pub unit: String,
    /// Jobs in the small file and in the large one.
    pub small_rows: u64,
    pub large_rows: u64,
    /// Each sample's cost in ms, in the order taken (rounds interleave the
    /// two files).
    pub small_samples: Vec<f64>,
    pub large_samples: Vec<f64>,
    /// The medians of the samples.
    pub small_ms: f64,
    pub large_ms: f64,
    /// For a step timed as a whole process: the median CPU time of the
    /// same program's `version`, taken off each sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noop_ms: Option<f64>,
    /// The least cost that counts: twice the spread of the small file's
    /// samples (or the clock's resolution, when larger). A large cost
    /// within it is no growth.
    pub noise_ms: f64,
    /// `large_ms / max(small_ms, noise_ms)`.
    pub ratio: f64,
    /// The largest ratio that passes.
    pub bound: f64,
}

impl Scaling {
    /// The cost the ratio is taken against.
    pub fn base_ms(&self) -> f64 {
        self.small_ms.max(self.noise_ms)
    }

    pub fn passes(&self) -> bool {
        self.ratio <= self.bound
    }

    /// One line: `100 → 100,000 jobs: 1.62 → 1.71 ms (CPU ms of …), ×1.1 (bound ×3)`.
    pub fn line(&self) -> String {
        let noise = if self.noise_ms > self.small_ms {
            format!(", against its noise {} ms", ms(self.noise_ms))
        } else {
            String::new()
        };
        format!(
            "{} → {} jobs: {} → {} ms ({}), ×{:.1}{noise} (bound ×{}){}",
            thousands(self.small_rows),
            thousands(self.large_rows),
            ms(self.small_ms),
            ms(self.large_ms),
            self.unit,
            self.ratio,
            self.bound,
            if self.passes() { "" } else { ": it grows" }
        )
    }
}

/// A cost in ms with three significant digits or so.
pub fn ms(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else if magnitude >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}
