//! Deliberately broken ukue programs, to show that the suite catches
//! bugs. Each is the reference running an edited FORMAT.md ([`BUGS`]), or
//! the reference's command line with one edit of its own ([`CLI_BUGS`]);
//! `ukue-broken` (the command line) and `ukue-driver` (a step driver) pick
//! the edit named by the `UKUE_BROKEN` variable (crate::commands).

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    /// A claim waits as long as its `wait` says, past 30 s.
    WaitUncapped,
    /// An add's negative `delay` (a number) is taken as 0.
    NegativeDelayZero,
    /// A retry of a job that is not dead answers 409, not 404.
    RetryNotDeadConflict,
    /// Durations given as numbers are read as milliseconds.
    DurationsInMilliseconds,
    /// A body without `Content-Type: application/json` is refused (415).
    JsonContentTypeOnly,
    /// A fail's `retry_in` is ignored: the backoff always.
    IgnoresRetryIn,
    /// A step's job id is read with its sign dropped: `/v1/jobs/-2/ack` acks job 2.
    IdSignDropped,
    /// A call about a held job whose lease has run out answers 409, though
    /// nobody has put the job back.
    ExpiredLeaseLost,
    /// A waiting claim looks when it comes and when its wait ends, not in
    /// between.
    LooksOnlyAtEnds,
    /// `GET /v1/jobs` without a limit lists 50 (the CLI's default).
    ListLimitFifty,
    /// `POST /v1/retry` ignores its `queue`.
    RetryAllIgnoresQueue,
    /// `--keep-done` is ignored.
    IgnoresKeepDone,
    /// Without a token, a Host whose port is not the server's is refused.
    HostPortChecked,
    /// With a token, a Host that names another machine is refused.
    HostsCheckedWithToken,
    /// The body limit is a byte short: a body of exactly `--max-body` is refused.
    BodyLimitOneShort,
    /// The token file's text is the token with its whitespace.
    UntrimmedTokenFile,
    /// On SIGINT or SIGTERM, serve exits with status 1.
    StopExitsNonZero,
    /// GET /v1/stats, /v1/jobs and /v1/jobs/{id} are answered from a
    /// cache of what the same request got up to 5 s before.
    StaleReads,
    /// A time of a whole second is answered without its `.000`.
    TimesWithoutZeroMillis,
    /// payload_base64 is answered without its padding.
    Base64Unpadded,
    /// A claim without `wait` waits 10 s.
    DefaultWait10s,
    /// A claim or an extend without `lease` holds the job for 30 s.
    DefaultLease30s,
    /// An add without `max_attempts` (or with 0) makes a job of 5 attempts.
    DefaultAttempts5,
    /// An add's priority of -100 or 100 is refused.
    PriorityEndsRefused,
}

/// A server without flaws of its own.
const SOUND: ServeFlaw = ServeFlaw::None;

impl ServeFlaw {
    /// Why no request to the API shows it, if none can: the serve_requests
    /// fuzzer drives the API in-process, and the http/* cases catch these.
    pub fn beyond_the_api(self) -> Option<&'static str> {
        match self {
            ServeFlaw::StopExitsNonZero => Some(
                "the exit status of the process that serves, after a signal: no answer of the API shows it",
            ),
            _ => None,
        }
    }
}

