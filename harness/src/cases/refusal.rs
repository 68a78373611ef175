//! refusal: every file of fixtures/refusal (and a path that does not
//! exist) is refused by every command that opens it, as FORMAT.md §2.3
//! says: exit status 1, a message on stderr, the file byte-for-byte
//! unchanged and no new file (`-wal`, `-shm`, `-journal`) beside it.
//! `init` and `add` do what the manifest's `init_add` says.

use std::path::Path;

use serde::Deserialize;

use crate::case::{Case, CaseResult, Failure, FailureKind, Needs};
use crate::ctx::{path_str, Ctx, COMMAND_TIMEOUT};
use crate::embedded::{self, REFUSAL_MANIFEST};
use crate::ensure_eq;
use crate::subject::Subject;

use super::common::{self, read};

/// One entry of fixtures/refusal/manifest.json (see fixtures/README.md).
#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    pub file: String,
    pub error: String,
    pub message_contains: String,
    pub init_add: String,
    pub why: String,
}

pub fn manifest() -> Result<Vec<Entry>, Failure> {
    serde_json::from_str(REFUSAL_MANIFEST)
        .map_err(|e| Failure::error("a readable refusal/manifest.json", e.to_string()))
}

fn entry(file: &str) -> Result<Entry, Failure> {
    manifest()?
        .into_iter()
        .find(|e| e.file == file)
        .ok_or_else(|| Failure::error(format!("{file} in refusal/manifest.json"), "no such entry"))
}

/// A case's function.
type Run = fn(&mut Ctx) -> CaseResult;

/// The fixture cases: id, fixture file, summary, function.
const FIXTURE_CASES: &[(&str, &str, &str, Run)] = &[
    (
        "refusal/format-version-2",
        "format-version-2.ukue",
        "format_version 2 (newer): every command refuses it unchanged, naming versions 2 and 1",
        |ctx| refuse_fixture(ctx, "format-version-2.ukue"),
    ),
    (
        "refusal/format-version-abc",
        "format-version-abc.ukue",
        "format_version 'abc' (not a number): every command refuses it unchanged",
        |ctx| refuse_fixture(ctx, "format-version-abc.ukue"),
    ),
    (
        "refusal/format-version-0",
        "format-version-0.ukue",
        "format_version '0' (below 1): every command refuses it unchanged",
        |ctx| refuse_fixture(ctx, "format-version-0.ukue"),
    ),
    (
        "refusal/missing-version",
        "missing-version.ukue",
        "ukue_meta without a format_version row: every command refuses it unchanged",
        |ctx| refuse_fixture(ctx, "missing-version.ukue"),
    ),
    (
        "refusal/no-meta-table",
        "no-meta-table.ukue",
        "ukue_jobs without ukue_meta: every command refuses it unchanged",
        |ctx| refuse_fixture(ctx, "no-meta-table.ukue"),
    ),
    (
        "refusal/not-sqlite",
        "not-sqlite.ukue",
        "a text file, not SQLite: every command refuses it unchanged",
        |ctx| refuse_fixture(ctx, "not-sqlite.ukue"),
    ),
    (
        "refusal/empty-file",
        "empty.ukue",
        "a zero-byte file: non-creating commands refuse it unchanged; init and add make it version 1",
        |ctx| refuse_fixture(ctx, "empty.ukue"),
    ),
    (
        "refusal/plain-sqlite",
        "plain-sqlite.db",
        "an app's database without ukue tables: all but init refuse it; init adds the tables, keeps the app's",
        |ctx| refuse_fixture(ctx, "plain-sqlite.db"),
    ),
];

pub fn cases() -> Vec<Case> {
    let case = |id, summary, run| Case { id, rule: "2.3", summary, needs: Needs::default(), run };
    let mut cases: Vec<Case> =
        FIXTURE_CASES.iter().map(|&(id, _, summary, run)| case(id, summary, run)).collect();
    cases.push(case(
        "refusal/missing-path",
        "every command but init and add refuses a path that does not exist, and creates no file",
        missing_path,
    ));
    cases
}

/// The commands that never create a file, each on `file`; `work` runs the
/// probe, which must never start.
fn non_creating(ctx: &Ctx, file: &Path) -> Vec<Vec<String>> {
    let f = path_str(file).to_string();
    let probe = path_str(&ctx.subjects.probe).to_string();
    let log = path_str(&common::probe_log(ctx)).to_string();
    let commands: Vec<Vec<&str>> = vec![
        vec!["stats", &f],
        vec!["stats", &f, "--json"],
        vec!["list", &f],
        vec!["list", &f, "--json"],
        vec!["show", &f, "1"],
        vec!["show", &f, "1", "--json"],
        vec!["retry", &f, "1"],
        vec!["retry", &f, "--all"],
        vec!["purge", &f, "--state", "dead"],
        vec!["delete", &f, "1"],
        vec!["work", &f, "q", "--poll", "10ms", "--", &probe, &log],
    ];
    commands.into_iter().map(|c| c.into_iter().map(str::to_string).collect()).collect()
}

