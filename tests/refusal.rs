//! Files that every program must refuse (fixtures/refusal): the library,
//! every `ukue` command and add_job.py refuse each one, and leave it
//! byte-for-byte unchanged with no sidecar files.

mod support;

use serde::Deserialize;
use support::*;

#[derive(Debug, Deserialize)]
struct Case {
    file: String,
    error: String,
    #[serde(default)]
    message_contains: Option<String>,
    init_add: String,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(repo().join("fixtures/refusal/manifest.json")).unwrap();
    let cases: Vec<Case> = serde_json::from_str(&text).unwrap();
    assert!(cases.len() >= 8, "the manifest lists {} fixtures", cases.len());
    cases
}

/// Runs `act` on a fresh copy of the fixture and checks it was left alone.
fn unchanged_after(case: &Case, what: &str, act: impl FnOnce(&std::path::Path)) {
    let scratch = Scratch::new();
    let path = scratch.fixture(&format!("refusal/{}", case.file));
    let before = std::fs::read(&path).unwrap();
    act(&path);
    let after = std::fs::read(&path).unwrap();
    assert!(before == after, "{}: {what} changed the file", case.file);
    assert_eq!(scratch.files(), vec![case.file.clone()], "{}: {what} left files behind", case.file);
}

#[track_caller]
fn assert_mentions(case: &Case, what: &str, message: &str) {
    if let Some(fragment) = &case.message_contains {
        assert!(
            message.to_lowercase().contains(&fragment.to_lowercase()),
            "{}: {what} said {message:?}, which lacks {fragment:?}",
            case.file
        );
    }
}

#[test]
fn the_library_refuses_each_fixture_unchanged() {
    for case in cases() {
        unchanged_after(&case, "Ukue::open", |path| match ukue::Ukue::open(path) {
            Err(ukue::Error::Refused(refusal)) => {
                assert_eq!(refusal.kind(), case.error, "{}: {refusal}", case.file);
                assert_mentions(&case, "Ukue::open", &refusal.to_string());
            }
            other => panic!("{}: expected a refusal, got {other:?}", case.file),
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
    for case in cases() {
        for command in COMMANDS {
            let what = format!("ukue {}", command.join(" "));
            unchanged_after(&case, &what, |path| {
                let out = ukue(&command_args(command, path_str(path)));
                expect_status(&out, 1, &format!("{}: {what}", case.file));
                let stderr = text(&out.stderr);
                assert!(stderr.starts_with(&format!("ukue {}: ", command[0])), "{what}: {stderr}");
                assert_mentions(&case, &what, &stderr);
            });
        }
    }
}

#[test]
fn init_and_add_refuse_or_create_as_the_manifest_says() {
    for case in cases() {
        match case.init_add.as_str() {
            "refuse" => {
                for command in [&["init"][..], &["add", "q", "x"][..]] {
                    let what = format!("ukue {}", command.join(" "));
                    unchanged_after(&case, &what, |path| {
                        let out = ukue(&command_args(command, path_str(path)));
                        expect_status(&out, 1, &format!("{}: {what}", case.file));
                        assert_mentions(&case, &what, &text(&out.stderr));
                    });
                }
            }
            "create" => {
                for command in [&["init"][..], &["add", "q", "x"][..]] {
                    let scratch = Scratch::new();
                    let path = scratch.fixture(&format!("refusal/{}", case.file));
                    ok(&command_args(command, path_str(&path)));
                    ukue::Ukue::open(&path).expect("a ukue file now");
                }
            }
            "init-only" => {
                unchanged_after(&case, "ukue add", |path| {
                    let out = ukue(&["add", path_str(path), "q", "x"]);
                    expect_status(&out, 1, &format!("{}: ukue add", case.file));
                    assert!(text(&out.stderr).contains("no ukue tables"), "{}", text(&out.stderr));
                });
                let scratch = Scratch::new();
                let path = scratch.fixture(&format!("refusal/{}", case.file));
                ok(&["init", path_str(&path)]);
                let file = ukue::Ukue::open(&path).expect("a ukue file now");
                let notes: i64 =
                    file.connection().query_row("SELECT count(*) FROM notes", [], |r| r.get(0)).unwrap();
                assert_eq!(notes, 3, "init kept the database's own rows");
            }
            other => panic!("{}: unknown init_add {other:?}", case.file),
        }
    }
}

#[test]
fn add_job_py_refuses_each_fixture_unchanged() {
    for case in cases() {
        unchanged_after(&case, "add_job.py", |path| {
            let out = python(&[path_str(&add_job_py()), path_str(path), "q", "x"]);
            expect_status(&out, 1, &format!("{}: add_job.py", case.file));
            assert_mentions(&case, "add_job.py", &text(&out.stderr));
        });
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