pub const BUGS: &[Bug] = &[
    Bug {
        name: "serve-wait-uncapped",
        what: "http.claim-wait-most: a claim waits as long as its `wait` asks, past 30 s",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::WaitUncapped,
    },
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
        name: "renew-from-old-end",
        what: "a renewal adds the lease to the old lease_until, not to now: a job whose worker dies waits many leases",
        edits: &[(
            Stmt::Renew,
            "SET lease_until = :now + :lease",
            "SET lease_until = lease_until + :lease + 0 * :now",
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
    Bug {
        name: "serve-negative-delay",
        what: "http.add-delay: an add with a negative delay is taken as due at once, not refused",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::NegativeDelayZero,
    },
    Bug {
        name: "serve-retry-conflict",
        what: "http.status-404: a retry of a job that is not dead answers 409",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::RetryNotDeadConflict,
    },
    Bug {
        name: "serve-milliseconds",
        what: "http.duration: durations given as numbers are read as milliseconds",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::DurationsInMilliseconds,
    },
    Bug {
        name: "serve-json-content-type-only",
        what: "http.any-content-type: a body without Content-Type: application/json (curl -d) is refused with 415",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::JsonContentTypeOnly,
    },
    Bug {
        name: "serve-id-sign-dropped",
        what: "http.id: the job id of a step's path (ack, fail, extend, release) is read with its sign dropped, so /v1/jobs/-2/ack acks job 2",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::IdSignDropped,
    },
    Bug {
        name: "serve-ignores-retry-in",
        what: "http.fail-retry-in: a fail's retry_in is ignored, the backoff taken always",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::IgnoresRetryIn,
    },
    Bug {
        name: "serve-expired-lease-lost",
        what: "http.lease-lost: an ack, fail, extend or release after the lease ran out answers 409, though nobody put the job back",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::ExpiredLeaseLost,
    },
    Bug {
        name: "serve-looks-only-at-ends",
        what: "http.claim-wait: a waiting claim looks for a job when it comes and when its wait ends, not in between",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::LooksOnlyAtEnds,
    },
    Bug {
        name: "serve-list-limit-50",
        what: "http.list-limit: GET /v1/jobs without a limit lists 50 jobs (the CLI's default), not 100",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::ListLimitFifty,
    },
    Bug {
        name: "serve-retry-all-queues",
        what: "http.retry-all: POST /v1/retry ignores its queue and retries every dead job",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::RetryAllIgnoresQueue,
    },
    Bug {
        name: "serve-ignores-keep-done",
        what: "serve.keep-done: serve --keep-done deletes acked jobs",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::IgnoresKeepDone,
    },
    Bug {
        name: "serve-host-port",
        what: "http.hosts: without a token, a request to localhost on another port than the server's (a tunnel's) is refused",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::HostPortChecked,
    },
    Bug {
        name: "serve-hosts-with-token",
        what: "http.hosts-token: with a token, a request addressed to another host name is refused",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::HostsCheckedWithToken,
    },
    Bug {
        name: "serve-body-limit-short",
        what: "http.max-body: a body of exactly --max-body bytes is refused",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::BodyLimitOneShort,
    },
    Bug {
        name: "serve-untrimmed-token",
        what: "serve.token: the token is the token file's text with its whitespace and line end",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::UntrimmedTokenFile,
    },
    Bug {
        name: "serve-stop-fails",
        what: "serve.stop: serve exits with status 1 when SIGINT or SIGTERM stops it",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::StopExitsNonZero,
    },
    Bug {
        name: "serve-stale-reads",
        what: "http.stats: GET /v1/stats, /v1/jobs and /v1/jobs/{id} answer what the same request got up to 5 s before",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::StaleReads,
    },
    Bug {
        name: "serve-time-no-zero-millis",
        what: "http.times: a time of a whole second is answered without its `.000`",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::TimesWithoutZeroMillis,
    },
    Bug {
        name: "serve-base64-no-padding",
        what: "http.payload-out: payload_base64 is answered in standard base64 without its padding",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::Base64Unpadded,
    },
    Bug {
        name: "serve-default-wait-10s",
        what: "http.claim-wait: a claim without `wait` waits 10 s for a job (default 0)",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::DefaultWait10s,
    },
    Bug {
        name: "serve-default-lease-30s",
        what: "http.claim-lease: a claim or an extend without `lease` holds the job for 30 s (default 60 s)",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::DefaultLease30s,
    },
    Bug {
        name: "serve-default-attempts-5",
        what: "http.add-max-attempts: an add without `max_attempts`, or with 0, makes a job of 5 attempts (default 10)",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::DefaultAttempts5,
    },
    Bug {
        name: "serve-priority-ends-refused",
        what: "http.add-priority: an add's priority of -100 or 100, the ends of the range, is refused (`<` for `<=`)",
        edits: &[],
        replaced: &[],
        serve: ServeFlaw::PriorityEndsRefused,
    },
    // The steps' values (issue 42): an attempt counted one too many in a
    // comparison, and the first value kept where a step sets one.
    Bug {
        name: "reap-dead-one-early",
        what: "a claim's reap sends a job whose lease ran out on the attempt before its last to dead (`attempts >= max_attempts - 1`)",
        edits: &[(Stmt::ReapDead, "AND attempts >= max_attempts", "AND attempts >= max_attempts - 1")],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "fail-dead-one-early",
        what: "a failure on the attempt before the last sends the job to dead (`attempts >= max_attempts - 1`)",
        edits: &[
            (Stmt::Fail, "OR attempts >= max_attempts THEN 'dead'", "OR attempts >= max_attempts - 1 THEN 'dead'"),
            (Stmt::Fail, "OR attempts >= max_attempts THEN run_at", "OR attempts >= max_attempts - 1 THEN run_at"),
        ],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "fail-first-error",
        what: "a failure keeps the job's first last_error (`last_error = coalesce(last_error, :error)`)",
        edits: &[(Stmt::Fail, "last_error = :error", "last_error = coalesce(last_error, :error)")],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "reap-first-error",
        what: "a reap keeps the job's earlier last_error instead of noting that the lease expired (`coalesce(last_error, …)`)",
        edits: &[
            (Stmt::ReapDead, "last_error = 'lease expired", "last_error = coalesce(last_error, 'lease expired"),
            (Stmt::ReapDead, "|| max_attempts || ')'", "|| max_attempts || ')')"),
            (Stmt::ReapReady, "last_error = 'lease expired", "last_error = coalesce(last_error, 'lease expired"),
            (Stmt::ReapReady, "|| max_attempts || ')'", "|| max_attempts || ')')"),
        ],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "fail-first-run-at",
        what: "a failure keeps the job's run_at (`coalesce(run_at, …)`): a retry_in or a backoff is ignored, the job due at once",
        edits: &[
            (Stmt::Fail, "ELSE :now + coalesce(:retry_in,", "ELSE coalesce(run_at, :now + coalesce(:retry_in,"),
            (Stmt::Fail, "/ 10 + 1)))\n             END", "/ 10 + 1))))\n             END"),
        ],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "fail-first-updated-at",
        what: "a failure keeps the job's updated_at (`updated_at = coalesce(updated_at, :now)`)",
        edits: &[(Stmt::Fail, "last_error = :error, updated_at = :now", "last_error = :error, updated_at = coalesce(updated_at, :now)")],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "renew-keeps-longer",
        what: "a renewal to a shorter lease keeps the longer one (`lease_until = max(lease_until, :now + :lease)`)",
        edits: &[(Stmt::Renew, "SET lease_until = :now + :lease", "SET lease_until = max(lease_until, :now + :lease)")],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "lenient-version",
        what: "reads format_version as SQLite's CAST to INTEGER does: ' 1', '1 ', '1abc' and '1.0' are taken for 1",
        edits: &[(Stmt::ReadVersion, "SELECT value FROM", "SELECT CAST(value AS INTEGER) FROM")],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "keeps-rollback-journal",
        what: "adds the tables without switching the database to WAL: an application's database in a rollback \
               journal mode stays in it",
        edits: &[],
        replaced: &[(Stmt::SetWal, NOTHING)],
        serve: SOUND,
    },
    Bug {
        name: "vacuums-page-size",
        what: "adds the tables after a VACUUM with 4096-byte pages, in place of the switch to WAL: an \
               application's database in a rollback journal mode gets another page size (it replaces \
               `synchronous = FULL`, SQLite's default anyway)",
        edits: &[],
        replaced: &[(Stmt::SetSynchronous, "PRAGMA page_size = 4096"), (Stmt::SetWal, "VACUUM")],
        serve: SOUND,
    },
    Bug {
        name: "queue-check-bytes",
        what: "the table's CHECK counts a queue name's bytes: a job in a queue of 200 characters of two bytes \
               or more is refused when it is inserted",
        edits: &[(
            Stmt::CreateJobs,
            "CHECK (length(queue) BETWEEN 1 AND 200)",
            "CHECK (length(CAST(queue AS BLOB)) BETWEEN 1 AND 200)",
        )],
        replaced: &[],
        serve: SOUND,
    },
    // The cost of the steps (the scale cases): each keeps every rule of
    // FORMAT.md and gets slower as the file grows.
    Bug {
        name: "no-indexes",
        what: "init makes the tables without the four indexes (legal: other programs need not make them), so that \
               every claim walks the table",
        edits: &[],
        replaced: &[
            (Stmt::CreateIndexDue, NOTHING),
            (Stmt::CreateIndexNext, NOTHING),
            (Stmt::CreateIndexLeases, NOTHING),
            (Stmt::CreateIndexState, NOTHING),
        ],
        serve: SOUND,
    },
    Bug {
        name: "pick-without-index",
        what: "a claim picks its job by sorting every due job of the table (NOT INDEXED), not by seeking the `due` \
               index at each priority",
        edits: &[],
        replaced: &[(
            Stmt::Pick,
            "SELECT id FROM ukue_jobs NOT INDEXED WHERE queue = :queue AND state = 'ready' AND run_at <= :now \
             ORDER BY priority DESC, run_at, id LIMIT 1",
        )],
        serve: SOUND,
    },
    Bug {
        name: "reap-walks-running",
        what: "a worker's look for expired leases, and the claim's reap, walk every running job (in the `state` \
               index, as SQLite's planner picks without `INDEXED BY`), as the published command's do",
        edits: &[
            (
                Stmt::Look,
                "(SELECT coalesce(lease_until, 0) FROM ukue_jobs INDEXED BY ukue_jobs_leases\n        \
                 WHERE state = 'running' ORDER BY lease_until LIMIT 1)",
                "(SELECT min(coalesce(lease_until, 0)) FROM ukue_jobs WHERE state = 'running')",
            ),
            (Stmt::ExpireUnleased, "UPDATE ukue_jobs INDEXED BY ukue_jobs_leases", "UPDATE ukue_jobs"),
            (Stmt::ReapDead, "UPDATE ukue_jobs INDEXED BY ukue_jobs_leases", "UPDATE ukue_jobs"),
            (Stmt::ReapReady, "UPDATE ukue_jobs INDEXED BY ukue_jobs_leases", "UPDATE ukue_jobs"),
        ],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "add-counts-queue",
        what: "an add first counts the jobs of its queue (as a cap on a queue's length would), walking them all",
        edits: &[(
            Stmt::Add,
            "VALUES (:queue, :payload, :priority, :max_attempts, :run_at, :now, :now)",
            "SELECT :queue, :payload, :priority, :max_attempts, :run_at, :now, :now \
             WHERE (SELECT count(*) FROM ukue_jobs WHERE queue = :queue) < 1000000000",
        )],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "list-walks-from-start",
        what: "list --after N walks the jobs from the first id to N (`+id`: no seek in the table)",
        edits: &[(Stmt::List, "WHERE id > :after", "WHERE +id > :after")],
        replaced: &[],
        serve: SOUND,
    },
    Bug {
        name: "claim-64k-payload",
        what: "a claim hands out only the first 64 KiB of a job's payload (to work's command and over HTTP)",
        edits: &[(Stmt::Take, "RETURNING id, queue, payload,", "RETURNING id, queue, substr(payload, 1, 65536),")],
        replaced: &[],
        serve: SOUND,
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
    /// What `add` reads on stdin as the payload (`-` or left out).
    AddStdin(fn(Vec<u8>) -> Vec<u8>),
    /// The command line's words (the program's name first), before they
    /// are read.
    Argv(fn(Vec<OsString>) -> Vec<OsString>),
    /// How a command line that cannot be read ends, in place of clap's
    /// message and exit status 2 (clap's `--help` and `--version` come
    /// here too).
    Unreadable(fn(clap::Error) -> u8),
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
        name: "usage-exit-1",
        what: "exit.usage: a command line that cannot be read exits with status 1, as an error does",
        edit: CliEdit::Unreadable(|e| {
            let _ = e.print();
            u8::from(e.use_stderr())
        }),
    },
    CliBug {
        name: "usage-twice",
        what: "exit.usage-once: the message of a usage error is printed twice",
        edit: CliEdit::Unreadable(|e| {
            let _ = e.print();
            if e.use_stderr() {
                let _ = e.print();
            }
            u8::try_from(e.exit_code()).unwrap_or(2)
        }),
    },
    CliBug {
        name: "no-double-dash",
        what: "args.double-dash: `--` is dropped (but for `work`), so what follows it is read as flags",
        edit: CliEdit::Argv(|words| {
            let work = words.get(1).is_some_and(|w| w == "work");
            words.into_iter().filter(|w| work || w != "--").collect()
        }),
    },
    CliBug {
        name: "version-without-format",
        what: "version.output: `version` prints `ukue VERSION`, without the file format",
        edit: CliEdit::Stdout(|name, out| match name {
            "version" => String::from_utf8_lossy(&out).replace(" (file format 1)", "").into_bytes(),
            _ => out,
        }),
    },
    CliBug {
        name: "list-limit-plus-one",
        what: "list.limit: `list` shows one job more than its limit",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::List(args) = cmd {
                args.limit += 1;
            }
        }),
    },
    CliBug {
        name: "raw-control-characters",
        what: "text.escape: the text output of stats, list and show writes control characters raw",
        edit: CliEdit::Stdout(|name, out| match name {
            "stats" | "list" | "show" => unescaped(&String::from_utf8_lossy(&out)).into_bytes(),
            _ => out,
        }),
    },
    CliBug {
        name: "quiet-retry-purge",
        what: "retry.ids: `retry` and `purge` print nothing of what they did",
        edit: CliEdit::Stdout(|name, out| match name {
            "retry" | "purge" => Vec::new(),
            _ => out,
        }),
    },
    CliBug {
        name: "add-on-interrupt",
        what:
            "add.stdin-interrupted: an `add` that gets SIGINT or SIGTERM while it reads stdin adds what it \
               has read so far",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Add(args) = cmd {
                if args.payload.as_deref().is_none_or(|p| p == "-") {
                    args.payload = Some(OsString::from_vec(stdin_until_signal()));
                }
            }
        }),
    },
    CliBug {
        name: "payload-argument-trimmed",
        what: "add.payload-argument: `add` trims spaces, tabs and line ends off a PAYLOAD argument",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Add(args) = cmd {
                if let Some(payload) = args.payload.as_mut().filter(|p| p.as_os_str() != OsStr::new("-")) {
                    *payload = OsStr::from_bytes(payload.as_bytes().trim_ascii()).to_os_string();
                }
            }
        }),
    },
    CliBug {
        name: "add-stdin-64k",
        what: "add.payload-stdin: `add` reads only the first 64 KiB of stdin",
        edit: CliEdit::AddStdin(|mut bytes| {
            bytes.truncate(65536);
            bytes
        }),
    },
    CliBug {
        name: "add-stdin-lossy",
        what: "add.payload-stdin: `add` reads stdin as text: bytes that are not UTF-8 become U+FFFD",
        edit: CliEdit::AddStdin(|bytes| String::from_utf8_lossy(&bytes).into_owned().into_bytes()),
    },
    CliBug {
        name: "base64-url-no-padding",
        what: "json.payload: `list --json` and `show --json` write payload_base64 in URL-safe base64 without padding",
        edit: CliEdit::Stdout(|command, printed| match command {
            "list" | "show" => edit_json(printed, |v| edit_base64(v, b64_url_safe)),
            _ => printed,
        }),
    },
    CliBug {
        name: "json-raw-control",
        what: "json.valid: `--json` output writes ESC and U+0001 raw inside strings, where JSON needs \\u001b",
        edit: CliEdit::Stdout(|command, printed| match command {
            "list" | "show" | "stats" => {
                let text = String::from_utf8_lossy(&printed);
                text.replace("\\u001b", "\u{1b}").replace("\\u0001", "\u{1}").into_bytes()
            }
            _ => printed,
        }),
    },
    CliBug {
        name: "queue-bytes",
        what: "args.queue: `add` and `work` count a queue name's bytes, not its characters: 200 characters of \
               two bytes or more are refused",
        edit: CliEdit::Args(|cmd| {
            let queue = match cmd {
                Cmd::Add(args) => &mut args.queue,
                Cmd::Work(args) => &mut args.queue,
                _ => return,
            };
            if queue.len() > 200 {
                // Refused as the empty name is.
                queue.clear();
            }
        }),
    },
    CliBug {
        name: "queue-cut-to-200",
        what: "args.queue: `add` and `work` cut a queue name to its first 200 characters instead of refusing it",
        edit: CliEdit::Argv(|mut words| {
            if matches!(words.get(1).and_then(|w| w.to_str()), Some("add" | "work")) {
                if let Some(queue) = words.get_mut(3) {
                    let cut: String = queue.to_string_lossy().chars().take(200).collect();
                    *queue = cut.into();
                }
            }
            words
        }),
    },
    CliBug {
        name: "priority-clamped",
        what: "add.priority-range: `add --priority N` takes a number outside -100..100 as the nearest end",
        edit: CliEdit::Argv(|words| {
            edit_values(words, &["--priority"], |v| v.parse::<i64>().map_or(v.to_string(), |n| n.clamp(-100, 100).to_string()))
        }),
    },
    CliBug {
        name: "attempts-32-bit",
        what: "add.attempts: `add --attempts N` reads N as a 32-bit number: 2^31 and more are usage errors",
        edit: CliEdit::Argv(|words| {
            edit_values(words, &["--attempts"], |v| match v.parse::<i64>() {
                Ok(n) if i32::try_from(n).is_err() => "past-32-bits".to_string(),
                _ => v.to_string(),
            })
        }),
    },
    CliBug {
        name: "duration-no-fraction",
        what: "args.duration: durations lose the fraction of each number (`1.5s` is read as `1s`)",
        edit: CliEdit::Argv(|words| edit_values(words, DURATION_FLAGS, without_fractions)),
    },
    CliBug {
        name: "duration-no-micro",
        what: "args.duration: durations in `µs` (U+00B5 or U+03BC) are usage errors; only `us` is read",
        edit: CliEdit::Argv(|words| edit_values(words, DURATION_FLAGS, |v| v.replace(['\u{b5}', '\u{3bc}'], "?"))),
    },
    CliBug {
        name: "id-32-bit",
        what: "args.id: `show`, `retry` and `delete` read an ID as a 32-bit number: one past 2^31 - 1 is a usage \
               error, not a job that does not exist",
        edit: CliEdit::Argv(|mut words| {
            if matches!(words.get(1).and_then(|w| w.to_str()), Some("show" | "retry" | "delete")) {
                for word in words.iter_mut().skip(3) {
                    if word.to_str().and_then(|w| w.parse::<i64>().ok()).is_some_and(|n| i32::try_from(n).is_err()) {
                        *word = "past-32-bits".into();
                    }
                }
            }
            words
        }),
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
    // Bugs where two options meet, or where a command names several jobs:
    // each option alone, and each command of one job, is right.
    CliBug {
        name: "list-state-dropped-with-queue",
        what: "list.state: `list --queue Q --state S` lists every job of Q, whatever its state",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::List(args) = cmd {
                if args.queue.is_some() {
                    args.state = None;
                }
            }
        }),
    },
    CliBug {
        name: "list-after-dropped-with-state",
        what: "list.after: `list --state S --after ID` lists from the first job in S, as if without --after",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::List(args) = cmd {
                if args.state.is_some() {
                    args.after = 0;
                }
            }
        }),
    },
    CliBug {
        name: "purge-dead-every-queue",
        what: "purge.queue: `purge --state dead --queue Q` deletes the dead jobs of every queue (done jobs keep to Q)",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Purge { state, queue, .. } = cmd {
                if state == "dead" {
                    *queue = None;
                }
            }
        }),
    },
    CliBug {
        name: "delete-first-only",
        what: "delete.ids: `delete FILE ID...` deletes the first job it names and no other",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Delete { ids, .. } = cmd {
                ids.truncate(1);
            }
        }),
    },
    CliBug {
        name: "stdin-add-default-options",
        what: "add.priority: an add that reads its payload from stdin takes the default priority and attempts, whatever --priority and --attempts say",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Add(args) = cmd {
                if args.payload.as_deref().is_none_or(|p| p == "-") {
                    args.priority = None;
                    args.attempts = None;
                }
            }
        }),
    },
    CliBug {
        name: "list-limit-dropped-with-queue",
        what: "list.limit: `list --queue Q --limit N` lists up to 50 of Q's jobs, as if without --limit",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::List(args) = cmd {
                if args.queue.is_some() {
                    args.limit = 50;
                }
            }
        }),
    },
    CliBug {
        name: "retry-first-only",
        what: "retry.ids: `retry FILE ID...` sends back the first job it names and no other",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Retry { ids, .. } = cmd {
                ids.truncate(1);
            }
        }),
    },
    CliBug {
        name: "list-queue-dropped-with-after",
        what: "list.queue: `list --after ID --queue Q` lists the jobs of every queue after ID",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::List(args) = cmd {
                if args.after > 0 {
                    args.queue = None;
                }
            }
        }),
    },
    CliBug {
        name: "keep-done-dropped-with-concurrency",
        what: "work.keep-done: `work --concurrency N --keep-done`, N over 1, deletes its finished jobs",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                if args.concurrency > 1 {
                    args.keep_done = false;
                }
            }
        }),
    },
    CliBug {
        name: "stats-without-finished-queues",
        what: "stats.json: `stats` leaves out a queue whose jobs are all dead or done",
        edit: CliEdit::Stdout(|command, printed| match command {
            "stats" => edit_json(printed, without_finished_queues),
            _ => printed,
        }),
    },
    // Values read wrong (issue 42): one class of one input each, a sign,
    // an offset, a unit, a normalization, a default or an edge of a format
    // (what the reference reads right, and the sweeps' tables try).
    CliBug {
        name: "at-offset-ignored",
        what: "add.at: `add --at TIME` reads the local time of a numeric offset as UTC (`11:00:00+02:00` as 11:00Z)",
        edit: CliEdit::Argv(|words| edit_values(words, &["--at"], |v| with_offset(v, |_| "Z".into()))),
    },
    CliBug {
        name: "at-offset-reversed",
        what: "add.at: `add --at TIME` adds a numeric offset instead of taking it off (`+02:00` read as `-02:00`)",
        edit: CliEdit::Argv(|words| {
            edit_values(words, &["--at"], |v| {
                with_offset(v, |offset| {
                    let flipped = if offset.starts_with('+') { '-' } else { '+' };
                    format!("{flipped}{}", &offset[1..])
                })
            })
        }),
    },
    CliBug {
        name: "at-fraction-dropped",
        what: "add.at: `add --at TIME` drops the fraction of a second (`.250` read as `.000`)",
        edit: CliEdit::Argv(|words| edit_values(words, &["--at"], without_fractions)),
    },
    CliBug {
        name: "delay-times-1000",
        what: "add.delay: `--delay D` is read a thousand times too long (milliseconds taken for seconds)",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Add(args) = cmd {
                args.delay = args.delay.map(|d| d.saturating_mul(1000));
            }
        }),
    },
    CliBug {
        name: "delay-over-1000",
        what: "add.delay: `--delay D` is read a thousand times too short (seconds taken for milliseconds)",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Add(args) = cmd {
                args.delay = args.delay.map(|d| d / 1000);
            }
        }),
    },
    CliBug {
        name: "lease-times-1000",
        what: "work.lease: `--lease D` (and its default) is read a thousand times too long",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.lease = args.lease.saturating_mul(1000);
            }
        }),
    },
    CliBug {
        name: "timeout-times-1000",
        what: "work.timeout: `--timeout D` is read a thousand times too long",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.timeout = args.timeout.saturating_mul(1000);
            }
        }),
    },
    CliBug {
        name: "timeout-over-1000",
        what: "work.timeout: `--timeout D` is read a thousand times too short",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.timeout /= 1000;
            }
        }),
    },
    CliBug {
        name: "poll-times-1000",
        what: "work.poll: `--poll D` (and its default) is read a thousand times too long",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.poll = args.poll.saturating_mul(1000);
            }
        }),
    },
    CliBug {
        name: "grace-times-1000",
        what: "work.stop: `--grace D` (and its default) is read a thousand times too long",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.grace = args.grace.saturating_mul(1000);
            }
        }),
    },
    CliBug {
        name: "grace-over-1000",
        what: "work.stop: `--grace D` (and its default) is read a thousand times too short",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::Work(args) = cmd {
                args.grace /= 1000;
            }
        }),
    },
    CliBug {
        name: "queue-trimmed",
        what: "add.queue: `add` and `work` trim the whitespace around a queue name",
        edit: CliEdit::Args(|cmd| edit_queue(cmd, |q| q.trim().to_string())),
    },
    CliBug {
        name: "queue-lowercased",
        what: "add.queue: `add` and `work` lower-case a queue name",
        edit: CliEdit::Args(|cmd| edit_queue(cmd, str::to_lowercase)),
    },
    CliBug {
        name: "queue-nfc",
        what: "add.queue: `add` and `work` compose a Latin letter and a combining acute or grave accent after it into one character, as Unicode's NFC does",
        edit: CliEdit::Args(|cmd| edit_queue(cmd, composed)),
    },
    CliBug {
        name: "priority-100-refused",
        what: "add.priority-range: `add --priority N` refuses -100 and 100, the ends of the range (`<` for `<=`)",
        edit: CliEdit::Argv(|words| {
            edit_values(words, &["--priority"], |v| match v.parse::<i64>() {
                Ok(100) => "101".into(),
                Ok(-100) => "-101".into(),
                _ => v.to_string(),
            })
        }),
    },
    CliBug {
        name: "queue-200-refused",
        what: "args.queue: `add` and `work` refuse a queue name of exactly 200 characters (`<` for `<=`)",
        edit: CliEdit::Args(|cmd| {
            edit_queue(cmd, |q| if q.chars().count() == 200 { String::new() } else { q.to_string() })
        }),
    },
    CliBug {
        name: "list-limit-999",
        what: "list.limit-most: `list --limit 1000` lists 999 jobs (`<` for `<=`)",
        edit: CliEdit::Args(|cmd| {
            if let Cmd::List(args) = cmd {
                if args.limit == 1000 {
                    args.limit = 999;
                }
            }
        }),
    },
    CliBug {
        name: "exit-66-permanent",
        what: "work.exit-other: a command that exits 66 fails its job for good, as if 65 (`>=` for `==`)",
        edit: CliEdit::Outcome(|outcome| match outcome {
            Outcome::Fail { error, .. } if error.starts_with("exit status 66") => {
                Outcome::Fail { error, retry: ukue::Retry::Never }
            }
            other => other,
        }),
    },
    CliBug {
        name: "timeout-permanent",
        what: "work.timeout: a timed-out attempt fails its job for good, whatever attempts it has left",
        edit: CliEdit::Outcome(|outcome| match outcome {
            Outcome::Fail { error, .. } if error.contains("timed out") => {
                Outcome::Fail { error, retry: ukue::Retry::Never }
            }
            other => other,
        }),
    },
    CliBug {
        name: "default-concurrency-2",
        what: "work.concurrency: `work` runs 2 commands at once without --concurrency (default 1)",
        edit: CliEdit::Argv(|words| with_default(words, "work", "--concurrency", "2")),
    },
    CliBug {
        name: "default-lease-30s",
        what: "work.lease: `work`'s lease is 30s without --lease (default 1m)",
        edit: CliEdit::Argv(|words| with_default(words, "work", "--lease", "30s")),
    },
    CliBug {
        name: "default-poll-2s",
        what: "work.poll: an idle `work` looks for jobs every 2s without --poll (default 1s)",
        edit: CliEdit::Argv(|words| with_default(words, "work", "--poll", "2s")),
    },
    CliBug {
        name: "default-timeout-50s",
        what: "work.timeout: `work` stops a command after 50s without --timeout (default 0, no limit)",
        edit: CliEdit::Argv(|words| with_default(words, "work", "--timeout", "50s")),
    },
    CliBug {
        name: "default-grace-10s",
        what: "work.stop: `work` gives its running commands 10s after SIGTERM without --grace (default 30s)",
        edit: CliEdit::Argv(|words| with_default(words, "work", "--grace", "10s")),
    },
    CliBug {
        name: "default-grace-60s",
        what: "work.stop: `work` gives its running commands 60s after SIGTERM without --grace (default 30s)",
        edit: CliEdit::Argv(|words| with_default(words, "work", "--grace", "60s")),
    },
    CliBug {
        name: "default-attempts-5",
        what: "add.attempts-default: `add` without --attempts makes a job of 5 attempts (default 10)",
        edit: CliEdit::Argv(|words| with_default(words, "add", "--attempts", "5")),
    },
    CliBug {
        name: "default-priority-1",
        what: "add.priority: `add` without --priority makes a job of priority 1 (default 0)",
        edit: CliEdit::Argv(|words| with_default(words, "add", "--priority", "1")),
    },
    CliBug {
        name: "default-list-limit-100",
        what: "list.limit: `list` without --limit lists up to 100 jobs (default 50)",
        edit: CliEdit::Argv(|words| with_default(words, "list", "--limit", "100")),
    },
    CliBug {
        name: "default-addr-7661",
        what: "serve.addr: `serve` without --addr listens on 127.0.0.1:7661 (default 127.0.0.1:7660)",
        edit: CliEdit::Argv(|words| with_default(words, "serve", "--addr", "127.0.0.1:7661")),
    },
    CliBug {
        name: "default-max-body-2m",
        what: "serve.max-body: `serve` without --max-body reads bodies of up to 2 MiB (default 1 MiB)",
        edit: CliEdit::Argv(|words| with_default(words, "serve", "--max-body", "2097152")),
    },
    CliBug {
        name: "json-time-no-zero-millis",
        what: "json.times: `list`, `show` and `stats --json` print a time of a whole second without its `.000`",
        edit: CliEdit::Stdout(|command, printed| match command {
            "list" | "show" | "stats" => edit_json(printed, without_zero_millis),
            _ => printed,
        }),
    },
    CliBug {
        name: "json-time-nano-form",
        what: "json.times: `list`, `show` and `stats --json` print times as Go's RFC3339Nano does: the fraction's trailing zeros dropped (`.250` as `.25`, `.000` left out)",
        edit: CliEdit::Stdout(|command, printed| match command {
            "list" | "show" | "stats" => nano_form(&String::from_utf8_lossy(&printed)).into_bytes(),
            _ => printed,
        }),
    },
    CliBug {
        name: "base64-no-padding",
        what: "json.payload: `list --json` and `show --json` write payload_base64 in standard base64 without its padding",
        edit: CliEdit::Stdout(|command, printed| match command {
            "list" | "show" => edit_json(printed, |v| edit_base64(v, b64_unpadded)),
            _ => printed,
        }),
    },
];

