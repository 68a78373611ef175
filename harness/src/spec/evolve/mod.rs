//! Two versions of FORMAT.md judged by the format's own promise (its
//! §2.4): each difference between them, with the rule of §2.4 it falls
//! under and one of three verdicts: allowed within version 1, needs a new
//! version, or changes a step (run the cases that check it). An edit keeps
//! the promise when every difference is allowed, or when it raised the
//! version.
//!
//! The schemas are compared as SQLite reports them ([`snapshot`]), never
//! as SQL text; only what SQLite keeps as text alone (a CHECK clause, a
//! partial index's WHERE) is compared as tokens ([`lex`]), and a changed
//! CHECK is then evaluated by SQLite on probe values ([`probe`]). The
//! page's words are compared too: its requirements, their levels and
//! constants ([`prose`], from [`crate::spec::requirements`]), and the new
//! page against itself, where its prose and its SQL state one fact
//! ([`agreement`]).

pub mod agreement;
pub mod contract;
#[cfg(test)]
mod generated;
pub mod lex;
mod probe;
pub mod prose;
pub mod snapshot;

use std::collections::BTreeSet;

use serde::Serialize;

use super::coverage::{self, CaseInfo, Check};
use super::requirements::{self, Binds};
use super::rules::RuleKind;
use super::Page;
use snapshot::{Column, Snapshot, Table};

/// The rules of FORMAT.md §2.4, by what they are about.
pub mod rule {
    pub const TABLES: &str = "2.4.1";
    pub const COLUMNS_ADDED: &str = "2.4.2";
    pub const COLUMNS_CHANGED: &str = "2.4.3";
    pub const DEFAULTS: &str = "2.4.4";
    pub const CHECKS: &str = "2.4.5";
    pub const STATES: &str = "2.4.6";
    pub const INDEXES: &str = "2.4.7";
    pub const SETTINGS: &str = "2.4.8";
    pub const UNITS: &str = "2.4.9";
    pub const STEPS: &str = "2.4.10";
    pub const OLDER_FILES: &str = "2.4.11";
    pub const NEW_VERSION: &str = "2.4.12";
    pub const REQUIREMENTS: &str = "2.4.13";
    pub const CONSTANTS: &str = "2.4.14";
    pub const AGREEMENT: &str = "2.4.15";

    /// Each rule with the title FORMAT.md gives it.
    pub const ALL: [(&str, &str); 15] = [
        (TABLES, "Tables"),
        (COLUMNS_ADDED, "Columns added"),
        (COLUMNS_CHANGED, "Columns removed, renamed or retyped"),
        (DEFAULTS, "Defaults"),
        (CHECKS, "CHECK constraints"),
        (STATES, "States"),
        (INDEXES, "Indexes"),
        (SETTINGS, "Settings"),
        (UNITS, "Units"),
        (STEPS, "What the steps do"),
        (OLDER_FILES, "Files of an earlier release"),
        (NEW_VERSION, "A new version"),
        (REQUIREMENTS, "Requirements"),
        (CONSTANTS, "Constants"),
        (AGREEMENT, "The page against itself"),
    ];
}

/// Why a page could not be read.
#[derive(Debug, thiserror::Error)]
pub enum EvolveError {
    #[error("its sql blocks do not parse: {0}")]
    Blocks(String),
    #[error("line {line}: SQLite refuses statement `{name}`: {error}")]
    Statement { name: String, line: usize, error: rusqlite::Error },
    #[error("its CREATE statements make no table `{0}`")]
    NoTable(&'static str),
    #[error("§2.1 names no version (\"This page is version `1`\")")]
    NoVersion,
    #[error("it has no table of ukue_meta keys (`| key | value |`, each key in backticks)")]
    NoKeys,
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// What a difference means for programs of the old page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The new page states one fact two ways: it is wrong whatever it is
    /// compared with.
    Disagrees,
    /// Needs a new version: older programs cannot handle it safely.
    NeedsNewVersion,
    /// A statement changed: whether what the step does changed, only
    /// running its cases tells.
    ChangesAStep,
    /// Allowed within version 1.
    Allowed,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Disagrees => "the page disagrees with itself",
            Verdict::NeedsNewVersion => "needs a new version",
            Verdict::ChangesAStep => "changes a step: run it",
            Verdict::Allowed => "allowed within version 1",
        }
    }
}

