//! How driving a subject went wrong: the subject broke the rule, crashed,
//! or ran past a deadline. Raised by the subjects' helpers and by the
//! cases alike; the runner turns it into the case's status.

use crate::history::Blame;

/// SQLite's error when a busy wait runs out (`SQLITE_BUSY`), in every
/// language's binding: what a subject says when it gave up on a busy file.
pub const LOCKED: &str = "database is locked";

/// How a case went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The subject behaved against the rule.
    Fail,
    /// The subject crashed or printed what cannot be read.
    Error,
    /// A wait ran past its deadline.
    Timeout,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub expected: String,
    pub seen: String,
    /// The runs of the case's history that the checkers blame, for the
    /// report's timeline.
    pub blame: Blame,
}

impl Failure {
    fn new(kind: FailureKind, expected: impl Into<String>, seen: impl Into<String>) -> Failure {
        Failure { kind, expected: expected.into(), seen: seen.into(), blame: Blame::default() }
    }
    pub fn fail(expected: impl Into<String>, seen: impl Into<String>) -> Failure {
        Failure::new(FailureKind::Fail, expected, seen)
    }
    pub fn error(expected: impl Into<String>, seen: impl Into<String>) -> Failure {
        Failure::new(FailureKind::Error, expected, seen)
    }
    pub fn timeout(expected: impl Into<String>, seen: impl Into<String>) -> Failure {
        Failure::new(FailureKind::Timeout, expected, seen)
    }
    /// The subject gave up on a file busy with other writers: a step it
    /// may take again (FORMAT.md §4.1), not a broken rule.
    pub fn is_busy(&self) -> bool {
        self.kind == FailureKind::Fail && self.seen.contains(LOCKED)
    }

    /// The failure, blaming `blame` (what [`crate::check::blame`] finds
    /// its findings name).
    pub fn blaming(self, blame: Blame) -> Failure {
        Failure { blame, ..self }
    }
}

/// A harness-side problem (a temp dir, a fixture) is an error, not the
/// subject's failure.
impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::error("the harness to work", format!("I/O error: {e}"))
    }
}

/// A file the runner cannot read is the subject's failure, but one it
/// waited for in vain is a wait past its deadline: some program held the
/// lock for all of [`BUSY_WAIT`](crate::subjects::observe::file::BUSY_WAIT).
impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Failure {
        if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) {
            let waited = crate::subjects::observe::file::BUSY_WAIT.as_secs();
            return Failure::timeout(
                format!("the file free within {waited} s"),
                format!("SQLite error: {e}"),
            );
        }
        Failure::fail("a readable SQLite file", format!("SQLite error: {e}"))
    }
}
