//! Mutants of FORMAT.md's statements, made mechanically: the fuzzers are
//! judged by how many they kill and how fast (fuzz/time-to-bug.sh).
//!
//! Every SQL statement of spec/FORMAT.md is mutated five ways:
//! - `cmp`: a comparison operator swapped for each of its neighbours, the
//!   relations that differ from it for exactly one of less, equal and
//!   greater (`<` becomes `<=` or `!=`, `=` becomes `<=` or `>=`);
//! - `const`: a number moved by one, down and up;
//! - `where`: a conjunct of a WHERE dropped (a WHERE of one conjunct, whole);
//! - `order`: the direction of an ORDER BY term reversed;
//! - `set`: an assignment of an UPDATE's SET dropped.
//!
//! Then the classic operators, the selective set that mutation research
//! found sufficient (Offutt, Lee, Rothermel, Untch and Zapf, 1996: ABS,
//! AOR, LCR, ROR, UOI), and the two of issue 42, each kind leaving out
//! what a kind before it makes or what is the same mutant in other words:
//! - `ror`: every comparison's operator replaced by each other relation
//!   that `cmp` does not give, and the comparison by FALSE and by TRUE (not
//!   TRUE for a conjunct of a WHERE: that is the conjunct dropped, `where`);
//! - `lcr`: AND made OR and OR made AND (not BETWEEN's AND);
//! - `aor`: each arithmetic operator (`+ - * / %`, not the shift) replaced
//!   by each other one;
//! - `abs`: a number that a statement computes with (a numeric column or
//!   parameter beside an operator, in min, max, coalesce, abs or sum, in
//!   VALUES, or a CASE's result) wrapped in abs() and in -abs(); abs() of a
//!   value never below 0 is equivalent by rule ([`Mutant::equivalent`]), and
//!   -abs() of it is `uoi`'s negation, so not made;
//! - `uoi`: such a number negated, and NOT before a condition that is no
//!   comparison (IS NULL, IN, BETWEEN, the flag :permanent; NOT before a
//!   comparison is ROR's opposite relation, NULLs alike);
//! - `off`: the right side of a comparison of numbers moved by one, down and
//!   up (`attempts >= max_attempts - 1`; not a literal, which `const` moves);
//! - `first`: an assignment of a column that may hold NULL made to keep the
//!   value already there (`last_error = coalesce(last_error, :error)`); for
//!   a NOT NULL column, or a value of NULL, that is the assignment dropped
//!   (`set`).
//!
//! The hand-made mutations of tests/spec_mutations.rs
//! (tests/spec_mutations.txt, `hand`) join them. A mutant is named
//! `STATEMENT/KIND-N` (`pick/cmp-3`) and chosen at run time by
//! `UKUE_BROKEN=NAME`, as the hand-made bugs of crate::subjects::broken
//! are, so that one build runs every mutant. [`EQUIVALENT`] lists those
//! that no run can kill, with the reason; [`UNREACHED`] those that
//! ops_vs_model cannot reach (it runs in memory, after the file is made):
//! open_bytes times them, comparing each opening with the builtin's.

use std::sync::{Arc, OnceLock};

use ukue::{Spec, Stmt};

/// One mutant: one statement's text edited once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutant {
    /// `STATEMENT/KIND-N`, N counting from 1 within the statement and kind.
    pub name: String,
    pub stmt: Stmt,
    /// What changed: the text before and after, with a little context.
    pub what: String,
    /// The statement's mutated text.
    pub text: String,
    /// Why no run can kill it, when a rule of its operator says so (abs()
    /// of a value never below 0); the others are listed in [`EQUIVALENT`].
    pub equivalent: Option<&'static str>,
}

impl Mutant {
    /// The builtin spec with this mutant's statement.
    pub fn spec(&self) -> Arc<Spec> {
        Arc::new(Spec::builtin().with(self.stmt, self.text.clone()))
    }
}

/// Mutants that behave as the statement they mutate for every input the
/// format allows: no run can kill them. Each with the reason.
pub const EQUIVALENT: &[(&str, &str)] = &[
    ("next_run_at/const-2", WHY_LIMIT),
    ("pick/const-2", WHY_LIMIT),
    ("pick/const-4", WHY_LIMIT),
    ("fail/const-7", WHY_SHIFT),
    ("fail/const-8", WHY_SHIFT),
    ("fail/const-17", WHY_SHIFT),
    ("fail/const-18", WHY_SHIFT),
    ("reap_ready/const-7", WHY_SHIFT),
    ("reap_ready/const-8", WHY_SHIFT),
    ("reap_ready/const-17", WHY_SHIFT),
    ("reap_ready/const-18", WHY_SHIFT),
    ("fail/const-5", WHY_MAX0),
    ("fail/const-15", WHY_MAX0),
    ("reap_ready/const-5", WHY_MAX0),
    ("reap_ready/const-15", WHY_MAX0),
    ("release/const-3", WHY_MAX0),
    ("fail/const-11", WHY_NARROW),
    ("fail/const-19", WHY_NARROW),
    ("fail/const-22", WHY_NARROW),
    ("fail/const-23", WHY_NARROW),
    ("reap_ready/const-11", WHY_NARROW),
    ("reap_ready/const-19", WHY_NARROW),
    ("reap_ready/const-22", WHY_NARROW),
    ("reap_ready/const-23", WHY_NARROW),
    ("fail/const-14", WHY_NARROW),
    ("reap_ready/const-14", WHY_NARROW),
    ("fail/aor-20", WHY_NARROW),
    ("fail/aor-24", WHY_NARROW),
    ("fail/aor-25", WHY_NARROW),
    ("fail/aor-26", WHY_NARROW),
    ("fail/aor-27", WHY_NARROW),
    ("reap_ready/aor-20", WHY_NARROW),
    ("reap_ready/aor-24", WHY_NARROW),
    ("reap_ready/aor-25", WHY_NARROW),
    ("reap_ready/aor-26", WHY_NARROW),
    ("reap_ready/aor-27", WHY_NARROW),
    ("fail/uoi-9", WHY_NARROW),
    ("reap_ready/uoi-6", WHY_NARROW),
    ("fail/const-20", WHY_SAME_TENTH),
    ("reap_ready/const-20", WHY_SAME_TENTH),
    ("finish_delete/cmp-3", WHY_RUNNING),
    ("finish_delete/cmp-4", WHY_RUNNING),
    ("finish_delete/where-2", WHY_RUNNING),
    ("finish_keep/cmp-3", WHY_RUNNING),
    ("finish_keep/cmp-4", WHY_RUNNING),
    ("finish_keep/where-2", WHY_RUNNING),
    ("fail/cmp-7", WHY_RUNNING),
    ("fail/cmp-8", WHY_RUNNING),
    ("fail/where-2", WHY_RUNNING),
    ("renew/cmp-3", WHY_RUNNING),
    ("renew/cmp-4", WHY_RUNNING),
    ("renew/where-2", WHY_RUNNING),
    ("release/cmp-3", WHY_RUNNING),
    ("release/cmp-4", WHY_RUNNING),
    ("release/where-2", WHY_RUNNING),
    ("take/cmp-3", WHY_TAKE),
    ("take/cmp-4", WHY_TAKE),
    ("take/where-2", WHY_TAKE),
    ("pick/cmp-1", WHY_LEVELS),
    ("pick/cmp-2", WHY_LEVELS),
    ("pick/cmp-5", WHY_LEVELS),
    ("pick/cmp-6", WHY_LEVELS),
    ("pick/where-1", WHY_LEVELS),
    ("pick/where-3", WHY_LEVELS),
    ("pick/cmp-16", WHY_HIGHER),
    ("pick/where-6", WHY_LEVEL_END),
    ("fail/cmp-1", WHY_ATTEMPTS_MOST),
    ("fail/cmp-3", WHY_ATTEMPTS_MOST),
    ("reap_dead/cmp-5", WHY_ATTEMPTS_MOST),
    ("stats/cmp-5", WHY_STATE_ORDER),
    ("stats/cmp-6", WHY_STATE_ORDER),
    ("stats/cmp-14", WHY_STATE_ORDER),
    ("stats/cmp-17", WHY_STATE_ORDER),
    ("retry_all/cmp-1", WHY_STATE_ORDER),
    ("retry/cmp-3", WHY_STATE_ORDER),
    ("stats/cmp-10", WHY_STATE_ORDER),
    ("look/const-2", WHY_SCALAR_LIMIT),
    ("look/const-6", WHY_SCALAR_LIMIT),
    ("look/const-3", WHY_UNLEASED),
    ("look/const-4", WHY_UNLEASED),
    ("look/cmp-3", WHY_LOOK_MORE),
    ("look/cmp-4", WHY_LOOK_MORE),
    ("look/where-2", WHY_LOOK_MORE),
    ("reap_ready/hand-2", WHY_OWN_WORDS),
    ("list/cmp-7", WHY_LIST_DELAYED),
    ("list/cmp-8", WHY_LIST_DELAYED),
    ("find_tables/where-2", WHY_TABLES_BY_NAME),
    ("find_tables/order-1", WHY_TABLES_BY_NAME),
    ("find_index/cmp-1", WHY_INDEX_FIRST),
    ("take/first-1", WHY_TAKE_UNHELD),
    ("take/first-2", WHY_TAKE_UNHELD),
    ("expire_unleased/first-1", WHY_EXPIRE_UNLEASED),
    ("expire_unleased/uoi-1", WHY_EXPIRED_BEFORE_NOW),
    ("pick/abs-1", WHY_LEVEL_ABOVE),
    ("stats/ror-14", WHY_DELAYED_ANY_STATE),
    ("take/abs-7", WHY_ID_CHECKED),
    ("finish_delete/abs-2", WHY_ID_CHECKED),
    ("finish_keep/abs-3", WHY_ID_CHECKED),
    ("fail/abs-14", WHY_ID_CHECKED),
    ("renew/abs-6", WHY_ID_CHECKED),
    ("release/abs-4", WHY_ID_CHECKED),
    ("take/abs-3", WHY_DURATION),
    ("renew/abs-2", WHY_DURATION),
    ("fail/abs-8", WHY_DURATION),
    ("reap_dead/uoi-2", WHY_OWN_WORDS),
    ("reap_dead/uoi-3", WHY_OWN_WORDS),
    ("reap_ready/uoi-2", WHY_OWN_WORDS),
    ("reap_ready/uoi-3", WHY_OWN_WORDS),
];

