//! The suite passes correct programs that differ from the reference
//! (crate::subjects::variants): every `must` case passes every legal
//! variant. `all-other-choices` runs the whole default suite; each other
//! variant runs the families of the cases that check its rules. A `should`
//! case may warn (a variant leaves `should` items undone): the runs are
//! without `--strict`, and only a `must` case that fails counts.

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;

use support::*;
use ukue_harness::subjects::variants::{ALL_OTHER_CHOICES, VARIANTS};

fn variant_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ukue-variant"))
}

/// (variant, case, why): `must` cases known to fail a legal variant.
/// Each is a false verdict of the case, not a fault of the variant; the
/// test fails when one of these passes, so that the list is emptied as
/// the cases are fixed.
const KNOWN_FALSE_VERDICTS: &[(&str, &str, &str)] = &[
    // The columns of list's table are a `should` (list.text).
    ("other-text-layouts", "cli/text-escape", "fixed on main by the case audit"),
    (ALL_OTHER_CHOICES, "cli/text-escape", "fixed on main by the case audit"),
    // FORMAT.md §5.8 lets a release keep run_at, or set it to now.
    ("release-sets-run-at", "http/fail-options", "fixed on main by the case audit"),
    ("serve-150ms-late", "http/fail-options", "fixed on main by the case audit"),
    (ALL_OTHER_CHOICES, "http/fail-options", "fixed on main by the case audit"),
];

/// The families (`cli/*`) of the cases that check any of `rules`.
fn families_checking(rules: &[&str]) -> Vec<String> {
    let mut families = BTreeSet::new();
    for page in ukue_harness::spec::coverage::suite() {
        for r in page.rules.iter().filter(|r| rules.contains(&r.rule.id.as_str())) {
            for case in &r.cases {
                if let Some((family, _)) = case.id.split_once('/') {
                    families.insert(format!("{family}/*"));
                }
            }
        }
    }
    families.into_iter().collect()
}

/// The `must` cases of a run that did not pass: (case, status, report).
fn must_failures(reports: &[serde_json::Value]) -> Vec<(String, String, String)> {
    reports
        .iter()
        .filter(|r| r["level"] == "must")
        .filter(|r| ["fail", "timeout", "error"].contains(&r["status"].as_str().unwrap_or("")))
        .map(|r| (r["id"].as_str().unwrap_or("").to_string(), r["status"].to_string(), r.to_string()))
        .collect()
}

#[test]
fn heavy_every_legal_variant_passes_every_must_case() {
    let runs: Vec<(&str, Vec<String>)> = VARIANTS
        .iter()
        .map(|v| {
            let globs = if v.name == ALL_OTHER_CHOICES { Vec::new() } else { families_checking(v.items) };
            (v.name, globs)
        })
        .collect();
    for (name, globs) in &runs {
        assert!(*name == ALL_OTHER_CHOICES || !globs.is_empty(), "{name}: no case checks its rules");
    }
    let program = variant_binary();
    let started = std::time::Instant::now();
    // Two at a time: the whole suite beside one family after another.
    let results = each_in_parallel(&runs, 2, |(name, globs)| {
        let mut args = vec!["--impl", program.to_str().unwrap(), "--jobs", "2"];
        for glob in globs {
            args.extend(["--cases", glob.as_str()]);
        }
        let run = std::time::Instant::now();
        let (code, reports, stderr) = run_suite(&args, &[("UKUE_VARIANT", name)]);
        eprintln!(
            "{name}: {} cases in {:.0?} ({})",
            reports.len().saturating_sub(1),
            run.elapsed(),
            globs.join(" ")
        );
        let summary_ok = reports.last().is_some_and(|s| s.get("summary").is_some());
        (code, must_failures(&reports), summary_ok, stderr)
    });
    eprintln!("every variant ran in {:.0?}", started.elapsed());
    let mut found = Vec::new();
    let mut unexpected = Vec::new();
    for ((name, _), (code, failures, summary_ok, stderr)) in runs.iter().zip(&results) {
        assert!(*summary_ok, "{name}: the run ended without its summary (exit {code}): {stderr}");
        for (case, status, report) in failures {
            found.push((*name, case.as_str()));
            let known = KNOWN_FALSE_VERDICTS.iter().any(|(v, c, _)| v == name && c == case);
            if !known {
                unexpected.push(format!("{name}: {case} {status}: {report}"));
            }
        }
    }
    assert!(unexpected.is_empty(), "must cases that failed a legal variant:\n{}", unexpected.join("\n"));
    let passed: Vec<String> = KNOWN_FALSE_VERDICTS
        .iter()
        .filter(|(v, c, _)| !found.contains(&(*v, *c)))
        .map(|(v, c, why)| format!("{v}: {c} ({why})"))
        .collect();
    assert!(
        passed.is_empty(),
        "known false verdicts that no longer fail: empty them from the list:\n{}",
        passed.join("\n")
    );
}
