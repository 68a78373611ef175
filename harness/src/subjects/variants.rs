//! Legal variants: correct programs that differ from the reference. Each
//! takes the other side of choices that FORMAT.md and COMMAND.md leave
//! open ("may", "either", an item that allows two behaviours), or leaves a
//! `should` item undone, or is slow. The suite must pass every one of them
//! on every `must` case (harness/tests/variants.rs); `ukue-variant` runs
//! the one that `UKUE_VARIANT=NAME` names (crate::commands::variant), and
//! `ukue-conformance coverage` lists which variant takes the other side of
//! each choice and each `should` item.
//!
//! A variant is a set of [`Choice`]s; `all-other-choices` holds every
//! one of them at once, so that one run of the whole suite meets them
//! together.

use std::sync::Arc;

use ukue::{Spec, Stmt};

/// One choice a variant makes where the reference makes the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    // FORMAT.md's steps, as edited statements.
    /// §5.8: a release sets `run_at` to now, as the published command does.
    ReleaseSetsRunAt,
    /// §5.6: a backoff of 15 s × the attempt, at most 10 min, plus up to a
    /// tenth more at random.
    OtherBackoff,
    /// §5.6: a backoff of a fraction of a second, so that a failed job runs
    /// again while a case still looks.
    ShortBackoff,
    /// retry.ids-named: `retry ID...` prints how many, not the ids.
    RetryCountsOnly,
    /// args.duration-range: `--delay` past a century is refused (exit 1),
    /// short of Go's limit.
    DelaysUpToACentury,
    /// §5.4: the reaped job's `last_error` in other words.
    OtherLeaseNote,
    /// §5.4: a token of 64 characters (upper-case hex, then lower-case).
    LongToken,
    /// §5.4: no look without the write lock before a claim.
    NoLook,
    /// §2.3: `format_version` read as Go's `strconv.Atoi` does (`+1` is 1).
    VersionPlusSign,
    /// §3.2: the tables without the four indexes ("other programs need
    /// not create them").
    NoIndexes,
    // The command line.
    /// json.state: a ready job whose `run_at` is ahead is shown `delayed`.
    DelayedShown,
    /// json.last-error: a job that never failed shows `""`, not null.
    EmptyLastError,
    /// retry.not-dead, delete.missing: stop at the first bad id.
    StopsAtFirstBadId,
    /// list.limit-most: a limit over 1000 is taken as 1000.
    ListLimitTaken,
    /// add.attempts-default: `--attempts 0` is the default, 10.
    AttemptsZeroDefault,
    /// serve.max-body: a `--max-body` under 1 is the default.
    MaxBodyZeroDefault,
    /// A value of the right kind but out of range (a concurrency of 0, a
    /// lease under 3 ms, a poll of 0, a negative grace, a list state, a
    /// queue name) is an error (exit 1), not a usage error.
    RangeErrorsExit1,
    /// stats.text, list.text, show.text: other layouts.
    OtherTextLayouts,
    /// text.escape-form: control characters written as `\u001b`, as JSON
    /// writes them, not `\x1b`.
    JsonEscapes,
    /// Every message in other words, but what items fix.
    OtherWording,
    /// exit.usage-once: a usage error's message printed twice.
    UsageTwice,
    /// exit.help: help goes to stderr with exit status 2.
    HelpOnStderr,
    /// args.equals: `--flag=value` is a usage error.
    NoEqualsFlags,
    /// work.last-error-stderr: `last_error` holds the exit status only.
    StatusOnlyError,
    /// work.timeout-reason: a timed-out attempt's `last_error` says only
    /// that it was stopped.
    TimeoutUnnamed,
    /// Slowness: each job's command starts 100 ms late.
    WorkLate,
    // serve.
    /// Slowness: every request is answered 150 ms late.
    ServeLate,
    /// http.claim-left-gives-back: a waiting claim runs on when its client
    /// leaves; the job it takes comes back when its lease runs out.
    KeepsAbandonedClaims,
    /// http.unknown-field: unknown keys are ignored.
    UnknownFieldsAccepted,
    /// http.status-400 … 413: other 4xx statuses.
    OtherStatuses,
    /// http.answer-headers: answers say `Content-Type: text/plain` and no
    /// `Cache-Control`.
    NoAnswerHeaders,
}