const WHY_LIMIT: &str = "the reference reads only the first row: LIMIT 2 returns the same first row";
const WHY_SHIFT: &str = "the shift's cap: from attempt 10 on the hour's cap (3,600,000) holds, so a shift of at most 19, 20 or 21 gives the same backoff, and 10000 << 21 does not overflow";
const WHY_MAX0: &str = "a running job's attempts is at least 1 (take counts the attempt first), so max(attempts - 1, -1) is max(attempts - 1, 0)";
const WHY_NARROW: &str = "the jitter's range narrowed: every run_at the mutant gives, the published backoff gives too (FORMAT.md §5.6 draws the jitter at random), so no run can tell it from the reference's luck";
const WHY_SAME_TENTH: &str =
    "the jitter's range from the hour's cap: 3600001 / 10 is 3600000 / 10 in whole numbers, the same range";
const WHY_RUNNING: &str = "a row holds a token only while it runs (§7 lease_only_while_running), so `token = :token` already implies `state = 'running'`";
const WHY_TAKE: &str =
    "take runs in the transaction whose pick chose a ready job: its `state = 'ready'` never turns one away";
const WHY_LEVELS: &str = "the levels come from more queues' priorities, but they are visited in descending order and a level is taken only when this queue has a due job at it: the same job";
const WHY_ATTEMPTS_MOST: &str = "attempts never passes max_attempts (a job that has had its last attempt goes dead; a retry starts again from 0), so `attempts >= max_attempts` is `attempts = max_attempts`";
const WHY_STATE_ORDER: &str = "the states sort dead < done < ready < running: `state <= 'dead'` and `state >= 'running'` are `=`, and the delayed count's `state <= 'ready'` or `>= 'ready'` adds done, dead or running jobs, whose run_at is never later than now";
const WHY_LEVEL_END: &str = "the levels' recursion without its end: the pick runs only once next_run_at, in the same transaction, found a due job of the queue, whose level comes before the levels run out, and the outer LIMIT 1 stops the recursion there: the same job";
const WHY_SCALAR_LIMIT: &str = "a scalar subquery gives its first row: LIMIT 2 gives the same value";
const WHY_UNLEASED: &str = "a running job without a lease reads as run out with 0, -1 or 1 alike, all before any now the clock gives";
const WHY_LOOK_MORE: &str = "the look also sees running, done or dead jobs of the queue, whose run_at is never later than now (a job leaves ready only when a claim takes it, due, and the clock only moves on): it goes on to the claim, which finds what the reference finds";
const WHY_LIST_DELAYED: &str = "the listing's `delayed` also tries done and dead (`state <= 'ready'`) or running (`>= 'ready'`) jobs against `run_at > :now`, but a job leaves ready only when a claim takes it, due, and the clock only moves on: their run_at is never later than now, and they show their own state as before";
const WHY_TABLES_BY_NAME: &str = "the reference looks for ukue_meta and ukue_jobs by name among the tables it reads: more tables, or another order, find the same two";
const WHY_INDEX_FIRST: &str = "'index' sorts first of sqlite_master's types (index, table, trigger, view): `type <= 'index'` is `type = 'index'`";
const WHY_OWN_WORDS: &str = "FORMAT.md §5.4 asks a reap for a note that the lease expired, in each program's own words: `expired (attempt 1 of 3)` is one, as the model (any note that is not empty) and the published format accept";
const WHY_TAKE_UNHELD: &str = "take keeps the token or lease a ready job already holds, and a ready job holds none (§7 lease_only_while_running): coalesce(NULL, the new one) is the new one";
const WHY_EXPIRE_UNLEASED: &str =
    "expire_unleased sets only leases that are NULL (its WHERE): coalesce(NULL, :now) is :now";
