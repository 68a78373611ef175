//! `ukue-conformance coverage`: every rule of FORMAT.md (each numbered
//! section, and each MUST or SHOULD sentence) and every item of COMMAND.md,
//! with the cases that check it and their levels, and the gaps; `--diff
//! OLD NEW` names the rules an edit of either page changed and the cases
//! to rerun (crate::spec::coverage).

use std::path::PathBuf;

use clap::Args;

use super::suite::{exit, Format};
use crate::cases;
use crate::spec::coverage::{self, CaseInfo, Change, Check, Coverage, RuleCoverage};
use crate::spec::{self, rules::RuleKind, Page};
use crate::subjects::variants::{self, ALL_OTHER_CHOICES, VARIANTS};

#[derive(Debug, Args)]
pub struct CoverageArgs {
    /// Exit 1 when a rule has no case and CONFORMANCE.md does not say why
    /// (or when its table names a rule or case that does not exist)
    #[arg(long)]
    pub require_full: bool,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Judge this FORMAT.md or COMMAND.md instead of the one the runner
    /// embeds (a page being edited; which of the two it is, its text says)
    #[arg(long, value_name = "FILE", conflicts_with = "diff")]
    pub spec: Option<PathBuf>,
    /// The rules that differ between two versions of FORMAT.md (or of
    /// COMMAND.md), and the cases that check each
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"])]
    pub diff: Option<Vec<PathBuf>>,
}

pub fn run(args: CoverageArgs) -> u8 {
    let cases: Vec<CaseInfo> = cases::all().iter().map(CaseInfo::from).collect();
    let read = |path: &PathBuf| {
        std::fs::read_to_string(path)
            .map_err(|e| eprintln!("ukue-conformance coverage: {}: {e}", path.display()))
    };
    if let Some(paths) = &args.diff {
        let (Ok(old), Ok(new)) = (read(&paths[0]), read(&paths[1])) else { return exit::USAGE };
        let page = Page::of(&new);
        let changes = coverage::diff(page, &old, &new, spec::CONFORMANCE_MD, &cases);
        match args.format {
            Format::Json => println!("{}", serde_json::json!({ "changes": changes })),
            Format::Human => print_diff(&changes, &paths[0], &paths[1]),
        }
        return exit::OK;
    }
    let edited = match &args.spec {
        Some(path) => match read(path) {
            Ok(text) => Some(text),
            Err(()) => return exit::USAGE,
        },
        None => None,
    };
    let pages: Vec<Coverage> = Page::ALL
        .iter()
        .map(|&page| {
            let markdown = edited.as_deref().filter(|t| Page::of(t) == page).unwrap_or(page.markdown());
            coverage::coverage(page, markdown, spec::CONFORMANCE_MD, &cases)
        })
        .collect();
    for problem in pages.iter().flat_map(|c| &c.problems) {
        eprintln!("ukue-conformance coverage: {problem}");
    }
    match args.format {
        Format::Json => {
            let all = |pick: fn(&Coverage) -> Vec<&RuleCoverage>| -> Vec<&str> {
                pages.iter().flat_map(pick).map(|r| r.rule.id.as_str()).collect()
            };
            let summary: Vec<serde_json::Value> = pages
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "page": c.page, "rules": c.rules.len(), "gaps": c.gaps().count(),
                        "explained": c.explained().count(),
                    })
                })
                .collect();
            let rules: Vec<serde_json::Value> = pages
                .iter()
                .flat_map(|c| c.rules.iter().map(move |r| (c.page, r)))
                .map(|(page, r)| {
                    let mut value = serde_json::json!(r);
                    value["page"] = serde_json::json!(page);
                    value
                })
                .collect();
            let problems: Vec<&String> = pages.iter().flat_map(|c| &c.problems).collect();
            let value = serde_json::json!({
                "pages": summary, "rules": rules, "gaps": all(|c| c.gaps().collect()),
                "explained": all(|c| c.explained().collect()), "problems": problems,
                "variants": variants_json(), "should_variants": should_variants(&pages),
            });
            println!("{value}");
        }
        Format::Human => {
            for (i, covered) in pages.iter().enumerate() {
                if i > 0 {
                    println!();
                }
                print_coverage(covered);
            }
            println!();
            print_variants(&pages);
        }
    }
    let incomplete = pages.iter().any(|c| c.gaps().next().is_some() || !c.problems.is_empty());
    if args.require_full && incomplete {
        exit::FAILURES
    } else {
        exit::OK
    }
}

