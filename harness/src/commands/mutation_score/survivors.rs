//! The mutants and bugs that no `must` case kills in the default run, each
//! with why: nothing outside a program shows it, or what shows is a choice
//! FORMAT.md leaves to each program (so that a correct program may make
//! it too, and only a `should` case may judge it). The score counts a
//! survivor listed here as explained, any other as a gap in the cases;
//! a listed one that a case now kills is to be taken off.

/// (name, why no `must` case of the default run kills it)
pub const BEYOND_THE_CASES: &[(&str, &str)] = &[
    ("create_index_due/where-1", WHY_INDEX),
    ("create_index_next/cmp-1", WHY_INDEX),
    ("create_index_next/cmp-2", WHY_INDEX),
    ("create_index_next/where-1", WHY_INDEX),
    ("create_index_next/hand-1", WHY_INDEX),
    ("create_index_next/hand-2", WHY_INDEX),
    ("create_index_due/hand-1", WHY_INDEX),
    ("create_index_leases/where-1", WHY_INDEX),
    ("create_index_leases/hand-1", WHY_INDEX),
    ("create_index_state/hand-1", WHY_INDEX),
    ("create_index_next/ror-1", WHY_INDEX),
    ("create_index_next/ror-2", WHY_INDEX),
    ("create_index_next/ror-3", WHY_INDEX),
    ("create_index_next/ror-4", WHY_INDEX),
    ("find_index/ror-1", WHY_INDEX_LOOK),
    ("find_index/ror-4", WHY_INDEX_LOOK),
    ("look/uoi-1", WHY_LOOK_EVERY_LEASE),
    ("find_tables/cmp-1", WHY_INDEX_NAMED_AS_TABLE),
    ("set_busy_timeout/const-1", WHY_BUSY_MS),
    ("set_busy_timeout/const-2", WHY_BUSY_MS),
    ("set_busy_timeout/hand-1", WHY_NO_BUSY_WAIT),
    ("fail/const-1", WHY_BACKOFF_MS),
    ("fail/const-2", WHY_BACKOFF_MS),
    ("fail/const-9", WHY_BACKOFF_MS),
    ("fail/const-10", WHY_BACKOFF_MS),
    ("fail/const-12", WHY_BACKOFF_MS),
    ("fail/const-24", WHY_BACKOFF_MS),
    ("reap_ready/const-1", WHY_BACKOFF_MS),
    ("reap_ready/const-2", WHY_BACKOFF_MS),
    ("reap_ready/const-9", WHY_BACKOFF_MS),
    ("reap_ready/const-10", WHY_BACKOFF_MS),
    ("reap_ready/const-12", WHY_BACKOFF_MS),
    ("reap_ready/const-24", WHY_BACKOFF_MS),
    ("fail/hand-5", WHY_BACKOFF_CAP),
    ("list/cmp-9", WHY_LIST_MS),
    ("list/hand-1", WHY_LIST_MS),
    ("list/off-3", WHY_LIST_MS),
    ("list/off-4", WHY_LIST_MS),
    ("rollback/hand-1", WHY_ROLLBACK),
    ("serve-wait-uncapped", WHY_SLOW),
    ("serve-keeps-abandoned-claims", WHY_CLAIM_LEFT),
    ("serve-refuses-unread", WHY_KEEP_ALIVE),
    ("serve-retry-conflict", WHY_SHOULD),
    ("usage-twice", WHY_SHOULD),
    ("status-only-error", WHY_SHOULD),
    ("timeout-unnamed", WHY_SHOULD),
    ("default-timeout-50s", WHY_SLOW_DEFAULTS),
    ("default-grace-10s", WHY_SLOW_DEFAULTS),
    ("default-grace-60s", WHY_SLOW_DEFAULTS),
];