/// One difference between the two pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule of FORMAT.md §2.4 it falls under.
    pub rule: &'static str,
    pub verdict: Verdict,
    /// Whom the change affects: the programs that write files, those that
    /// read them, every program, or only whoever edits the page.
    pub affects: Binds,
    /// What differs: `ukue_jobs.max_attempts`, `index ukue_jobs_due`, a
    /// requirement's id (`5.4/be-a-fresh-random`), …
    pub subject: String,
    /// How, in a sentence.
    pub change: String,
    /// A requirement's words before the edit, and after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_text: Option<String>,
    /// What a later release does about it (§2.4.11), when it adds something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// For a changed step: the cases that check it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<Check>,
}

/// Every difference between two pages, and the verdict on the edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evolution {
    pub old_version: u64,
    pub new_version: u64,
    pub findings: Vec<Finding>,
}

impl Evolution {
    /// The edit breaks the promise: a difference needs a new version, and
    /// the version was not raised; or the new page disagrees with itself.
    pub fn breaks(&self) -> bool {
        (self.new_version <= self.old_version && self.needing_new_version().next().is_some())
            || self.findings.iter().any(|d| d.verdict == Verdict::Disagrees)
    }

    pub fn needing_new_version(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|d| d.verdict == Verdict::NeedsNewVersion)
    }

    /// The cases that check the changed steps, each once.
    pub fn cases_to_run(&self) -> Vec<&str> {
        let mut ids: Vec<&str> =
            self.findings.iter().flat_map(|d| d.cases.iter().map(|c| c.id.as_str())).collect();
        ids.sort();
        ids.dedup();
        ids
    }
}

/// Compares two versions of FORMAT.md; `cases` and `conformance_md` say
/// which cases check each step.
pub fn compare(old: &Snapshot, new: &Snapshot, conformance_md: &str, cases: &[CaseInfo]) -> Evolution {
    let mut found = Findings::default();
    version(old, new, &mut found);
    tables(old, new, &mut found);
    for (name, table) in &new.tables {
        if let Some(before) = old.tables.get(name) {
            columns(name, before, table, old, new, &mut found);
        }
    }
    complete_add(old, new, &mut found);
    indexes(old, new, &mut found);
    settings(old, new, &mut found);
    let checked = coverage::coverage(Page::Format, &new.markdown, conformance_md, cases);
    steps(old, new, &checked, &mut found);
    let from = found.0.len();
    prose::compare(
        &requirements::requirements(&old.markdown),
        &requirements::requirements(&new.markdown),
        &mut found,
    );
    // A changed requirement names the cases that check its sentence, as a
    // changed statement does: the sentence as it reads now, or as it read.
    let old_checked = coverage::coverage(Page::Format, &old.markdown, conformance_md, cases);
    for d in &mut found.0[from..] {
        let of = |c: &coverage::Coverage, text: &Option<String>| -> Vec<Check> {
            let Some(text) = text else { return Vec::new() };
            c.rules
                .iter()
                .filter(|r| r.rule.kind != RuleKind::Section && &r.rule.text == text)
                .flat_map(|r| r.cases.clone())
                .collect()
        };
        d.cases = of(&checked, &d.new_text);
        if d.cases.is_empty() {
            d.cases = of(&old_checked, &d.old_text);
        }
    }
    application_id(old, new, &mut found);
    for d in agreement::check(new).disagreements {
        found.add(
            rule::AGREEMENT,
            Verdict::Disagrees,
            Binds::Editors,
            d.fact,
            format!("{}; {}", d.prose, d.sql),
        );
    }
    let mut findings = found.0;
    findings.sort_by_key(|f| f.verdict);
    Evolution { old_version: old.version, new_version: new.version, findings }
}

#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn add(
        &mut self,
        rule: &'static str,
        verdict: Verdict,
        affects: Binds,
        subject: impl Into<String>,
        change: impl Into<String>,
    ) {
        self.0.push(Finding {
            rule,
            verdict,
            affects,
            subject: subject.into(),
            change: change.into(),
            old_text: None,
            new_text: None,
            note: None,
            cases: Vec::new(),
        });
    }

    fn last_note(&mut self, note: String) {
        if let Some(last) = self.0.last_mut() {
            last.note = Some(note);
        }
    }
}

