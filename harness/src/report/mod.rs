//! Reporters: what a run shows. The runner hands each finished case to a
//! [`Reporter`]; how it is shown (a progress bar, JSON, JUnit) is theirs.
//!
//! [`Reporter`]: crate::report::Reporter

mod human;
mod json;
mod junit;

pub use human::Human;
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
