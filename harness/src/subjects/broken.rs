//! Deliberately broken ukue programs, to show that the suite catches
//! bugs. Each is the reference running an edited FORMAT.md; `ukue-broken`
//! (the command line) and `ukue-driver` (a step driver) pick the edit
//! named by the `UKUE_BROKEN` variable (crate::commands).

use std::sync::Arc;

use ukue::cli::serve::Flaws;
use ukue::{Spec, Stmt};

/// A no-op that returns no rows and binds nothing (SQLite ignores
/// unknown pragmas).
const NOTHING: &str = "PRAGMA ukue_broken_nothing";

/// One bug: what it breaks, and the statements it edits.
pub struct Bug {
    pub name: &'static str,
    pub what: &'static str,
    /// (statement, text to find, replacement)
    pub edits: &'static [(Stmt, &'static str, &'static str)],
    /// Statements replaced whole.
    pub replaced: &'static [(Stmt, &'static str)],
    /// What its `serve` does wrong beyond the statements.
    pub serve: Flaws,
}

/// A server without flaws of its own.
const SOUND: Flaws = Flaws { unauthenticated: None, no_body_limit: false };

pub const BUGS: &[Bug] = &[
    Bug {
        name: "reversed-priority",
        what: "the claim picks the lowest priority first",
        edits: &[
            (Stmt::Pick, "SELECT max(priority)", "SELECT min(priority)"),
            (Stmt::Pick, "SELECT (SELECT max(priority)", "SELECT (SELECT min(priority)"),
            (Stmt::Pick, "priority < level.priority", "priority > level.priority"),
        ],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "finish-without-token",
        what: "finish does not check the token",
        edits: &[
            (Stmt::FinishDelete, "AND token = :token", "AND (token = :token OR 1)"),
            (Stmt::FinishKeep, "AND token = :token", "AND (token = :token OR 1)"),
        ],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "no-reaping",
        what: "a claim never reaps expired leases",
        edits: &[
            (Stmt::ReapDead, "WHERE state = 'running'", "WHERE 0 AND state = 'running'"),
            (Stmt::ReapReady, "WHERE state = 'running'", "WHERE 0 AND state = 'running'"),
        ],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "split-claim",
        what: "the claim reads and takes in separate transactions, and takes without checking the state",
        edits: &[(Stmt::Take, "WHERE id = :id AND state = 'ready'", "WHERE id = :id")],
        replaced: &[(Stmt::BeginImmediate, NOTHING), (Stmt::Commit, NOTHING), (Stmt::Rollback, NOTHING)],
        serve: SOUND,
    },
    Bug {
        name: "accepts-version-2",
        what: "any format_version is taken for 1",
        edits: &[(Stmt::ReadVersion, "SELECT value FROM", "SELECT '1' FROM")],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "uncounted-attempts",
        what: "a claim does not count the attempt",
        edits: &[(Stmt::Take, "attempts = attempts + 1", "attempts = attempts")],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "no-renew",
        what: "renew does not extend the lease",
        edits: &[(
            Stmt::Renew,
            "SET lease_until = :now + :lease",
            "SET lease_until = lease_until + 0 * (:now + :lease)",
        )],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "renew-without-token",
        what: "renew does not check the token",
        edits: &[(Stmt::Renew, "AND token = :token", "AND (token = :token OR 1)")],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "sync-normal",
        what: "commits are not synced before they are acknowledged",
        edits: &[(Stmt::SetSynchronous, "FULL", "NORMAL")],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "wal-before-checks",
        what: "sets WAL mode as it opens a file, before the refusal checks: a refused file in a \
               rollback-journal mode is changed (it replaces `synchronous = FULL`, SQLite's default anyway)",
        edits: &[],
        replaced: &[(Stmt::SetSynchronous, "PRAGMA journal_mode = WAL")],
        serve: SOUND,
    },
    Bug {
        name: "journal-off",
        what: "no -wal and no journal: a commit overwrites pages in place; a power cut leaves half of it \
               (each connection switches the journal off as it opens, in place of `synchronous = FULL`, \
               SQLite's default anyway)",
        edits: &[(Stmt::SetWal, "WAL", "OFF")],
        replaced: &[(Stmt::SetSynchronous, "PRAGMA journal_mode = OFF")],
        serve: SOUND,
    },
    Bug {
        name: "serve-unauthenticated-delete",
        what: "serve does not ask for the token on DELETE /v1/jobs/{id}",
        edits: &[],
        replaced: &[],
        serve: Flaws { unauthenticated: Some("DELETE /v1/jobs/{id}"), no_body_limit: false },
    },
    Bug {
        name: "serve-no-body-limit",
        what: "serve reads request bodies of any size",
        edits: &[],
        replaced: &[],
        serve: Flaws { unauthenticated: None, no_body_limit: true },
    },
];

/// Bugs of the `add` command itself, beyond what an edited statement can
/// do: `ukue-broken` runs them in place of the reference's `add`
/// (crate::commands::broken).
pub const ADD_BUGS: &[(&str, &str)] = &[(
    "split-add",
    "writes a new row in two transactions: first with an empty payload and a run_at far ahead (so that \
     no worker takes it), then, after 50 ms of other work, the payload and a run_at of now; a kill in \
     between leaves the row half-written",
)];

/// The bugs of the steps themselves, which every model run (and the
/// ops_vs_model fuzzer) must catch; the others are in opening, durability
/// or `serve`, or show only with several processes.
pub const STEP_BUGS: &[&str] = &[
    "renew-without-token",
    "finish-without-token",
    "no-reaping",
    "reversed-priority",
    "uncounted-attempts",
    "no-renew",
];

pub fn bug(name: &str) -> Option<&'static Bug> {
    BUGS.iter().find(|b| b.name == name)
}

/// Every bug's name, for a message: `reversed-priority, finish-without-token, …`.
pub fn names() -> String {
    BUGS.iter().map(|b| b.name).chain(ADD_BUGS.iter().map(|(name, _)| *name)).collect::<Vec<_>>().join(", ")
}

/// The builtin spec with `bug`'s edits; an edit that no longer applies is
/// an error, so the list cannot silently rot as FORMAT.md changes.
pub fn spec(bug: &Bug) -> Result<Arc<Spec>, String> {
    let builtin = Spec::builtin();
    let mut spec = (*builtin).clone();
    for (stmt, from, to) in bug.edits {
        let text = spec.sql(*stmt).to_string();
        if !text.contains(from) {
            return Err(format!("bug {}: statement {} no longer contains {from:?}", bug.name, stmt.name()));
        }
        spec = spec.with(*stmt, text.replacen(from, to, 1));
    }
    for (stmt, text) in bug.replaced {
        spec = spec.with(*stmt, *text);
    }
    Ok(Arc::new(spec))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_step_bug_is_a_bug() {
        for name in super::STEP_BUGS {
            assert!(super::bug(name).is_some(), "{name}");
        }
    }

    #[test]
    fn every_bug_still_applies() {
        for bug in super::BUGS {
            let spec = super::spec(bug).unwrap();
            let flawed = bug.serve.unauthenticated.is_some() || bug.serve.no_body_limit;
            assert!(flawed || *spec != *ukue::Spec::builtin(), "{} changes nothing", bug.name);
        }
    }
}