fn version(old: &Snapshot, new: &Snapshot, found: &mut Findings) {
    use std::cmp::Ordering;
    let (o, n) = (old.version, new.version);
    match n.cmp(&o) {
        Ordering::Equal => {}
        Ordering::Greater => found.add(
            rule::NEW_VERSION,
            Verdict::Allowed,
            Binds::Every,
            "format_version",
            format!("raised from {o} to {n}: programs of version {o} refuse the new files"),
        ),
        Ordering::Less => found.add(
            rule::NEW_VERSION,
            Verdict::NeedsNewVersion,
            Binds::Every,
            "format_version",
            format!("goes down from {o} to {n}"),
        ),
    }
}

/// The application id a file is stamped with (§1.3): a constant of the
/// format, however the page states it (§2.4.14).
fn application_id(old: &Snapshot, new: &Snapshot, found: &mut Findings) {
    if let (Some(o), Some(n)) = (agreement::application_id_of(old), agreement::application_id_of(new)) {
        if o != n {
            found.add(
                rule::CONSTANTS,
                Verdict::NeedsNewVersion,
                Binds::Every,
                "application_id",
                format!(
                    "0x{o:08X} → 0x{n:08X}: the files a later release makes carry another mark than version 1's"
                ),
            );
        }
    }
}

fn tables(old: &Snapshot, new: &Snapshot, found: &mut Findings) {
    for name in new.tables.keys().filter(|n| !old.tables.contains_key(*n)) {
        found.add(rule::TABLES, Verdict::NeedsNewVersion, Binds::Every, format!("table {name}"), "added");
    }
    for name in old.tables.keys().filter(|n| !new.tables.contains_key(*n)) {
        found.add(
            rule::TABLES,
            Verdict::NeedsNewVersion,
            Binds::Every,
            format!("table {name}"),
            "removed (or renamed)",
        );
    }
    for (name, table) in &new.tables {
        let Some(before) = old.tables.get(name) else { continue };
        for (kind, was, is) in [
            ("WITHOUT ROWID", before.without_rowid, table.without_rowid),
            ("STRICT", before.strict, table.strict),
        ] {
            if was != is {
                let change = if is { format!("made {kind}") } else { format!("no longer {kind}") };
                found.add(
                    rule::TABLES,
                    Verdict::NeedsNewVersion,
                    Binds::Every,
                    format!("table {name}"),
                    change,
                );
            }
        }
        if before.checks != table.checks {
            found.add(
                rule::CHECKS,
                Verdict::NeedsNewVersion,
                Binds::Every,
                format!("table {name}"),
                format!("its CHECK constraints: {:?} → {:?}", before.checks, table.checks),
            );
        }
    }
}

fn columns(table: &str, before: &Table, after: &Table, old: &Snapshot, new: &Snapshot, found: &mut Findings) {
    let find = |t: &Table, name: &str| t.columns.iter().find(|c| c.name == name).cloned();
    let removed: Vec<&Column> = before.columns.iter().filter(|c| find(after, &c.name).is_none()).collect();
    let added: Vec<&Column> = after.columns.iter().filter(|c| find(before, &c.name).is_none()).collect();
    // A column gone and one new in its place, of the same type, is a
    // rename: say so rather than a removal and an addition.
    let renamed: Vec<(&Column, &Column)> = removed
        .iter()
        .filter_map(|r| {
            added
                .iter()
                .find(|a| a.position == r.position && a.declared_type == r.declared_type)
                .map(|a| (*r, *a))
        })
        .collect();
    for (was, is) in &renamed {
        found.add(
            rule::COLUMNS_CHANGED,
            Verdict::NeedsNewVersion,
            Binds::Every,
            format!("{table}.{}", was.name),
            format!("renamed to {}", is.name),
        );
    }
    for column in removed.iter().filter(|c| !renamed.iter().any(|(r, _)| r.name == c.name)) {
        found.add(
            rule::COLUMNS_CHANGED,
            Verdict::NeedsNewVersion,
            Binds::Every,
            format!("{table}.{}", column.name),
            "removed",
        );
    }
    for column in added.iter().filter(|c| !renamed.iter().any(|(_, a)| a.name == c.name)) {
        column_added(table, column, old, found);
    }
    for was in &before.columns {
        let Some(is) = find(after, &was.name) else { continue };
        column_changed(table, was, &is, old, new, found);
    }
}

