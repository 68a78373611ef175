//! A scale case's figures as every report carries them ([`Scaling`]): the
//! cost of one step on a small and on a large file, each sample, their
//! medians, the ratio and its bound; a line of text for the human and
//! JUnit reports, and a small chart for the HTML page (cost against size,
//! both on log axes; [`chart`]).

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::thousands;

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

/// `100k`, `1M`: a size for an axis.
fn short_rows(n: u64) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

const WIDTH: f64 = 300.0;
const HEIGHT: f64 = 200.0;
const LEFT: f64 = 46.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 24.0;
const BOTTOM: f64 = 30.0;

/// The chart of one scale case: each sample a dot, the medians joined by a
/// line (green within the bound, red past it), what no growth and what a
/// cost that grows with the jobs would give from the small file's median
/// (dashed, dotted), and the costs past the bound shaded. Both axes are
/// logarithmic; a cost at or below nothing sits on the bottom edge.
pub fn chart(id: &str, s: &Scaling) -> String {
    let base = s.base_ms().max(1e-6);
    let linear = base * s.large_rows as f64 / s.small_rows.max(1) as f64;
    let limit = base * s.bound;
    let positive = s.small_samples.iter().chain(&s.large_samples).copied().filter(|v| *v > 0.0);
    let lowest = positive.clone().fold(base, f64::min).min(s.noise_ms.max(1e-6)) / 2.0;
    let highest = positive.fold(linear.max(limit), f64::max) * 1.5;
    let (y_lo, y_hi) = (lowest.log10().floor(), highest.log10().ceil());
    let (x_lo, x_hi) =
        ((s.small_rows.max(1) as f64).log10() - 0.5, (s.large_rows.max(1) as f64).log10() + 0.5);
    let x = |rows: u64| LEFT + ((rows.max(1) as f64).log10() - x_lo) / (x_hi - x_lo) * (WIDTH - LEFT - RIGHT);
    let y = |ms: f64| {
        let v = if ms > 0.0 { ms.log10().clamp(y_lo, y_hi) } else { y_lo };
        HEIGHT - BOTTOM - (v - y_lo) / (y_hi - y_lo) * (HEIGHT - TOP - BOTTOM)
    };
    let grows = !s.passes();
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"scale{}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\">\
         <title>{}: {}</title>",
        if grows { " grows" } else { "" },
        super::html::esc(id),
        super::html::esc(&s.line())
    );
    // The band past the bound, from the bound to the top, over the large size.
    let (band_x0, band_x1) = (x(s.small_rows) + (x(s.large_rows) - x(s.small_rows)) * 0.5, WIDTH - RIGHT);
    let _ = write!(
        out,
        "<rect class=\"past-bound\" x=\"{band_x0:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\"><title>past the bound: more than ×{} the small file's {} ms</title></rect>",
        band_x1 - band_x0,
        (y(limit) - TOP).max(0.0),
        s.bound,
        ms(base)
    );
    // Decades of ms.
    out.push_str("<g class=\"axis\">");
    let mut decade = y_lo;
    while decade <= y_hi + 1e-9 {
        let at = y(10f64.powf(decade));
        let _ = write!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{at:.1}\" y2=\"{at:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            WIDTH - RIGHT,
            LEFT - 4.0,
            at + 3.5,
            decade_label(decade)
        );
        decade += 1.0;
    }
    for rows_at in [s.small_rows, s.large_rows] {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            x(rows_at),
            HEIGHT - BOTTOM + 14.0,
            short_rows(rows_at)
        );
    }
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">jobs in the file</text><text x=\"4\" y=\"{:.1}\">ms</text></g>",
        (LEFT + WIDTH - RIGHT) / 2.0,
        HEIGHT - 4.0,
        TOP - 8.0
    );
    // No growth, and growth with the jobs, from the small file's median.
    let (x0, x1) = (x(s.small_rows), x(s.large_rows));
    let _ = write!(
        out,
        "<line class=\"flat\" x1=\"{x0:.1}\" x2=\"{x1:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"><title>no growth</title></line>\
         <line class=\"linear\" x1=\"{x0:.1}\" x2=\"{x1:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"><title>a cost that grows with the jobs (a scan)</title></line>",
        y(base),
        y(base),
        y(base),
        y(linear)
    );
    for (rows_at, samples) in [(s.small_rows, &s.small_samples), (s.large_rows, &s.large_samples)] {
        for (i, v) in samples.iter().enumerate() {
            // Spread sideways a little, so that equal samples stay visible.
            let dx = (i % 7) as f64 * 2.0 - 6.0;
            let _ = write!(
                out,
                "<circle class=\"sample\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2\"><title>{} ms</title></circle>",
                x(rows_at) + dx,
                y(*v),
                ms(*v)
            );
        }
    }
    let _ = write!(
        out,
        "<line class=\"median\" x1=\"{x0:.1}\" x2=\"{x1:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>",
        y(s.small_ms),
        y(s.large_ms)
    );
    for (rows_at, value) in [(s.small_rows, s.small_ms), (s.large_rows, s.large_ms)] {
        let _ = write!(
            out,
            "<circle class=\"median\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\"><title>median of {} jobs: {} ms</title></circle>",
            x(rows_at),
            y(value),
            thousands(rows_at),
            ms(value)
        );
    }
    let _ = write!(
        out,
        "<text class=\"ratio\" x=\"{:.1}\" y=\"14\">×{:.1} (bound ×{})</text></svg>",
        WIDTH - RIGHT,
        s.ratio,
        s.bound
    );
    out
}

