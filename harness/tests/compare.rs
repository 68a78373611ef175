//! `ukue-conformance compare`: implementations side by side, from live runs
//! (one seed for all) and from saved JSON reports (shards joined). A must
//! case that passes the reference and fails a broken program is marked and
//! the command exits 1; the reference and the Python command differ only
//! where a should case warns, and the command exits 0.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::*;

fn compare(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(conformance())
        .arg("compare")
        .args(["--reference", reference().to_str().unwrap()])
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("ukue-conformance runs")
}

fn matrix(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn row<'a>(m: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    m["rows"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("no row {id}: {m}"))
}

const ORDER: &str = "steps/claim-order-*";

#[test]
fn live_a_broken_program_beside_the_reference_is_marked() {
    let (reference, broken) = (reference(), broken());
    let out = compare(
        &[
            "--impl",
            reference.to_str().unwrap(),
            "--impl",
            broken.to_str().unwrap(),
            "--cases",
            ORDER,
            "--cases",
            "format/schema",
            "--seed",
            "5",
            "--format",
            "json",
        ],
        &[("UKUE_BROKEN", "reversed-priority")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let m = matrix(&out);
    assert_eq!(m["columns"].as_array().unwrap().len(), 2);
    assert!(m["columns"][1]["name"].as_str().unwrap().ends_with(" · ukue-broken"), "{m}");
    assert_eq!(m["columns"][0]["seeds"], serde_json::json!([5]));
    assert_eq!(m["columns"][1]["seeds"], serde_json::json!([5]));
    let priority = row(&m, "steps/claim-order-priority");
    assert_eq!(priority["cells"][0]["status"], "pass");
    assert_eq!(priority["cells"][1]["status"], "fail");
    assert!(priority["suspect"].as_str().unwrap().contains("a false verdict of the suite"), "{priority}");
    assert!(priority["cells"][1]["replay"].as_str().unwrap().contains("--seed 5"), "{priority}");
    assert_eq!(m["rows"][0]["differs"], true, "differing rows come first: {m}");
    let last = m["rows"].as_array().unwrap().last().unwrap();
    assert_eq!((last["id"].as_str(), &last["differs"]), (Some("format/schema"), &serde_json::json!(false)));
}

#[test]
fn saved_reports_make_the_matrix_with_shards_joined() {
    if !have("python3") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let save = |name: &str, implementation: &Path, partition: Option<&str>| {
        let mut args = vec!["--impl", implementation.to_str().unwrap(), "--cases", ORDER];
        args.extend(["--cases", "bad-input/attempts-0-rejected", "--seed", "9"]);
        if let Some(p) = partition {
            args.extend(["--partition", p]);
        }
        let (code, reports, stderr) = run_suite(&args, &[]);
        assert_eq!(code, 0, "{stderr}");
        let path = dir.path().join(name);
        std::fs::write(&path, reports.iter().map(|r| format!("{r}\n")).collect::<String>()).unwrap();
        path
    };
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients/python/ukue.py");
    let paths = [
        save("reference.json", &reference(), None),
        save("python-1.json", &python, Some("count:1/2")),
        save("python-2.json", &python, Some("count:2/2")),
    ];
    let html = dir.path().join("matrix.html");
    let mut args: Vec<&str> = paths.iter().map(|p| p.to_str().unwrap()).collect();
    args.extend(["--format", "json", "--html", html.to_str().unwrap()]);
    let out = compare(&args, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let m = matrix(&out);
    assert_eq!(m["columns"].as_array().unwrap().len(), 2, "the Python shards are one column: {m}");
    let rows = m["rows"].as_array().unwrap();
    let all = ukue_harness::cases::all().iter().filter(|c| c.id.starts_with("steps/claim-order-")).count();
    assert_eq!(rows.len(), all + 1, "{m}");
    assert!(
        rows.iter().all(|r| r["cells"].as_array().unwrap().iter().all(|c| !c["status"].is_null())),
        "{m}"
    );
    // ukue.py takes --attempts 0 as the published add does: a should case
    // that warns, a difference, and no mark.
    let warned = row(&m, "bad-input/attempts-0-rejected");
    assert_eq!(
        (&warned["cells"][0]["status"], &warned["cells"][1]["status"]),
        (&"pass".into(), &"warn".into())
    );
    assert_eq!(warned["differs"], true);
    assert!(warned["suspect"].is_null());
    assert_eq!((&m["differ"], &m["suspect"]), (&1.into(), &0.into()));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<tr class=\"differs\"><td title=")
            && page.contains(">bad-input/attempts-0-rejected</td>"),
        "{page}"
    );

    // The Markdown matrix lists the difference and counts the rest.
    let mut args: Vec<&str> = paths.iter().map(|p| p.to_str().unwrap()).collect();
    args.extend(["--format", "markdown", "--differing"]);
    let text = String::from_utf8_lossy(&compare(&args, &[]).stdout).into_owned();
    assert!(text.contains("| **bad-input/attempts-0-rejected** | should | pass | warn |"), "{text}");
    assert!(text.contains(&format!("{all} cases where every implementation agrees: {all} pass.")), "{text}");

    // One implementation's reports alone compare nothing.
    let out = compare(&[paths[1].to_str().unwrap(), paths[2].to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("compare needs two or more"));
}