use Choice::*;

/// Every choice: `all-other-choices`. They are compatible: each edits
/// another statement, flag, output or layer, and those that meet (the
/// wording of a usage error printed twice, a late command whose outcome
/// is edited) compose.
pub const ALL_CHOICES: &[Choice] = &[
    ReleaseSetsRunAt,
    ShortBackoff,
    RetryCountsOnly,
    DelaysUpToACentury,
    OtherLeaseNote,
    LongToken,
    NoLook,
    VersionPlusSign,
    NoIndexes,
    DelayedShown,
    EmptyLastError,
    StopsAtFirstBadId,
    ListLimitTaken,
    AttemptsZeroDefault,
    MaxBodyZeroDefault,
    RangeErrorsExit1,
    OtherTextLayouts,
    JsonEscapes,
    OtherWording,
    UsageTwice,
    HelpOnStderr,
    NoEqualsFlags,
    StatusOnlyError,
    TimeoutUnnamed,
    WorkLate,
    ServeLate,
    KeepsAbandonedClaims,
    UnknownFieldsAccepted,
    OtherStatuses,
    NoAnswerHeaders,
];

/// A correct program that differs from the reference.
pub struct Variant {
    pub name: &'static str,
    /// The rules whose other side it takes: COMMAND.md items (`json.state`)
    /// and FORMAT.md sections or sentences (`5.8`).
    pub items: &'static [&'static str],
    /// `must` rules its choices come near and that it keeps (text.escape
    /// for another layout of text): the cases that check them are run
    /// against it too.
    pub touches: &'static [&'static str],
    pub what: &'static str,
    pub choices: &'static [Choice],
}

pub const ALL_OTHER_CHOICES: &str = "all-other-choices";

/// Choices that `all-other-choices` leaves out, each for another it takes
/// in the same place.
pub const NOT_IN_ALL: &[(Choice, Choice)] = &[(OtherBackoff, ShortBackoff)];

