//! The text's verdict as a reviewer reads it: a changelog of the edit,
//! breaking changes first, each change with whom it affects, its verdict
//! and the rule it falls under; the words that changed marked in place.
//! For FORMAT.md by the format's promise (§2.4), for COMMAND.md by whether
//! a program that passed the old contract can fail the new one. Human
//! lines, JSON, and Markdown for a pull request's comment or a job summary.

use std::path::Path;

use crate::spec::evolve::contract::{ContractEvolution, ItemChange, ItemFinding};
use crate::spec::evolve::prose::{word_diff, word_diff_markdown, word_diff_text, Piece};
use crate::spec::evolve::{rule, Evolution, Finding, Verdict};

/// What the two pages' words say: a FORMAT.md edit judged by the
/// format's promise, or a COMMAND.md edit by the contract's.
pub enum TextVerdict {
    Format(Evolution),
    Command(ContractEvolution),
}

impl TextVerdict {
    /// Whether the edit fails the run: it breaks version 1's promise, or
    /// a program that passed the old contract can fail the new one.
    pub fn breaks(&self) -> bool {
        match self {
            TextVerdict::Format(e) => e.breaks(),
            TextVerdict::Command(c) => c.can_fail(),
        }
    }

    pub fn human(&self, old: &Path, new: &Path) -> String {
        match self {
            TextVerdict::Format(e) => format_human(e, old, new),
            TextVerdict::Command(c) => contract_human(c, old, new),
        }
    }

    pub fn json(&self) -> serde_json::Value {
        match self {
            TextVerdict::Format(e) => format_json(e),
            TextVerdict::Command(c) => contract_json(c),
        }
    }

    pub fn markdown(&self, old: &Path, new: &Path) -> String {
        match self {
            TextVerdict::Format(e) => format_markdown(e, old, new),
            TextVerdict::Command(c) => contract_markdown(c, old, new),
        }
    }
}

fn title(id: &str) -> &'static str {
    rule::ALL.iter().find(|(r, _)| *r == id).map_or("", |(_, t)| t)
}

/// `1 thing is` or `2 things are`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The verdict on a FORMAT.md edit, in a sentence.
fn summary(e: &Evolution) -> String {
    let needing = e.needing_new_version().count();
    let disagree = e.findings.iter().filter(|d| d.verdict == Verdict::Disagrees).count();
    let steps = e.findings.iter().filter(|d| d.verdict == Verdict::ChangesAStep).count();
    let run_it = if steps > 0 {
        format!(
            "; {}: run the cases that check them",
            count(steps, "statement changed", "statements changed")
        )
    } else {
        String::new()
    };
    let raised = e.new_version > e.old_version;
    if e.findings.is_empty() {
        "no difference in the schema, the keys, the version, the statements or the requirements".to_string()
    } else if disagree > 0 && (raised || needing == 0) {
        format!(
            "the new page DISAGREES WITH ITSELF: {} its prose and its SQL two ways{run_it}",
            count(disagree, "fact is stated by", "facts are stated by")
        )
    } else if e.breaks() {
        let and_disagrees = if disagree > 0 {
            format!(", and the new page disagrees with itself on {}", count(disagree, "fact", "facts"))
        } else {
            String::new()
        };
        format!(
            "BREAKS the promise of version {}: {} a new version, and format_version stayed {}{and_disagrees}{run_it}",
            e.old_version,
            count(needing, "difference needs", "differences need"),
            e.new_version
        )
    } else if raised {
        format!("a new version ({} → {}): every change is allowed{run_it}", e.old_version, e.new_version)
    } else if steps > 0 {
        format!(
            "keeps the promise of version {} as far as the text shows: nothing needs a new version{run_it}",
            e.old_version
        )
    } else {
        format!("keeps the promise of version {}: every difference is allowed within it", e.old_version)
    }
}

/// The words a requirement or an item had and has, marked where they
/// differ; what it said, when it was added or removed; None when they
/// are the same.
fn marked(old: Option<&String>, new: Option<&String>, mark: fn(&[Piece]) -> String) -> Option<String> {
    match (old, new) {
        (Some(o), Some(n)) if o != n => Some(mark(&word_diff(o, n))),
        (Some(o), None) => Some(format!("was: {o}")),
        (None, Some(n)) => Some(format!("now: {n}")),
        _ => None,
    }
}