const WHY_EXPIRED_BEFORE_NOW: &str = "expire_unleased gives a running job without a lease one that ended at -now instead of now; the reaps that follow in the same transaction take every lease that ends at or before now (`lease_until <= :now`) and clear it: the same jobs, reaped the same way";
const WHY_LEVEL_ABOVE: &str = "the first level is the largest priority in absolute value, at or above the queue's highest, and each level after it is the highest priority below the last, as before: the queue's own levels in descending order, after one that may hold no job: the same job";
const WHY_ID_CHECKED: &str = "the held job's id: the reference takes it from its own claim, or from a path that it refuses unless the id is 1 or more (http.id), so abs() of it is the id itself; http/refusals sends the held job's id negated with its token to every step, for the programs that read ids another way";
const WHY_DURATION: &str = "a lease or a delay, which the reference holds as a duration (never below 0: the server takes a negative retry_in as 0, http.fail-retry-in), so abs() of it is the value itself";
const WHY_DELAYED_ANY_STATE: &str = "the delayed count without its `state = 'ready'` also counts the done, dead and running jobs whose run_at is ahead, but a job leaves ready only when a claim takes it, due, and the clock only moves on: their run_at is never later than now";
const WHY_HIGHER: &str = "at each level a due job of a higher priority would have been taken at its own level first (every ready job's priority is a level): the same job";

/// Mutants that change only what the fuzz targets do not run or cannot
/// see: how a file is made or opened (the targets run on a database made
/// once, in memory), a default that every add overrides, a CHECK the
/// library's validation keeps steps from, an index. Other tests judge
/// these (each says which).
pub const UNREACHED: &[(&str, &str)] = &[
    ("create_jobs/const-5", WHY_DEFAULT),
    ("create_jobs/const-6", WHY_DEFAULT),
    ("create_jobs/const-15", WHY_DEFAULT),
    ("create_jobs/const-16", WHY_DEFAULT),
    ("create_jobs/const-19", WHY_DEFAULT),
    ("create_jobs/const-20", WHY_DEFAULT),
    ("create_jobs/const-21", WHY_DEFAULT),
    ("create_jobs/const-22", WHY_DEFAULT),
    ("create_jobs/const-23", WHY_DEFAULT),
    ("create_jobs/const-24", WHY_DEFAULT),
    ("create_jobs/const-25", WHY_DEFAULT),
    ("create_jobs/const-26", WHY_DEFAULT),
    ("create_jobs/const-27", WHY_DEFAULT),
    ("create_jobs/const-28", WHY_DEFAULT),
    ("create_jobs/const-29", WHY_DEFAULT),
    ("create_jobs/const-30", WHY_DEFAULT),
    ("create_jobs/hand-1", WHY_DEFAULT),
    ("create_jobs/const-1", WHY_CHECK),
    ("create_jobs/const-3", WHY_CHECK),
    ("create_jobs/const-4", WHY_CHECK),
    ("create_jobs/const-8", WHY_CHECK),
    ("create_jobs/const-10", WHY_CHECK),
    ("create_jobs/const-13", WHY_CHECK),
    ("create_jobs/const-17", WHY_CHECK),
    ("create_jobs/hand-4", WHY_CHECK),
    ("create_jobs/hand-5", WHY_CHECK),
    ("create_jobs/hand-6", WHY_CHECK),
    ("create_index_due/where-1", WHY_INDEX),
    ("create_index_next/cmp-1", WHY_INDEX),
    ("create_index_next/cmp-2", WHY_INDEX),
    ("create_index_next/where-1", WHY_INDEX),
    ("create_index_leases/where-1", WHY_INDEX),
    ("create_index_next/hand-1", WHY_INDEX),
    ("create_index_next/hand-2", WHY_INDEX),
    ("create_index_due/hand-1", WHY_INDEX),
    ("create_index_leases/hand-1", WHY_INDEX),
    ("create_index_state/hand-1", WHY_INDEX),
    ("create_meta/hand-1", WHY_INDEX),
    ("find_tables/cmp-1", WHY_OPEN),
    ("find_tables/cmp-2", WHY_OPEN),
    ("find_tables/where-1", WHY_OPEN),
    ("find_tables/hand-1", WHY_OPEN),
    ("set_application_id/const-1", WHY_OPEN),
    ("set_application_id/const-2", WHY_OPEN),
    ("set_application_id/hand-1", WHY_OPEN),
    ("set_busy_timeout/const-1", WHY_OPEN),
    ("set_busy_timeout/const-2", WHY_OPEN),
    ("set_busy_timeout/hand-1", WHY_OPEN),
    ("read_version/cmp-1", WHY_OPEN),
    ("read_version/cmp-2", WHY_OPEN),
    ("read_version/where-1", WHY_OPEN),
    ("read_version/hand-1", WHY_OPEN),
    ("find_index/cmp-2", WHY_OPEN),
    ("find_index/cmp-3", WHY_OPEN),
    ("find_index/cmp-4", WHY_OPEN),
    ("find_index/where-1", WHY_OPEN),
    ("count_schema/hand-1", WHY_OPEN),
    ("count_schema/hand-2", WHY_OPEN),
    ("set_wal/hand-1", WHY_OPEN),
    ("read_journal_mode/hand-1", WHY_OPEN),
    ("set_synchronous/hand-1", WHY_OPEN),
    ("insert_meta/hand-1", WHY_OPEN),
    ("rollback/hand-1", WHY_ROLLBACK),
];

const WHY_DEFAULT: &str = "a column's DEFAULT, which the reference's add never leaves to it (it gives every column); a program that inserts as FORMAT.md's example does sees it; open_bytes sees it in the schema of a file it makes (fuzz/time-to-bug.sh open_bytes), as does tests/spec_mutations.rs's schema check";
const WHY_CHECK: &str = "a CHECK that the library's own validation keeps every step from reaching (queue names of 1 to 200 characters, priorities -100..100, max_attempts of 1 or more, attempts never below 0); open_bytes sees the text in the schema of a file it makes (fuzz/time-to-bug.sh open_bytes), as does tests/spec_mutations.rs's schema check";
const WHY_INDEX: &str = "an index's definition: it changes how SQLite finds rows, not which, so the steps' answers stay; the file's schema differs, which open_bytes sees in a file it makes (fuzz/time-to-bug.sh open_bytes), as do tests/spec_mutations.rs and the conformance suite's format cases";
const WHY_OPEN: &str = "runs only when a file is made or opened, which ops_vs_model does once, in memory: open_bytes opens every input as the builtin FORMAT.md does and compares (fuzz/time-to-bug.sh open_bytes), as do tests/spec_mutations.rs and the conformance suite's opening and refusal cases";
const WHY_ROLLBACK: &str = "ops_vs_model never runs it: a step of the reference that fails after it began to write does not happen on a sound in-memory database; opening rolls back its checks' transaction (fuzz/time-to-bug.sh open_bytes)";

/// The kinds of the classic operators.
pub const CLASSIC: &[&str] = &["ror", "lcr", "aor", "abs", "uoi", "off", "first"];

/// The statements that run only as a file is made or opened, beside the
/// schema's ([`Stmt::SCHEMA`]): the classic operators' mutants of them are
/// unreached by ops_vs_model, as the other kinds' are (listed one by one
/// in [`UNREACHED`]).
const OPENING_LOOKS: &[Stmt] = &[Stmt::FindTables, Stmt::CountSchema, Stmt::ReadVersion, Stmt::FindIndex];
const WHY_OPENING: &str = "a classic operator's mutant of a statement that runs only when a file is made or opened (a CHECK, a DEFAULT or an index of the schema, a look at sqlite_master or ukue_meta), which ops_vs_model does once, in memory: open_bytes compares each opening with the builtin's (fuzz/time-to-bug.sh open_bytes), as do the conformance suite's format, opening and refusal cases";