pub const VARIANTS: &[Variant] = &[
    Variant {
        name: "delayed-shown-delayed",
        items: &["json.state", "5.10"],
        touches: &["json.job", "list.state", "http.list", "http.show"],
        what: "list --json, show --json and the API's JOBs show a ready job whose run_at is ahead as `delayed`, \
               as the published command does",
        choices: &[DelayedShown],
    },
    Variant {
        name: "release-sets-run-at",
        items: &["5.8", "http.release", "work.stop-grace-end"],
        touches: &["work.stop", "http.claim-wait"],
        what: "a release (a worker's give-back, the API's release) sets run_at to now, as the published command \
               does; the reference keeps it",
        choices: &[ReleaseSetsRunAt],
    },
    Variant {
        name: "stops-at-first-bad-id",
        items: &["retry.not-dead", "delete.missing"],
        touches: &["retry.ids", "delete.ids"],
        what: "retry and delete stop at the first id that is not a dead job's (or no job's), as the published \
               command does; the reference goes on through the rest",
        choices: &[StopsAtFirstBadId],
    },
    Variant {
        name: "list-limit-taken-as-1000",
        items: &["list.limit-most"],
        touches: &["list.limit"],
        what: "list --limit over 1000 lists 1000 jobs; the reference refuses it",
        choices: &[ListLimitTaken],
    },
    Variant {
        name: "attempts-zero-default",
        items: &["add.attempts-default", "add.attempts-zero-refused"],
        touches: &["add.attempts", "http.add-max-attempts"],
        what: "add --attempts 0 adds a job of 10 attempts, as the published command does; the reference refuses it",
        choices: &[AttemptsZeroDefault],
    },
    Variant {
        name: "max-body-zero-default",
        items: &["serve.max-body"],
        touches: &["http.max-body"],
        what: "serve --max-body under 1 takes the default, as the published command does; the reference refuses it",
        choices: &[MaxBodyZeroDefault],
    },
    Variant {
        name: "other-backoff",
        items: &["5.6"],
        touches: &["work.exit-other", "http.fail-retry-in"],
        what: "a failed attempt (and a reaped lease) is due again after 15 s × its attempt, at most 10 min, plus \
               up to a tenth more; the reference doubles from 10 s up to an hour",
        choices: &[OtherBackoff],
    },
    Variant {
        name: "retry-counts-only",
        items: &["retry.ids-named"],
        touches: &["retry.ids", "retry.all"],
        what: "`retry ID...` says how many jobs it sent back, not which",
        choices: &[RetryCountsOnly],
    },
    Variant {
        name: "delays-up-to-a-century",
        items: &["args.duration-range"],
        touches: &["args.duration", "args.duration-long", "add.delay"],
        what: "`add --delay` past 100 years is refused (exit 1), short of Go's limit of 2562047h",
        choices: &[DelaysUpToACentury],
    },
    Variant {
        name: "short-backoff",
        items: &["5.6"],
        touches: &["5.4", "5.5", "work.exit-other", "work.timeout", "work.last-error", "http.fail-retry-in", "http.lease-lost"],
        what: "a failed attempt (and a reaped lease) is due again after 200 ms × its attempt, at most 1 s: a \
               failed job runs again while a case still looks",
        choices: &[ShortBackoff],
    },
    Variant {
        name: "other-lease-note",
        items: &["5.4"],
        touches: &["http.lease-lost", "work.last-error"],
        what: "a reaped job's last_error says `worker lost: its lease ran out`",
        choices: &[OtherLeaseNote],
    },
    Variant {
        name: "long-token",
        items: &["5.4/must-be-a-fresh-random"],
        touches: &["http.held", "http.claim", "http.lease-lost", "http.ack"],
        what: "a claim's token is 64 characters, its 128 random bits in upper-case hex then lower-case; the \
               reference writes 32 lower-case hex digits",
        choices: &[LongToken],
    },
    Variant {
        name: "no-look-before-claim",
        items: &["5.4"],
        touches: &["http.claim-wait", "work.poll"],
        what: "every claim takes the write lock at once, without a look first",
        choices: &[NoLook],
    },
    Variant {
        name: "version-plus-sign",
        items: &["2.3"],
        touches: &["file.newer-version"],
        what: "format_version is read as Go's strconv.Atoi does: `+1` is version 1, as the published command reads it",
        choices: &[VersionPlusSign],
    },
    Variant {
        name: "no-indexes",
        items: &["3.2"],
        touches: &["file.add-tables", "init.creates"],
        what: "init and add make the tables without the four indexes, which other programs need not create \
               (the reference runs its statements without INDEXED BY on such a file)",
        choices: &[NoIndexes],
    },
    Variant {
        name: "empty-last-error",
        items: &["json.last-error", "http.claim"],
        touches: &["json.job", "http.list", "http.show"],
        what: "a job that never failed shows last_error `\"\"`, not null, in list --json, show --json and the API",
        choices: &[EmptyLastError],
    },
    Variant {
        name: "range-errors-exit-1",
        items: &[
            "exit.error",
            "args.queue",
            "work.concurrency-bad",
            "work.lease-bad",
            "work.poll-bad",
            "work.grace-bad",
            "list.state-bad",
        ],
        touches: &["exit.usage", "add.queue"],
        what: "a value of the right kind but out of range (a queue name, --concurrency 0, --lease 1ms, --poll 0, \
               a negative --grace, list --state bogus) is an error (exit 1), not a usage error (exit 2)",
        choices: &[RangeErrorsExit1],
    },
    Variant {
        name: "other-text-layouts",
        items: &["stats.text", "list.text", "show.text"],
        touches: &["text.escape"],
        what: "stats, list and show without --json print other layouts: stats a line per queue, list a table \
               of other columns in another order with no error column, show fewer fields in another order \
               (control characters still escaped)",
        choices: &[OtherTextLayouts],
    },
    Variant {
        name: "escapes-as-json",
        items: &["text.escape-form"],
        touches: &["text.escape"],
        what: "the text output of stats, list and show, and error messages, write each control character as \
               JSON does (`\\u001b`, `\\u009b`), not as `\\x1b`: none reaches the terminal raw",
        choices: &[JsonEscapes],
    },
    Variant {
        name: "other-wording",
        items: &[
            "retry.ids",
            "retry.all",
            "purge.state",
            "exit.error",
            "exit.error-prefix",
            "exit.usage",
            "file.newer-version-message",
            "init.prints",
        ],
        touches: &["work.command-not-found", "work.quiet", "work.output", "init.creates", "version.output"],
        what: "every message in other words (errors start `error: `, not `ukue COMMAND: `; a newer version's \
               refusal names no version; init says it made the file), and work's own lines too",
        choices: &[OtherWording],
    },
    Variant {
        name: "usage-printed-twice",
        items: &["exit.usage-once"],
        touches: &["exit.usage"],
        what: "a usage error's message is printed twice",
        choices: &[UsageTwice],
    },
    Variant {
        name: "help-on-stderr",
        items: &["exit.help"],
        touches: &["exit.no-command", "exit.unknown-command"],
        what: "help (`ukue -h`, `ukue COMMAND --help`) goes to stderr with exit status 2",
        choices: &[HelpOnStderr],
    },
    Variant {
        name: "no-equals-flags",
        items: &["args.equals"],
        touches: &["args.options-anywhere", "args.double-dash"],
        what: "`--flag=value` is a usage error: only `--flag value` is read",
        choices: &[NoEqualsFlags],
    },
    Variant {
        name: "status-only-last-error",
        items: &["work.last-error-stderr", "work.timeout-reason"],
        touches: &["work.last-error", "work.timeout"],
        what: "a failed attempt's last_error holds its exit status, nothing of stderr, and a timed-out one says \
               only that it was stopped",
        choices: &[StatusOnlyError, TimeoutUnnamed],
    },
    Variant {
        name: "work-100ms-late",
        items: &["work.concurrency", "work.poll"],
        touches: &["work.stop", "work.timeout", "work.renew", "work.lease"],
        what: "work starts each job's command 100 ms after it claims the job",
        choices: &[WorkLate],
    },
    Variant {
        name: "serve-150ms-late",
        items: &["http.claim-wait", "http.fail"],
        touches: &["http.claim-left", "http.lease-lost", "serve.stop", "http.release"],
        what: "serve answers every request 150 ms late",
        choices: &[ServeLate],
    },
    Variant {
        name: "serve-keeps-abandoned-claims",
        items: &["http.claim-left", "http.claim-left-gives-back"],
        touches: &[],
        what: "a waiting claim whose client leaves runs on; the job it takes comes back once its lease runs out",
        choices: &[KeepsAbandonedClaims],
    },
    Variant {
        name: "serve-ignores-unknown-fields",
        items: &["http.unknown-field"],
        touches: &["http.bad-json", "http.add", "http.payload-in"],
        what: "serve ignores keys it does not know in a request body",
        choices: &[UnknownFieldsAccepted],
    },
    Variant {
        name: "serve-other-statuses",
        items: &[
            "http.status-400",
            "http.status-401",
            "http.status-403",
            "http.status-404",
            "http.status-405",
            "http.status-413",
        ],
        touches: &["http.refusal-4xx", "http.unknown-job", "http.unknown-path", "http.token", "http.hosts", "http.cross-site", "http.max-body"],
        what: "serve refuses with other 4xx statuses: 422 for bad input, 403 without WWW-Authenticate for a \
               token, 421 for another host, 410 for an unknown job and 400 for an unknown path, 400 without \
               Allow for a method, 400 for a body over the limit",
        choices: &[OtherStatuses],
    },
    Variant {
        name: "serve-plain-headers",
        items: &["http.answer-headers"],
        touches: &["http.json-answer", "http.health"],
        what: "serve's answers say Content-Type: text/plain and no Cache-Control",
        choices: &[NoAnswerHeaders],
    },
    Variant {
        name: ALL_OTHER_CHOICES,
        items: &[],
        touches: &[],
        what: "every choice of the variants above at once",
        choices: ALL_CHOICES,
    },
];

