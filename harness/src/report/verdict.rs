//! What became of a run: each case's [`Status`] and [`CaseReport`], and
//! what the run was ([`RunInfo`]). The runner makes them, every reporter
//! reads them, and `merge` and `compare` read them back from JSON.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::timeline::Timeline;
use crate::cases::Level;
use crate::subjects::observe::scaling::Scaling;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    /// The subject crashed or printed what cannot be read.
    Error,
    Timeout,
    /// A `should` case that did not pass, without `--strict`: shown, but
    /// the run does not fail for it.
    Warn,
    Skipped,
    /// Listed in --expected-failures, and failed.
    ExpectedFailure,
    /// Listed in --expected-failures, but passed: the list is out of date.
    UnexpectedPass,
}

impl Status {
    /// Whether this status makes the run fail.
    pub fn is_bad(self) -> bool {
        matches!(self, Status::Fail | Status::Error | Status::Timeout | Status::UnexpectedPass)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Error => "error",
            Status::Timeout => "timeout",
            Status::Warn => "warn",
            Status::Skipped => "skipped",
            Status::ExpectedFailure => "expected failure",
            Status::UnexpectedPass => "unexpected pass",
        }
    }
}

/// What became of one case. `merge` reads it back from shards' JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseReport {
    pub id: String,
    pub rule: String,
    pub summary: String,
    pub level: Level,
    pub status: Status,
    pub duration_ms: u128,
    pub expected: Option<String>,
    pub seen: Option<String>,
    /// Why it was skipped, or why it is expected to fail.
    pub reason: Option<String>,
    pub seed: u64,
    pub work_dir: Option<PathBuf>,
    pub replay: String,
    /// Figures the case reported (kills, reruns…), whatever its outcome.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The same figures as numbers (`workers_killed`, `jobs`…), summed
    /// over a run in its summary.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, u64>,
    /// Which pass of a `--repeat`/`--duration` soak ran it (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// Every rule of FORMAT.md the case checks: its section (first), and
    /// the MUST and SHOULD sentences CONFORMANCE.md maps to it
    /// (crate::spec::coverage).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// The text of its FORMAT.md section, for a case that did not pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_text: Option<String>,
    /// Its history's timeline, for a case that did not pass (and for every
    /// case with `-v`), when it ran workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// A scale case's figures: the cost of its step on a small and a large
    /// file, whatever its outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<Scaling>,
}

/// What a run was: the programs, the seed, the machine and the date. The
/// JSON report's summary carries it, and `merge` reads it back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInfo {
    pub implementation: String,
    /// What `IMPLEMENTATION version` printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementation_version: Option<String>,
    /// The interpreter the implementation runs by, when it is a Python
    /// script run as `PYTHON SCRIPT` (its `#!` line's Python, resolved once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementation_interpreter: Option<String>,
    /// The Python that runs add_job.py, the Python step driver and
    /// http_worker.py, resolved once at the start; None without Python.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// The reference `ukue` the cases compare the subject with (by
    /// default `ukue-reference` beside the runner); None when the run had
    /// none, and so skipped the cases that need one.
    #[serde(default)]
    pub reference: Option<String>,
    /// What `REFERENCE version` printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_version: Option<String>,
    /// Why the run had no reference (none beside the runner, or it was the
    /// subject itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_reference: Option<String>,
    /// The `ukue-probe` the `work` cases run: beside the runner unless
    /// `--probe` names one, so a report shows which install it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    /// `ukue-conformance VERSION`.
    pub runner: String,
    pub seed: u64,
    /// Host name, kernel, architecture and CPUs.
    pub machine: String,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// `--partition`, when it is one shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
}

impl RunInfo {
    /// The reference in words, as every report names it: its path and
    /// version, or that there was none, and why.
    pub fn reference_text(&self) -> String {
        match (&self.reference, &self.no_reference) {
            (Some(path), _) => match &self.reference_version {
                Some(version) => format!("{path} ({version})"),
                None => format!("{path} (no answer to `version`)"),
            },
            (None, Some(why)) => format!("none: {why}"),
            (None, None) => "none".to_string(),
        }
    }

    /// This machine: `host (Linux 6.1.0 x86_64, 2 CPUs)`.
    pub fn machine() -> String {
        let read = |name: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{name}")).map(|s| s.trim().to_string())
        };
        let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
        format!(
            "{} ({} {} {}, {cpus} CPUs)",
            read("hostname").unwrap_or_else(|_| "unknown host".into()),
            read("ostype").unwrap_or_else(|_| std::env::consts::OS.into()),
            read("osrelease").unwrap_or_default(),
            std::env::consts::ARCH
        )
    }

    /// Now, as RFC 3339 in UTC.
    pub fn now() -> String {
        let now = time::OffsetDateTime::now_utc();
        now.format(&time::format_description::well_known::Rfc3339).unwrap_or_else(|_| now.to_string())
    }
}

/// A case report for the reporters' tests: `level` and `status` as given,
/// one rule, seed 7, its replay command, nothing else.
#[cfg(test)]
pub fn sample(id: &str, level: Level, status: Status) -> CaseReport {
    CaseReport {
        id: id.into(),
        rule: "FORMAT.md §5".into(),
        summary: String::new(),
        level,
        status,
        duration_ms: 1,
        expected: None,
        seen: None,
        reason: None,
        seed: 7,
        work_dir: None,
        replay: format!("ukue-conformance --cases '{id}'"),
        notes: Vec::new(),
        figures: BTreeMap::new(),
        iteration: None,
        rules: Vec::new(),
        rule_text: None,
        timeline: None,
        scale: None,
    }
}