/// The whole numbers in `text`.
fn numbers(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_ascii_digit()).filter(|n| !n.is_empty()).collect()
}

/// Runs `who args`, which must refuse: exit status 1 (not 0, not 2, which
/// is for usage errors; not a signal), a message on stderr, `file` (when
/// there is one) byte-for-byte as `bytes`, and no file added to or taken
/// from the case's directory. For a file of a newer format version the
/// message must name both versions.
fn expect_refused(
    ctx: &Ctx,
    who: &Subject,
    args: &[String],
    file: &Path,
    bytes: Option<&[u8]>,
    entry: Option<&Entry>,
) -> CaseResult {
    let before = common::listing(&ctx.dir)?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let shown = format!("`{} {}`", who.name, common::show_args(&common::relative(ctx, &args)));
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut expected = format!(
        "{shown} (in the case's directory) to refuse {name}: exit status 1, a message on stderr, {}",
        if bytes.is_some() {
            "the file byte-for-byte unchanged and no new file beside it"
        } else {
            "and no file made"
        }
    );
    let newer = entry.is_some_and(|e| e.error == "newer_version");
    if let Some(entry) = entry {
        expected.push_str(&format!(
            "\n(the file: {}; a good message says {:?})",
            entry.why, entry.message_contains
        ));
    }
    let out = match ctx.run(who, &args) {
        Ok(out) => out,
        Err(f) if f.kind == FailureKind::Timeout => {
            return Err(Failure::fail(
                expected,
                format!(
                    "it was still running after {} s (killed): it did not refuse the file",
                    COMMAND_TIMEOUT.as_secs()
                ),
            ));
        }
        Err(f) => return Err(f),
    };
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut problems = Vec::new();
    match out.status.code() {
        Some(1) => {}
        Some(0) => problems.push(format!(
            "it succeeded (exit status 0; stdout: {:?})",
            crate::ctx::clip(String::from_utf8_lossy(&out.stdout).trim())
        )),
        Some(2) => {
            problems.push("exit status 2, which is for usage errors; a refused file is an error (1)".into())
        }
        Some(code) => problems.push(format!("exit status {code} (the contract says 1 for an error)")),
        None => {
            return Err(Failure::error(expected, format!("it crashed: {}", common::outcome(&out))));
        }
    }
    if stderr.trim().is_empty() {
        problems.push("nothing on stderr".into());
    }
    if newer && out.status.code() != Some(0) {
        // Leave the path out: its name holds a 2 of its own.
        let message = stderr.replace(path_str(file), "FILE").replace(path_str(&ctx.dir), "DIR");
        let found = numbers(&message);
        if !(found.contains(&"2") && found.contains(&"1")) {
            problems
                .push("the message does not name both versions, the file's (2) and the program's (1)".into());
        }
    }
    if let Some(bytes) = bytes {
        match std::fs::read(file) {
            Ok(now) if now == bytes => {}
            Ok(now) => problems.push(format!("the file changed ({})", common::bytes_diff(bytes, &now))),
            Err(e) => problems.push(format!("the file is gone ({e})")),
        }
    }
    let after = common::listing(&ctx.dir)?;
    let new: Vec<&String> = after.difference(&before).collect();
    let gone: Vec<&String> = before.difference(&after).collect();
    if !new.is_empty() {
        problems.push(format!("new files in the directory: {new:?}"));
    }
    if !gone.is_empty() {
        problems.push(format!("files gone from the directory: {gone:?}"));
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Failure::fail(expected, format!("{}\n({})", problems.join("; "), common::outcome(&out))))
}