const WHY_INDEX: &str = "an index's definition: it changes how SQLite finds rows, not which, and FORMAT.md §3.2 lets a program leave the indexes out (the variant no-indexes does); format/indexes and the scale cases (`should`) judge it";
const WHY_INDEX_LOOK: &str = "the look for the `leases` index made to find none (`type < 'index'`, or FALSE): the reference then reaps without `INDEXED BY`, as FORMAT.md §5.4 has it do in a file without that index (§3.2 lets a program leave the indexes out): the same rows, found through the `state` index; scale/claim-running (`should`) warns";
const WHY_LOOK_EVERY_LEASE: &str = "the look reads the earliest lease's end negated, so while any job runs an idle worker sees a lease run out and goes on to the claim, which reaps none and takes none: the same outcomes, with a write transaction at each poll where the reference reads. Looking first is a `may` (FORMAT.md §5.4), and a program that never looks claims at each poll too; steps/idle-worker-looks-first (`should`, traced) warns: 16 write locks in 40 reads";
const WHY_INDEX_NAMED_AS_TABLE: &str = "`type <= 'table'` also takes indexes for tables, but an index bearing ukue_meta's or ukue_jobs's name leaves no room for the table: every program refuses such a file, and the published init switches it to WAL before it fails, so only the message shows it";
const WHY_BUSY_MS: &str = "a busy timeout of 4999 or 5001 ms instead of FORMAT.md §4's 5000 (a `should`): a wait one millisecond longer or shorter beside another writer, past any run's timing";
const WHY_NO_BUSY_WAIT: &str = "no busy timeout at all: a step that finds the file locked by another writer fails at once with `database is locked`. FORMAT.md §4.1's wait is a `should`, so a program without it is no less correct, and the cases whose many processes keep the file busy take a refused step again (`busy_refusals`); steps/add-waits-for-busy-file (`should`) warns";
const WHY_BACKOFF_MS: &str = "the backoff's base, cap or random range moved by one millisecond: a draw tells it from the published backoff about once in a thousand or more (the model run, whose driver claims the published backoff, meets such a draw now and then), and FORMAT.md §5.6 lets each program pick its own backoff";
const WHY_BACKOFF_CAP: &str = "the backoff's cap raised from an hour to ten: it binds only from a job's tenth failed attempt (10 s doubled nine times is past an hour), which FORMAT.md §5.6 leaves to each program as the whole backoff is, and which the model's sequences, whose jobs have 10 attempts by default, reach only by chance";
const WHY_LIST_MS: &str = "a one-millisecond boundary of the clock in list's delayed test (`run_at >= :now`, or `> :now + 1`): a job that falls due at the very millisecond of the listing (or the next) shows as delayed (or as ready); a program that reads its own clock cannot be made to meet that millisecond, and the step driver, whose clock the model sets, has no list";
const WHY_ROLLBACK: &str = "a step's ROLLBACK made a no-op: the reference's steps fail after they began to write only when a statement fails, which a case can make happen only by an I/O error, and SQLite rolls a transaction back by itself on a full disk or a failed write (ioerror/work-disk-full passes this mutant: its worker lives on past its faults); a command-line process that fails a step exits, and a closed connection's transaction is rolled back. A long-lived server whose statement failed for another cause (a corrupt page) would keep its transaction open, but no case can cause that without breaking the file";
const WHY_CLAIM_LEFT: &str = "leaves undone http.claim-left-gives-back, a `should`: the job that a claim takes for a client that has left comes back when its lease runs out, as http.claim-left (a `must`) allows and the legal variant serve-keeps-abandoned-claims does; http/poll-disconnect-gives-back (`should`) warns";
const WHY_KEEP_ALIVE: &str = "closes the connection after a 405 without saying Connection: close: keeping a connection usable after a refusal is a `should` (http/keep-alive-after-refusal warns), and a client that sends again on a new connection is served";
const WHY_SHOULD: &str = "breaks only a `should` item of COMMAND.md (the one its description names: a status, a message printed once, what last_error says), which a correct program may leave undone (the legal variants do: serve-other-statuses, usage-printed-twice, status-only-last-error); the `should` case that checks it warns";
const WHY_SLOW_DEFAULTS: &str = "a default of `work` that shows only after a long wait (a command that runs past 50 s without --timeout; a grace of 30 s after SIGTERM): killed by sweep/work-defaults, which takes about a minute and so runs only under --slow (as the release check runs the score)";
const WHY_SLOW: &str = "killed by http/claim-wait-most, a case that waits 30 s and so runs only under --slow (as the release check runs the score)";

/// Why `name` survives the cases, if it is listed.
pub fn why(name: &str) -> Option<&'static str> {
    BEYOND_THE_CASES.iter().find(|(n, _)| *n == name).map(|(_, why)| *why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_survivor_is_in_the_listing_once() {
        let listed = super::super::listed();
        for (i, (name, _)) in BEYOND_THE_CASES.iter().enumerate() {
            let m = listed.iter().find(|m| m.name == *name);
            assert!(m.is_some_and(|m| m.kind != "equivalent"), "{name}: not a mutant the score runs");
            assert!(!BEYOND_THE_CASES[..i].iter().any(|(n, _)| n == name), "{name}: listed twice");
        }
    }
}
