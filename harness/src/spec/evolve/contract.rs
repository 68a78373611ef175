//! Two versions of COMMAND.md: each item added, removed, or whose level or
//! words changed, and whether a program that passed the old contract can
//! fail the new one. COMMAND.md has no version to raise: a `must` item
//! that a program may now fail turns third parties' CI red, and needs a
//! note in the release that brings it.

use serde::Serialize;

use crate::spec::coverage::{self, CaseInfo, Check};
use crate::spec::requirements;
use crate::spec::rules::RuleKind;
use crate::spec::{items, Page};

/// How an edit changed an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemChange {
    Added,
    Removed,
    /// `must` became `should`, or the other way.
    Level,
    /// Its words changed, its level did not.
    Words,
}

/// What the change means for a program that passed the old contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// It can fail the new contract: a `must` item added, raised from
    /// `should`, or whose constants (a flag, a number, a name) changed.
    CanFail,
    /// A `must` item's words changed and its constants did not: its cases
    /// may ask otherwise; run them.
    RunItsCases,
    /// Only a `should` item changed: a warning at most, a failure only
    /// under `--strict`.
    WarningsOnly,
    /// Nothing a program passed can fail now: a `must` item removed or
    /// lowered to `should`.
    CannotFail,
}

impl Effect {
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::CanFail => "a program that passed can fail it: note it in the release",
            Effect::RunItsCases => "its words changed: run its cases",
            Effect::WarningsOnly => "warnings only (fails under --strict)",
            Effect::CannotFail => "no program that passed can fail it",
        }
    }
}

/// One item an edit touched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemFinding {
    pub id: String,
    pub change: ItemChange,
    pub effect: Effect,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_level: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_level: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_text: Option<String>,
    /// The constants of its words that changed, old and new.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub constants: Vec<(Vec<String>, Vec<String>)>,
    /// The cases that check it (on the new page; on the old for a removed one).
    pub cases: Vec<Check>,
}

/// Every item an edit of COMMAND.md touched, the ones a program can fail
/// first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContractEvolution {
    pub findings: Vec<ItemFinding>,
}

impl ContractEvolution {
    /// A program that passed the old contract can fail the new one.
    pub fn can_fail(&self) -> bool {
        self.findings.iter().any(|f| f.effect == Effect::CanFail)
    }

    /// The cases of the items whose check may have changed, each once.
    pub fn cases_to_run(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self
            .findings
            .iter()
            .filter(|f| f.change != ItemChange::Removed)
            .flat_map(|f| f.cases.iter().map(|c| c.id.as_str()))
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }
}

fn level(kind: RuleKind) -> &'static str {
    kind.as_str()
}

