//! The runner's flags for CI at scale: `--partition` (one shard of the
//! run), `--repeat`/`--duration`/`--fail-fast` (soak runs), and the `merge`
//! subcommand that joins the shards' JSON reports into one verdict.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::conformance::exit;
use crate::report::{self, merge::merge as read_shards, Reporter};
use crate::report::{CaseReport, RunInfo};
use crate::runner::partition::Partition;
use crate::runner::soak::Soak;

#[derive(Debug, Clone, Args)]
pub struct ShardArgs {
    /// Run one shard: `count:K/N` (every N-th case from the K-th) or
    /// `hash:K/N` (by a hash of the case id); the N shards are disjoint
    /// and together make the whole run
    #[arg(long, value_name = "KIND:K/N")]
    pub partition: Option<Partition>,
    /// Run the selected cases N times, each pass with a seed derived from the run's
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,
    /// Run the selected cases again and again for this long (`30m`), each pass with a derived seed
    #[arg(long, value_name = "D", value_parser = super::conformance::parse_duration)]
    pub duration: Option<Duration>,
    /// Stop at the first case that fails (start no other)
    #[arg(long)]
    pub fail_fast: bool,
}

/// The cases of this shard (all of them without `--partition`).
pub fn partition(args: &ShardArgs, cases: Vec<crate::cases::Case>) -> Vec<crate::cases::Case> {
    match args.partition {
        Some(partition) => partition.select(cases, |c| c.id),
        None => cases,
    }
}

impl ShardArgs {
    pub fn soak(&self) -> Soak {
        Soak { repeat: self.repeat, duration: self.duration }
    }
}

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

/// The report files of a run (`--junit`, `--html`), written the same way
/// for one run and for merged shards.
#[derive(Debug, Clone, Default)]
pub struct ReportFiles {
    pub junit: Option<PathBuf>,
    pub html: Option<PathBuf>,
}

impl ReportFiles {
    /// Writes them; `runs` is what the run (or each shard) was.
    pub fn write(&self, reports: &[CaseReport], elapsed: Duration, runs: &[RunInfo]) -> anyhow::Result<()> {
        use anyhow::Context;
        if let Some(path) = &self.junit {
            report::write_junit(path, reports, elapsed, runs)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        if let Some(path) = &self.html {
            let page = report::html::page(reports, elapsed, runs);
            std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }
}