/// The flags whose values are durations.
const DURATION_FLAGS: &[&str] = &["--delay", "--lease", "--timeout", "--poll", "--grace"];

/// `words` with the value of each of `flags` (the next word) edited.
fn edit_values(mut words: Vec<OsString>, flags: &[&str], edit: impl Fn(&str) -> String) -> Vec<OsString> {
    for i in 1..words.len() {
        let is_flag = words[i - 1].to_str().is_some_and(|w| flags.contains(&w));
        if let (true, Some(value)) = (is_flag, words[i].to_str()) {
            words[i] = edit(value).into();
        }
    }
    words
}

/// A duration without the fraction of any of its numbers.
fn without_fractions(text: &str) -> String {
    let mut out = String::new();
    let mut in_fraction = false;
    for c in text.chars() {
        match c {
            '.' => in_fraction = true,
            '0'..='9' if in_fraction => {}
            c => {
                in_fraction = false;
                out.push(c);
            }
        }
    }
    out
}

/// `text` (an RFC 3339 time) with its numeric offset, if it ends in one,
/// replaced by `change` of it.
fn with_offset(text: &str, change: impl Fn(&str) -> String) -> String {
    let b = text.as_bytes();
    let n = b.len();
    if n >= 6 && matches!(b[n - 6], b'+' | b'-') && b[n - 3] == b':' {
        format!("{}{}", &text[..n - 6], change(&text[n - 6..]))
    } else {
        text.to_string()
    }
}

