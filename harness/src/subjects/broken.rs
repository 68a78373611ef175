//! Deliberately broken ukue programs, to show that the suite catches
//! bugs. Each is the reference running an edited FORMAT.md ([`BUGS`]), or
//! the reference's command line with one edit of its own ([`CLI_BUGS`]);
//! `ukue-broken` (the command line) and `ukue-driver` (a step driver) pick
//! the edit named by the `UKUE_BROKEN` variable (crate::commands).

use std::sync::Arc;

use ukue::cli::args::Cmd;
use ukue::worker::Outcome;
use ukue::{Claimed, Spec, Stmt};

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
    pub serve: ServeFlaw,
}

/// What a broken `serve` does wrong beyond the statements it runs: each is
/// a layer of the harness's around the reference's API, or an edited
/// option (crate::subjects::broken_serve); the reference has none of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeFlaw {
    None,
    /// Requests with this method to paths under this prefix are served
    /// without the token.
    Unauthenticated {
        method: &'static str,
        prefix: &'static str,
    },
    /// Bodies of any size are read.
    NoBodyLimit,
    /// A claim runs on when its client has left, and the job it takes
    /// stays held by nobody until the lease runs out.
    KeepsAbandonedClaims,
    /// A claim runs on when its client has left, and the job it takes is
    /// finished (deleted) as if that client had done it.
    FinishesAbandonedClaims,
    /// A request with a method no endpoint has is refused before its body
    /// is read, and the connection closed without a word.
    RefusesUnread,
}

