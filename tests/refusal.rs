//! Files that programs must refuse (fixtures/refusal): the library, every
//! `ukue` command and add_job.py refuse each one, and leave it and its
//! sidecars (the cold `-journal` of a rollback mode) byte-for-byte
//! unchanged, with no file added or taken away; `init` and `add` do what
//! the manifest's cases say. The reference keeps the `should` cases too.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use support::*;

#[derive(Debug, Deserialize)]
struct Entry {
    file: String,
    #[serde(default)]
    sidecars: Vec<String>,
    error: String,
    #[serde(default)]
    message_contains: Option<String>,
    #[serde(default)]
    app_rows: BTreeMap<String, i64>,
    #[serde(default)]
    application_id: Option<i64>,
    cases: Vec<ManifestCase>,
}

#[derive(Debug, Deserialize)]
struct ManifestCase {
    id: String,
    expect: Expect,
}

#[derive(Debug, Deserialize)]
struct Expect {
    #[serde(default)]
    others: Option<String>,
    #[serde(default)]
    init_add: Option<String>,
}

fn entries() -> Vec<Entry> {
    let text = std::fs::read_to_string(repo().join("fixtures/refusal/manifest.json")).unwrap();
    let entries: Vec<Entry> = serde_json::from_str(&text).unwrap();
    assert!(entries.len() >= 26, "the manifest lists {} fixtures", entries.len());
    entries
}

/// Copies the fixture and its sidecars into `scratch` (the file as `name`,
/// each sidecar beside it under the name SQLite looks for).
fn place(scratch: &Scratch, entry: &Entry, name: &str) -> PathBuf {
    let from = repo().join("fixtures/refusal");
    for stored in std::iter::once(&entry.file).chain(&entry.sidecars) {
        let suffix = stored.strip_prefix(entry.file.as_str()).unwrap();
        std::fs::copy(from.join(stored), scratch.path(&format!("{name}{suffix}")))
            .unwrap_or_else(|e| panic!("copy {stored}: {e}"));
    }
    scratch.path(name)
}

/// Runs `act` on a fresh copy of the fixture and checks it was left alone.
fn unchanged_after(entry: &Entry, what: &str, act: impl FnOnce(&Path)) {
    let scratch = Scratch::new();
    let path = place(&scratch, entry, &entry.file);
    let mut names: Vec<String> = std::iter::once(&entry.file).chain(&entry.sidecars).cloned().collect();
    names.sort();
    let before: Vec<Vec<u8>> = names.iter().map(|n| std::fs::read(scratch.path(n)).unwrap()).collect();
    act(&path);
    assert_eq!(scratch.files(), names, "{}: {what} added or took away files", entry.file);
    for (name, before) in names.iter().zip(before) {
        let after = std::fs::read(scratch.path(name)).unwrap();
        assert!(before == after, "{}: {what} changed {name}", entry.file);
    }
}

#[track_caller]
fn assert_mentions(entry: &Entry, what: &str, message: &str) {
    if let Some(fragment) = &entry.message_contains {
        assert!(
            message.to_lowercase().contains(&fragment.to_lowercase()),
            "{}: {what} said {message:?}, which lacks {fragment:?}",
            entry.file
        );
    }
}

fn expects<'a>(entry: &'a Entry, pick: impl Fn(&'a Expect) -> &'a Option<String>) -> Vec<&'a str> {
    entry.cases.iter().filter_map(|c| pick(&c.expect).as_deref()).collect()
}

#[test]
fn the_library_refuses_each_fixture_unchanged() {
    for entry in entries() {
        unchanged_after(&entry, "Ukue::open", |path| match ukue::Ukue::open(path) {
            Err(ukue::Error::Refused(refusal)) => {
                assert_eq!(refusal.kind(), entry.error, "{}: {refusal}", entry.file);
                assert_mentions(&entry, "Ukue::open", &refusal.to_string());
            }
            other => panic!("{}: expected a refusal, got {other:?}", entry.file),
        });
    }
}

/// Every command but init and add, with arguments that would change a
/// good file.
const COMMANDS: &[&[&str]] = &[
    &["stats"],
    &["stats", "--json"],
    &["list"],
    &["list", "--json"],
    &["show", "1"],
    &["retry", "1"],
    &["retry", "--all"],
    &["purge", "--state", "dead"],
    &["delete", "1"],
    &["work", "q", "--poll", "10ms", "--", "true"],
];

fn command_args<'a>(command: &[&'a str], path: &'a str) -> Vec<&'a str> {
    let mut args = vec![command[0], path];
    args.extend_from_slice(&command[1..]);
    args
}