/// The `should` rules no variant leaves undone, and why.
pub const NOT_UNDONE: &[(&str, &str)] = &[
    ("1.4/should-go-through-ukue-serve", "advice to whoever deploys programs: no program's behaviour"),
    ("6.3/should-carry-its-own-check", "advice to applications: no program's behaviour"),
    (
        "2.3/should-refuse-a-file-whose",
        "COMMAND.md file.newer-version (a must) holds the ukue command to the refusal",
    ),
    (
        "4.1/should-set-a-busy-timeout",
        "not yet: synchronous = FULL is the published command's promise (FORMAT.md §6.1, durability/*), and a \
         variant without a busy timeout is ukue-broken's no-busy-timeout",
    ),
    (
        "add.refused-writes-nothing",
        "COMMAND.md's `refused` (creates nothing) already asks it of every refused add: a variant that left a \
         file behind would break must items",
    ),
];

/// The variant named `name`.
pub fn named(name: &str) -> Option<&'static Variant> {
    VARIANTS.iter().find(|v| v.name == name)
}

/// Every variant's name, for a message.
pub fn names() -> String {
    VARIANTS.iter().map(|v| v.name).collect::<Vec<_>>().join(", ")
}

/// The variants that take the other side of `rule` (all-other-choices,
/// which takes every side, left out).
pub fn taking(rule: &str) -> Vec<&'static str> {
    VARIANTS.iter().filter(|v| v.items.contains(&rule)).map(|v| v.name).collect()
}

