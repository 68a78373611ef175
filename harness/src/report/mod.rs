//! Reporters: what a run shows. The runner hands each finished case to a
//! [`Reporter`]; how it is shown (a progress bar, JSON, JUnit, a web page)
//! is theirs. Every report is made from the same [`CaseReport`]s (the JSON
//! report carries all of them, so that `merge` can write any report from
//! shards): a case's [`timeline`] among them.
//!
//! [`Reporter`]: crate::report::Reporter
//! [`CaseReport`]: crate::report::CaseReport
//! [`timeline`]: crate::report::timeline

pub mod html;
mod human;
mod json;
mod junit;
pub mod matrix;
pub mod merge;
pub mod scale;
mod svg;
pub mod timeline;
mod verdict;

pub use human::{failure_text, summary, Human};
pub use json::Json;
pub use junit::write_junit;
pub use verdict::{CaseReport, RunInfo, Status};

use crate::cases::Level;

pub trait Reporter: Send {
    fn begin(&mut self, _total: usize, _run: &RunInfo) {}
    fn case_done(&mut self, report: &CaseReport);
    fn end(&mut self, _reports: &[CaseReport], _elapsed: std::time::Duration) {}
}

/// 1234567 as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Counts per status, in a fixed order.
pub fn counts(reports: &[CaseReport]) -> Vec<(&'static str, usize)> {
    use Status::*;
    [Pass, Warn, Fail, Error, Timeout, UnexpectedPass, ExpectedFailure, Skipped]
        .into_iter()
        .map(|s| (s.as_str(), reports.iter().filter(|r| r.status == s).count()))
        .collect()
}

/// "12 cases in 3.4 s: 11 pass, 1 fail": the run in one line, as the
/// human and HTML reports both open or close with it.
pub fn tally(reports: &[CaseReport], elapsed: std::time::Duration) -> String {
    let counted: Vec<String> =
        counts(reports).into_iter().filter(|(_, n)| *n > 0).map(|(s, n)| format!("{n} {s}")).collect();
    let cases = if reports.len() == 1 { "case" } else { "cases" };
    format!("{} {cases} in {:.1} s: {}", reports.len(), elapsed.as_secs_f64(), counted.join(", "))
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

/// One row of the table by family and level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyRow {
    pub family: String,
    pub level: Level,
    /// In [`FamilyRow::COLUMNS`]' order.
    pub counts: [usize; 6],
}

impl FamilyRow {
    pub const COLUMNS: [&'static str; 6] = ["pass", "fail", "warn", "error", "timeout", "skipped"];
}

/// The cases by family and level: passed (or failed as expected), failed
/// (or passed unexpectedly), warned, errored, timed out, skipped.
pub fn by_family(reports: &[CaseReport]) -> Vec<FamilyRow> {
    let mut groups: Vec<(&str, Level)> = reports.iter().map(|r| (family(&r.id), r.level)).collect();
    groups.sort_by_key(|(family, level)| (*family, level.as_str()));
    groups.dedup();
    groups
        .into_iter()
        .map(|(family_name, level)| {
            let of = |s: Status| {
                reports
                    .iter()
                    .filter(|r| family(&r.id) == family_name && r.level == level && r.status == s)
                    .count()
            };
            FamilyRow {
                family: family_name.to_string(),
                level,
                counts: [
                    of(Status::Pass) + of(Status::ExpectedFailure),
                    of(Status::Fail) + of(Status::UnexpectedPass),
                    of(Status::Warn),
                    of(Status::Error),
                    of(Status::Timeout),
                    of(Status::Skipped),
                ],
            }
        })
        .collect()
}

/// A case id's family: `steps` of `steps/retry`.
pub fn family(id: &str) -> &str {
    id.split('/').next().unwrap_or("")
}

/// Whether a case did not pass (and so gets a section of its own, its
/// replay command, and its timeline in every report).
pub fn not_passed(r: &CaseReport) -> bool {
    r.status.is_bad() || matches!(r.status, Status::Warn | Status::ExpectedFailure)
}
