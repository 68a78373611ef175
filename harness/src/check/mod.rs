//! Check: what a run must show, and what it did wrong. The checkers are
//! pure functions that name what went wrong ([`Finding`]s); they never
//! wait, poll or touch a process.
//!
//! - [`delivery`]: over a [`History`]: nothing
//!   lost, nothing run twice without an excuse, no two holders, attempts
//!   counted, order kept, payloads intact;
//! - [`file`]: a file's integrity and the invariants of FORMAT.md §7;
//! - [`durability`]: from a trace, every acknowledgement after the sync of
//!   its commit (§6.1);
//! - [`crash_states`]: the file states a power cut could leave, from a
//!   recording of a trace;
//! - [`model`]: the model of the format, the oracle of each step of a
//!   model-based run (and of the claim order the steps cases expect).
//!
//! [`Finding`]: crate::check::Finding
//! [`delivery`]: crate::check::delivery
//! [`History`]: crate::history::History
//! [`file`]: crate::check::file
//! [`durability`]: crate::check::durability
//! [`crash_states`]: crate::check::crash_states
//! [`model`]: crate::check::model

pub mod crash_states;
pub mod delivery;
pub mod durability;
pub mod file;
pub mod model;

pub use delivery::*;

use crate::history::{Blame, Execution, RunRef};

/// One thing a checker found wrong.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Finding {
    /// The checker's name (`lost`, `duplicate`, …).
    pub check: &'static str,
    pub job: Option<i64>,
    pub message: String,
    /// The runs it blames (a report highlights them).
    pub runs: Vec<RunRef>,
}

impl Finding {
    /// The finding, blaming `runs`.
    pub fn blaming<'a>(mut self, runs: impl IntoIterator<Item = &'a Execution>) -> Finding {
        self.runs.extend(runs.into_iter().map(RunRef::from));
        self
    }
}

/// What `findings` blame: the runs they name, and the jobs they name
/// without naming a run (a lost job: every run of it).
pub fn blame(findings: &[Finding]) -> Blame {
    let mut blame = Blame::default();
    for f in findings {
        blame.runs.extend(&f.runs);
        if let (true, Some(job)) = (f.runs.is_empty(), f.job) {
            blame.jobs.push(job);
        }
    }
    blame.runs.sort();
    blame.runs.dedup();
    blame.jobs.sort();
    blame.jobs.dedup();
    blame
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.job {
            Some(job) => write!(f, "{}: job {job}: {}", self.check, self.message),
            None => write!(f, "{}: {}", self.check, self.message),
        }
    }
}

pub(crate) fn finding(check: &'static str, job: Option<i64>, message: impl Into<String>) -> Finding {
    Finding { check, job, message: message.into(), runs: Vec::new() }
}

/// The findings as one report line each (empty when there are none).
pub fn describe(findings: &[Finding]) -> String {
    findings.iter().map(|f| f.to_string()).collect::<Vec<_>>().join("\n")
}
