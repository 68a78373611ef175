//! Which cases check which rule of a page of the spec (FORMAT.md's
//! sections and sentences, [`rules`]; COMMAND.md's items, [`items`]), and
//! what an edit of a page changed.
//!
//! A case checks the rule it names (its `rule`: a FORMAT.md section or a
//! COMMAND.md item). CONFORMANCE.md's tables "Coverage of FORMAT.md" and
//! "Coverage of COMMAND.md" add what that cannot say: the cases that check
//! each MUST and SHOULD sentence and each item, the rules a case checks
//! beyond its own, and why a rule that no case checks cannot be checked
//! from outside. A section with subsections is checked through them. A rule
//! no case checks is a gap; one whose row says why is an explained gap.
//! COMMAND.md's items have levels of their own: a `must` item that only
//! `should` cases check is a gap too (its breach would only warn), and a
//! `must` case that checks a `should` item is a problem of the table (a
//! program that skips good practice would fail it).
//!
//! [`rules`]: crate::spec::rules
//! [`items`]: crate::spec::items

use std::collections::BTreeMap;
use std::sync::OnceLock;

use globset::{Glob, GlobMatcher};
use serde::Serialize;

use super::rules::{Rule, RuleKind};
use super::Page;
use crate::cases::{Case, Level};

/// The heading of CONFORMANCE.md's table for `page`.
pub fn table_heading(page: Page) -> String {
    format!("## Coverage of {}", page.name())
}

/// One row of the table: a rule, the cases (ids or globs) that check it,
/// and why (or what else).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub rule: String,
    pub cases: Vec<String>,
    pub note: Option<String>,
}

/// The rows of `page`'s table in `conformance_md`: `` | `RULE` | `CASE`, `GLOB/*` | why | ``
/// (no `|` in a cell).
pub fn mappings(conformance_md: &str, page: Page) -> Vec<Mapping> {
    let heading = format!("{}\n", table_heading(page));
    let Some((_, table)) = conformance_md.split_once(&heading) else { return Vec::new() };
    let table = table.split("\n## ").next().unwrap_or("");
    table
        .lines()
        .filter_map(|line| {
            let line = line.trim().strip_prefix('|')?.strip_suffix('|')?;
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let rule = cells.first()?.strip_prefix('`')?.strip_suffix('`')?.to_string();
            let cases = cells
                .get(1)
                .map(|c| c.split('`').skip(1).step_by(2).map(str::to_string).collect())
                .unwrap_or_default();
            let note = cells.get(2).map(|c| c.to_string()).filter(|n| !n.is_empty());
            Some(Mapping { rule, cases, note })
        })
        .collect()
}

/// A case as coverage sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseInfo {
    pub id: String,
    /// The rule it names: a FORMAT.md section or a COMMAND.md item.
    pub rule: String,
    pub level: Level,
}

impl From<&Case> for CaseInfo {
    fn from(case: &Case) -> CaseInfo {
        CaseInfo { id: case.id.to_string(), rule: case.rule.to_string(), level: case.level }
    }
}

/// A case that checks a rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub id: String,
    pub level: Level,
}

/// A rule and what checks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleCoverage {
    #[serde(flatten)]
    pub rule: Rule,
    pub cases: Vec<Check>,
    /// For a section with subsections: those of them that are checked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub through: Vec<String>,
    /// The table's note: why it cannot be checked from outside, or more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Nothing checks it (or, for a `must` item, no `must` case).
    pub gap: bool,
    /// A `must` item that only `should` cases check.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub only_should: bool,
    /// Nothing checks it, and the table says why.
    pub explained: bool,
}

/// Every rule of a page and what checks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Coverage {
    pub page: Page,
    pub rules: Vec<RuleCoverage>,
    /// What is wrong with the table: a row for a rule the page does not
    /// have, a pattern that matches no case.
    pub problems: Vec<String>,
}

impl Coverage {
    /// Rules nothing checks, and the table does not say why.
    pub fn gaps(&self) -> impl Iterator<Item = &RuleCoverage> {
        self.rules.iter().filter(|r| r.gap && !r.explained)
    }

    /// Rules nothing checks, for the reason the table gives.
    pub fn explained(&self) -> impl Iterator<Item = &RuleCoverage> {
        self.rules.iter().filter(|r| r.explained)
    }
}

fn matcher(pattern: &str) -> Option<GlobMatcher> {
    Glob::new(pattern).ok().map(|g| g.compile_matcher())
}