fn refuse_fixture(ctx: &mut Ctx, name: &str) -> CaseResult {
    let entry = entry(name)?;
    let subject = ctx.subject().clone();
    let fixture = format!("refusal/{name}");
    let bytes = embedded::fixture(&fixture)
        .ok_or_else(|| Failure::error(format!("fixture {fixture}"), "no such fixture in the harness"))?;
    // A fresh copy for each command: a command that changed the file has
    // failed already, and the next one must see the fixture itself.
    for args in non_creating(ctx, &ctx.path(name)) {
        let file = ctx.fixture(&fixture)?;
        expect_refused(ctx, &subject, &args, &file, Some(bytes), Some(&entry))?;
    }
    let init_args = |file: &Path| vec!["init".to_string(), path_str(file).to_string()];
    let add_args = |file: &Path| ["add", path_str(file), "q", "x"].map(str::to_string).to_vec();
    match entry.init_add.as_str() {
        "refuse" => {
            for args in [init_args(&ctx.path(name)), add_args(&ctx.path(name))] {
                let file = ctx.fixture(&fixture)?;
                expect_refused(ctx, &subject, &args, &file, Some(bytes), Some(&entry))?;
            }
        }
        "create" => {
            // SQLite reads the file as an empty database: both may make it a
            // version 1 file.
            let file = copy_tracked(ctx, &format!("init-{name}"), bytes)?;
            ctx.ok(&subject, &["init", path_str(&file)])?;
            ensure_eq!(
                format_version(&file)?,
                Some("1".to_string()),
                format!("format_version after `init` on {name}")
            );
            let file = copy_tracked(ctx, &format!("add-{name}"), bytes)?;
            ctx.add(&subject, &file, "q", "x", &[])?;
            ensure_eq!(
                format_version(&file)?,
                Some("1".to_string()),
                format!("format_version after `add` on {name}")
            );
            ensure_eq!(common::job_count(&file)?, 1, format!("jobs after `add` on {name}"));
        }
        "init-only" => {
            // `add` adds no tables to an application's database...
            let file = ctx.fixture(&fixture)?;
            expect_refused(ctx, &subject, &add_args(&file), &file, Some(bytes), Some(&entry))?;
            // ...`init` does, and keeps what is there (and its application id, §1.3).
            let file = copy_tracked(ctx, &format!("init-{name}"), bytes)?;
            ctx.ok(&subject, &["init", path_str(&file)])?;
            ensure_eq!(
                format_version(&file)?,
                Some("1".to_string()),
                format!("format_version after `init` on {name}")
            );
            let conn = read(&file)?;
            let notes: i64 = conn.query_row("SELECT count(*) FROM notes", [], |r| r.get(0))?;
            ensure_eq!(notes, 3, "rows of the application's notes table after `init`");
            let app: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
            ensure_eq!(
                app,
                header_application_id(bytes),
                "application_id after `init` (the application's own, §1.3)"
            );
        }
        other => {
            return Err(Failure::error(
                "init_add of refuse, create or init-only",
                format!("{name}: {other:?}"),
            ));
        }
    }
    Ok(())
}

fn missing_path(ctx: &mut Ctx) -> CaseResult {
    let subject = ctx.subject().clone();
    let file = ctx.path("missing.ukue");
    for args in non_creating(ctx, &file) {
        expect_refused(ctx, &subject, &args, &file, None, None)?;
    }
    Ok(())
}

/// Writes `bytes` to `name` in the case's directory, as a file that must
/// end a valid ukue file.
fn copy_tracked(ctx: &mut Ctx, name: &str, bytes: &[u8]) -> Result<std::path::PathBuf, Failure> {
    let file = ctx.tracked_file(name);
    std::fs::write(&file, bytes)?;
    Ok(file)
}

fn format_version(file: &Path) -> Result<Option<String>, Failure> {
    let conn = read(file)?;
    match conn.query_row("SELECT value FROM ukue_meta WHERE key = 'format_version'", [], |r| r.get(0)) {
        Ok(v) => Ok(Some(v)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The application id in a SQLite header (bytes 68..72, big-endian), read
/// without opening the database.
fn header_application_id(bytes: &[u8]) -> i64 {
    bytes.get(68..72).map_or(0, |b| i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_case_per_manifest_entry() {
        let files: Vec<String> = manifest().unwrap().into_iter().map(|e| e.file).collect();
        let cased: Vec<String> = FIXTURE_CASES.iter().map(|c| c.1.to_string()).collect();
        assert_eq!(files, cased);
        for file in &files {
            assert!(embedded::fixture(&format!("refusal/{file}")).is_some(), "{file} is not embedded");
        }
        for case in cases() {
            assert!(crate::rules::title(case.rule).is_some(), "{}: no rule {}", case.id, case.rule);
        }
    }

    #[test]
    fn numbers_in_a_message() {
        assert_eq!(numbers("ukue file format 2 is newer than this program knows (format 1)"), vec!["2", "1"]);
        assert_eq!(numbers("no number"), Vec::<&str>::new());
    }
}