impl Variant {
    pub fn has(&self, choice: Choice) -> bool {
        self.choices.contains(&choice)
    }

    /// The builtin FORMAT.md with this variant's statements; an edit that
    /// no longer applies is an error, so that the list cannot rot as
    /// FORMAT.md changes.
    pub fn spec(&self) -> Result<Arc<Spec>, String> {
        let mut spec = (*Spec::builtin()).clone();
        for &(choice, stmt, text) in STATEMENTS_REPLACED {
            if self.has(choice) {
                spec = spec.with(stmt, text);
            }
        }
        for &(choice, stmt, from, to) in STATEMENT_EDITS {
            if !self.has(choice) {
                continue;
            }
            let text = spec.sql(stmt).to_string();
            if !text.contains(from) {
                return Err(format!(
                    "variant {}: statement {} no longer contains {from:?}",
                    self.name,
                    stmt.name()
                ));
            }
            spec = spec.with(stmt, text.replace(from, to));
        }
        Ok(Arc::new(spec))
    }
}

/// The backoff of FORMAT.md §5.6 and the reap, and the variant's own.
const BACKOFF: &str = "min(10000 << min(max(attempts - 1, 0), 20), 3600000)";
const OTHER_BACKOFF: &str = "min(15000 * max(attempts, 1), 600000)";
const SHORT_BACKOFF: &str = "min(200 * max(attempts, 1), 1000)";
const LEASE_NOTE: &str = "'lease expired (attempt ' || attempts || ' of ' || max_attempts || ')'";
const OTHER_LEASE_NOTE: &str = "'worker lost: its lease ran out'";