/// `0.01`, `0.1`, `1`, `10`, `100`: a decade of ms.
fn decade_label(decade: f64) -> String {
    let value = 10f64.powf(decade);
    if decade < 0.0 {
        format!("{value:.*}", (-decade) as usize)
    } else {
        format!("{value:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scaling(small: f64, large: f64) -> Scaling {
        Scaling {
            step: "an empty claim".into(),
            unit: "CPU ms of work in a 150 ms window".into(),
            small_rows: 100,
            large_rows: 100_000,
            small_samples: vec![small * 0.9, small, small * 1.1],
            large_samples: vec![large * 0.9, large, large * 1.1],
            small_ms: small,
            large_ms: large,
            noop_ms: None,
            noise_ms: small * 0.1,
            ratio: large / small,
            bound: 3.0,
        }
    }

    #[test]
    fn a_line_says_sizes_costs_ratio_and_bound() {
        let flat = scaling(1.62, 1.71);
        assert_eq!(
            flat.line(),
            "100 → 100,000 jobs: 1.62 → 1.71 ms (CPU ms of work in a 150 ms window), ×1.1 (bound ×3)"
        );
        let grows = scaling(1.5, 60.0);
        assert!(grows.line().ends_with("×40.0 (bound ×3): it grows"), "{}", grows.line());
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(short_rows(100_000), "100k");
    }

    #[test]
    fn a_chart_draws_every_sample_and_marks_growth() {
        let svg = chart("scale/empty-claim", &scaling(1.5, 60.0));
        assert!(svg.starts_with("<svg class=\"scale grows\""), "{svg}");
        assert_eq!(svg.matches("class=\"sample\"").count(), 6);
        assert_eq!(svg.matches("<circle class=\"median\"").count(), 2);
        assert!(svg.contains("×40.0 (bound ×3)") && svg.contains(">100k<"), "{svg}");
        let flat = chart("scale/empty-claim", &scaling(1.5, 1.6));
        assert!(flat.starts_with("<svg class=\"scale\""), "{flat}");
        // A cost of nothing or less still has a place (the bottom edge).
        let mut nothing = scaling(0.5, 0.6);
        nothing.small_samples.push(-0.2);
        assert!(!chart("scale/add", &nothing).contains("NaN"));
    }
}