/// Whether `name` is listed in [`EQUIVALENT`] or [`UNREACHED`]: which
/// (`equivalent`, `unreached`), and why.
pub fn set_aside(name: &str) -> Option<(&'static str, &'static str)> {
    let find = |list: &'static [(&'static str, &'static str)]| list.iter().find(|(n, _)| *n == name);
    find(EQUIVALENT)
        .map(|(_, why)| ("equivalent", *why))
        .or_else(|| named(name)?.equivalent.map(|why| ("equivalent", why)))
        .or_else(|| find(UNREACHED).map(|(_, why)| ("unreached", *why)))
        .or_else(|| {
            let m = named(name)?;
            let classic = CLASSIC.iter().any(|k| name.contains(&format!("/{k}-")));
            let opening = Stmt::SCHEMA.contains(&m.stmt) || OPENING_LOOKS.contains(&m.stmt);
            (classic && opening).then_some(("unreached", WHY_OPENING))
        })
}

/// Every mutant: the generated ones of every statement, then the
/// hand-made ones.
pub fn all() -> &'static [Mutant] {
    static ALL: OnceLock<Vec<Mutant>> = OnceLock::new();
    ALL.get_or_init(|| {
        let builtin = Spec::builtin();
        let mut all: Vec<Mutant> = Stmt::ALL.iter().flat_map(|s| generated(*s, builtin.sql(*s))).collect();
        all.extend(hand_made().unwrap_or_else(|e| panic!("{e}")));
        all
    })
}

/// The mutant named `name`.
pub fn named(name: &str) -> Option<&'static Mutant> {
    all().iter().find(|m| m.name == name)
}

/// The reader of the hand-made mutations, shared with tests/spec_mutations.rs.
#[path = "../../../tests/common/mutations.rs"]
#[allow(dead_code)]
mod hand;

fn hand_made() -> Result<Vec<Mutant>, String> {
    let builtin = Spec::builtin();
    let mut out = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    for m in hand::hand_made(hand::HAND_MADE, &builtin)? {
        let text = m.apply(&builtin)?;
        let n = counts.entry(m.stmt).and_modify(|n| *n += 1).or_insert(1);
        out.push(Mutant {
            name: format!("{}/hand-{n}", m.stmt.name()),
            stmt: m.stmt,
            what: format!("{:?} → {:?}", m.from, m.to),
            text,
            equivalent: None,
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------- tokens

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Word,
    Number,
    Str,
    Param,
    Op,
    Open,
    Close,
    Comma,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Tok,
    start: usize,
    end: usize,
    /// Parentheses open before it.
    depth: usize,
}

/// SQLite's tokens, as far as FORMAT.md's statements use them.
fn tokens(sql: &str) -> Vec<Token> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut depth) = (0, 0);
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        let kind = if c.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            Tok::Word
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            Tok::Number
        } else if c == b'\'' {
            i += 1;
            while i < bytes.len() {
                if bytes[i] == b'\'' && bytes.get(i + 1) != Some(&b'\'') {
                    break;
                }
                i += if bytes[i] == b'\'' { 2 } else { 1 };
            }
            i += 1;
            Tok::Str
        } else if c == b':' {
            i += 1;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            Tok::Param
        } else if c == b'(' {
            i += 1;
            depth += 1;
            out.push(Token { kind: Tok::Open, start, end: i, depth: depth - 1 });
            continue;
        } else if c == b')' {
            i += 1;
            depth = depth.saturating_sub(1);
            Tok::Close
        } else if c == b',' {
            i += 1;
            Tok::Comma
        } else {
            let two = sql.get(i..i + 2).unwrap_or("");
            i += if ["<=", ">=", "!=", "<>", "<<", ">>", "||", "=="].contains(&two) { 2 } else { 1 };
            Tok::Op
        };
        out.push(Token { kind, start, end: i, depth });
    }
    out
}

fn word(sql: &str, t: &Token, w: &str) -> bool {
    t.kind == Tok::Word && sql[t.start..t.end].eq_ignore_ascii_case(w)
}

// ---------------------------------------------------------------- mutants

/// The neighbours of a comparison: the relations that differ from it for
/// exactly one of less, equal and greater (none are true or false alone).
fn neighbours(op: &str) -> &'static [&'static str] {
    match op {
        "<" => &["<=", "!="],
        "<=" => &["<", "="],
        "=" | "==" => &["<=", ">="],
        ">=" => &["=", ">"],
        ">" => &[">=", "!="],
        "!=" | "<>" => &["<", ">"],
        _ => &[],
    }
}

/// A span of a statement's text and what replaces it.
type Cut = (usize, usize, String);

/// Every mechanical mutant of one statement.
pub fn generated(stmt: Stmt, sql: &str) -> Vec<Mutant> {
    let toks = tokens(sql);
    let mut edits: Vec<(&str, Vec<Cut>)> = Vec::new();
    let assignments = set_clauses(sql, &toks);
    let assigning: Vec<usize> = assignments.iter().filter_map(|a| a.eq).collect();
    for (i, t) in toks.iter().enumerate() {
        if t.kind == Tok::Op && !assigning.contains(&i) && !is_pragma(sql, &toks) {
            for to in neighbours(&sql[t.start..t.end]) {
                edits.push(("cmp", vec![(t.start, t.end, (*to).to_string())]));
            }
        }
        if t.kind == Tok::Number {
            let text = &sql[t.start..t.end];
            for delta in [-1.0, 1.0] {
                let moved = match text.parse::<i64>() {
                    Ok(n) => (n + delta as i64).to_string(),
                    Err(_) => (text.parse::<f64>().unwrap_or(0.0) + delta).to_string(),
                };
                edits.push(("const", vec![(t.start, t.end, moved)]));
            }
        }
    }
    for conjuncts in where_clauses(sql, &toks) {
        edits.extend(conjuncts.into_iter().map(|cut| ("where", vec![cut])));
    }
    for term in order_terms(sql, &toks) {
        edits.push(("order", vec![term]));
    }
    if assignments.len() > 1 {
        for (k, a) in assignments.iter().enumerate() {
            // With the comma after it, or the last with the comma before.
            let cut = match assignments.get(k + 1) {
                Some(next) => (a.start, next.start, String::new()),
                None => (assignments[k - 1].end, a.end, String::new()),
            };
            edits.push(("set", vec![cut]));
        }
    }
    // The classic operators come after the kinds above, so that a text
    // they make again is theirs, and those kinds' names stay as they were.
    if !is_pragma(sql, &toks) {
        edits.extend(classic(sql, &toks, &assignments, &assigning));
    }
    let mut counts = std::collections::BTreeMap::new();
    let mut out: Vec<Mutant> = Vec::new();
    for (kind, cuts) in edits {
        let mut text = sql.to_string();
        let mut what = Vec::new();
        for (start, end, to) in cuts.iter().rev() {
            let before = context(sql, *start, *end);
            text.replace_range(*start..*end, to);
            what.push(format!("{:?} → {:?} in …{before}…", &sql[*start..*end], to));
        }
        if text == sql || out.iter().any(|m| m.text == text) {
            continue;
        }
        let n = counts.entry(kind).and_modify(|n| *n += 1).or_insert(1);
        let abs_of_positive = kind == "abs"
            && cuts.iter().all(|(start, end, to)| {
                to.starts_with("abs(") && in_list(NEVER_NEGATIVE, &sql[*start..*end])
            });
        let equivalent = abs_of_positive.then_some(WHY_NEVER_NEGATIVE);
        out.push(Mutant {
            name: format!("{}/{kind}-{n}", stmt.name()),
            stmt,
            what: what.join("; "),
            text,
            equivalent,
        });
    }
    out
}

