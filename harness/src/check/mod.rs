//! Checkers: pure functions over a [`History`] (and the file at the end)
//! that name what went wrong. They never wait, poll or touch a process.

mod delivery;
pub mod file;

pub use delivery::*;

/// One thing a checker found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The checker's name (`lost`, `duplicate`, …).
    pub check: &'static str,
    pub job: Option<i64>,
    pub message: String,
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
    Finding { check, job, message: message.into() }
}

/// The findings as one report line each (empty when there are none).
pub fn describe(findings: &[Finding]) -> String {
    findings.iter().map(|f| f.to_string()).collect::<Vec<_>>().join("\n")
}