/// Compares two versions of COMMAND.md; `conformance_md` and `cases` say
/// which cases check each item.
pub fn compare(old_md: &str, new_md: &str, conformance_md: &str, cases: &[CaseInfo]) -> ContractEvolution {
    let old = items::items(old_md);
    let new = items::items(new_md);
    let checked = |md: &str| coverage::coverage(Page::Command, md, conformance_md, cases);
    let (old_cov, new_cov) = (checked(old_md), checked(new_md));
    let cases_of = |cov: &coverage::Coverage, id: &str| -> Vec<Check> {
        cov.rules.iter().find(|r| r.rule.id == id).map(|r| r.cases.clone()).unwrap_or_default()
    };
    let mut findings = Vec::new();
    for n in &new {
        let base = |change, effect| ItemFinding {
            id: n.id.clone(),
            change,
            effect,
            old_level: None,
            new_level: Some(level(n.kind)),
            old_text: None,
            new_text: Some(n.text.clone()),
            constants: Vec::new(),
            cases: cases_of(&new_cov, &n.id),
        };
        let Some(o) = old.iter().find(|o| o.id == n.id) else {
            let effect = if n.kind == RuleKind::Must { Effect::CanFail } else { Effect::WarningsOnly };
            findings.push(base(ItemChange::Added, effect));
            continue;
        };
        let same_words = o.text.split_whitespace().eq(n.text.split_whitespace());
        if same_words && o.kind == n.kind {
            continue;
        }
        let (was, is) = (requirements::constants(&o.text), requirements::constants(&n.text));
        let (change, effect) = match (o.kind, n.kind) {
            (RuleKind::Should, RuleKind::Must) => (ItemChange::Level, Effect::CanFail),
            (RuleKind::Must, RuleKind::Should) => (ItemChange::Level, Effect::CannotFail),
            (_, RuleKind::Must) if was != is => (ItemChange::Words, Effect::CanFail),
            (_, RuleKind::Must) => (ItemChange::Words, Effect::RunItsCases),
            _ => (ItemChange::Words, Effect::WarningsOnly),
        };
        let mut f = base(change, effect);
        f.old_level = Some(level(o.kind));
        f.old_text = Some(o.text.clone());
        if was != is {
            let gone: Vec<String> = was.iter().filter(|c| !is.contains(c)).cloned().collect();
            let added: Vec<String> = is.iter().filter(|c| !was.contains(c)).cloned().collect();
            f.constants.push((gone, added));
        }
        findings.push(f);
    }
    for o in old.iter().filter(|o| !new.iter().any(|n| n.id == o.id)) {
        findings.push(ItemFinding {
            id: o.id.clone(),
            change: ItemChange::Removed,
            effect: Effect::CannotFail,
            old_level: Some(level(o.kind)),
            new_level: None,
            old_text: Some(o.text.clone()),
            new_text: None,
            constants: Vec::new(),
            cases: cases_of(&old_cov, &o.id),
        });
    }
    findings.sort_by_key(|f| f.effect);
    ContractEvolution { findings }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::COMMAND_MD;

    fn judge(new_md: &str) -> ContractEvolution {
        compare(COMMAND_MD, new_md, crate::spec::CONFORMANCE_MD, &[])
    }

    fn effects(e: &ContractEvolution) -> Vec<(&str, ItemChange, Effect)> {
        e.findings.iter().map(|f| (f.id.as_str(), f.change, f.effect)).collect()
    }

    #[test]
    fn the_page_against_itself_changes_nothing() {
        assert_eq!(judge(COMMAND_MD).findings, []);
    }

    /// The edit `coverage --diff` took for "the same rules, word for
    /// word": two must items made should.
    #[test]
    fn levels_lowered_raised_and_constants_changed() {
        let lowered = judge(
            &COMMAND_MD.replacen("- `exit.success` (must):", "- `exit.success` (should):", 1).replacen(
                "- `exit.error` (must):",
                "- `exit.error` (should):",
                1,
            ),
        );
        assert_eq!(
            effects(&lowered),
            [
                ("exit.success", ItemChange::Level, Effect::CannotFail),
                ("exit.error", ItemChange::Level, Effect::CannotFail)
            ]
        );
        assert!(!lowered.can_fail());
        let raised =
            judge(&COMMAND_MD.replacen("- `exit.usage-once` (should):", "- `exit.usage-once` (must):", 1));
        assert_eq!(effects(&raised), [("exit.usage-once", ItemChange::Level, Effect::CanFail)]);
        assert!(raised.can_fail());
        let example = judge(&COMMAND_MD.replacen("(`ukue frobnicate`)", "(`ukue frob`)", 1));
        assert_eq!(effects(&example), [("exit.unknown-command", ItemChange::Words, Effect::CanFail)]);
        assert_eq!(
            example.findings[0].constants,
            [(vec!["`ukue frobnicate`".to_string()], vec!["`ukue frob`".to_string()])]
        );
    }

    #[test]
    fn items_added_and_removed() {
        let added = judge(&COMMAND_MD.replacen(
            "- `exit.usage-once` (should):",
            "- `exit.quiet` (must): A command prints nothing on success.\n- `exit.usage-once` (should):",
            1,
        ));
        assert_eq!(effects(&added), [("exit.quiet", ItemChange::Added, Effect::CanFail)]);
        let start = COMMAND_MD.find("- `exit.usage-once` (should):").unwrap();
        let end = start + COMMAND_MD[start..].find("\n- `").unwrap() + 1;
        let removed = judge(&format!("{}{}", &COMMAND_MD[..start], &COMMAND_MD[end..]));
        assert_eq!(effects(&removed), [("exit.usage-once", ItemChange::Removed, Effect::CannotFail)]);
    }
}