/// Which cases check each rule of `markdown`, a version of `page`, by the
/// rules the cases name and `page`'s table in `conformance_md`.
pub fn coverage(page: Page, markdown: &str, conformance_md: &str, cases: &[CaseInfo]) -> Coverage {
    let rules = page.rules(markdown);
    let mappings = mappings(conformance_md, page);
    let mut problems = Vec::new();
    let name = page.name();
    for c in cases.iter().filter(|c| Page::of_rule(&c.rule) == page) {
        if !rules.iter().any(|r| r.id == c.rule) {
            problems.push(format!("case {} names `{}`, which {name} does not have", c.id, c.rule));
        }
    }
    for m in &mappings {
        if !rules.iter().any(|r| r.id == m.rule) {
            problems.push(format!("CONFORMANCE.md maps `{}`, which {name} does not have", m.rule));
        }
        for pattern in &m.cases {
            let matches = matcher(pattern).is_some_and(|g| cases.iter().any(|c| g.is_match(&c.id)));
            if !matches {
                problems
                    .push(format!("CONFORMANCE.md maps `{}` to `{pattern}`, which no case matches", m.rule));
            }
        }
    }
    let mut covered: Vec<RuleCoverage> = rules
        .into_iter()
        .map(|rule| {
            let mapped: Vec<&Mapping> = mappings.iter().filter(|m| m.rule == rule.id).collect();
            let globs: Vec<GlobMatcher> =
                mapped.iter().flat_map(|m| &m.cases).filter_map(|p| matcher(p)).collect();
            let checks: Vec<Check> = cases
                .iter()
                .filter(|c| c.rule == rule.id || globs.iter().any(|g| g.is_match(&c.id)))
                .map(|c| Check { id: c.id.clone(), level: c.level })
                .collect();
            let note = mapped.iter().find_map(|m| m.note.clone());
            let mut only_should = false;
            if page == Page::Command {
                let must_cases: Vec<&Check> = checks.iter().filter(|c| c.level == Level::Must).collect();
                if rule.kind == RuleKind::Should {
                    for c in must_cases {
                        problems.push(format!(
                            "the must case {} checks `{}`, a should item: a program that skips it would fail",
                            c.id, rule.id
                        ));
                    }
                } else {
                    only_should = must_cases.is_empty() && !checks.is_empty();
                }
            }
            RuleCoverage {
                rule,
                cases: checks,
                through: Vec::new(),
                note,
                gap: false,
                only_should,
                explained: false,
            }
        })
        .collect();
    // Subsections first, so that a section's subsections are settled when
    // it is: `5` is checked through `5.1` … `5.10`.
    let checked: BTreeMap<String, bool> = covered
        .iter()
        .filter(|r| r.rule.kind == RuleKind::Section)
        .map(|r| (r.rule.id.clone(), !r.cases.is_empty()))
        .collect();
    for r in covered.iter_mut().filter(|r| r.rule.kind == RuleKind::Section) {
        let prefix = format!("{}.", r.rule.id);
        r.through = checked
            .iter()
            .filter(|(id, ok)| **ok && id.starts_with(&prefix))
            .map(|(id, _)| id.clone())
            .collect();
        r.through.sort_by_key(|id| section_order(id));
    }
    for r in &mut covered {
        r.gap = (r.cases.is_empty() && r.through.is_empty()) || r.only_should;
        r.explained = r.gap && r.note.is_some();
    }
    Coverage { page, rules: covered, problems }
}

/// `5.10` after `5.9`.
fn section_order(id: &str) -> Vec<u32> {
    id.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// The embedded pages' coverage by the suite's own cases, computed once:
/// FORMAT.md's, then COMMAND.md's.
pub fn suite() -> &'static [Coverage] {
    static COVERAGE: OnceLock<Vec<Coverage>> = OnceLock::new();
    COVERAGE.get_or_init(|| {
        let cases: Vec<CaseInfo> = crate::cases::all().iter().map(CaseInfo::from).collect();
        Page::ALL.iter().map(|&page| coverage(page, page.markdown(), super::CONFORMANCE_MD, &cases)).collect()
    })
}

/// Every rule `case` checks: the one it names first, then the rules the
/// tables map to it (FORMAT.md's, then COMMAND.md's).
pub fn rules_of(case: &Case) -> Vec<String> {
    let mut ids = vec![case.rule.to_string()];
    for r in suite().iter().flat_map(|c| &c.rules) {
        if r.rule.id != case.rule && r.cases.iter().any(|c| c.id == case.id) {
            ids.push(r.rule.id.clone());
        }
    }
    ids
}