/// `words` with `flag VALUE` put after the command's name when the command
/// is `command` and the words do not give `flag`: a default changed.
fn with_default(mut words: Vec<OsString>, command: &str, flag: &str, value: &str) -> Vec<OsString> {
    let given =
        words.iter().any(|w| w.to_str().is_some_and(|w| w == flag || w.starts_with(&format!("{flag}="))));
    if words.get(1).is_some_and(|w| w == command) && !given {
        words.splice(2..2, [OsString::from(flag), OsString::from(value)]);
    }
    words
}

/// The queue of an `add` or a `work`, edited.
fn edit_queue(cmd: &mut Cmd, change: impl Fn(&str) -> String) {
    let queue = match cmd {
        Cmd::Add(args) => &mut args.queue,
        Cmd::Work(args) => &mut args.queue,
        _ => return,
    };
    *queue = change(queue);
}

/// `text` with each Latin vowel followed by a combining grave or acute
/// accent composed into one character, as Unicode's NFC composes them.
fn composed(text: &str) -> String {
    let mut out: Vec<char> = Vec::new();
    for c in text.chars() {
        match out.last().and_then(|&base| compose(base, c)) {
            Some(one) => {
                out.pop();
                out.push(one);
            }
            None => out.push(c),
        }
    }
    out.into_iter().collect()
}

