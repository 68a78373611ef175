//! spec/CONFORMANCE.md lists every case with the rule it checks, and only
//! the cases there are.

mod support;

use std::collections::BTreeMap;

use ukue_harness::{cases, spec};

/// One row of the case table of CONFORMANCE.md.
#[derive(Debug, PartialEq, Eq)]
struct Row {
    level: String,
    rule: String,
    summary: String,
}

/// The `| \`id\` | level | §rule title | summary |` rows of CONFORMANCE.md.
fn listed() -> BTreeMap<String, Row> {
    spec::CONFORMANCE_MD
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split(" | ").map(|c| c.trim().trim_matches('|').trim()).collect();
            let id = cells.first()?.strip_prefix('`')?.strip_suffix('`')?;
            let level = cells.get(1)?.to_string();
            // `§5.4 Claim` for a FORMAT.md section, `` `work.concurrency` `` for a COMMAND.md item.
            let cell = cells.get(2)?;
            let rule = match cell.strip_prefix('§') {
                Some(section) => section.split_whitespace().next()?.to_string(),
                None => cell.strip_prefix('`')?.strip_suffix('`')?.to_string(),
            };
            let summary = cells.get(3..)?.join(" | ");
            id.contains('/').then(|| (id.to_string(), Row { level, rule, summary }))
        })
        .collect()
}

#[test]
fn every_case_is_listed_with_its_level_rule_and_summary_and_nothing_else_is() {
    let listed = listed();
    let cases: BTreeMap<String, Row> = cases::all()
        .into_iter()
        .map(|c| {
            let row = Row {
                level: c.level.as_str().to_string(),
                rule: c.rule.to_string(),
                summary: c.summary.to_string(),
            };
            (c.id.to_string(), row)
        })
        .collect();
    let missing: Vec<&String> = cases.keys().filter(|id| !listed.contains_key(*id)).collect();
    let stale: Vec<&String> = listed.keys().filter(|id| !cases.contains_key(*id)).collect();
    assert!(missing.is_empty(), "cases that spec/CONFORMANCE.md does not list: {missing:?}");
    assert!(stale.is_empty(), "spec/CONFORMANCE.md lists cases that do not exist: {stale:?}");
    for (id, row) in &cases {
        assert_eq!(
            listed.get(id),
            Some(row),
            "{id}: CONFORMANCE.md says otherwise (left) than the case (right)"
        );
    }
}

#[test]
fn every_case_names_a_rule_of_format_md_and_ids_are_unique() {
    let all = cases::all();
    let mut ids = std::collections::BTreeSet::new();
    for case in &all {
        assert!(spec::title(case.rule).is_some(), "{}: the spec has no rule {}", case.id, case.rule);
        assert!(ids.insert(case.id), "{} twice", case.id);
        let (family, name) = case.id.split_once('/').expect("family/name");
        assert!(!family.is_empty() && !name.is_empty() && !name.contains('/'), "{}", case.id);
        assert!(!case.summary.is_empty(), "{}: no summary", case.id);
    }
    assert!(all.len() >= 50, "only {} cases", all.len());
}

#[test]
fn the_runner_lists_the_same_cases() {
    let out = std::process::Command::new(support::conformance())
        .args(["--list", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = cases::all().iter().map(|c| c.id.to_string()).collect();
    assert_eq!(ids, expected);
}
