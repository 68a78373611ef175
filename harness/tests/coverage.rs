//! `ukue-conformance coverage`: the real FORMAT.md and COMMAND.md have no
//! rule that no case checks and CONFORMANCE.md does not explain; an edited
//! page of either shows which rules changed, which lost their check, and
//! what to rerun.

mod support;

use std::process::Command;

use support::conformance;

fn coverage(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(conformance()).arg("coverage").args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn the_real_page_is_covered_but_for_what_conformance_md_explains() {
    let (code, stdout, stderr) = coverage(&["--require-full"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("0 gaps"), "{stdout}");
    let (code, stdout, _) = coverage(&["--require-full", "--format", "json"]);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["gaps"], serde_json::json!([]));
    let rules = json["rules"].as_array().unwrap();
    let explained = |page: &str| -> Vec<&str> {
        let on_page = |id: &str| rules.iter().any(|r| r["id"] == id && r["page"] == page);
        json["explained"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|id| id.as_str())
            .filter(|id| on_page(id))
            .collect()
    };
    assert_eq!(
        explained("FORMAT.md"),
        [
            "1.4/should-go-through-ukue-serve",
            "2.4.1",
            "2.4.3",
            "2.4.4",
            "2.4.5",
            "2.4.6",
            "2.4.9",
            "2.4.10",
            "2.4.11",
            "2.4.13",
            "2.4.14",
            "2.4.15",
            "6.3/should-carry-its-own-check",
            "8"
        ],
        "advice to deployers and applications, the rules for editors of the page (checked by `evolve`), \
         and §8, about the page itself"
    );
    let pages: Vec<&str> =
        json["pages"].as_array().unwrap().iter().map(|p| p["page"].as_str().unwrap()).collect();
    assert_eq!(pages, ["FORMAT.md", "COMMAND.md"]);
    let items = rules.iter().filter(|r| r["page"] == "COMMAND.md").count();
    assert!(items > 100, "COMMAND.md's items are rules too: {items}");
    let rule = |id: &str| rules.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id}"));
    let token = rule("5.4/must-be-a-fresh-random");
    assert_eq!(token["kind"], "must");
    assert_eq!(token["cases"], serde_json::json!([{"id": "steps/claim-token-fresh", "level": "must"}]));
    assert!(rule("5").get("through").is_some(), "a section is checked through its subsections");
    let concurrency = rule("work.concurrency");
    assert_eq!((concurrency["kind"].as_str(), concurrency["section"].as_str()), (Some("must"), Some("5")));
    assert!(
        concurrency["cases"].as_array().unwrap().iter().any(|c| c["level"] == "must"),
        "a must item is checked by a must case: {concurrency}"
    );
}

