//! The suite passes correct programs that differ from the reference
//! (crate::subjects::variants): every `must` case passes every legal
//! variant. `all-other-choices` runs the whole default suite; each other
//! variant runs the cases that check its rules. A `should` case may warn
//! (a variant leaves `should` items undone): the runs are without
//! `--strict`, and only a `must` case that fails counts.

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;

use support::*;
use ukue_harness::cases::Level;
use ukue_harness::subjects::variants::{ALL_OTHER_CHOICES, VARIANTS};

fn variant_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ukue-variant"))
}

/// (variant, case, why): `must` cases known to fail a legal variant.
/// Each is a false verdict of the case, not a fault of the variant; the
/// test fails when one of these passes, so that the list is emptied as
/// the cases are fixed.
const KNOWN_FALSE_VERDICTS: &[(&str, &str, &str)] = &[];

/// (variant, case, why): `must` cases that fail a legal variant and are
/// not fixed yet: findings, reported to the owner of the cases (issue 32).
const FINDINGS: &[(&str, &str, &str)] = &[];

/// The families in which every case is a `should` (scale/*): a legal
/// variant may warn there, and can fail no `must` case.
fn should_only_families() -> Vec<String> {
    let cases = ukue_harness::cases::all();
    let mut families: BTreeSet<&str> =
        cases.iter().filter_map(|c| c.id.split_once('/')).map(|(f, _)| f).collect();
    for case in cases.iter().filter(|c| c.level == Level::Must) {
        families.remove(case.id.split_once('/').map_or("", |(f, _)| f));
    }
    families.into_iter().map(|f| format!("{f}/*")).collect()
}

/// The cases a single variant runs: those that check its rules, those
/// whose other side it takes and those it touches (but scale/*, `should`
/// cases of speed). The run of all-other-choices, the whole suite, meets
/// every choice in every other case.
fn cases_for(rules: &[&str]) -> Vec<String> {
    let mut cases = BTreeSet::new();
    for page in ukue_harness::spec::coverage::suite() {
        for r in page.rules.iter().filter(|r| rules.contains(&r.rule.id.as_str())) {
            cases.extend(r.cases.iter().map(|c| c.id.clone()).filter(|id| !id.starts_with("scale/")));
        }
    }
    cases.into_iter().collect()
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
    // (variant, --cases globs, --skip globs)
    // all-other-choices, the longest, first.
    let mut variants: Vec<_> = VARIANTS.iter().collect();
    variants.sort_by_key(|v| v.name != ALL_OTHER_CHOICES);
    let runs: Vec<(&str, Vec<String>, Vec<String>)> = variants
        .iter()
        .map(|v| match v.name {
            ALL_OTHER_CHOICES => (v.name, Vec::new(), should_only_families()),
            _ => (v.name, cases_for(&[v.items, v.touches].concat()), Vec::new()),
        })
        .collect();
    for (name, cases, _) in &runs {
        assert!(*name == ALL_OTHER_CHOICES || !cases.is_empty(), "{name}: no case checks its rules");
    }
    let program = variant_binary();
    let started = std::time::Instant::now();
    // Two at a time: the whole suite beside one variant after another.
    let results = each_in_parallel(&runs, 2, |(name, cases, skipped)| {
        let mut args = vec!["--impl", program.to_str().unwrap(), "--jobs", "2"];
        for glob in cases {
            args.extend(["--cases", glob.as_str()]);
        }
        for glob in skipped {
            args.extend(["--skip", glob.as_str()]);
        }
        let run = std::time::Instant::now();
        let (code, reports, stderr) = run_suite(&args, &[("UKUE_VARIANT", name)]);
        let ran = reports.len().saturating_sub(1);
        let failures = must_failures(&reports);
        // The failed ones on the same line: a log cut short still names them.
        let failed: Vec<String> =
            failures.iter().map(|(case, status, _)| format!("{case} {status}")).collect();
        eprintln!(
            "{name}: {ran} cases in {:.0?}: {}{}",
            run.elapsed(),
            cases.join(" "),
            if failed.is_empty() {
                String::new()
            } else {
                format!("; must cases not passed: {}", failed.join(", "))
            }
        );
        let summary_ok = reports.last().is_some_and(|s| s.get("summary").is_some());
        (code, failures, summary_ok, stderr)
    });
    eprintln!("every variant ran in {:.0?}", started.elapsed());
    let listed = |name: &str, case: &str| {
        KNOWN_FALSE_VERDICTS.iter().chain(FINDINGS).any(|(v, c, _)| *v == name && *c == case)
    };
    let mut found = Vec::new();
    let mut unexpected = Vec::new();
    for ((name, _, _), (code, failures, summary_ok, stderr)) in runs.iter().zip(&results) {
        assert!(*summary_ok, "{name}: the run ended without its summary (exit {code}): {stderr}");
        for (case, status, report) in failures {
            found.push((*name, case.as_str()));
            if !listed(name, case) {
                unexpected.push(format!("{name}: {case} {status}: {report}"));
            }
        }
    }
    assert!(unexpected.is_empty(), "must cases that failed a legal variant:\n{}", unexpected.join("\n"));
    let passed: Vec<String> = KNOWN_FALSE_VERDICTS
        .iter()
        .chain(FINDINGS)
        .filter(|(v, c, _)| !found.contains(&(*v, *c)))
        .map(|(v, c, why)| format!("{v}: {c} ({why})"))
        .collect();
    assert!(
        passed.is_empty(),
        "listed false verdicts that no longer fail: take them off the list:\n{}",
        passed.join("\n")
    );
}