/// A finding's words: marked where they changed, or as they stand when
/// only their place or level changed.
fn words(d: &Finding, mark: fn(&[Piece]) -> String) -> Option<String> {
    marked(d.old_text.as_ref(), d.new_text.as_ref(), mark).or_else(|| d.old_text.clone())
}

/// The cases that check a change, on a line of their own.
fn checked_by(out: &mut String, indent: usize, cases: &[crate::spec::coverage::Check]) {
    if !cases.is_empty() {
        let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
        out.push_str(&format!("{:<indent$} checked by {}\n", "", ids.join(", ")));
    }
}

/// The verdict's line, and the command that runs the cases of what changed.
fn verdict_lines(out: &mut String, changed: bool, summary: String, cases: &[&str], what: &str) {
    if changed {
        out.push('\n');
    }
    out.push_str(&format!("verdict: {summary}\n"));
    if let Some(rerun) = rerun_line(cases) {
        out.push_str(&format!("{what}:\n  {rerun}\n"));
    }
}

fn rerun_line(cases: &[&str]) -> Option<String> {
    (!cases.is_empty()).then(|| {
        let flags: Vec<String> = cases.iter().map(|id| format!("--cases '{id}'")).collect();
        format!("ukue-conformance {}", flags.join(" "))
    })
}

fn format_human(e: &Evolution, old: &Path, new: &Path) -> String {
    let mut out = format!(
        "{} → {} (format_version {} → {})\n\n",
        old.display(),
        new.display(),
        e.old_version,
        e.new_version
    );
    for d in &e.findings {
        out.push_str(&format!("{:<24} §{:<6} {}: {}\n", d.verdict.as_str(), d.rule, d.subject, d.change));
        out.push_str(&format!("{:<32} {}; affects {}\n", "", title(d.rule), d.affects.as_str()));
        if let Some(words) = words(d, word_diff_text) {
            out.push_str(&format!("{:<32} {words}\n", ""));
        }
        if let Some(note) = &d.note {
            out.push_str(&format!("{:<32} {note}\n", ""));
        }
        checked_by(&mut out, 32, &d.cases);
    }
    verdict_lines(&mut out, !e.findings.is_empty(), summary(e), &e.cases_to_run(), "to run them");
    out
}

fn format_json(e: &Evolution) -> serde_json::Value {
    let findings: Vec<serde_json::Value> = e
        .findings
        .iter()
        .map(|d| {
            let mut value = serde_json::json!(d);
            value["title"] = serde_json::json!(title(d.rule));
            if let (Some(o), Some(n)) = (&d.old_text, &d.new_text) {
                value["word_diff"] = serde_json::json!(word_diff_text(&word_diff(o, n)));
            }
            value
        })
        .collect();
    serde_json::json!({
        "page": "FORMAT.md",
        "old_version": e.old_version, "new_version": e.new_version, "breaks": e.breaks(),
        "summary": summary(e), "findings": findings, "cases_to_run": e.cases_to_run(),
    })
}

/// A Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The changelog: a section a verdict, breaking ones first, each change a
/// row with whom it affects and its rule.
fn format_markdown(e: &Evolution, old: &Path, new: &Path) -> String {
    let mark = if e.breaks() { "❌" } else { "✅" };
    let mut out = format!("### {mark} FORMAT.md: {}\n\n", summary(e));
    out.push_str(&format!(
        "`{}` → `{}`, format_version {} → {}; the rules are FORMAT.md §2.4.\n",
        old.display(),
        new.display(),
        e.old_version,
        e.new_version
    ));
    for verdict in [Verdict::Disagrees, Verdict::NeedsNewVersion, Verdict::ChangesAStep, Verdict::Allowed] {
        let group: Vec<&Finding> = e.findings.iter().filter(|d| d.verdict == verdict).collect();
        if group.is_empty() {
            continue;
        }
        let (icon, heading) = match verdict {
            Verdict::Disagrees => ("❌", "The new page disagrees with itself"),
            Verdict::NeedsNewVersion if e.new_version > e.old_version => {
                ("✅", "Needs a new version, and has one")
            }
            Verdict::NeedsNewVersion => ("❌", "Needs a new version"),
            Verdict::ChangesAStep => ("🔁", "Changes a step: run its cases"),
            Verdict::Allowed => ("✅", "Allowed within version 1"),
        };
        out.push_str(&format!("\n#### {icon} {heading} ({})\n\n", group.len()));
        out.push_str("| rule | affects | what | change | cases |\n|---|---|---|---|---|\n");
        for d in group {
            let mut change = cell(&d.change);
            if let Some(words) = words(d, word_diff_markdown) {
                change.push_str(&format!("<br>{}", cell(&words)));
            }
            if let Some(note) = &d.note {
                change.push_str(&format!("<br>{}", cell(note)));
            }
            let cases: Vec<String> = d.cases.iter().map(|c| format!("`{}`", c.id)).collect();
            out.push_str(&format!(
                "| §{} {} | {} | `{}` | {change} | {} |\n",
                d.rule,
                title(d.rule),
                d.affects.as_str(),
                d.subject,
                cases.join(", ")
            ));
        }
    }
    if let Some(rerun) = rerun_line(&e.cases_to_run()) {
        out.push_str(&format!("\nTo run the cases that check what changed:\n\n```sh\n{rerun}\n```\n"));
    }
    out
}