fn checks(cases: &[Check]) -> String {
    cases.iter().map(|c| format!("{} ({})", c.id, c.level.as_str())).collect::<Vec<_>>().join(", ")
}

/// What checks a rule, on one line.
fn checked_by(r: &RuleCoverage) -> String {
    let mut parts = Vec::new();
    if !r.cases.is_empty() {
        parts.push(checks(&r.cases));
    }
    if !r.through.is_empty() {
        parts.push(format!("through §{}", r.through.join(", §")));
    }
    match (&r.note, r.gap, r.only_should) {
        (Some(note), true, _) => parts.push(format!("NOT CHECKED from outside: {note}")),
        (None, true, true) => parts.push("GAP: a must item that only should cases check".to_string()),
        (None, true, false) => parts.push("GAP: no case checks it".to_string()),
        _ => {}
    }
    parts.join("; ")
}

fn print_coverage(covered: &Coverage) {
    let sentences = covered.rules.iter().filter(|r| r.rule.kind != RuleKind::Section).count();
    match covered.page {
        Page::Format => println!(
            "FORMAT.md: {} rules ({} sections, {sentences} MUST or SHOULD sentences)\n",
            covered.rules.len(),
            covered.rules.len() - sentences
        ),
        Page::Command => {
            let must = covered.rules.iter().filter(|r| r.rule.kind == RuleKind::Must).count();
            println!("COMMAND.md: {} items ({must} must, {} should)\n", sentences, sentences - must);
        }
    }
    for r in &covered.rules {
        let name = match r.rule.kind {
            RuleKind::Section => format!("§{} {}", r.rule.id, r.rule.title),
            _ => r.rule.id.clone(),
        };
        let name: String = name.chars().take(46).collect();
        println!("{name:<46} {:<7} {}", r.rule.kind.as_str(), checked_by(r));
    }
    let gaps: Vec<&str> = covered.gaps().map(|r| r.rule.id.as_str()).collect();
    let explained: Vec<&str> = covered.explained().map(|r| r.rule.id.as_str()).collect();
    println!(
        "\n{}: {} checked, {} not checkable from outside (spec/CONFORMANCE.md says why: {}), {} gaps{}",
        covered.page.name(),
        covered.rules.len() - gaps.len() - explained.len(),
        explained.len(),
        if explained.is_empty() { "none".to_string() } else { explained.join(", ") },
        gaps.len(),
        if gaps.is_empty() { String::new() } else { format!(": {}", gaps.join(", ")) }
    );
}

/// The legal variants (crate::subjects::variants), each with the rules
/// whose other side it takes.
fn variants_json() -> Vec<serde_json::Value> {
    VARIANTS.iter().map(|v| serde_json::json!({ "name": v.name, "items": v.items, "what": v.what })).collect()
}

/// Every `should` rule of both pages (COMMAND.md's should items, FORMAT.md's
/// SHOULD sentences), with the variants that leave it undone.
fn should_variants(pages: &[Coverage]) -> serde_json::Map<String, serde_json::Value> {
    pages
        .iter()
        .flat_map(|c| &c.rules)
        .filter(|r| r.rule.kind == RuleKind::Should)
        .map(|r| {
            let why = variants::NOT_UNDONE.iter().find(|(id, _)| *id == r.rule.id).map(|(_, why)| *why);
            (
                r.rule.id.clone(),
                serde_json::json!({ "variants": variants::taking(&r.rule.id), "why_none": why }),
            )
        })
        .collect()
}