/// A server without flaws of its own.
const SOUND: ServeFlaw = ServeFlaw::None;

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
        // Not `WHERE 0 AND …`: the statements name the leases index, and
        // SQLite then finds no plan ("no query solution"), so every claim
        // failed and nothing ran at all. A lease before 1970 never is.
        edits: &[
            (Stmt::ReapDead, "lease_until <= :now", "lease_until < 0"),
            (Stmt::ReapReady, "lease_until <= :now", "lease_until < 0"),
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
        name: "short-token",
        what: "a claim stores only the first 8 hex digits of its token: 32 bits, not at least 128",
        edits: &[
            (Stmt::Take, "token = :token", "token = substr(:token, 1, 8)"),
            (Stmt::FinishDelete, "AND token = :token", "AND token = substr(:token, 1, 8)"),
            (Stmt::FinishKeep, "AND token = :token", "AND token = substr(:token, 1, 8)"),
            (Stmt::Fail, "AND token = :token", "AND token = substr(:token, 1, 8)"),
            (Stmt::Renew, "AND token = :token", "AND token = substr(:token, 1, 8)"),
            (Stmt::Release, "AND token = :token", "AND token = substr(:token, 1, 8)"),
        ],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "no-busy-timeout",
        what: "sets no busy timeout: a command that finds the file locked by another writer fails at once",
        edits: &[(Stmt::SetBusyTimeout, "= 5000", "= 0")],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "default-layout-only",
        what:
            "reads the version only from a file of 4096-byte pages in UTF-8 (SQLite's defaults): refuses any \
               other page size or text encoding as a file without a version",
        edits: &[(
            Stmt::ReadVersion,
            "WHERE key = 'format_version'",
            "WHERE key = 'format_version' AND (SELECT page_size FROM pragma_page_size) = 4096 \
             AND (SELECT encoding FROM pragma_encoding) = 'UTF-8'",
        )],
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
        serve: ServeFlaw::Unauthenticated { method: "DELETE", prefix: "/v1/jobs/" },
    },
    Bug {
        name: "serve-no-body-limit",
        what: "serve reads request bodies of any size",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::NoBodyLimit,
    },
    Bug {
        name: "serve-keeps-abandoned-claims",
        what: "a waiting claim whose client has left runs on, and the job it then takes stays held by \
               nobody until its lease runs out",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::KeepsAbandonedClaims,
    },
    Bug {
        name: "serve-finishes-abandoned-claims",
        what: "a waiting claim whose client has left runs on, and the job it then takes is finished \
               (deleted) unrun",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::FinishesAbandonedClaims,
    },
    Bug {
        name: "serve-refuses-unread",
        what: "serve refuses a request with a method no endpoint has (405) before it reads the body, and closes \
               the connection without Connection: close (as the reference did before it read every body first)",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::RefusesUnread,
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

/// A bug of the command line (spec/COMMAND.md) that no statement of
/// FORMAT.md makes: `ukue-broken` runs the reference's command line with
/// this one edit.
pub struct CliBug {
    pub name: &'static str,
    /// The COMMAND.md item it breaks, and how.
    pub what: &'static str,
    pub edit: CliEdit,
}

/// Where a [`CliBug`] edits the reference's command line.
#[derive(Clone, Copy)]
pub enum CliEdit {
    /// The parsed command line, before the command runs (a flag ignored is
    /// a flag set back to its default).
    Args(fn(&mut Cmd)),
    /// Each job, as `work` hands it to its command (its payload on stdin,
    /// its id and attempt in the environment).
    Job(fn(&mut Claimed)),
    /// What `work` makes of the end of a job's command.
    Outcome(fn(Outcome) -> Outcome),
    /// What a command (`list`, `show`…, named first) prints on stdout.
    Stdout(fn(&str, Vec<u8>) -> Vec<u8>),
}

pub const CLI_BUGS: &[CliBug] = &[
    CliBug {
        name: "serial-work",
        what: "work.concurrency: `work --concurrency N` runs one command at a time",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.concurrency = 1;
            }
        }),
    },
    CliBug {
        name: "no-grace",
        what: "work.stop: on SIGTERM `work` stops its running commands at once, as if `--grace 0`",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.grace = std::time::Duration::ZERO;
            }
        }),
    },
    CliBug {
        name: "short-stdin",
        what: "work.stdin: `work` hands a command only the first 4 KiB of a larger payload on its stdin",
        edit: CliEdit::Job(|job| job.payload.truncate(4096)),
    },
    CliBug {
        name: "drops-empty-args",
        what: "work.command-untouched: `work` drops the empty arguments of COMMAND",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.command.retain(|a| !a.is_empty());
            }
        }),
    },
    CliBug {
        name: "command-found-late",
        what: "work.command-not-found: `work` looks for COMMAND only as it runs a job (through `env`), so a \
               command that cannot run fails every job it claims, as the reference once did",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.command.insert(0, "env".into());
            }
        }),
    },
    CliBug {
        name: "env-without-path-home",
        what: "work.env-inherited: COMMAND runs without the worker's PATH and HOME (through `env -u`)",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                let unset = ["env", "-u", "PATH", "-u", "HOME"].map(std::ffi::OsString::from);
                args.command.splice(0..0, unset);
            }
        }),
    },
    CliBug {
        name: "signal-finishes",
        what: "work.exit-other: a command killed by a signal finishes its job",
        edit: CliEdit::Outcome(|outcome| match outcome {
            Outcome::Fail { error, .. } if error.starts_with("killed by signal") => Outcome::Finish,
            other => other,
        }),
    },
    CliBug {
        name: "blank-last-error",
        what: "work.last-error: a failed attempt leaves an empty last_error",
        edit: CliEdit::Outcome(|outcome| match outcome {
            Outcome::Fail { retry, .. } => Outcome::Fail { error: String::new(), retry },
            other => other,
        }),
    },
    CliBug {
        name: "status-only-error",
        what: "work.last-error-stderr: last_error holds the exit status and nothing of the command's stderr",
        edit: CliEdit::Outcome(|outcome| match outcome {
            Outcome::Fail { error, retry } => {
                Outcome::Fail { error: error.split(": ").next().unwrap_or_default().to_string(), retry }
            }
            other => other,
        }),
    },
    CliBug {
        name: "timeout-unnamed",
        what: "work.timeout-reason: a timed-out attempt's last_error says only that it was stopped",
        edit: CliEdit::Outcome(|outcome| match outcome {
            Outcome::Fail { error, retry } => {
                Outcome::Fail { error: error.replace("timed out", "stopped"), retry }
            }
            other => other,
        }),
    },
    CliBug {
        name: "extra-slot",
        what: "work.concurrency: `work --concurrency N` runs up to N+1 commands at once",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.concurrency = args.concurrency.saturating_add(1);
            }
        }),
    },
    CliBug {
        name: "lease-ignored",
        what: "work.lease: `--lease` is ignored; every claim's lease is the default minute",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.lease = std::time::Duration::from_secs(60);
            }
        }),
    },
    CliBug {
        name: "poll-ignored",
        what: "work.poll: `--poll` is ignored; an idle worker looks for jobs every second",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.poll = std::time::Duration::from_secs(1);
            }
        }),
    },
    CliBug {
        name: "loud-quiet",
        what: "work.quiet: `--quiet` is ignored; the worker reports every job",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.quiet = false;
            }
        }),
    },
];

pub fn bug(name: &str) -> Option<&'static Bug> {
    BUGS.iter().find(|b| b.name == name)
}

pub fn cli_bug(name: &str) -> Option<&'static CliBug> {
    CLI_BUGS.iter().find(|b| b.name == name)
}

/// Every bug's name, for a message: `reversed-priority, finish-without-token, …`.
pub fn names() -> String {
    BUGS.iter()
        .map(|b| b.name)
        .chain(ADD_BUGS.iter().map(|(name, _)| *name))
        .chain(CLI_BUGS.iter().map(|b| b.name))
        .collect::<Vec<_>>()
        .join(", ")
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
    fn bug_names_are_unique() {
        let mut names: Vec<&str> = super::names().leak().split(", ").collect();
        let all = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all, "a bug name used twice");
        for bug in super::CLI_BUGS {
            let item = bug.what.split(':').next().unwrap_or_default();
            assert!(crate::spec::title(item).is_some(), "{}: COMMAND.md has no item {item}", bug.name);
        }
    }

    #[test]
    fn every_bug_still_applies() {
        for bug in super::BUGS {
            let spec = super::spec(bug).unwrap();
            let flawed = bug.serve != super::ServeFlaw::None;
            assert!(flawed || *spec != *ukue::Spec::builtin(), "{} changes nothing", bug.name);
        }
    }
}