fn is_pragma(sql: &str, toks: &[Token]) -> bool {
    toks.first().is_some_and(|t| word(sql, t, "PRAGMA"))
}

/// A few characters either side of a cut, on one line.
fn context(sql: &str, start: usize, end: usize) -> String {
    let from = sql[..start].char_indices().rev().nth(15).map_or(0, |(i, _)| i);
    let to = sql[end..].char_indices().nth(15).map_or(sql.len(), |(i, _)| end + i);
    sql[from..to].split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One assignment of an UPDATE's SET: its span, and its `=` token.
struct Assignment {
    start: usize,
    end: usize,
    eq: Option<usize>,
}

/// The assignments of the UPDATE's SET, in order.
fn set_clauses(sql: &str, toks: &[Token]) -> Vec<Assignment> {
    let Some(set) = toks.iter().position(|t| t.depth == 0 && word(sql, t, "SET")) else {
        return Vec::new();
    };
    if !toks.first().is_some_and(|t| word(sql, t, "UPDATE")) {
        return Vec::new();
    }
    let ends = ["WHERE", "RETURNING"];
    let mut out = Vec::new();
    let mut first = set + 1;
    let mut i = first;
    loop {
        let at_end = i >= toks.len() || (toks[i].depth == 0 && ends.iter().any(|w| word(sql, &toks[i], w)));
        if at_end || (toks[i].kind == Tok::Comma && toks[i].depth == 0) {
            if first < i {
                let eq = toks[first..i].iter().position(|t| t.kind == Tok::Op).map(|p| first + p);
                out.push(Assignment { start: toks[first].start, end: toks[i - 1].end, eq });
            }
            if at_end {
                return out;
            }
            first = i + 1;
        }
        i += 1;
    }
}

/// Where a clause ends: a token at a lower depth, or one of `words` at its own.
fn clause_end(sql: &str, toks: &[Token], from: usize, depth: usize, words: &[&str]) -> usize {
    toks[from..]
        .iter()
        .position(|t| t.depth < depth || (t.depth == depth && words.iter().any(|w| word(sql, t, w))))
        .map_or(toks.len(), |p| from + p)
}

/// For each WHERE, the cuts that drop one of its conjuncts (with an AND
/// beside it), or, for a WHERE of one, the cut that drops it whole.
fn where_clauses(sql: &str, toks: &[Token]) -> Vec<Vec<Cut>> {
    let stops = ["ORDER", "GROUP", "LIMIT", "RETURNING", "UNION"];
    let mut out = Vec::new();
    for (w, t) in toks.iter().enumerate().filter(|(_, t)| word(sql, t, "WHERE")) {
        let depth = t.depth;
        let end = clause_end(sql, toks, w + 1, depth, &stops);
        // The ANDs between conjuncts: at the WHERE's depth, not BETWEEN's.
        let mut ands = Vec::new();
        let mut between = false;
        for (k, tok) in toks.iter().enumerate().take(end).skip(w + 1) {
            if tok.depth != depth {
                continue;
            }
            if word(sql, tok, "BETWEEN") {
                between = true;
            } else if word(sql, tok, "AND") {
                if between {
                    between = false;
                } else {
                    ands.push(k);
                }
            }
        }
        let last = toks[end - 1].end;
        if ands.is_empty() {
            out.push(vec![(t.start, last, String::new())]);
            continue;
        }
        let mut cuts = Vec::new();
        let mut first = w + 1;
        for (k, &and) in ands.iter().enumerate() {
            // A conjunct but the last: it and the AND after it.
            cuts.push((toks[first].start, toks[and + 1].start, String::new()));
            first = and + 1;
            if k + 1 == ands.len() {
                // The last: the AND before it and it.
                cuts.push((toks[and - 1].end, last, String::new()));
            }
        }
        out.push(cuts);
    }
    out
}

/// For each term of each ORDER BY, the cut that reverses its direction.
fn order_terms(sql: &str, toks: &[Token]) -> Vec<Cut> {
    let mut out = Vec::new();
    for (o, t) in toks.iter().enumerate() {
        if !(word(sql, t, "ORDER") && toks.get(o + 1).is_some_and(|b| word(sql, b, "BY"))) {
            continue;
        }
        let end = clause_end(sql, toks, o + 2, t.depth, &["LIMIT"]);
        let mut last = o + 1;
        for k in o + 2..=end {
            if k < end && !(toks[k].kind == Tok::Comma && toks[k].depth == t.depth) {
                last = k;
                continue;
            }
            let tail = &toks[last];
            out.push(if word(sql, tail, "DESC") {
                (toks[last - 1].end, tail.end, String::new())
            } else if word(sql, tail, "ASC") {
                (tail.start, tail.end, "DESC".to_string())
            } else {
                (tail.end, tail.end, " DESC".to_string())
            });
        }
    }
    out
}

// ---------------------------------------------------------------- the classic operators

/// The relations ROR puts in each other's place (`==` is `=`, `<>` is `!=`).
const RELATIONS: &[&str] = &["<", "<=", "=", "!=", ">", ">="];

fn relation(op: &str) -> Option<&'static str> {
    match op {
        "==" => Some("="),
        "<>" => Some("!="),
        _ => RELATIONS.iter().find(|r| **r == op).copied(),
    }
}

/// The arithmetic operators AOR puts in each other's place (not `<<`,
/// a shift, nor `||`, which joins text).
const ARITHMETIC: &[&str] = &["+", "-", "*", "/", "%"];

/// Words that end an operand: a comparison's sides and a value stop at them.
const STOPS: &[&str] = &[
    "AND",
    "OR",
    "NOT",
    "WHERE",
    "WHEN",
    "THEN",
    "ELSE",
    "SELECT",
    "FROM",
    "ORDER",
    "GROUP",
    "LIMIT",
    "RETURNING",
    "SET",
    "BETWEEN",
    "IS",
    "IN",
    "ON",
    "CHECK",
    "UNION",
    "BY",
    "VALUES",
    "AS",
    "DEFAULT",
];

/// Columns and parameters that hold text: a comparison of them is not moved
/// by one, nor their value negated.
const TEXTS: &[&str] = &[
    "queue",
    "state",
    "token",
    "last_error",
    "payload",
    "name",
    "type",
    "key",
    "value",
    ":queue",
    ":state",
    ":token",
    ":error",
    ":name",
    ":key",
    ":value",
    ":payload",
];

/// Columns and parameters that hold numbers: the values ABS and UOI change.
const NUMBERS: &[&str] = &[
    "id",
    "priority",
    "attempts",
    "max_attempts",
    "run_at",
    "lease_until",
    "created_at",
    "updated_at",
    ":id",
    ":now",
    ":lease",
    ":after",
    ":limit",
    ":priority",
    ":max_attempts",
    ":run_at",
    ":retry_in",
];