/// COMMAND.md's items carry their ids on the page: an edited item keeps
/// its id (rerun its cases), a new one is a gap until CONFORMANCE.md maps
/// it, and a removed one loses the checks it had.
#[test]
fn a_diff_of_an_edited_command_page_names_changed_added_and_removed_items() {
    let dir = tempfile::tempdir().unwrap();
    let old = ukue_harness::spec::COMMAND_MD;
    let edited = old
        .replacen("lists only jobs with a larger id", "lists only jobs with a greater id", 1)
        .replacen(
            "- `version.output` (must):",
            "- `version.flag` (must): `ukue --version` does the same.\n- `version.output` (must):",
            1,
        )
        .replacen("- `purge.queue` (must): `--queue Q` purges only queue Q's jobs.\n", "", 1);
    assert_ne!(edited, old);
    let (old_path, new_path) = (dir.path().join("OLD.md"), dir.path().join("NEW.md"));
    std::fs::write(&old_path, old).unwrap();
    std::fs::write(&new_path, &edited).unwrap();
    let (o, n) = (old_path.to_str().unwrap(), new_path.to_str().unwrap());
    let (code, stdout, stderr) = coverage(&["--diff", o, n, "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let changes: Vec<(&str, &str, usize)> = json["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (c["id"].as_str().unwrap(), c["change"].as_str().unwrap(), c["cases"].as_array().unwrap().len())
        })
        .collect();
    let find =
        |id: &str| *changes.iter().find(|c| c.0 == id).unwrap_or_else(|| panic!("{id} not in {changes:?}"));
    assert_eq!(changes.len(), 3, "{changes:?}");
    let after = find("list.after");
    assert!(after.1 == "changed" && after.2 > 0, "{after:?}");
    assert_eq!(find("version.flag"), ("version.flag", "added", 0));
    let removed = find("purge.queue");
    assert!(removed.1 == "removed" && removed.2 > 0, "its cases lose their item: {removed:?}");
    let (_, human, _) = coverage(&["--diff", o, n]);
    assert!(human.contains("+ ") && human.contains("a greater id"), "{human}");
    let (code, stdout, _) = coverage(&["--spec", n, "--require-full"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("version.flag") && stdout.contains("GAP"), "{stdout}");
}

#[test]
fn a_diff_of_an_edited_page_names_changed_rules_and_lost_checks() {
    let dir = tempfile::tempdir().unwrap();
    let old = ukue_harness::spec::FORMAT_MD;
    let edited = old
        // A changed sentence (same id): rerun its case.
        .replacen("at least 128 bits, stored as text", "at least 64 bits, stored as text", 1)
        // A reworded one: a new id, and the old one's check is lost.
        .replacen("A claim MUST run in one transaction", "A claim MUST always run in one transaction", 1);
    assert_ne!(edited, old);
    let (old_path, new_path) = (dir.path().join("OLD.md"), dir.path().join("NEW.md"));
    std::fs::write(&old_path, old).unwrap();
    std::fs::write(&new_path, &edited).unwrap();
    let (o, n) = (old_path.to_str().unwrap(), new_path.to_str().unwrap());

    let (code, stdout, stderr) = coverage(&["--diff", o, n, "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let changes: Vec<(String, String, Vec<String>)> = json["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let cases = c["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_str().unwrap().to_string())
                .collect();
            (c["id"].as_str().unwrap().to_string(), c["change"].as_str().unwrap().to_string(), cases)
        })
        .collect();
    let find =
        |id: &str| changes.iter().find(|c| c.0 == id).unwrap_or_else(|| panic!("{id} not in {changes:?}"));
    assert_eq!(find("5.4/must-be-a-fresh-random").1, "changed");
    assert_eq!(find("5.4/must-be-a-fresh-random").2, ["steps/claim-token-fresh"]);
    assert_eq!(find("5.4").1, "changed", "its section changed too");
    assert!(find("5.4").2.contains(&"steps/claim-order-priority".to_string()));
    assert_eq!(find("5.4/must-always-run-in-one").1, "added");
    assert!(find("5.4/must-always-run-in-one").2.is_empty(), "the reworded sentence is not mapped");
    let removed = find("5.4/must-run-in-one-transaction");
    assert_eq!(
        (removed.1.as_str(), removed.2.clone()),
        ("removed", vec!["concurrency/drain-while-adding".to_string(), "http/claims-race".to_string()])
    );
    assert_eq!(changes.len(), 4, "nothing else changed: {changes:?}");

    let (_, human, _) = coverage(&["--diff", o, n]);
    assert!(
        human.contains("LOST: concurrency/drain-while-adding (must), http/claims-race (must)"),
        "{human}"
    );
    assert!(human.contains("+ 4. **Pick**") || human.contains("at least 64 bits"), "{human}");
    assert!(human.contains("--cases 'steps/claim-token-fresh'"), "the command that reruns them: {human}");

    // The edited page has a gap now, until CONFORMANCE.md maps the new id.
    let (code, stdout, _) = coverage(&["--spec", n, "--require-full"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("5.4/must-always-run-in-one") && stdout.contains("GAP"), "{stdout}");
    let (code, _, _) = coverage(&["--diff", o, "/no/such/file.md"]);
    assert_eq!(code, 2);
    let (code, stdout, _) = coverage(&["--diff", o, o]);
    assert_eq!(code, 0);
    assert!(stdout.contains("hold the same rules"), "{stdout}");
}

/// FORMAT.md adds no requirement of its own: each MUST and SHOULD sentence
/// has a row in §8's table naming where the published page makes it one,
/// and the table has no row for a requirement the page does not state.
#[test]
fn every_must_and_should_is_traced_to_the_published_page() {
    use std::collections::BTreeMap;
    use ukue_harness::spec::rules::{rules, RuleKind};
    let page = ukue_harness::spec::FORMAT_MD;
    let mut stated: BTreeMap<(String, &str), usize> = BTreeMap::new();
    for rule in rules(page) {
        let word = match rule.kind {
            RuleKind::Must => "MUST",
            RuleKind::Should => "SHOULD",
            RuleKind::Section => continue,
        };
        *stated.entry((rule.section, word)).or_default() += 1;
    }
    let table = &page[page.find("## 8.").expect("§8")..];
    let mut traced: BTreeMap<(String, &str), usize> = BTreeMap::new();
    for line in table.lines().take_while(|l| !l.starts_with("The conformance suite also")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(here), Some(requirement)) = (cells.get(1), cells.get(2)) else { continue };
        let Some(section) = here.strip_prefix('§') else { continue };
        let word = if requirement.starts_with("MUST") {
            "MUST"
        } else if requirement.starts_with("SHOULD") {
            "SHOULD"
        } else {
            panic!("a row of §8 that is neither MUST nor SHOULD: {line}")
        };
        assert!(cells.get(3).is_some_and(|c| !c.is_empty()), "a row without its published source: {line}");
        *traced.entry((section.to_string(), word)).or_default() += 1;
    }
    assert!(!traced.is_empty(), "§8's table was not found");
    assert_eq!(stated, traced, "(section, word) → sentences on the page, against rows in §8's table");
}
