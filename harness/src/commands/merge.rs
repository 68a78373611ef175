//! `ukue-conformance merge`: the JSON reports of a run's shards
//! (`--partition`, crate::commands::suite::args) joined into one verdict.

use std::path::PathBuf;

use clap::Args;

use super::suite::{exit, ReportFiles};
use crate::report::{self, merge::merge as read_shards, Reporter};

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' reports (`--format json` output of each)
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Also write a JUnit XML report of the whole run here
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write an HTML report of the whole run here
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `ukue-conformance merge`: the shards' cases as one run, its summary
/// and exit status.
pub fn merge(args: MergeArgs) -> u8 {
    let merged = match read_shards(&args.reports) {
        Ok(merged) => merged,
        Err(e) => {
            eprintln!("ukue-conformance merge: {e}");
            return exit::USAGE;
        }
    };
    let mut human = report::Human::new(false);
    human.end(&merged.reports, merged.elapsed);
    let files = ReportFiles { junit: args.junit.clone(), html: args.html.clone() };
    if let Err(e) = files.write(&merged.reports, merged.elapsed, &merged.runs) {
        eprintln!("ukue-conformance merge: {e:#}");
        return exit::RUNNER;
    }
    for path in &merged.unfinished {
        eprintln!(
            "ukue-conformance merge: {} has no summary line: that shard did not finish",
            path.display()
        );
    }
    if merged.reports.iter().any(|r| r.status.is_bad()) || !merged.unfinished.is_empty() {
        exit::FAILURES
    } else {
        exit::OK
    }
}