/// How an edit changed a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Its text changed: rerun the cases that check it.
    Changed,
    /// Its level changed (a COMMAND.md item made `should` or `must`):
    /// its cases' levels follow it.
    Level,
    /// New: a case checks it only if one names it (a reworded sentence gets
    /// a new id, and loses the check the old one had).
    Added,
    /// Gone: the cases that checked it check a rule that is no more.
    Removed,
}

/// One rule an edit touched, and the cases that check it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleChange {
    pub id: String,
    pub change: Change,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// For a level changed, the old level and the new.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub levels: Option<(RuleKind, RuleKind)>,
    pub cases: Vec<Check>,
}

/// The rules that differ between two versions of `page`, each with the
/// cases that check it (by the table in `conformance_md`): for a changed
/// or added rule its checks on the new page, for a removed one those it
/// had on the old.
pub fn diff(
    page: Page,
    old_md: &str,
    new_md: &str,
    conformance_md: &str,
    cases: &[CaseInfo],
) -> Vec<RuleChange> {
    let old = coverage(page, old_md, conformance_md, cases);
    let new = coverage(page, new_md, conformance_md, cases);
    let find = |c: &Coverage, id: &str| c.rules.iter().find(|r| r.rule.id == id).cloned();
    let same = |a: &str, b: &str| a.split_whitespace().eq(b.split_whitespace());
    let mut changes = Vec::new();
    for n in &new.rules {
        match find(&old, &n.rule.id) {
            Some(o) if same(&o.rule.text, &n.rule.text) && o.rule.kind == n.rule.kind => {}
            Some(o) => changes.push(RuleChange {
                id: n.rule.id.clone(),
                change: if o.rule.kind == n.rule.kind { Change::Changed } else { Change::Level },
                old: Some(o.rule.text),
                new: Some(n.rule.text.clone()),
                levels: (o.rule.kind != n.rule.kind).then_some((o.rule.kind, n.rule.kind)),
                cases: n.cases.clone(),
            }),
            None => changes.push(RuleChange {
                id: n.rule.id.clone(),
                change: Change::Added,
                old: None,
                new: Some(n.rule.text.clone()),
                levels: None,
                cases: n.cases.clone(),
            }),
        }
    }
    for o in old.rules.iter().filter(|o| find(&new, &o.rule.id).is_none()) {
        changes.push(RuleChange {
            id: o.rule.id.clone(),
            change: Change::Removed,
            old: Some(o.rule.text.clone()),
            new: None,
            levels: None,
            cases: o.cases.clone(),
        });
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# T\n\n## 1. File\n\n1.1. **SQLite.** A file is SQLite.\n\n\
        1.2. **Mode.** A program SHOULD set WAL mode first. It MUST NOT change it.\n\n\
        ## 2. Rest\n\n2.1. **Other.** Nothing here.\n\n## 3. Sources\n\nA table.\n";

    const TABLE: &str =
        "# C\n\n## Coverage of FORMAT.md\n\n| rule | also checked by | why |\n|---|---|---|\n\
        | `1.2/should-set-wal-mode-first` | `mode/*` | |\n\
        | `3` | | a table about the page, not a program |\n\n## Next\n\n| `2.1` | `x/y` | |\n";

    fn case(id: &str, rule: &str) -> CaseInfo {
        CaseInfo { id: id.into(), rule: rule.into(), level: Level::Must }
    }

    fn ids<'a>(rules: impl Iterator<Item = &'a RuleCoverage>) -> Vec<&'a str> {
        rules.map(|r| r.rule.id.as_str()).collect()
    }

    #[test]
    fn the_table_maps_sentences_and_explains_gaps() {
        let rows = mappings(TABLE, Page::Format);
        assert_eq!(rows.len(), 2, "rows after the table's section are not its: {rows:?}");
        assert_eq!(rows[0].cases, ["mode/*"]);
        assert_eq!(rows[1].note.as_deref(), Some("a table about the page, not a program"));
    }

    #[test]
    fn rules_are_checked_by_their_sections_cases_the_table_and_subsections() {
        let cases = [case("file/sqlite", "1.1"), case("mode/wal", "1.2"), case("mode/first", "1.2")];
        let c = coverage(Page::Format, PAGE, TABLE, &cases);
        let of = |id: &str| c.rules.iter().find(|r| r.rule.id == id).unwrap();
        assert_eq!(of("1.1").cases.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["file/sqlite"]);
        let wal: Vec<&str> =
            of("1.2/should-set-wal-mode-first").cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(wal, ["mode/wal", "mode/first"]);
        assert_eq!(of("1").through, ["1.1", "1.2"]);
        assert_eq!(ids(c.gaps()), ["1.2/must-not-change-it", "2", "2.1"]);
        assert_eq!(ids(c.explained()), ["3"]);
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        let stale = coverage(
            Page::Format,
            PAGE,
            &TABLE.replace("`mode/*`", "`gone/*`").replace("`3`", "`4`"),
            &cases,
        );
        assert_eq!(stale.problems.len(), 2, "{:?}", stale.problems);
    }

    #[test]
    fn a_diff_names_changed_added_and_removed_rules_with_their_cases() {
        let cases = [case("file/sqlite", "1.1"), case("mode/wal", "1.2")];
        let new = PAGE
            .replace("A file is SQLite.", "A file is a SQLite 3 database.")
            .replace("It MUST NOT change it.", "It MUST NOT ever change it.")
            .replace("set WAL mode first", "set WAL mode at once");
        let changes = diff(Page::Format, PAGE, &new, TABLE, &cases);
        let found: Vec<(&str, Change, Vec<&str>)> = changes
            .iter()
            .map(|c| (c.id.as_str(), c.change, c.cases.iter().map(|c| c.id.as_str()).collect()))
            .collect();
        assert_eq!(
            found,
            [
                ("1.1", Change::Changed, vec!["file/sqlite"]),
                ("1.2", Change::Changed, vec!["mode/wal"]),
                ("1.2/should-set-wal-mode-at", Change::Added, vec![]),
                ("1.2/must-not-ever-change-it", Change::Added, vec![]),
                ("1.2/should-set-wal-mode-first", Change::Removed, vec!["mode/wal"]),
                ("1.2/must-not-change-it", Change::Removed, vec![]),
            ]
        );
        assert!(diff(Page::Format, PAGE, PAGE, TABLE, &cases).is_empty());
    }

    const ITEMS: &str = "# C\n\n## 1. Add\n\n- `add.id` (must): prints the id.\n\
        - `add.stdin` (must): reads stdin.\n- `add.tidy` (should): leaves nothing.\n\
        - `add.lock` (must): waits.\n";

    const ITEM_TABLE: &str = "# C\n\n## Coverage of COMMAND.md\n\n| item | cases | why |\n|---|---|---|\n\
        | `add.stdin` | `add/stdin-warn` | |\n| `add.tidy` | `add/prints` | |\n\
        | `add.lock` | | a lock no test can hold |\n";

    #[test]
    fn items_have_levels_a_must_item_needs_a_must_case_and_a_must_case_no_should_item() {
        let cases = [
            case("add/prints", "add.id"),
            CaseInfo { level: Level::Should, ..case("add/stdin-warn", "add.stdin") },
            case("add/other", "add.nope"),
        ];
        let c = coverage(Page::Command, ITEMS, ITEM_TABLE, &cases);
        let of = |id: &str| c.rules.iter().find(|r| r.rule.id == id).unwrap();
        assert_eq!(of("add.id").cases, [Check { id: "add/prints".into(), level: Level::Must }]);
        assert!(of("add.stdin").only_should && of("add.stdin").gap, "checked only at should level");
        assert_eq!(ids(c.gaps()), ["add.stdin"]);
        assert_eq!(ids(c.explained()), ["add.lock"]);
        assert_eq!(c.problems.len(), 2, "{:?}", c.problems);
        assert!(
            c.problems[0].contains("add/other") && c.problems[0].contains("add.nope"),
            "{:?}",
            c.problems
        );
        assert!(
            c.problems[1].contains("add/prints") && c.problems[1].contains("add.tidy"),
            "{:?}",
            c.problems
        );
    }

    /// Two must items made should: not "the same rules, word for word".
    #[test]
    fn a_level_changed_is_a_change() {
        let page = crate::spec::COMMAND_MD;
        let edited = page.replacen("- `exit.success` (must):", "- `exit.success` (should):", 1).replacen(
            "- `exit.error` (must):",
            "- `exit.error` (should):",
            1,
        );
        let changes = diff(Page::Command, page, &edited, crate::spec::CONFORMANCE_MD, &[]);
        let lowered = Some((RuleKind::Must, RuleKind::Should));
        assert!(changes.iter().all(|c| c.change == Change::Level && c.levels == lowered), "{changes:?}");
        let ids: Vec<&str> = changes.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["exit.success", "exit.error"]);
    }

    #[test]
    fn the_suites_coverage_has_no_gap_the_table_does_not_explain() {
        for c in suite() {
            assert!(c.problems.is_empty(), "{:?}", c.problems);
            let gaps: Vec<&str> = ids(c.gaps());
            assert!(
                gaps.is_empty(),
                "rules of {} that no case checks and CONFORMANCE.md does not explain: {gaps:?}",
                c.page.name()
            );
        }
    }
}
