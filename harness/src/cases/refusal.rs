//! refusal: the files of fixtures/refusal (and a path that does not exist)
//! are refused by the commands that open them, as FORMAT.md §2.3 says:
//! exit status 1, a message on stderr, the file and its sidecars (the cold
//! `-journal` a rollback mode leaves) byte-for-byte unchanged, and no file
//! (`-wal`, `-shm`, `-journal`) added beside them or taken away.
//!
//! The cases are the manifest's (fixtures/refusal/manifest.json): each
//! names its level and what every command but init and add (`others`)
//! and init and add (`init_add`) must do with its file; one function
//! runs them all.

use std::path::{Path, PathBuf};

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::ensure_eq;
use crate::shown::{text, Shown};
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::observe::file::{job_count, read};
use crate::subjects::worker::probe_log;
use crate::subjects::Failure;
use crate::subjects::Subject;

use super::common;
use super::fixture;
use super::manifest::{RefusalCase, RefusalEntry, RefusalOutcome};

/// One function per case of the manifest (see [`fixture::Run`]).
const RUNS: &[fixture::Run] = include!(concat!(env!("OUT_DIR"), "/refusal_runs.rs"));

fn run<const I: usize>(ctx: &mut Ctx) -> CaseResult {
    fixture::run_defined(ctx, &fixture::refusal()[I], manifest_case)
}

pub fn cases() -> Vec<Case> {
    let mut cases = fixture::cases(fixture::refusal(), RUNS);
    cases.push(Case {
        id: "refusal/missing-path",
        rule: "2.3",
        summary: "every command but init and add refuses a path that does not exist, and creates no file",
        needs: Needs::default(),
        level: Level::Must,
        run: missing_path,
    });
    cases
}