/// Values that are never below 0 in any file the format allows and any step
/// the reference takes: abs() of one is the value itself. (`priority` may be
/// negative; an id or a time given on the command line may be too.)
const NEVER_NEGATIVE: &[&str] = &[
    "id",
    "attempts",
    "max_attempts",
    "lease_until",
    "created_at",
    "updated_at",
    ":now",
    ":limit",
    ":max_attempts",
];
const WHY_NEVER_NEGATIVE: &str = "abs() of a value that is never below 0 (attempts, max_attempts and ids by the schema's CHECKs and AUTOINCREMENT, the clock's times, a limit of 1 or more): the value itself";

/// The columns that may hold NULL: the only ones whose first value a SET
/// can keep (for a NOT NULL column, `coalesce(col, E)` is col: the
/// assignment dropped, which `set` does).
const NULLABLE: &[&str] = &["lease_until", "token", "last_error"];

fn text_of<'a>(sql: &'a str, t: &Token) -> &'a str {
    &sql[t.start..t.end]
}

fn in_list(list: &[&str], text: &str) -> bool {
    list.iter().any(|w| w.eq_ignore_ascii_case(text))
}

/// Whether token `k` is a relational operator that compares (not a SET's
/// assignment).
fn is_relation(sql: &str, toks: &[Token], k: usize, assigning: &[usize]) -> bool {
    toks[k].kind == Tok::Op && relation(text_of(sql, &toks[k])).is_some() && !assigning.contains(&k)
}

/// Whether token `k` ends an operand, so that an operator after it is binary.
fn ends_operand(sql: &str, t: &Token) -> bool {
    match t.kind {
        Tok::Number | Tok::Str | Tok::Param | Tok::Close => true,
        Tok::Word => !in_list(STOPS, text_of(sql, t)),
        _ => false,
    }
}

/// One side of the operator at `op` (`step` -1: the left, 1: the right),
/// as the first and last of its tokens: up to a relation, a comma, a word
/// of [`STOPS`] or the parenthesis around it; a CASE … END is one operand.
fn side(sql: &str, toks: &[Token], op: usize, step: isize, assigning: &[usize]) -> Option<(usize, usize)> {
    let depth = toks[op].depth;
    let (mut k, mut far) = (op as isize + step, None);
    let (open, close) = if step > 0 { ("CASE", "END") } else { ("END", "CASE") };
    while let Some(t) = usize::try_from(k).ok().and_then(|k| toks.get(k)) {
        if t.depth < depth {
            break;
        }
        if t.depth == depth {
            let w = text_of(sql, t);
            let stop = t.kind == Tok::Comma
                || is_relation(sql, toks, k as usize, assigning)
                || (t.kind == Tok::Op && assigning.contains(&(k as usize)))
                || (t.kind == Tok::Word && (in_list(STOPS, w) || w.eq_ignore_ascii_case(close)));
            if stop {
                break;
            }
            if t.kind == Tok::Word && w.eq_ignore_ascii_case(open) {
                // To the matching end, past the CASEs within.
                let mut nest = 0;
                loop {
                    let u = &toks[k as usize];
                    if u.depth == depth && u.kind == Tok::Word {
                        let w = text_of(sql, u);
                        if w.eq_ignore_ascii_case(open) {
                            nest += 1;
                        } else if w.eq_ignore_ascii_case(close) {
                            nest -= 1;
                            if nest == 0 {
                                break;
                            }
                        }
                    }
                    k += step;
                }
            }
        }
        far = Some(k as usize);
        k += step;
    }
    let far = far?;
    Some(if step > 0 { (op + 1, far) } else { (far, op - 1) })
}

/// Whether the tokens `lo..=hi` hold a number: a numeric column, parameter
/// or literal, and nothing that holds text.
fn numeric(sql: &str, toks: &[Token], (lo, hi): (usize, usize)) -> bool {
    let part = &toks[lo..=hi];
    let texty = |t: &Token| {
        t.kind == Tok::Str || text_of(sql, t) == "||" || in_list(TEXTS, text_of(sql, t)) && t.kind != Tok::Op
    };
    let numbery = |t: &Token| t.kind == Tok::Number || in_list(NUMBERS, text_of(sql, t));
    !part.iter().any(texty) && part.iter().any(numbery)
}

/// The value that starts at token `k`, if one does: a numeric column or
/// parameter (`level.priority` whole), as the first and last of its tokens.
fn primary(sql: &str, toks: &[Token], k: usize) -> Option<(usize, usize)> {
    let t = &toks[k];
    let dotted =
        |k: usize| toks.get(k + 1).is_some_and(|d| text_of(sql, d) == ".") && toks.get(k + 2).is_some();
    if t.kind == Tok::Word && dotted(k) {
        return in_list(NUMBERS, text_of(sql, &toks[k + 2])).then_some((k, k + 2));
    }
    let after_dot = k > 0 && text_of(sql, &toks[k - 1]) == ".";
    (matches!(t.kind, Tok::Word | Tok::Param) && !after_dot && in_list(NUMBERS, text_of(sql, t)))
        .then_some((k, k))
}

/// Whether the value `lo..=hi` stands where a number is computed: beside an
/// operator (the right of a SET's assignment, not its column), an argument
/// of min, max, coalesce, abs or sum, an item of VALUES, or a CASE's result.
/// Not a column named in a list (SELECT, RETURNING, ORDER BY, an index's or
/// an INSERT's columns).
fn computed(sql: &str, toks: &[Token], (lo, hi): (usize, usize), assigning: &[usize]) -> bool {
    let op = |k: usize| toks[k].kind == Tok::Op && text_of(sql, &toks[k]) != ".";
    let before = lo.checked_sub(1);
    if before.is_some_and(&op)
        || hi + 1 < toks.len() && op(hi + 1) && !assigning.contains(&(hi + 1))
        || before
            .is_some_and(|b| in_list(&["THEN", "ELSE"], text_of(sql, &toks[b])) && toks[b].kind == Tok::Word)
    {
        return true;
    }
    // Inside parentheses: whose?
    let depth = toks[lo].depth;
    let Some(open) = toks[..lo].iter().rposition(|t| t.kind == Tok::Open && t.depth + 1 == depth) else {
        return false;
    };
    open.checked_sub(1).is_some_and(|f| {
        toks[f].kind == Tok::Word
            && in_list(&["min", "max", "coalesce", "abs", "sum", "VALUES"], text_of(sql, &toks[f]))
    })
}

/// Whether the comparison `lo..=hi` is a conjunct of a WHERE: ANDs
/// alone between it and the WHERE, and an AND or the clause's end after it.
fn conjunct(sql: &str, toks: &[Token], lo: usize, hi: usize) -> bool {
    let depth = toks[lo].depth;
    let before = toks[..lo].iter().enumerate().rev().find(|(k, t)| {
        t.depth < depth
            || t.depth == depth
                && t.kind == Tok::Word
                && in_list(STOPS, text_of(sql, t))
                && (!text_of(sql, t).eq_ignore_ascii_case("AND") || betweens_and(sql, toks, *k))
    });
    let after_ok = match toks.get(hi + 1) {
        None => true,
        Some(t) if t.depth < depth => true,
        Some(t) => {
            t.kind == Tok::Word
                && (in_list(&["ORDER", "GROUP", "LIMIT", "RETURNING", "UNION"], text_of(sql, t))
                    || text_of(sql, t).eq_ignore_ascii_case("AND") && !betweens_and(sql, toks, hi + 1))
        }
    };
    after_ok && before.is_some_and(|(_, t)| t.depth == depth && text_of(sql, t).eq_ignore_ascii_case("WHERE"))
}