/// The one character of `base` and the combining `mark`, if it is one
/// [`composed`] knows.
fn compose(base: char, mark: char) -> Option<char> {
    let (bases, composed) = match mark {
        '\u{300}' => ("AEIOUaeiou", "ÀÈÌÒÙàèìòù"),
        '\u{301}' => ("AEIOUYaeiouy", "ÁÉÍÓÚÝáéíóúý"),
        _ => return None,
    };
    bases.chars().position(|b| b == base).and_then(|i| composed.chars().nth(i))
}

/// JSON text with each time's fraction of a second written as Go's
/// RFC3339Nano writes it: trailing zeros dropped, and the dot with them.
fn nano_form(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("Z\"") {
        let (head, tail) = rest.split_at(at);
        // A time ends `:SS.mmmZ"`: trim the zeros of its fraction.
        let fraction = head.len() >= 4
            && head.as_bytes()[head.len() - 4] == b'.'
            && head[head.len() - 3..].bytes().all(|b| b.is_ascii_digit());
        if fraction {
            let trimmed = head.trim_end_matches('0');
            out.push_str(trimmed.strip_suffix('.').unwrap_or(trimmed));
        } else {
            out.push_str(head);
        }
        out.push_str("Z\"");
        rest = &tail[2..];
    }
    out.push_str(rest);
    out
}