/// (choice, statement, text, replacement): every occurrence is replaced.
const STATEMENT_EDITS: &[(Choice, Stmt, &str, &str)] = &[
    (ReleaseSetsRunAt, Stmt::Release, "SET state = 'ready',", "SET state = 'ready', run_at = :now,"),
    (OtherBackoff, Stmt::Fail, BACKOFF, OTHER_BACKOFF),
    (OtherBackoff, Stmt::ReapReady, BACKOFF, OTHER_BACKOFF),
    (ShortBackoff, Stmt::Fail, BACKOFF, SHORT_BACKOFF),
    (ShortBackoff, Stmt::ReapReady, BACKOFF, SHORT_BACKOFF),
    (OtherLeaseNote, Stmt::ReapDead, LEASE_NOTE, OTHER_LEASE_NOTE),
    (OtherLeaseNote, Stmt::ReapReady, LEASE_NOTE, OTHER_LEASE_NOTE),
    (LongToken, Stmt::Take, "token = :token", LONG_TOKEN_SET),
    (LongToken, Stmt::FinishDelete, "AND token = :token", LONG_TOKEN_MATCH),
    (LongToken, Stmt::FinishKeep, "AND token = :token", LONG_TOKEN_MATCH),
    (LongToken, Stmt::Fail, "AND token = :token", LONG_TOKEN_MATCH),
    (LongToken, Stmt::Renew, "AND token = :token", LONG_TOKEN_MATCH),
    (LongToken, Stmt::Release, "AND token = :token", LONG_TOKEN_MATCH),
    (
        VersionPlusSign,
        Stmt::ReadVersion,
        "SELECT value FROM",
        "SELECT CASE WHEN value GLOB '+[0-9]*' THEN substr(value, 2) ELSE value END FROM",
    ),
];

/// The token as the variant stores it: the 32 hex digits the library draws
/// (128 random bits), in upper case, then as they are. The API hands out
/// the stored token (crate::subjects::variant_serve).
const LONG_TOKEN_SET: &str = "token = upper(:token) || :token";
const LONG_TOKEN_MATCH: &str = "AND token = upper(:token) || :token";

/// (choice, statement, its whole new text).
const STATEMENTS_REPLACED: &[(Choice, Stmt, &str)] = &[
    // The look always answers "due", so that every claim goes on to BEGIN
    // IMMEDIATE (the claim's own look inside it says when nothing is).
    (NoLook, Stmt::Look, "SELECT 0 * length(:queue), 0"),
    // A no-op (SQLite ignores unknown pragmas) in place of each index.
    (NoIndexes, Stmt::CreateIndexDue, NOTHING),
    (NoIndexes, Stmt::CreateIndexNext, NOTHING),
    (NoIndexes, Stmt::CreateIndexLeases, NOTHING),
    (NoIndexes, Stmt::CreateIndexState, NOTHING),
];

const NOTHING: &str = "PRAGMA ukue_variant_nothing";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_rule_exists() {
        let mut names: Vec<&str> = VARIANTS.iter().map(|v| v.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), VARIANTS.len(), "a variant name used twice");
        let rules: Vec<&str> = crate::spec::coverage::suite()
            .iter()
            .flat_map(|c| &c.rules)
            .map(|r| r.rule.id.as_str())
            .collect();
        for v in VARIANTS {
            for item in v.items.iter().chain(v.touches) {
                assert!(rules.contains(item), "{}: no rule {item} in FORMAT.md or COMMAND.md", v.name);
            }
        }
    }

    #[test]
    fn every_should_rule_is_left_undone_by_a_variant_or_says_why_not() {
        use crate::spec::rules::RuleKind;
        for r in crate::spec::coverage::suite().iter().flat_map(|c| &c.rules) {
            if r.rule.kind != RuleKind::Should {
                continue;
            }
            let why = NOT_UNDONE.iter().any(|(id, _)| *id == r.rule.id);
            assert!(
                taking(&r.rule.id).is_empty() == why,
                "{}: a variant, or a reason in NOT_UNDONE",
                r.rule.id
            );
        }
    }

    #[test]
    fn every_variant_still_applies_and_all_other_choices_holds_every_choice() {
        for v in VARIANTS {
            v.spec().unwrap();
        }
        let all = named(ALL_OTHER_CHOICES).unwrap();
        for v in VARIANTS {
            for c in v.choices {
                let instead = NOT_IN_ALL.iter().find(|(left, _)| left == c).map(|(_, taken)| *taken);
                assert!(all.has(instead.unwrap_or(*c)), "{}: {c:?} is not in {ALL_OTHER_CHOICES}", v.name);
            }
        }
        for c in ALL_CHOICES {
            assert!(
                VARIANTS.iter().any(|v| v.name != ALL_OTHER_CHOICES && v.has(*c)),
                "{c:?} alone in no variant"
            );
        }
    }
}