/// The condition that is not a comparison and whose word or parameter is
/// at `k` (`x IS [NOT] NULL`, `x IN (…)`, `x BETWEEN a AND b`, the flag
/// `:permanent`), as the first and last of its tokens: where UOI puts a NOT.
/// (NOT before a comparison is ROR's opposite relation, NULLs alike.)
fn condition(sql: &str, toks: &[Token], k: usize, assigning: &[usize]) -> Option<(usize, usize)> {
    let t = &toks[k];
    let w = text_of(sql, t);
    if t.kind == Tok::Param && w == ":permanent" {
        return Some((k, k));
    }
    if t.kind != Tok::Word {
        return None;
    }
    let (lo, _) = side(sql, toks, k, -1, assigning)?;
    let hi = if w.eq_ignore_ascii_case("IS") {
        let not = toks.get(k + 1).is_some_and(|n| text_of(sql, n).eq_ignore_ascii_case("NOT"));
        k + if not { 2 } else { 1 }
    } else if w.eq_ignore_ascii_case("IN") {
        let depth = toks.get(k + 1).filter(|o| o.kind == Tok::Open)?.depth;
        (k + 2..toks.len()).find(|&c| toks[c].kind == Tok::Close && toks[c].depth == depth)?
    } else if w.eq_ignore_ascii_case("BETWEEN") {
        let and = (k + 1..toks.len()).find(|&a| {
            toks[a].depth == t.depth
                && toks[a].kind == Tok::Word
                && text_of(sql, &toks[a]).eq_ignore_ascii_case("AND")
        })?;
        side(sql, toks, and, 1, assigning)?.1
    } else {
        return None;
    };
    (hi < toks.len()).then_some((lo, hi))
}

/// Whether the AND at `k` is BETWEEN's (`x BETWEEN 1 AND 200`), no
/// connector.
fn betweens_and(sql: &str, toks: &[Token], k: usize) -> bool {
    let depth = toks[k].depth;
    for t in toks[..k].iter().rev() {
        if t.depth < depth {
            return false;
        }
        if t.depth == depth && t.kind == Tok::Word {
            let w = text_of(sql, t);
            if w.eq_ignore_ascii_case("BETWEEN") {
                return true;
            }
            if in_list(&["AND", "OR", "WHERE", "WHEN", "CHECK", "THEN", "ELSE"], w) {
                return false;
            }
        }
    }
    false
}

