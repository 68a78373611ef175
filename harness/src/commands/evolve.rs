//! `ukue-conformance evolve OLD.md NEW.md`: an edit of FORMAT.md judged by
//! the format's promise (FORMAT.md §2.4, crate::spec::evolve). Exit 0 when
//! every difference is allowed within version 1 or the version was raised,
//! 1 when a difference needs a new version and the version stayed, 2 for a
//! usage error (a path that cannot be read, a page that does not parse).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

use super::conformance::exit;
use crate::cases;
use crate::spec::coverage::CaseInfo;
use crate::spec::evolve::snapshot::Snapshot;
use crate::spec::evolve::{self, rule, Evolution, Finding, Verdict};
use crate::spec::CONFORMANCE_MD;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvolveFormat {
    Human,
    Json,
    /// For a pull request's comment or a GitHub job summary
    Markdown,
}

#[derive(Debug, Args)]
pub struct EvolveArgs {
    /// The FORMAT.md before the edit
    pub old: PathBuf,
    /// The FORMAT.md after it
    pub new: PathBuf,
    #[arg(long, value_enum, default_value = "human")]
    pub format: EvolveFormat,
}

pub fn run(args: EvolveArgs) -> u8 {
    match judge(&args.old, &args.new) {
        Ok(evolution) => {
            match args.format {
                EvolveFormat::Human => print_human(&evolution, &args.old, &args.new),
                EvolveFormat::Json => println!("{}", json(&evolution)),
                EvolveFormat::Markdown => print!("{}", markdown(&evolution, &args.old, &args.new)),
            }
            if evolution.breaks() {
                exit::FAILURES
            } else {
                exit::OK
            }
        }
        Err(e) => {
            eprintln!("ukue-conformance evolve: {e:#}");
            exit::USAGE
        }
    }
}

fn judge(old_path: &Path, new_path: &Path) -> Result<Evolution> {
    let read = |path: &Path| -> Result<(String, Snapshot)> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
        let snapshot = Snapshot::read(&text)
            .with_context(|| format!("{}: not a FORMAT.md evolve can read", path.display()))?;
        Ok((text, snapshot))
    };
    let (_, old) = read(old_path)?;
    let (new_md, new) = read(new_path)?;
    let cases: Vec<CaseInfo> = cases::all().iter().map(CaseInfo::from).collect();
    Ok(evolve::compare(&old, &new, &new_md, CONFORMANCE_MD, &cases))
}

fn title(id: &str) -> &'static str {
    rule::ALL.iter().find(|(r, _)| *r == id).map_or("", |(_, t)| t)
}

/// The verdict on the edit, in a sentence.
fn summary(e: &Evolution) -> String {
    let needing = e.needing_new_version().count();
    let steps = e.findings.iter().filter(|d| d.verdict == Verdict::ChangesAStep).count();
    let run_it = if steps > 0 {
        format!(
            "; {}: run the cases that check them",
            count(steps, "statement changed", "statements changed")
        )
    } else {
        String::new()
    };
    if e.findings.is_empty() {
        "no difference in the schema, the keys, the version or the statements".to_string()
    } else if e.breaks() {
        format!(
            "BREAKS the promise of version {}: {} a new version, and format_version stayed {}{run_it}",
            e.old_version,
            count(needing, "difference needs", "differences need"),
            e.new_version
        )
    } else if e.new_version > e.old_version {
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

/// `1 thing is` or `2 things are`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn print_human(e: &Evolution, old: &Path, new: &Path) {
    println!(
        "{} → {} (format_version {} → {})\n",
        old.display(),
        new.display(),
        e.old_version,
        e.new_version
    );
    for d in &e.findings {
        println!("{:<24} §{:<6} {}: {}", d.verdict.as_str(), d.rule, d.subject, d.change);
        println!("{:<24} {:<7} ({})", "", "", title(d.rule));
        if let Some(note) = &d.note {
            println!("{:<32} {note}", "");
        }
        if !d.cases.is_empty() {
            let ids: Vec<&str> = d.cases.iter().map(|c| c.id.as_str()).collect();
            println!("{:<32} checked by {}", "", ids.join(", "));
        }
    }
    if !e.findings.is_empty() {
        println!();
    }
    println!("verdict: {}", summary(e));
    if let Some(rerun) = rerun_line(e) {
        println!("to run them:\n  {rerun}");
    }
}

fn rerun_line(e: &Evolution) -> Option<String> {
    let cases = e.cases_to_run();
    (!cases.is_empty()).then(|| {
        let flags: Vec<String> = cases.iter().map(|id| format!("--cases '{id}'")).collect();
        format!("ukue-conformance {}", flags.join(" "))
    })
}

fn json(e: &Evolution) -> serde_json::Value {
    let findings: Vec<serde_json::Value> = e
        .findings
        .iter()
        .map(|d: &Finding| {
            let mut value = serde_json::json!(d);
            value["title"] = serde_json::json!(title(d.rule));
            value
        })
        .collect();
    serde_json::json!({
        "old_version": e.old_version, "new_version": e.new_version, "breaks": e.breaks(),
        "summary": summary(e), "findings": findings, "cases_to_run": e.cases_to_run(),
    })
}

/// A table a difference a row, for a pull request's comment.
fn markdown(e: &Evolution, old: &Path, new: &Path) -> String {
    let mut out = String::new();
    let mark = if e.breaks() { "❌" } else { "✅" };
    out.push_str(&format!("### {mark} FORMAT.md: {}\n\n", summary(e)));
    out.push_str(&format!(
        "`{}` → `{}`, format_version {} → {}; the rules are FORMAT.md §2.4.\n\n",
        old.display(),
        new.display(),
        e.old_version,
        e.new_version
    ));
    if !e.findings.is_empty() {
        out.push_str("| verdict | rule | what | change | cases |\n|---|---|---|---|---|\n");
        for d in &e.findings {
            let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
            let mut change = cell(&d.change);
            if let Some(note) = &d.note {
                change.push_str(&format!("<br>{}", cell(note)));
            }
            let cases: Vec<String> = d.cases.iter().map(|c| format!("`{}`", c.id)).collect();
            out.push_str(&format!(
                "| {} | §{} {} | `{}` | {change} | {} |\n",
                d.verdict.as_str(),
                d.rule,
                title(d.rule),
                d.subject,
                cases.join(", ")
            ));
        }
    }
    if let Some(rerun) = rerun_line(e) {
        out.push_str(&format!("\nTo run the cases of the changed steps:\n\n```sh\n{rerun}\n```\n"));
    }
    out
}
