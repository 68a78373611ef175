//! Reporters: what a run shows. The runner hands each finished case to a
//! [`Reporter`]; how it is shown (a progress bar, JSON, JUnit) is theirs.
//!
//! [`Reporter`]: crate::report::Reporter

mod human;
mod json;
mod junit;
pub mod merge;

pub use human::{summary, Human};
pub use json::Json;
pub use junit::write_junit;

use crate::runner::CaseReport;

pub trait Reporter: Send {
    fn begin(&mut self, _total: usize, _seed: u64, _subject: &str) {}
    fn case_done(&mut self, report: &CaseReport);
    fn end(&mut self, _reports: &[CaseReport], _elapsed: std::time::Duration) {}
}

/// Counts per status, in a fixed order.
pub fn counts(reports: &[CaseReport]) -> Vec<(&'static str, usize)> {
    use crate::runner::Status::*;
    [Pass, Warn, Fail, Error, Timeout, UnexpectedPass, ExpectedFailure, Skipped]
        .into_iter()
        .map(|s| (s.as_str(), reports.iter().filter(|r| r.status == s).count()))
        .collect()
}

/// The cases' figures summed over the run (kills, jobs, reruns…), with
/// `runs`, the number of soak passes (1 outside a soak), when any case
/// noted figures.
pub fn totals(reports: &[CaseReport]) -> std::collections::BTreeMap<String, u64> {
    let mut totals = std::collections::BTreeMap::new();
    for (name, n) in reports.iter().flat_map(|r| &r.figures) {
        *totals.entry(name.clone()).or_insert(0) += n;
    }
    let passes: std::collections::BTreeSet<Option<u32>> = reports.iter().map(|r| r.iteration).collect();
    totals.insert("runs".to_string(), passes.len() as u64);
    totals
}
