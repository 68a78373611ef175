//! The runner installed alone, as `cargo install --path harness` (or
//! `--git … ukue-harness`) installs it: every binary of the harness crate
//! in one bin directory, and nothing else. Run against another
//! implementation (clients/python/ukue.py), it brings its reference
//! (`ukue-reference`), names it in every report and runs the cases that
//! compare two implementations against it. Without one beside it, or with
//! the subject as its reference, it skips those cases and says why.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::*;

/// The binaries `cargo install` puts in the bin directory: every `[[bin]]`
/// of harness/Cargo.toml.
fn installed_binaries() -> Vec<String> {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if let (true, Some(name)) = (in_bin, line.strip_prefix("name = ")) {
            names.push(name.trim_matches('"').to_string());
        }
    }
    names
}

/// A bin directory as `cargo install --root DIR` leaves it: the harness's
/// binaries (hard links to this build's, or copies), less `leave_out`.
fn install(dir: &Path, leave_out: &[&str]) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in installed_binaries().iter().filter(|n| !leave_out.contains(&n.as_str())) {
        let built = conformance().with_file_name(name);
        if std::fs::hard_link(&built, bin.join(name)).is_err() {
            std::fs::copy(&built, bin.join(name)).unwrap();
        }
    }
    bin
}

fn run(bin: &Path, args: &[&str]) -> Output {
    Command::new(bin.join("ukue-conformance")).args(args).output().expect("the installed runner runs")
}

/// The JSON report's case objects by id, and its summary's `run`.
fn json(out: &Output) -> (Vec<serde_json::Value>, serde_json::Value) {
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let run = lines.iter().find_map(|l| l.get("run").cloned()).expect("a summary with the run");
    (lines.into_iter().filter(|l| l.get("id").is_some()).collect(), run)
}

fn status<'a>(cases: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    &cases.iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("no report of {id}"))["status"]
}

const HAND_OFFS: [&str; 2] = ["interop/reference-adds-subject-works", "interop/subject-adds-reference-works"];

#[test]
fn installed_alone_the_runner_brings_its_reference_and_without_one_says_what_it_skips() {
    if !have("python3") {
        return;
    }
    assert!(
        installed_binaries().iter().any(|n| n == "ukue-reference"),
        "the harness crate builds the reference, so that installing the runner installs it"
    );
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let python_ukue = repo().join("clients/python/ukue.py");
    let subject = python_ukue.to_str().unwrap();

    // Installed whole: the reference is ukue-reference beside the runner,
    // and every report names it.
    let bin = install(&dir.path().join("whole"), &[]);
    let (junit, html) = (dir.path().join("junit.xml"), dir.path().join("report.html"));
    let out = run(
        &bin,
        &[
            "--impl",
            subject,
            "--cases",
            "interop/*",
            "--format",
            "json",
            "--junit",
            junit.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let (cases, info) = json(&out);
    let reference = std::fs::canonicalize(bin.join("ukue-reference")).unwrap();
    let reference = reference.to_str().unwrap();
    assert_eq!(info["reference"], reference, "{info}");
    assert_ne!(info["reference"], info["implementation"]);
    assert!(info["reference_version"].as_str().is_some_and(|v| v.starts_with("ukue ")), "{info}");
    for id in HAND_OFFS {
        assert_eq!(status(&cases, id), "pass", "{id} runs against the reference: {stderr}");
    }
    assert!(!stderr.contains("no reference"), "{stderr}");
    let junit = std::fs::read_to_string(&junit).unwrap();
    assert!(junit.contains(&format!("reference {reference} (ukue ")), "JUnit names the reference");
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains(&format!("<td>{reference} (ukue ")), "the HTML page names the reference");

    // Without ukue-reference: the subject has nothing to be compared with.
    let bin = install(&dir.path().join("alone"), &["ukue-reference"]);
    let out = run(&bin, &["--impl", subject, "--cases", "interop/*", "--format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let (cases, info) = json(&out);
    assert!(info["reference"].is_null(), "{info}");
    let why = info["no_reference"].as_str().unwrap_or_default();
    assert!(why.contains("no ukue-reference beside ukue-conformance"), "{info}");
    for id in HAND_OFFS {
        let case = cases.iter().find(|c| c["id"] == id).unwrap();
        assert_eq!(case["status"], "skipped", "{case}");
        assert!(case["reason"].as_str().unwrap().contains("there is none: no ukue-reference"), "{case}");
        assert!(stderr.contains(id), "stderr names each case it skips: {stderr}");
    }
    assert_eq!(status(&cases, "interop/python-adds-subject-works"), "pass", "the other cases still run");

    // The subject named as its own reference: the same, and the human
    // header says so.
    let out = run(
        &bin,
        &["--impl", subject, "--reference", subject, "--cases", "interop/reference-adds-subject-works"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("reference: none: ") && stderr.contains("is the implementation under test"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 passed, 1 skipped, 0 failed"), "{out:?}");
}