/// The variants, then each `should` rule with the variant that leaves it
/// undone (or none).
fn print_variants(pages: &[Coverage]) {
    let single = VARIANTS.iter().filter(|v| v.name != ALL_OTHER_CHOICES).count();
    println!(
        "Legal variants (ukue-variant, UKUE_VARIANT=NAME): {single} correct programs that take the other side of a \
         choice FORMAT.md or COMMAND.md allows, or leave a should undone, and {ALL_OTHER_CHOICES}, all at once\n"
    );
    for v in VARIANTS.iter().filter(|v| v.name != ALL_OTHER_CHOICES) {
        println!("{:<30} {}", v.name, v.items.join(", "));
    }
    println!("\nshould rules and the variant that leaves each undone:\n");
    let mut undone = 0;
    let mut total = 0;
    for r in pages.iter().flat_map(|c| &c.rules).filter(|r| r.rule.kind == RuleKind::Should) {
        let takers = variants::taking(&r.rule.id);
        total += 1;
        undone += usize::from(!takers.is_empty());
        let why = variants::NOT_UNDONE.iter().find(|(id, _)| *id == r.rule.id).map(|(_, why)| *why);
        let shown = match (takers.is_empty(), why) {
            (false, _) => takers.join(", "),
            (true, Some(why)) => format!("none: {why}"),
            (true, None) => "none".to_string(),
        };
        let name: String = r.rule.id.chars().take(46).collect();
        println!("{name:<46} {shown}");
    }
    println!("\n{undone} of {total} should rules left undone by a variant");
}

fn print_diff(changes: &[coverage::RuleChange], old: &std::path::Path, new: &std::path::Path) {
    if changes.is_empty() {
        println!("{} and {} hold the same rules, word for word", old.display(), new.display());
        return;
    }
    println!("{} rules differ between {} and {}:\n", changes.len(), old.display(), new.display());
    let mut rerun: Vec<&str> = Vec::new();
    for c in changes {
        let cases = checks(&c.cases);
        let verdict = match (c.change, c.cases.is_empty()) {
            (Change::Level, _) => {
                let (was, is) = c.levels.map_or(("?", "?"), |(o, n)| (o.as_str(), n.as_str()));
                let cases = if c.cases.is_empty() {
                    "no case checks it".to_string()
                } else {
                    format!("rerun {cases}")
                };
                format!("{was} → {is}: {cases}")
            }
            (Change::Changed, false) => format!("rerun {cases}"),
            (Change::Changed, true) => "no case checks it".to_string(),
            (Change::Added, false) => format!("checked by {cases}"),
            (Change::Added, true) => {
                "NOT CHECKED: no case checks it (a reworded sentence gets a new id: map it in CONFORMANCE.md)"
                    .to_string()
            }
            (Change::Removed, false) => {
                format!("LOST: {cases} checked it; they now check a rule that is gone")
            }
            (Change::Removed, true) => "no case checked it".to_string(),
        };
        let word = match c.change {
            Change::Level => "level",
            Change::Changed => "changed",
            Change::Added => "added",
            Change::Removed => "removed",
        };
        println!("{word:<8} {}: {verdict}", c.id);
        if let (Some(before), Some(after)) = (&c.old, &c.new) {
            print_changed_lines(before, after);
        }
        if c.change != Change::Removed {
            rerun.extend(c.cases.iter().map(|c| c.id.as_str()));
        }
    }
    rerun.sort();
    rerun.dedup();
    if !rerun.is_empty() {
        let flags: Vec<String> = rerun.iter().map(|id| format!("--cases '{id}'")).collect();
        println!("\nto rerun what checks the changed rules:\n  ukue-conformance {}", flags.join(" "));
    }
}

/// The lines of a rule's text that an edit changed, `-` old and `+` new.
fn print_changed_lines(before: &str, after: &str) {
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    let common = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[common..].iter().rev().zip(new[common..].iter().rev()).take_while(|(a, b)| a == b).count();
    for line in &old[common..old.len() - tail] {
        println!("           - {line}");
    }
    for line in &new[common..new.len() - tail] {
        println!("           + {line}");
    }
}