/// The verdict on a COMMAND.md edit, in a sentence.
fn contract_summary(c: &ContractEvolution) -> String {
    let can_fail =
        c.findings.iter().filter(|f| f.effect == crate::spec::evolve::contract::Effect::CanFail).count();
    if c.findings.is_empty() {
        "the same items, at the same levels, word for word".to_string()
    } else if can_fail > 0 {
        format!(
            "a program that passed the old contract CAN FAIL the new one: {}; say so in the release notes",
            count(can_fail, "item asks more", "items ask more")
        )
    } else {
        format!(
            "no program that passed the old contract fails the new one: {}",
            count(c.findings.len(), "item changed", "items changed")
        )
    }
}

/// `must → should`, `added (must)`, `words (must)`.
fn item_change(f: &ItemFinding) -> String {
    let level = |l: Option<&str>| l.unwrap_or("?").to_string();
    match f.change {
        ItemChange::Added => format!("added ({})", level(f.new_level)),
        ItemChange::Removed => format!("removed ({})", level(f.old_level)),
        ItemChange::Level => format!("{} → {}", level(f.old_level), level(f.new_level)),
        ItemChange::Words => format!("its words ({})", level(f.new_level)),
    }
}

fn contract_human(c: &ContractEvolution, old: &Path, new: &Path) -> String {
    let mut out = format!("{} → {} (COMMAND.md)\n\n", old.display(), new.display());
    for f in &c.findings {
        out.push_str(&format!("{:<16} {}: {}\n", item_change(f), f.id, f.effect.as_str()));
        if let Some(words) = marked(f.old_text.as_ref(), f.new_text.as_ref(), word_diff_text) {
            out.push_str(&format!("{:<16} {words}\n", ""));
        }
        checked_by(&mut out, 16, &f.cases);
    }
    let cases = c.cases_to_run();
    verdict_lines(
        &mut out,
        !c.findings.is_empty(),
        contract_summary(c),
        &cases,
        "to run the cases of the changed items",
    );
    out
}

fn contract_json(c: &ContractEvolution) -> serde_json::Value {
    serde_json::json!({
        "page": "COMMAND.md", "breaks": c.can_fail(), "summary": contract_summary(c),
        "findings": c.findings, "cases_to_run": c.cases_to_run(),
    })
}

fn contract_markdown(c: &ContractEvolution, old: &Path, new: &Path) -> String {
    let mark = if c.can_fail() { "❌" } else { "✅" };
    let mut out = format!("### {mark} COMMAND.md: {}\n\n", contract_summary(c));
    out.push_str(&format!("`{}` → `{}`.\n", old.display(), new.display()));
    if !c.findings.is_empty() {
        out.push_str("\n| item | change | for a program that passed | cases |\n|---|---|---|---|\n");
        for f in &c.findings {
            let mut change = item_change(f);
            if let Some(words) = marked(f.old_text.as_ref(), f.new_text.as_ref(), word_diff_markdown) {
                change.push_str(&format!("<br>{}", cell(&words)));
            }
            let cases: Vec<String> = f.cases.iter().map(|c| format!("`{}`", c.id)).collect();
            out.push_str(&format!(
                "| `{}` | {change} | {} | {} |\n",
                f.id,
                f.effect.as_str(),
                cases.join(", ")
            ));
        }
    }
    if let Some(rerun) = rerun_line(&c.cases_to_run()) {
        out.push_str(&format!("\nTo run the cases of the changed items:\n\n```sh\n{rerun}\n```\n"));
    }
    out
}