/// Every `payload_base64` in `value` rewritten by `change` (of its bytes).
pub fn edit_base64(value: &mut serde_json::Value, change: fn(&[u8]) -> String) {
    use base64::prelude::{Engine as _, BASE64_STANDARD};
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match (key.as_str(), v.as_str().map(|s| BASE64_STANDARD.decode(s))) {
                    ("payload_base64", Some(Ok(bytes))) => *v = change(&bytes).into(),
                    _ => edit_base64(v, change),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| edit_base64(v, change)),
        _ => {}
    }
}

/// Every time in `value` (`2026-10-06T09:00:00.000Z`) of a whole second
/// written without its `.000`.
pub fn without_zero_millis(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) if text.len() == 24 && text.ends_with(".000Z") => {
            *text = text.replace(".000Z", "Z");
        }
        serde_json::Value::Object(map) => map.values_mut().for_each(without_zero_millis),
        serde_json::Value::Array(items) => items.iter_mut().for_each(without_zero_millis),
        _ => {}
    }
}

/// Standard base64 without its padding.
pub fn b64_unpadded(bytes: &[u8]) -> String {
    use base64::prelude::{Engine as _, BASE64_STANDARD_NO_PAD};
    BASE64_STANDARD_NO_PAD.encode(bytes)
}

