//! cli/work-*: `ukue work` (COMMAND.md §5), item by item, seen from
//! outside: the subject's `work` runs the probe (or a command that cannot
//! run), and a case reads the probe's records, the file, what the worker
//! printed and how it ended. [`command`]: the command line and the
//! command's arguments, environment and output; [`outcome`]: what a
//! command's end does to its job; [`pace`]: concurrency, leases and
//! polling; [`stopping`]: signals, and how commands are stopped;
//! [`support`]: what they share.

mod command;
mod outcome;
mod pace;
mod stopping;
mod support;

use crate::cases::{Case, Level, Needs};

#[rustfmt::skip]
pub fn cases() -> Vec<Case> {
    let case = |id, rule, summary, run| Case { id, rule, summary, needs: Needs::default(), level: Level::Must, run };
    vec![
        case("cli/work-command-untouched", "work.command-untouched", "the command gets every argument after the first `--` as it was: dashes, a second `--`, empty, spaces, non-ASCII", command::untouched),
        case("cli/work-command-not-found", "work.command-not-found", "a command not on PATH, missing, not executable or a directory is a usage error naming it, before any claim", command::not_found),
        case("cli/work-bad-options", "work.concurrency-bad", "a concurrency below 1, a lease under 3 ms, a poll of 0, a negative grace or timeout: refused before any claim", command::bad_options),
        case("cli/work-env-inherited", "work.env-inherited", "the command's PATH, HOME and its caller's variables are the worker's own; UKUE_FILE is FILE as given", command::env_inherited),
        case("cli/work-output", "work.output", "what the command writes reaches the worker's stdout and stderr; with --quiet nothing else does", command::output),
        case("cli/work-exit-other", "work.exit-other", "other exit statuses and signals fail the attempt: ready again, or dead on the last attempt, with a last_error", outcome::exit_other),
        Case { level: Level::Should, ..case("cli/work-last-error-text", "work.last-error-stderr", "last_error holds the exit status and the end of stderr (at most 4,000 bytes); a timeout's says it timed out", outcome::last_error_text) },
        case("cli/work-background-output", "work.background-output", "a command that exits 0 while its background child holds its output finishes its job within 10 s", outcome::background_output),
        case("cli/work-concurrency", "work.concurrency", "--concurrency 4 runs 4 commands at once, never 5; the default runs one at a time", pace::concurrency),
        case("cli/work-lease", "work.lease", "each claim's lease_until is its time plus --lease (default 1m; 3ms, the shortest, taken)", pace::lease),
        case("cli/work-poll", "work.poll", "an idle worker claims a job another program adds within about --poll 100ms, or 1 s without it", pace::poll),
        case("cli/work-stop", "work.stop", "after SIGTERM no job is claimed, running commands go on and end as usual, the worker exits 0; a second signal ends it at once", stopping::stop),
        case("cli/work-stop-kill", "work.stop-kill", "a command stopped by a timeout, a lost lease or the grace's end gets SIGTERM with its group, SIGKILL 10 s later", stopping::stop_kill),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_case_names_an_item_of_command_md() {
        for case in super::cases() {
            assert!(case.id.starts_with("cli/work-"), "{}", case.id);
            assert!(crate::spec::title(case.rule).is_some(), "{}: no item {}", case.id, case.rule);
        }
    }
}
