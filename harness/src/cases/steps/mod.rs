//! steps: each step of FORMAT.md §5, seen from outside. Jobs are added
//! through the subject's `add` or written into a subject-made file with
//! plain SQL (the format is the contract), run by the subject's `work` with
//! the probe (or a small shell command), and the case reads the file, the
//! subject's output and the probe's records.
//!
//! One file a part of §5 ([`add`], [`claim`], [`finish`], [`manage`],
//! [`reading`]), and the helpers they share: [`rows`] (reading and showing
//! a file's jobs), [`setup`] (writing them), [`running`] (the subject's
//! worker) and [`contract`] (the JSON the contract gives).

mod add;
mod claim;
pub(crate) mod contract;
mod finish;
mod look;
mod manage;
mod paths;
mod reading;
pub(crate) mod rows;
pub(crate) mod running;
pub(crate) mod setup;

use std::time::Duration;

use crate::cases::{Case, Level, Needs};

use add::*;
use claim::*;
use finish::*;
use look::*;
use manage::*;
use paths::*;
use reading::*;

#[rustfmt::skip]
pub fn cases() -> Vec<Case> {
    let case = |id, rule, summary, run| Case { id, rule, summary, needs: Needs::default(), level: Level::Must, run };
    vec![
        case("steps/add-stored", "5.3", "add stores the payload bytes, priority, attempts and the defaults", add_stored),
        case("steps/claim-order-priority", "5.4", "jobs run by priority, highest first, then oldest id", claim_order_priority),
        case("steps/claim-order-run-at", "5.4", "equal priorities run by run_at, then id; priority beats run_at", claim_order_run_at),
        case("steps/claim-past-delayed-levels", "5.4", "due jobs run by priority past delayed jobs of priorities above, between and below them, which stay ready", claim_past_delayed_levels),
        case("steps/claim-own-queue", "5.4", "a worker of one queue runs only that queue's jobs; older jobs of queues named before and after it stay ready", claim_own_queue),
        case("steps/delayed-not-early", "5.4", "a job added with --delay or --at runs, and not before its run_at", delayed_not_early),
        Case { level: Level::Should, ..case("steps/fail-backoff", "5.6", "a failed attempt goes back to ready after 10 s plus up to 10%, the published command's backoff", fail_backoff) },
        case("steps/dead-after-max-attempts", "5.6", "a failure on the last attempt sends the job to dead", dead_after_max_attempts),
        case("steps/attempts-exact", "5.6", "a job of --attempts N (1 to 4) whose command always fails runs exactly N times, then is dead", attempts_exact),
        case("steps/exit-65-dead", "5.6", "exit status 65 is a permanent failure: dead after one run", exit_65_dead),
        case("steps/timeout", "5.6", "a command past --timeout is stopped and its attempt fails", timeout),
        case("steps/lease-reaped-counted", "5.4", "a claim on any queue reaps an expired lease as a failed attempt", lease_reaped_counted),
        case("steps/lease-reaped-beside-live-lease", "5.4", "a worker whose queue has no due job reaps a lease that ran out beside one that holds, and leaves that one alone", lease_reaped_beside_live_lease),
        Case { level: Level::Should, ..case("steps/lease-reaped-backoff", "5.4", "an expired lease is reaped to ready after 10 s plus up to 10%, the published command's backoff", lease_reaped_backoff) },
        Case { level: Level::Should, needs: Needs { strace: true, ..Needs::default() }, ..case("steps/idle-worker-looks-first", "5.4", "an idle worker looks without the write lock: with its queue's job an hour off and another queue's jobs due and running, it takes SQLite's write lock at under a quarter of its reads (traced)", idle_worker_looks_first) },
        case("steps/lease-reaped-last-attempt-dead", "5.4", "an expired lease on the last attempt sends the job to dead", lease_reaped_dead),
        case("steps/paths-to-last-attempt", "5.6", "after an earlier failure, each way an attempt ends (exit 3, exit 65, a timeout, a lease reaped, a give-back at the grace's end) on the attempt before the last leaves the job ready, on the last dead (a give-back neither); last_error and updated_at are the step's", paths_to_last_attempt),
        case("steps/keep-done", "5.5", "a finished job is deleted, or kept as done with --keep-done", keep_done),
        case("steps/give-back-on-stop", "5.8", "SIGTERM after --grace gives the job back without counting the attempt", give_back_on_stop),
        case("steps/retry", "5.9", "retry sends dead jobs (by id, --all, --all --queue) back to ready", retry),
        case("steps/purge", "5.9", "purge deletes exactly the dead or done jobs (of one queue)", purge),
        case("steps/delete", "5.9", "delete takes a job away in any state; a missing id is an error", delete),
        case("steps/stats-json", "5.10", "stats --json counts ready, delayed, running, expired, dead, done per queue", stats_json),
        case("steps/list-json", "5.10", "list --json shows the contract's keys and filters by state, queue, after, limit", list_json),
        case("steps/show-json", "5.10", "show --json shows one job with the contract's keys, times and payload", show_json),
        case("steps/work-environment", "5.4", "work gives the command the payload and UKUE_* variables", work_environment),
        case("steps/claim-token-fresh", "5.4", "each claim stores a new token, as text, of at least 128 bits", claim_token_fresh),
        Case { level: Level::Should, ..case("steps/add-waits-for-busy-file", "4.1", "an add that finds the file locked by another writer for 1 s waits, then adds the job", add_waits_for_busy_file) },
    ]
}

// Margins. The subject and the harness read the same clock, but the box is
// noisy: windows are bounded by what the harness saw before and after, with
// room for clock reading granularity and skew, never by a speed.

/// Two readings of the same clock, by two programs.
const CLOCK_TOL: i64 = 100;
/// Lower margin for skew between the probe's clock reading and the subject's.
const SKEW: i64 = 1_000;
/// Upper margin beyond the moment the harness saw a change.
const LATE: i64 = 1_500;
/// The backoff after a first attempt, as the model of the format gives it:
/// 10 s plus up to a tenth more.
const BACKOFF_MIN: i64 = crate::check::model::backoff_span(0, 1).lo;
const BACKOFF_MAX: i64 = crate::check::model::backoff_span(0, 1).hi;

const POLL: [&str; 2] = ["--poll", "20ms"];

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_names_a_rule_of_format_md() {
        for case in cases() {
            assert!(case.id.starts_with("steps/"), "{}", case.id);
            assert!(crate::spec::title(case.rule).is_some(), "{}: rule {}", case.id, case.rule);
        }
    }
}