/// The commands that never create a file, each on `file`; `work` runs the
/// probe, which must never start.
pub(super) fn non_creating(ctx: &Ctx, file: &Path) -> Vec<Vec<String>> {
    let f = path_str(file).to_string();
    let probe = path_str(&ctx.subjects.probe).to_string();
    let log = path_str(&probe_log(ctx)).to_string();
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

pub(super) fn init_add(file: &Path) -> [Vec<String>; 2] {
    [
        vec!["init".to_string(), path_str(file).to_string()],
        ["add", path_str(file), "q", "x"].map(str::to_string).to_vec(),
    ]
}

/// What a changed header says, when bytes 18 and 19 (the journal mode:
/// 1 a rollback journal, 2 WAL) are among the changes.
fn journal_mode_change(before: &[u8], after: &[u8]) -> Option<String> {
    let (was, now) = ((before.get(18)?, before.get(19)?), (after.get(18)?, after.get(19)?));
    (was != now).then(|| {
        let to_wal = if *now.0 == 2 { ": switched to WAL" } else { "" };
        format!(
            "; header bytes 18/19, the journal mode, went from {}/{} to {}/{}{to_wal}",
            was.0, was.1, now.0, now.1
        )
    })
}

/// Runs `who args`, which must refuse: exit status 1 (not 0, not 2, which
/// is for usage errors; not a signal), a message on stderr, each file of
/// `placed` (the file and its sidecars as written, when there is a file)
/// byte-for-byte as it was, and no file added to or taken from the case's
/// directory. What the message says is the program's: that it names both
/// versions of a newer file is the `should` item
/// `file.newer-version-message` (`cli/newer-version-message`).
pub(super) fn expect_refused(
    ctx: &Ctx,
    who: &Subject,
    args: &[String],
    file: &Path,
    placed: Option<&[(PathBuf, &[u8])]>,
    entry: Option<&RefusalEntry>,
) -> CaseResult {
    let before = common::listing(&ctx.dir)?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let shown = format!("`{} {}`", who.name, common::show_args(&common::relative(ctx, &args)));
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let sidecars = placed.map_or(0, |p| p.len().saturating_sub(1));
    let mut expected = format!(
        "{shown} (in the case's directory) to refuse {name}: exit status 1, a message on stderr, {}",
        match (placed.is_some(), sidecars) {
            (false, _) => "and no file made",
            (true, 0) => "the file byte-for-byte unchanged and no new file beside it",
            (true, _) => "the file and its journal byte-for-byte unchanged and no file added or taken away",
        }
    );
    if let Some(entry) = entry {
        expected.push_str(&format!(
            "\n(the file: {}; a good message says {})",
            entry.why,
            text(&entry.message_contains)
        ));
    }
    let out = common::run_to_refusal(ctx, who, &args, &expected, "refuse the file")?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut problems = Vec::new();
    match out.status.code() {
        Some(1) => {}
        Some(0) => problems.push(format!(
            "it succeeded (exit status 0; stdout: {})",
            text(&clip(String::from_utf8_lossy(&out.stdout).trim()))
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
    for (path, bytes) in placed.unwrap_or_default() {
        let shown = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match std::fs::read(path) {
            Ok(now) if now == *bytes => {}
            Ok(now) => problems.push(format!(
                "{shown} changed ({}{})",
                common::bytes_diff(bytes, &now),
                journal_mode_change(bytes, &now).unwrap_or_default()
            )),
            Err(e) => problems.push(format!("{shown} is gone ({e})")),
        }
    }
    let after = common::listing(&ctx.dir)?;
    let new: Vec<&String> = after.difference(&before).collect();
    let gone: Vec<&String> = before.difference(&after).collect();
    if !new.is_empty() {
        problems.push(format!("new files in the directory: {}", new.shown()));
    }
    if !gone.is_empty() {
        problems.push(format!("files gone from the directory: {}", gone.shown()));
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Failure::fail(expected, format!("{}\n({})", problems.join("; "), common::outcome(&out))))
}

fn manifest_case(ctx: &mut Ctx, entry: &RefusalEntry, case: &RefusalCase) -> CaseResult {
    let subject = ctx.subject().clone();
    // A fresh copy for each command: a command that changed the file has
    // failed already, and the next one must see the fixture itself.
    let refuse = |ctx: &Ctx, commands: Vec<Vec<String>>| -> CaseResult {
        for args in commands {
            let placed = fixture::place(ctx, "refusal", entry, &entry.file)?;
            expect_refused(ctx, &subject, &args, &placed.file, Some(&placed.originals), Some(entry))?;
        }
        Ok(())
    };
    let here = ctx.path(&entry.file);
    match case.expect.others {
        Some(RefusalOutcome::Refuse) => refuse(ctx, non_creating(ctx, &here))?,
        Some(RefusalOutcome::AddTables) => return Err(bad_manifest(case, "`others` that add the tables")),
        None => {}
    }
    match case.expect.init_add {
        Some(RefusalOutcome::Refuse) => refuse(ctx, init_add(&here).to_vec())?,
        Some(RefusalOutcome::AddTables) => {
            for command in ["init", "add"] {
                expect_tables_added(ctx, &subject, command, entry)?;
            }
        }
        None => {}
    }
    Ok(())
}

/// The manifest was checked when the harness was built; this is for a
/// harness whose checks and cases disagree.
fn bad_manifest(case: &RefusalCase, what: &str) -> Failure {
    Failure::error("a refusal case the harness can run", format!("{}: {what}", case.id))
}

/// `init` or `add` on the fixture must succeed and leave a version 1 file
/// that keeps the application's tables, their rows and its application id
/// (FORMAT.md §1.3, §3.3): the published command adds the tables to any
/// SQLite database without `ukue_meta`.
fn expect_tables_added(ctx: &mut Ctx, subject: &Subject, command: &str, entry: &RefusalEntry) -> CaseResult {
    let name = format!("{command}-{}", entry.file);
    fixture::place(ctx, "refusal", entry, &name)?;
    let file = ctx.tracked_file(&name);
    let about = format!("`{command}` on {} ({})", entry.file, entry.why);
    match command {
        "init" => {
            ctx.ok(subject, &["init", path_str(&file)])?;
        }
        _ => {
            ctx.add(subject, &file, "q", "x", &[])?;
        }
    }
    ensure_eq!(format_version(&file)?, Some("1".to_string()), format!("format_version after {about}"));
    let conn = read(&file)?;
    for (table, rows) in &entry.app_rows {
        let sql = format!("SELECT count(*) FROM \"{}\"", table.replace('"', "\"\""));
        let now: i64 = conn.query_row(&sql, [], |r| r.get(0)).map_err(|e| {
            Failure::fail(format!("the application's table {table} kept by {about}"), e.to_string())
        })?;
        ensure_eq!(now, *rows, format!("rows of the application's table {table} after {about}"));
    }
    if let Some(id) = entry.application_id {
        let app: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        ensure_eq!(app, id, format!("application_id after {about} (FORMAT.md §1.3)"));
    }
    if command == "add" {
        ensure_eq!(job_count(&file)?, 1, format!("jobs after {about}"));
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

fn format_version(file: &Path) -> Result<Option<String>, Failure> {
    let conn = read(file)?;
    match conn.query_row("SELECT value FROM ukue_meta WHERE key = 'format_version'", [], |r| r.get(0)) {
        Ok(v) => Ok(Some(v)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::manifest::JournalMode;

    /// The rollback journal modes are there for every refusal that is a
    /// SQLite file, so that a program that sets the journal mode before its
    /// checks is caught whatever the reason.
    #[test]
    fn every_sqlite_refusal_comes_in_every_journal_mode() {
        let manifest = fixture::refusal();
        let errors: std::collections::BTreeSet<&str> = manifest
            .iter()
            .filter(|d| d.entry.journal_mode.is_some())
            .map(|d| d.entry.error.as_str())
            .collect();
        for error in errors {
            for mode in [JournalMode::Wal, JournalMode::Delete, JournalMode::Truncate, JournalMode::Persist] {
                assert!(
                    manifest.iter().any(|d| d.entry.error == error && d.entry.journal_mode == Some(mode)),
                    "no {error} file in {mode:?} mode"
                );
            }
        }
    }

    #[test]
    fn a_switch_to_wal_is_named() {
        let mut before = vec![0u8; 100];
        before[18] = 1;
        before[19] = 1;
        let mut after = before.clone();
        after[18] = 2;
        after[19] = 2;
        assert!(journal_mode_change(&before, &after).unwrap().contains("1/1 to 2/2: switched to WAL"));
        assert_eq!(journal_mode_change(&before, &before), None);
    }
}
