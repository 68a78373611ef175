//! From samples to a verdict: the medians of the two sizes, the noise
//! (twice the spread of the small file's samples), and their ratio against
//! the bound.

use super::sample::{Files, Samples};
use crate::report::scale::Scaling;

/// The largest growth of a step's cost, from the small file to the large
/// one, that passes. spec/CONFORMANCE.md ("Scale") gives the measurements
/// it rests on: a step through an index grows by ×0.8 to ×1.6 on any
/// machine tried, and one that scans the large file by ×10 or more.
pub const BOUND: f64 = 3.0;

/// The median (of an even count, the mean of the middle two); 0 of none.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return 0.0;
    }
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// How far samples spread: their median absolute deviation, scaled to a
/// normal distribution's standard deviation (×1.4826). An outlier moves
/// it little, as it does a median.
pub fn spread(values: &[f64]) -> f64 {
    let middle = median(values);
    let deviations: Vec<f64> = values.iter().map(|v| (v - middle).abs()).collect();
    1.4826 * median(&deviations)
}

/// The figures of a step measured on `files`, from `samples`.
pub fn scaling(step: &str, files: &Files, samples: Samples) -> Scaling {
    let small_ms = median(&samples.small);
    let large_ms = median(&samples.large);
    // Twice the spread: the medians of a dozen samples that spread this
    // far differ by less, and a difference within it is none.
    let noise_ms = (2.0 * spread(&samples.small)).max(samples.resolution_ms);
    let ratio = large_ms / small_ms.max(noise_ms).max(f64::MIN_POSITIVE);
    Scaling {
        step: step.to_string(),
        unit: samples.unit,
        small_rows: files.small_rows,
        large_rows: files.large_rows,
        small_samples: samples.small,
        large_samples: samples.large,
        small_ms,
        large_ms,
        noop_ms: samples.noop_ms,
        noise_ms,
        ratio,
        bound: BOUND,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn files() -> Files {
        Files { small: PathBuf::new(), large: PathBuf::new(), small_rows: 100, large_rows: 100_000 }
    }

    fn samples(small: &[f64], large: &[f64]) -> Samples {
        Samples {
            unit: "ms".into(),
            small: small.to_vec(),
            large: large.to_vec(),
            noop_ms: None,
            resolution_ms: 0.001,
        }
    }

    #[test]
    fn medians_and_spread() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(spread(&[2.0, 2.0, 2.0, 50.0]), 0.0, "one outlier does not move it");
        assert!((spread(&[1.0, 2.0, 3.0]) - 1.4826).abs() < 1e-9);
    }

    #[test]
    fn a_flat_step_passes_and_a_scan_does_not() {
        let flat = scaling("a claim", &files(), samples(&[1.7, 2.1, 1.4, 1.8], &[1.6, 1.9, 1.5, 1.7]));
        assert!(flat.passes() && (flat.ratio - 0.97).abs() < 0.05, "{flat:?}");
        let scan = scaling("a claim", &files(), samples(&[1.7, 2.1, 1.4, 1.8], &[60.0, 41.0, 96.0, 62.0]));
        assert!(!scan.passes() && scan.ratio > 30.0, "{scan:?}");
    }

    #[test]
    fn growth_within_the_noise_is_no_growth() {
        // A process timed whole: start-up varies by milliseconds, the step
        // costs a fraction of one; what the large file adds is below noise.
        let noisy =
            scaling("an add", &files(), samples(&[0.5, -4.0, 6.0, 1.0, -2.5], &[1.7, -3.0, 7.5, 2.0, 0.5]));
        assert!(noisy.noise_ms > 3.0 && noisy.passes(), "{noisy:?}");
        // The same noise does not hide a step that costs tens of ms more.
        let grows = scaling(
            "an add",
            &files(),
            samples(&[0.5, -4.0, 6.0, 1.0, -2.5], &[40.0, 35.0, 52.0, 38.0, 44.0]),
        );
        assert!(!grows.passes(), "{grows:?}");
    }
}
