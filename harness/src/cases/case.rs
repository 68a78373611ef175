//! A conformance case: an id, the FORMAT.md rule it checks, and a function
//! that drives subjects through a [`Ctx`] and says what it expected and saw.

use std::fmt;

use crate::subjects::ctx::Ctx;
use crate::subjects::Failure;

/// What a case needs beyond the subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    /// python3, to run add_job.py.
    pub python: bool,
    /// strace, to see the subject's system calls.
    pub strace: bool,
    /// The subject's `serve` (the http family); skipped when it has none.
    pub serve: bool,
    /// Time: it waits 30 s or more by design, so it runs only with
    /// `--slow` (a release check, the project's own tests).
    pub slow: bool,
    /// It generates runs for `--generate-for`, and its time limit grows by as
    /// much.
    pub generated: bool,
    /// A second implementation, the reference, to compare the subject with:
    /// against itself the case tests nothing, so a run without a reference
    /// (or whose reference is the subject) skips it.
    pub reference: bool,
}

/// How binding a case's rule is: the published format and command line
/// (`must`), or good practice beyond them (`should`). A `should` case that
/// does not pass is a warning, and fails the run only under `--strict`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Must,
    Should,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "must",
            Level::Should => "should",
        }
    }
}

#[derive(Clone, Copy)]
pub struct Case {
    /// Stable id, `family/name`.
    pub id: &'static str,
    /// The FORMAT.md section it checks, such as `2.3` (see [`crate::spec`]).
    pub rule: &'static str,
    /// One line: what the case shows.
    pub summary: &'static str,
    pub needs: Needs,
    pub level: Level,
    pub run: fn(&mut Ctx) -> CaseResult,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("id", &self.id)
            .field("rule", &self.rule)
            .field("level", &self.level)
            .finish()
    }
}

impl Case {
    pub fn family(&self) -> &'static str {
        self.id.split('/').next().unwrap_or(self.id)
    }

    /// Where a case made from data is defined
    /// (`fixtures/refusal/manifest.json:14`); None for a case written as
    /// code.
    pub fn source(&self) -> Option<String> {
        super::fixture::source(self.id)
    }
}

pub type CaseResult = Result<(), Failure>;

/// Fails the case unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $expected:expr, $seen:expr $(,)?) => {
        if !$cond {
            return Err($crate::subjects::Failure::fail($expected, $seen));
        }
    };
}

/// Fails the case unless the two are equal, showing both in the
/// contract's terms ([`Shown`](crate::shown::Shown); a time in milliseconds
/// as a [`Time`](crate::shown::Time)).
#[macro_export]
macro_rules! ensure_eq {
    ($seen:expr, $expected:expr, $what:expr $(,)?) => {{
        let seen = $seen;
        let expected = $expected;
        if seen != expected {
            return Err($crate::subjects::Failure::fail(
                format!("{}: {}", $what, $crate::shown::Shown::shown(&expected)),
                format!("{}: {}", $what, $crate::shown::Shown::shown(&seen)),
            ));
        }
    }};
}