fn column_added(table: &str, column: &Column, old: &Snapshot, found: &mut Findings) {
    let subject = format!("{table}.{}", column.name);
    if column.not_null && column.default.is_none() {
        found.add(
            rule::COLUMNS_ADDED,
            Verdict::NeedsNewVersion,
            Binds::Every,
            subject,
            "added NOT NULL without a default: an earlier program's add fails",
        );
        return;
    }
    let default = column.default.as_deref().unwrap_or("NULL");
    found.add(
        rule::COLUMNS_ADDED,
        Verdict::Allowed,
        Binds::Every,
        subject,
        format!("added, with the default {default}"),
    );
    // Whether SQLite can add it to a file that an earlier release made.
    let alter = format!("ALTER TABLE {table} ADD COLUMN {}", column.definition);
    let fits = old.db.execute_batch(&format!("SAVEPOINT evolve; {alter};")).map_err(|e| e.to_string());
    // Undone either way (a failed ALTER leaves the savepoint open too), so
    // that each added column is tried on the old schema as the page made it.
    let _ = old.db.execute_batch("ROLLBACK TO evolve; RELEASE evolve");
    let note = match fits {
        Ok(()) => format!("files of an earlier release lack it: a later release adds it (`{alter}`) or works without it"),
        Err(e) => format!(
            "files of an earlier release lack it, and SQLite cannot add it to them ({e}): a later release works \
             without it"
        ),
    };
    found.last_note(format!("{note} (§{})", rule::OLDER_FILES));
}