/// Printed JSON with `edit` made to every value in it; other text as it was.
pub fn edit_json(printed: Vec<u8>, edit: fn(&mut serde_json::Value)) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&printed) else {
        return printed;
    };
    edit(&mut value);
    let mut out = serde_json::to_vec(&value).unwrap_or(printed);
    out.push(b'\n');
    out
}

/// `stats --json` without the queues that have nothing to run.
fn without_finished_queues(value: &mut serde_json::Value) {
    if let Some(queues) = value.get_mut("queues").and_then(|q| q.as_array_mut()) {
        let waiting = |q: &serde_json::Value| {
            ["ready", "delayed", "running", "expired"].iter().any(|k| q[k].as_i64().unwrap_or(0) > 0)
        };
        queues.retain(waiting);
    }
}

/// URL-safe base64 without padding.
fn b64_url_safe(bytes: &[u8]) -> String {
    use base64::prelude::{Engine as _, BASE64_URL_SAFE_NO_PAD};
    BASE64_URL_SAFE_NO_PAD.encode(bytes)
}

/// `text` with each `\xNN` the reference's escaping wrote turned back into
/// its character.
fn unescaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\\x") {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 2..at + 4).and_then(|hex| u32::from_str_radix(hex, 16).ok());
        match code.and_then(char::from_u32) {
            Some(c) => {
                out.push(c);
                rest = &rest[at + 4..];
            }
            None => {
                out.push_str("\\x");
                rest = &rest[at + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Stdin up to its end, or up to the first SIGINT or SIGTERM, whichever
/// comes first.
fn stdin_until_signal() -> Vec<u8> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(signal, Arc::clone(&stop));
    }
    let read = Arc::new(Mutex::new((Vec::new(), false)));
    let reader = Arc::clone(&read);
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        let mut stdin = std::io::stdin();
        loop {
            let n = stdin.read(&mut chunk).unwrap_or(0);
            let mut read = reader.lock().unwrap_or_else(|p| p.into_inner());
            read.0.extend_from_slice(&chunk[..n]);
            if n == 0 {
                read.1 = true;
                return;
            }
        }
    });
    loop {
        {
            let read = read.lock().unwrap_or_else(|p| p.into_inner());
            if read.1 || stop.load(Ordering::SeqCst) {
                return read.0.clone();
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

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

/// The FORMAT.md that `UKUE_BROKEN=name` runs: a bug's
/// ([`spec`]), or a generated or hand-made mutant's
/// (crate::subjects::mutants, named `STATEMENT/KIND-N`).
pub fn spec_named(name: &str) -> Result<Arc<Spec>, String> {
    if let Some(mutant) = super::mutants::named(name) {
        return Ok(mutant.spec());
    }
    match bug(name) {
        Some(bug) => spec(bug),
        None => Err(format!(
            "UKUE_BROKEN={name} is none of {} (nor a mutant: ukue-conformance mutants lists them)",
            names()
        )),
    }
}

/// The FORMAT.md that `UKUE_BROKEN` names ([`spec_named`]), or the
/// builtin one when it is unset or empty.
pub fn spec_from_env() -> Result<Arc<Spec>, String> {
    match std::env::var("UKUE_BROKEN") {
        Ok(name) if !name.is_empty() => spec_named(&name),
        _ => Ok(Spec::builtin()),
    }
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
