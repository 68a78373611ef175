//! JUnit XML, for CI systems that show test results.

use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::human::failure_text;
use super::{not_passed, CaseReport, RunInfo, Status};

/// A case that did not pass in full: its failure, the text of its rule,
/// and its timeline.
fn details(r: &CaseReport) -> String {
    let mut text = failure_text(r);
    if let Some(rule) = &r.rule_text {
        text.push_str(&format!("\n{}:\n{rule}\n", r.rule));
    }
    if let Some(timeline) = &r.timeline {
        text.push('\n');
        text.push_str(&timeline.text());
    }
    text
}

/// One run (or shard) on a line: what ran against what, where and when.
fn run_text(run: &RunInfo) -> String {
    let version = run.implementation_version.as_deref().map(|v| format!(" ({v})")).unwrap_or_default();
    let shard = run.partition.as_deref().map(|p| format!(", shard {p}")).unwrap_or_default();
    format!(
        "{}{version}, reference {}, seed {}{shard}, {} on {}, started {}",
        run.implementation,
        run.reference_text(),
        run.seed,
        run.runner,
        run.machine,
        run.started_at
    )
}

/// `runs` is what the run was (one per shard when merged): each suite
/// carries it as a `run` property.
pub fn write_junit(
    path: &Path,
    reports: &[CaseReport],
    elapsed: Duration,
    runs: &[RunInfo],
) -> std::io::Result<()> {
    let mut report = Report::new("ukue-conformance");
    report.set_time(elapsed);
    let mut families: Vec<&str> = reports.iter().map(|r| r.id.split('/').next().unwrap_or("")).collect();
    families.sort();
    families.dedup();
    for family in families {
        let mut suite = TestSuite::new(family);
        for run in runs {
            suite.add_property(Property::new("run", run_text(run)));
        }
        for r in reports.iter().filter(|r| r.id.split('/').next() == Some(family)) {
            let status = match r.status {
                Status::Pass | Status::ExpectedFailure | Status::Warn => TestCaseStatus::success(),
                Status::Skipped => {
                    let mut s = TestCaseStatus::skipped();
                    if let Some(reason) = &r.reason {
                        s.set_message(reason.clone());
                    }
                    s
                }
                Status::Error | Status::Timeout => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                    s.set_message(r.status.as_str());
                    s.set_description(failure_text(r));
                    s
                }
                Status::Fail | Status::UnexpectedPass => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(r.status.as_str());
                    s.set_description(failure_text(r));
                    s
                }
            };
            let mut case = TestCase::new(r.id.clone(), status);
            case.set_classname(family);
            case.add_property(Property::new("level", r.level.as_str()));
            case.add_property(Property::new("status", r.status.as_str()));
            if !r.rules.is_empty() {
                case.add_property(Property::new("rules", r.rules.join(" ")));
            }
            if let Some(s) = &r.scale {
                for (name, value) in [
                    ("scale-small-jobs", s.small_rows.to_string()),
                    ("scale-large-jobs", s.large_rows.to_string()),
                    ("scale-small-ms", format!("{:.4}", s.small_ms)),
                    ("scale-large-ms", format!("{:.4}", s.large_ms)),
                    ("scale-ratio", format!("{:.3}", s.ratio)),
                    ("scale-bound", s.bound.to_string()),
                ] {
                    case.add_property(Property::new(name, value));
                }
            }
            if not_passed(r) {
                // JUnit knows no warning: a warned case counts as passed, and
                // says why where CI systems show output; every case that did
                // not pass shows there what the HTML report shows of it.
                case.set_system_out(details(r));
            } else if let Some(s) = &r.scale {
                case.set_system_out(format!("{}: {}\n", s.step, s.line()));
            }
            case.set_time(Duration::from_millis(r.duration_ms as u64));
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    let xml = report.to_string().map_err(std::io::Error::other)?;
    std::fs::write(path, xml)
}