fn column_changed(
    table: &str,
    was: &Column,
    is: &Column,
    old: &Snapshot,
    new: &Snapshot,
    found: &mut Findings,
) {
    let subject = format!("{table}.{}", was.name);
    let retyped: Vec<String> = [
        arrow("type", &was.declared_type, &is.declared_type),
        toggled(was.not_null, is.not_null, "made NOT NULL", "may now be NULL"),
        arrow("primary key place", &was.primary_key, &is.primary_key),
        toggled(was.autoincrement, is.autoincrement, "AUTOINCREMENT added", "AUTOINCREMENT dropped"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !retyped.is_empty() {
        found.add(
            rule::COLUMNS_CHANGED,
            Verdict::NeedsNewVersion,
            Binds::Every,
            subject.clone(),
            retyped.join(", "),
        );
    }
    if was.default != is.default {
        let shown = |d: &Option<String>| d.clone().unwrap_or_else(|| "none".to_string());
        let rule = if probe::thousandfold(&new.db, was.default.as_deref(), is.default.as_deref()) {
            rule::UNITS
        } else {
            rule::DEFAULTS
        };
        found.add(
            rule,
            Verdict::NeedsNewVersion,
            Binds::Every,
            subject.clone(),
            format!("default {} → {}", shown(&was.default), shown(&is.default)),
        );
    }
    if was.check != is.check {
        let (o, n) = (was.check.clone().unwrap_or_default(), is.check.clone().unwrap_or_default());
        if table == "ukue_jobs" && was.name == "state" && old.states() != new.states() {
            let (before, after) = (old.states(), new.states());
            let list = |s: BTreeSet<&String>| s.into_iter().cloned().collect::<Vec<_>>().join(", ");
            let mut change = Vec::new();
            let gained: BTreeSet<&String> = after.difference(&before).collect();
            let lost: BTreeSet<&String> = before.difference(&after).collect();
            if !gained.is_empty() {
                change.push(format!("states added: {}", list(gained)));
            }
            if !lost.is_empty() {
                change.push(format!("states removed: {}", list(lost)));
            }
            found.add(rule::STATES, Verdict::NeedsNewVersion, Binds::Every, subject, change.join("; "));
            return;
        }
        let how = probe::compare_checks(&new.db, &was.name, &o, &n);
        found.add(
            rule::CHECKS,
            Verdict::NeedsNewVersion,
            Binds::Every,
            subject,
            format!("CHECK ({}) → ({}): {how}", lex::render(&o), lex::render(&n)),
        );
    }
}

/// `what was → is`, when the two differ.
fn arrow<T: PartialEq + std::fmt::Display + ?Sized>(what: &str, was: &T, is: &T) -> Option<String> {
    (was != is).then(|| format!("{what} {was} → {is}"))
}

/// What turning a flag on or off did, when it did.
fn toggled(was: bool, is: bool, on: &str, off: &str) -> Option<String> {
    (was != is).then(|| if is { on } else { off }.to_string())
}

fn complete_add(old: &Snapshot, new: &Snapshot, found: &mut Findings) {
    let flagged =
        found.0.iter().any(|d| d.rule == rule::COLUMNS_ADDED && d.verdict == Verdict::NeedsNewVersion);
    if let (Ok(()), Err(e), false) = (&old.complete_add, &new.complete_add, flagged) {
        found.add(
            rule::COLUMNS_ADDED,
            Verdict::NeedsNewVersion,
            Binds::Every,
            "ukue_jobs",
            format!("the complete add (`{}`) fails: {e}", snapshot::COMPLETE_ADD),
        );
    }
}

fn indexes(old: &Snapshot, new: &Snapshot, found: &mut Findings) {
    for (name, index) in &new.indexes {
        let subject = format!("index {name}");
        match old.indexes.get(name) {
            None if index.unique => found.add(
                rule::INDEXES,
                Verdict::NeedsNewVersion,
                Binds::Every,
                subject,
                "added UNIQUE: it refuses rows",
            ),
            None => {
                found.add(
                    rule::INDEXES,
                    Verdict::Allowed,
                    Binds::Every,
                    subject,
                    format!("added on {}", index.table),
                );
                found.last_note(format!(
                    "files of an earlier release lack it: a later release creates it (CREATE INDEX IF NOT EXISTS) \
                     or works without it (§{})",
                    rule::OLDER_FILES
                ));
            }
            Some(before) if before != index => {
                let cols = |c: &[(String, bool, String)]| {
                    let shown: Vec<String> = c
                        .iter()
                        .map(|(n, desc, _)| if *desc { format!("{n} DESC") } else { n.clone() })
                        .collect();
                    format!("({})", shown.join(", "))
                };
                let how: Vec<String> = [
                    arrow("columns", &cols(&before.columns), &cols(&index.columns)),
                    arrow("WHERE", &format!("{:?}", before.partial), &format!("{:?}", index.partial)),
                    toggled(before.unique, index.unique, "made UNIQUE", "no longer UNIQUE"),
                    arrow("table", &before.table, &index.table),
                ]
                .into_iter()
                .flatten()
                .collect();
                found.add(rule::INDEXES, Verdict::NeedsNewVersion, Binds::Every, subject, how.join(", "));
            }
            Some(_) => {}
        }
    }
    for name in old.indexes.keys().filter(|n| !new.indexes.contains_key(*n)) {
        found.add(
            rule::INDEXES,
            Verdict::NeedsNewVersion,
            Binds::Every,
            format!("index {name}"),
            "removed (or renamed)",
        );
    }
}

fn settings(old: &Snapshot, new: &Snapshot, found: &mut Findings) {
    for key in new.keys.difference(&old.keys) {
        found.add(rule::SETTINGS, Verdict::Allowed, Binds::Every, format!("ukue_meta key {key}"), "added");
        found.last_note(format!(
            "files of an earlier release lack it: a later release writes it or works without it (§{})",
            rule::OLDER_FILES
        ));
    }
    for key in old.keys.difference(&new.keys) {
        found.add(
            rule::SETTINGS,
            Verdict::NeedsNewVersion,
            Binds::Every,
            format!("ukue_meta key {key}"),
            "removed (or renamed)",
        );
    }
}

fn steps(old: &Snapshot, new: &Snapshot, checked: &coverage::Coverage, found: &mut Findings) {
    let cases_of = |section: &str| -> Vec<Check> {
        let mut cases: Vec<Check> = Vec::new();
        for r in checked.rules.iter().filter(|r| r.rule.section == section) {
            for c in &r.cases {
                if !cases.iter().any(|k| k.id == c.id) {
                    cases.push(c.clone());
                }
            }
        }
        cases
    };
    let mut names: BTreeSet<&String> = old.statements.keys().collect();
    names.extend(new.statements.keys());
    for name in names {
        let change = match (old.statements.get(name), new.statements.get(name)) {
            (Some((o, _)), Some((n, section))) if o != n => {
                Some((format!("its text changed (§{section})"), section))
            }
            (None, Some((_, section))) => Some((format!("added (§{section})"), section)),
            (Some((_, section)), None) => Some(("removed".to_string(), section)),
            _ => None,
        };
        if let Some((change, section)) = change {
            let units = match (old.statements.get(name), new.statements.get(name)) {
                (Some((o, _)), Some((n, _))) => probe::thousandfold_literals(o, n),
                _ => false,
            };
            let (rule, verdict) = if units {
                (rule::UNITS, Verdict::NeedsNewVersion)
            } else {
                (rule::STEPS, Verdict::ChangesAStep)
            };
            found.add(rule, verdict, Binds::of_section(section), format!("statement {name}"), change);
            found.0.last_mut().expect("just added").cases = cases_of(section);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{rules, FORMAT_MD};

    #[test]
    fn each_rule_is_the_section_of_format_md_it_names() {
        let sections = rules::sections(FORMAT_MD);
        for (id, title) in rule::ALL {
            let section = sections.iter().find(|s| s.number == id);
            assert_eq!(section.and_then(|s| s.title.as_deref()), Some(title), "FORMAT.md §{id}");
        }
        let under: Vec<&str> =
            sections.iter().filter(|s| s.number.starts_with("2.4.")).map(|s| s.number.as_str()).collect();
        assert_eq!(under.len(), rule::ALL.len(), "a rule of §2.4 that evolve never names: {under:?}");
    }

    fn judge(new_md: &str) -> Evolution {
        let old = Snapshot::read(FORMAT_MD).unwrap();
        let new = Snapshot::read(new_md).unwrap();
        compare(&old, &new, crate::spec::CONFORMANCE_MD, &[])
    }

    #[test]
    fn the_page_against_itself_has_no_difference() {
        let same = judge(FORMAT_MD);
        assert_eq!(same.findings, [], "{same:?}");
        assert!(!same.breaks());
    }

    /// The three edits of issue 33: three different answers.
    #[test]
    fn a_rename_a_column_with_a_default_and_a_default_changed() {
        let rename = judge(&FORMAT_MD.replacen("  last_error   TEXT,", "  error        TEXT,", 1));
        assert!(rename.breaks());
        let rules: Vec<(&str, Verdict, &str)> =
            rename.findings.iter().map(|d| (d.rule, d.verdict, d.change.as_str())).collect();
        assert_eq!(rules[0], (rule::COLUMNS_CHANGED, Verdict::NeedsNewVersion, "renamed to error"));

        let tags = judge(&FORMAT_MD.replacen(
            "  updated_at   INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))\n",
            "  updated_at   INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),\n  \
             tags         TEXT NOT NULL DEFAULT ''\n",
            1,
        ));
        assert!(!tags.breaks(), "{tags:?}");
        assert_eq!(tags.findings.len(), 1, "{tags:?}");
        assert_eq!(
            (tags.findings[0].rule, tags.findings[0].verdict),
            (rule::COLUMNS_ADDED, Verdict::Allowed)
        );
        assert!(tags.findings[0]
            .note
            .as_deref()
            .is_some_and(|n| n.contains("ALTER TABLE ukue_jobs ADD COLUMN")));

        let fewer =
            judge(&FORMAT_MD.replacen("NOT NULL DEFAULT 10 CHECK", "NOT NULL DEFAULT 5 CHECK", 1).replacen(
                "max_attempts 10,",
                "max_attempts 5,",
                1,
            ));
        assert!(fewer.breaks());
        let d = &fewer.findings[0];
        assert_eq!(
            (d.rule, d.subject.as_str(), d.change.as_str()),
            (rule::DEFAULTS, "ukue_jobs.max_attempts", "default 10 → 5")
        );
        assert_eq!(fewer.findings.len(), 1, "the prose of §5.3 changed with it: {fewer:?}");
    }
}