#[test]
fn every_command_refuses_each_fixture_unchanged() {
    for entry in entries() {
        for expect in expects(&entry, |e| &e.others) {
            assert_eq!(expect, "refuse", "{}", entry.file);
            for command in COMMANDS {
                let what = format!("ukue {}", command.join(" "));
                unchanged_after(&entry, &what, |path| {
                    let out = ukue(&command_args(command, path_str(path)));
                    expect_status(&out, 1, &format!("{}: {what}", entry.file));
                    let stderr = text(&out.stderr);
                    assert!(stderr.starts_with(&format!("ukue {}: ", command[0])), "{what}: {stderr}");
                    assert_mentions(&entry, &what, &stderr);
                });
            }
        }
    }
}

#[test]
fn init_and_add_refuse_or_add_the_tables_as_the_manifest_says() {
    for entry in entries() {
        for expect in expects(&entry, |e| &e.init_add) {
            for command in [&["init"][..], &["add", "q", "x"][..]] {
                let what = format!("ukue {}", command.join(" "));
                match expect {
                    "refuse" => unchanged_after(&entry, &what, |path| {
                        let out = ukue(&command_args(command, path_str(path)));
                        expect_status(&out, 1, &format!("{}: {what}", entry.file));
                        assert_mentions(&entry, &what, &text(&out.stderr));
                    }),
                    "add-tables" => {
                        let scratch = Scratch::new();
                        let path = place(&scratch, &entry, &entry.file);
                        ok(&command_args(command, path_str(&path)));
                        let file = ukue::Ukue::open(&path)
                            .unwrap_or_else(|e| panic!("{}: a ukue file after {what}: {e}", entry.file));
                        let conn = file.connection();
                        for (table, rows) in &entry.app_rows {
                            let n: i64 = conn
                                .query_row(&format!("SELECT count(*) FROM \"{table}\""), [], |r| r.get(0))
                                .unwrap();
                            assert_eq!(n, *rows, "{}: {what} kept the rows of {table}", entry.file);
                        }
                        let id: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0)).unwrap();
                        assert_eq!(
                            Some(id),
                            entry.application_id,
                            "{}: application_id after {what}",
                            entry.file
                        );
                        let jobs: i64 =
                            conn.query_row("SELECT count(*) FROM ukue_jobs", [], |r| r.get(0)).unwrap();
                        assert_eq!(jobs, i64::from(command[0] == "add"), "{}: jobs after {what}", entry.file);
                    }
                    other => panic!("{}: unknown init_add {other:?}", entry.file),
                }
            }
        }
    }
}

#[test]
fn add_job_py_refuses_each_fixture_unchanged() {
    for entry in entries() {
        unchanged_after(&entry, "add_job.py", |path| {
            let out = python(&[path_str(&add_job_py()), path_str(path), "q", "x"]);
            expect_status(&out, 1, &format!("{}: add_job.py", entry.file));
            assert_mentions(&entry, "add_job.py", &text(&out.stderr));
        });
    }
}

#[test]
fn every_case_id_is_a_refusal_case() {
    for entry in entries() {
        for case in &entry.cases {
            assert!(case.id.starts_with("refusal/"), "{}: {}", entry.file, case.id);
        }
    }
}

#[test]
fn a_missing_path_is_refused_and_not_created() {
    let scratch = Scratch::new();
    let path = scratch.path("missing.ukue");
    for command in COMMANDS {
        let out = ukue(&command_args(command, path_str(&path)));
        expect_status(&out, 1, &format!("ukue {}", command.join(" ")));
        assert!(text(&out.stderr).contains("no such file"), "{}", text(&out.stderr));
    }
    let out = python(&[path_str(&add_job_py()), path_str(&path), "q", "x"]);
    expect_status(&out, 1, "add_job.py");
    assert!(matches!(ukue::Ukue::open(&path), Err(ukue::Error::Refused(ukue::Refusal::NotFound { .. }))));
    assert!(scratch.files().is_empty(), "left behind: {:?}", scratch.files());
}

#[test]
fn a_newer_version_is_named_with_the_known_one() {
    let scratch = Scratch::new();
    let path = scratch.fixture("refusal/format-version-2.ukue");
    let out = ukue(&["stats", path_str(&path)]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("format 2") && stderr.contains("format 1"), "{stderr}");
    let out = python(&[path_str(&add_job_py()), path_str(&path), "q", "x"]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("format 2") && stderr.contains("format 1"), "{stderr}");
}
