//! Version 1 files that programs must accept (fixtures/compat: additions,
//! the published statements' layout, no indexes, the reference's previous
//! layout, a rollback journal) are accepted and work; tables inside an
//! application's database keep the application's id and data.

mod support;

use std::path::PathBuf;

use serde::Deserialize;
use support::*;
use ukue::Ukue;
use ukue::DEFAULT_LEASE;

#[derive(Debug, Deserialize)]
struct Case {
    file: String,
    #[serde(default)]
    sidecars: Vec<String>,
    jobs: usize,
    application_id: i64,
    #[serde(default)]
    app_tables: Vec<String>,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(repo().join("fixtures/compat/manifest.json")).unwrap();
    let cases: Vec<Case> = serde_json::from_str(&text).unwrap();
    assert!(cases.len() >= 9, "the manifest lists {} fixtures", cases.len());
    cases
}

/// Copies the fixture and its sidecars into `scratch`.
fn place(scratch: &Scratch, case: &Case) -> PathBuf {
    for name in std::iter::once(&case.file).chain(&case.sidecars) {
        scratch.fixture(&format!("compat/{name}"));
    }
    scratch.path(&case.file)
}

fn app_rows(file: &Ukue, tables: &[String]) -> Vec<(String, i64)> {
    tables
        .iter()
        .map(|t| {
            let n = file
                .connection()
                .query_row(&format!("SELECT count(*) FROM \"{t}\""), [], |r| r.get(0))
                .unwrap();
            (t.clone(), n)
        })
        .collect()
}

#[test]
fn the_library_runs_every_job_of_each_fixture() {
    for case in cases() {
        let scratch = Scratch::new();
        let path = place(&scratch, &case);
        let mut file = Ukue::open(&path).unwrap_or_else(|e| panic!("{}: {e}", case.file));
        let rows_before = app_rows(&file, &case.app_tables);
        file.add(&ukue::NewJob::new("work", b"added".to_vec())).unwrap();
        let mut payloads = Vec::new();
        while let Some(job) = file.claim("work", DEFAULT_LEASE).unwrap() {
            payloads.push(String::from_utf8(job.payload.clone()).unwrap());
            file.finish(job.id, &job.token, false).unwrap();
        }
        assert_eq!(payloads.len(), case.jobs + 1, "{}: ran {payloads:?}", case.file);
        assert!(payloads.contains(&"added".to_string()));
        let id: i64 = file.connection().query_row("PRAGMA application_id", [], |r| r.get(0)).unwrap();
        assert_eq!(id, case.application_id, "{}: application_id", case.file);
        assert_eq!(app_rows(&file, &case.app_tables), rows_before, "{}: the app's rows", case.file);
        let ok: String = file.connection().query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(ok, "ok");
    }
}

#[test]
fn the_command_line_and_add_job_py_work_on_each_fixture() {
    for case in cases() {
        let scratch = Scratch::new();
        let path = place(&scratch, &case);
        let p = path_str(&path);
        let out = python(&[path_str(&add_job_py()), p, "work", "from python"]);
        expect_status(&out, 0, &format!("{}: add_job.py", case.file));
        ok(&["add", p, "work", "from rust"]);
        let stats: serde_json::Value = serde_json::from_str(&ok(&["stats", p, "--json"])).unwrap();
        assert_eq!(stats["queues"][0]["ready"], case.jobs as i64 + 2, "{}: {stats}", case.file);
        let list: serde_json::Value = serde_json::from_str(&ok(&["list", p, "--json"])).unwrap();
        let payloads: Vec<&str> =
            list["jobs"].as_array().unwrap().iter().map(|j| j["payload"].as_str().unwrap()).collect();
        assert!(payloads.contains(&"from python") && payloads.contains(&"from rust"), "{payloads:?}");
        ok(&["purge", p, "--state", "dead"]);
        let file = Ukue::open(&path).unwrap();
        let id: i64 = file.connection().query_row("PRAGMA application_id", [], |r| r.get(0)).unwrap();
        assert_eq!(id, case.application_id, "{}: application_id", case.file);
    }
}