/// The edits of the classic operators (Offutt et al.'s selective set, and
/// two the issue names), each kind in the module's documentation.
fn classic(
    sql: &str,
    toks: &[Token],
    assignments: &[Assignment],
    assigning: &[usize],
) -> Vec<(&'static str, Vec<Cut>)> {
    let mut ror = Vec::new();
    let mut off = Vec::new();
    let mut not = Vec::new();
    let mut aor = Vec::new();
    let mut lcr = Vec::new();
    let mut values = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        let here = text_of(sql, t);
        if is_relation(sql, toks, k, assigning) {
            let (Some(left), Some(right)) =
                (side(sql, toks, k, -1, assigning), side(sql, toks, k, 1, assigning))
            else {
                continue;
            };
            let op = relation(here).unwrap_or(here);
            for to in RELATIONS.iter().filter(|r| **r != op && !neighbours(op).contains(r)) {
                ror.push(vec![(t.start, t.end, (*to).to_string())]);
            }
            let (start, end) = (toks[left.0].start, toks[right.1].end);
            // TRUE for a conjunct of a WHERE is that conjunct dropped (`where`).
            let consts: &[&str] =
                if conjunct(sql, toks, left.0, right.1) { &["FALSE"] } else { &["TRUE", "FALSE"] };
            for to in consts {
                ror.push(vec![(start, end, to.to_string())]);
            }
            let single_number = right.0 == right.1 && toks[right.0].kind == Tok::Number;
            if numeric(sql, toks, left) && numeric(sql, toks, right) && !single_number {
                let r = &sql[toks[right.0].start..toks[right.1].end];
                for to in [format!("{r} - 1"), format!("{r} + 1")] {
                    off.push(vec![(toks[right.0].start, toks[right.1].end, to)]);
                }
            }
        }
        if t.kind == Tok::Op && ARITHMETIC.contains(&here) && k > 0 && ends_operand(sql, &toks[k - 1]) {
            for to in ARITHMETIC.iter().filter(|a| **a != here) {
                aor.push(vec![(t.start, t.end, (*to).to_string())]);
            }
        }
        if t.kind == Tok::Word && !betweens_and(sql, toks, k) {
            if here.eq_ignore_ascii_case("AND") {
                lcr.push(vec![(t.start, t.end, "OR".to_string())]);
            } else if here.eq_ignore_ascii_case("OR") {
                lcr.push(vec![(t.start, t.end, "AND".to_string())]);
            }
        }
        if let Some(span) = primary(sql, toks, k) {
            if computed(sql, toks, span, assigning) {
                values.push(span);
            }
        }
        if let Some((lo, hi)) = condition(sql, toks, k, assigning) {
            let (start, end) = (toks[lo].start, toks[hi].end);
            not.push(vec![(start, end, format!("NOT ({})", &sql[start..end]))]);
        }
    }
    let mut abs = Vec::new();
    let mut neg = Vec::new();
    for (lo, hi) in values {
        let (start, end) = (toks[lo].start, toks[hi].end);
        let v = &sql[start..end];
        abs.push(vec![(start, end, format!("abs({v})"))]);
        // -abs() of a value never below 0 is the value negated (`uoi`).
        if !in_list(NEVER_NEGATIVE, v) {
            abs.push(vec![(start, end, format!("-abs({v})"))]);
        }
        neg.push(vec![(start, end, format!("(-{v})"))]);
    }
    let mut first = Vec::new();
    for a in assignments {
        let Some(eq) = a.eq else { continue };
        let column = &sql[a.start..toks[eq].start].trim();
        // Keeping the first of NULL is the assignment dropped (`set`).
        let value = sql[toks[eq].end..a.end].trim();
        if in_list(NULLABLE, column) && !value.eq_ignore_ascii_case("NULL") {
            first.push(vec![(toks[eq + 1].start, a.end, format!("coalesce({column}, {value})"))]);
        }
    }
    let kinds = [("ror", ror), ("lcr", lcr), ("aor", aor), ("abs", abs), ("uoi", neg), ("uoi", not)];
    let mut out: Vec<(&'static str, Vec<Cut>)> =
        kinds.into_iter().flat_map(|(kind, cuts)| cuts.into_iter().map(move |c| (kind, c))).collect();
    out.extend(off.into_iter().map(|c| ("off", c)));
    out.extend(first.into_iter().map(|c| ("first", c)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(stmt: Stmt, sql: &str, kind: &str) -> Vec<String> {
        let prefix = format!("{}/{kind}-", stmt.name());
        generated(stmt, sql).into_iter().filter(|m| m.name.starts_with(&prefix)).map(|m| m.text).collect()
    }

    #[test]
    fn each_kind_mutates_as_its_rule_says() {
        let sql = "UPDATE t SET a = 1, b = b + 2 WHERE x <= :now AND y = 'r' ORDER BY run_at, id DESC";
        let s = Stmt::Renew;
        assert_eq!(
            texts(s, sql, "cmp"),
            [
                "UPDATE t SET a = 1, b = b + 2 WHERE x < :now AND y = 'r' ORDER BY run_at, id DESC",
                "UPDATE t SET a = 1, b = b + 2 WHERE x = :now AND y = 'r' ORDER BY run_at, id DESC",
                "UPDATE t SET a = 1, b = b + 2 WHERE x <= :now AND y <= 'r' ORDER BY run_at, id DESC",
                "UPDATE t SET a = 1, b = b + 2 WHERE x <= :now AND y >= 'r' ORDER BY run_at, id DESC",
            ]
        );
        assert_eq!(texts(s, sql, "const").len(), 4);
        assert!(texts(s, sql, "const").contains(&sql.replace("b + 2", "b + 3")));
        assert_eq!(
            texts(s, sql, "where"),
            [
                "UPDATE t SET a = 1, b = b + 2 WHERE y = 'r' ORDER BY run_at, id DESC",
                "UPDATE t SET a = 1, b = b + 2 WHERE x <= :now ORDER BY run_at, id DESC",
            ]
        );
        assert_eq!(
            texts(s, sql, "order"),
            [
                "UPDATE t SET a = 1, b = b + 2 WHERE x <= :now AND y = 'r' ORDER BY run_at DESC, id DESC",
                "UPDATE t SET a = 1, b = b + 2 WHERE x <= :now AND y = 'r' ORDER BY run_at, id",
            ]
        );
        assert_eq!(
            texts(s, sql, "set"),
            [
                "UPDATE t SET b = b + 2 WHERE x <= :now AND y = 'r' ORDER BY run_at, id DESC",
                "UPDATE t SET a = 1 WHERE x <= :now AND y = 'r' ORDER BY run_at, id DESC",
            ]
        );
        // A WHERE of one conjunct goes whole; BETWEEN's AND is no conjunct.
        assert_eq!(texts(s, "SELECT 1 FROM t WHERE a BETWEEN 1 AND 2", "where"), ["SELECT 1 FROM t "]);
    }

    #[test]
    fn the_classic_operators_mutate_as_their_rules_say() {
        let sql = "UPDATE t SET last_error = :error, token = NULL, run_at = :now + 5 \
                   WHERE id = :id AND attempts >= max_attempts AND (x IS NULL OR priority < 0)";
        let s = Stmt::Fail;
        let with = |from: &str, to: &str| sql.replacen(from, to, 1);
        // ROR: the relations cmp does not give, and FALSE (TRUE for a
        // WHERE's conjunct is `where`'s); none for the SET's `=`.
        let ror = texts(s, sql, "ror");
        for to in ["<", "<=", "!="] {
            assert!(ror.contains(&with(">= max_attempts", &format!("{to} max_attempts"))), "{to}: {ror:#?}");
        }
        assert!(ror.contains(&with("attempts >= max_attempts", "FALSE")));
        assert!(!ror.contains(&with("attempts >= max_attempts", "TRUE")));
        assert!(ror.contains(&with("priority < 0", "TRUE")), "not a WHERE's conjunct: {ror:#?}");
        assert!(ror.iter().all(|t| t.starts_with("UPDATE t SET last_error = :error,")), "{ror:#?}");
        let off = texts(s, sql, "off");
        assert_eq!(off.len(), 4, "id's and attempts' comparisons, not priority's with a number: {off:#?}");
        assert!(off.contains(&with("max_attempts AND", "max_attempts - 1 AND")));
        assert!(off.contains(&with(":id AND", ":id + 1 AND")));
        assert_eq!(texts(s, sql, "lcr").len(), 3);
        assert!(texts(s, sql, "lcr").contains(&with("x IS NULL OR", "x IS NULL AND")));
        let aor = texts(s, sql, "aor");
        assert_eq!(aor, ["-", "*", "/", "%"].map(|op| with(":now + 5", &format!(":now {op} 5"))));
        // abs() of :now and :id is equivalent (by rule), -abs() of them is
        // uoi's negation; priority may be below 0.
        let abs = generated(s, sql).into_iter().filter(|m| m.name.contains("/abs-")).collect::<Vec<_>>();
        let abs_now = abs.iter().find(|m| m.text == with(":now", "abs(:now)")).unwrap();
        assert!(abs_now.equivalent.is_some());
        assert!(!abs.iter().any(|m| m.text == with(":now", "-abs(:now)")));
        assert!(abs
            .iter()
            .any(|m| m.text == with("priority <", "-abs(priority) <") && m.equivalent.is_none()));
        let uoi = texts(s, sql, "uoi");
        assert!(uoi.contains(&with("priority <", "(-priority) <")));
        assert!(uoi.contains(&with("x IS NULL", "NOT (x IS NULL)")));
        assert!(
            !uoi.iter().any(|t| t.contains("NOT (attempts")),
            "NOT before a comparison is ROR's: {uoi:#?}"
        );
        // First wins where a value is set, not where NULL is.
        assert_eq!(texts(s, sql, "first"), [with("= :error", "= coalesce(last_error, :error)")]);
    }

    #[test]
    fn every_classic_mutant_of_the_format_is_valid_sql() {
        let builtin = Spec::builtin();
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for stmt in Stmt::SCHEMA {
            conn.execute_batch(builtin.sql(*stmt)).unwrap();
        }
        let mut seen = 0;
        for m in all().iter().filter(|m| CLASSIC.iter().any(|k| m.name.contains(&format!("/{k}-")))) {
            seen += 1;
            if Stmt::SCHEMA.contains(&m.stmt) {
                // A schema statement makes what it names: on a file of its own.
                let fresh = rusqlite::Connection::open_in_memory().unwrap();
                for other in Stmt::SCHEMA.iter().take_while(|s| **s != m.stmt) {
                    fresh.execute_batch(builtin.sql(*other)).unwrap();
                }
                fresh.execute_batch(&m.text).unwrap_or_else(|e| panic!("{}: {e}: {}", m.name, m.text));
            } else if !m.text.trim_start().starts_with("PRAGMA") {
                // A WHERE that the partial index it names no longer covers
                // is a statement SQLite refuses to run: a mutant that fails
                // every step that runs it, not a syntax error.
                if let Err(e) = conn.prepare(&m.text) {
                    assert!(e.to_string().contains("no query solution"), "{}: {e}: {}", m.name, m.text);
                }
            }
        }
        assert!(seen > 500, "{seen}");
    }

    #[test]
    fn every_mutant_is_named_once_and_parses() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for stmt in Stmt::SCHEMA {
            conn.execute_batch(Spec::builtin().sql(*stmt)).unwrap();
        }
        let mut names = std::collections::BTreeSet::new();
        for m in all() {
            assert!(names.insert(m.name.clone()), "{} twice", m.name);
            assert_ne!(m.text, Spec::builtin().sql(m.stmt), "{}", m.name);
            // Statements on the jobs table must still prepare (a schema
            // statement would make what exists).
            if !Stmt::SCHEMA.contains(&m.stmt) && !m.text.trim_start().starts_with("PRAGMA") {
                let _ = conn.prepare(&m.text);
            }
        }
        assert!(all().len() > 100, "{}", all().len());
        for (name, why) in EQUIVALENT.iter().chain(UNREACHED) {
            assert!(named(name).is_some(), "{name} is no mutant ({why})");
        }
    }
}
