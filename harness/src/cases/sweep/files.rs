//! Files of every kind an input can be: a ukue file of each format_version
//! a program must refuse ([`values::VERSIONS`]), and an application's
//! database in each journal mode, page size and text encoding
//! ([`values::APP_DATABASES`]) for `init` and `add` to add the tables to.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::cases::refusal::{expect_refused, init_add, non_creating};
use crate::cases::CaseResult;
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::file::{job_count, read};
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::values::{AppDatabase, Stored, APP_DATABASES, VERSIONS};

/// A file with two jobs, as the reference makes it: its bytes (WAL mode,
/// the log checkpointed into the file and gone).
fn template(ctx: &Ctx) -> Result<Vec<u8>, Failure> {
    let path = ctx.path("template.ukue");
    let reference = ctx.reference().clone();
    ctx.ok(&reference, &["init", path_str(&path)])?;
    for payload in ["one", "two"] {
        ctx.add(&reference, &path, "q", payload, &[])?;
    }
    // Opened and closed once more: the last connection's close checkpoints.
    drop(Connection::open(&path)?);
    let bytes = std::fs::read(&path)?;
    std::fs::remove_file(&path)?;
    Ok(bytes)
}

/// `template` with its format_version set to `version` behind its back.
fn versioned(ctx: &Ctx, template: &[u8], version: Stored) -> Result<Vec<u8>, Failure> {
    let path = ctx.path("versioned.ukue");
    std::fs::write(&path, template)?;
    let conn = Connection::open(&path)?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    match version {
        Stored::Text(text) => {
            conn.execute("UPDATE ukue_meta SET value = ?1 WHERE key = 'format_version'", [text])?;
        }
        Stored::Blob(bytes) => {
            conn.execute("UPDATE ukue_meta SET value = ?1 WHERE key = 'format_version'", [bytes])?;
        }
        Stored::Missing => conn.execute_batch(
            "DELETE FROM ukue_meta WHERE key = 'format_version';
             INSERT INTO ukue_meta (key, value) VALUES ('version', '1');",
        )?,
        // The table's NOT NULL forbids it: a table made without it holds one.
        Stored::Null => conn.execute_batch(
            "CREATE TABLE meta_copy AS SELECT key, value FROM ukue_meta;
             DROP TABLE ukue_meta;
             CREATE TABLE ukue_meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
             INSERT INTO ukue_meta SELECT key, CASE key WHEN 'format_version' THEN NULL ELSE value END FROM meta_copy;
             DROP TABLE meta_copy;",
        )?,
    }
    drop(conn);
    let bytes = std::fs::read(&path)?;
    std::fs::remove_file(&path)?;
    Ok(bytes)
}

/// The commands version `i` of the table meets: `init` or `add` (which
/// create, and open by a path of their own) in turn, and one of the others
/// in turn, so that every command meets several versions and each version
/// both kinds of opening.
fn commands_for(ctx: &Ctx, i: usize, file: &Path) -> Vec<Vec<String>> {
    let others = non_creating(ctx, file);
    let creating = init_add(file)[i % 2].clone();
    vec![creating, others[i % others.len()].clone()]
}

/// `file.newer-version`: a file of each version of the table is refused
/// by the commands it meets (exit status 1, a message), and keeps every
/// byte, with no file made beside it.
pub fn format_versions(ctx: &mut Ctx) -> CaseResult {
    let subject = ctx.subject().clone();
    let template = template(ctx)?;
    for (i, (name, stored)) in VERSIONS.iter().enumerate() {
        let bytes = versioned(ctx, &template, *stored)?;
        let file = ctx.path(&format!("format-version-{name}.ukue"));
        for args in commands_for(ctx, i, &file) {
            std::fs::write(&file, &bytes)?;
            let placed: [(PathBuf, &[u8]); 1] = [(file.clone(), &bytes)];
            expect_refused(ctx, &subject, &args, &file, Some(&placed), None).map_err(|mut f| {
                f.expected
                    .push_str(&format!("\n(the file's format_version: {name}, stored as {})", stored.sql()));
                f
            })?;
        }
        std::fs::remove_file(&file)?;
    }
    Ok(())
}

/// The application's own table and its rows.
const APP_ROWS: i64 = 3;
const APP_ID: i64 = 0x1234_5678;

/// Makes an application's database as `app` says, with a table of its
/// own, and its application_id when `stamp`.
fn app_database(path: &Path, app: &AppDatabase, stamp: bool) -> Result<(), Failure> {
    let conn = Connection::open(path)?;
    // Set up, not tested: no need to wait for the disk.
    conn.execute_batch(&format!(
        "PRAGMA synchronous = OFF; PRAGMA page_size = {}; PRAGMA encoding = '{}';",
        app.page_size, app.encoding
    ))?;
    let mode: String = conn.query_row(&format!("PRAGMA journal_mode = {}", app.journal), [], |r| r.get(0))?;
    if mode != app.journal {
        return Err(Failure::error(
            format!("a database in journal mode {}", app.journal),
            format!("SQLite gave {mode}"),
        ));
    }
    conn.execute_batch(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL);
         INSERT INTO orders (item) VALUES ('tea'), ('caf\u{e9}'), ('\u{1f600}');",
    )?;
    if stamp {
        conn.execute_batch(&format!("PRAGMA application_id = {APP_ID};"))?;
    }
    Ok(())
}

/// What the file is, as SQLite reports it without writing.
fn layout(path: &Path) -> Result<(u32, String, i64, i64, String), Failure> {
    let conn = read(path)?;
    let page: u32 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    let encoding: String = conn.query_row("PRAGMA encoding", [], |r| r.get(0))?;
    let application_id: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let orders: i64 = conn.query_row("SELECT count(*) FROM orders", [], |r| r.get(0)).unwrap_or(-1);
    let items: String = conn
        .query_row("SELECT group_concat(item, ',') FROM (SELECT item FROM orders ORDER BY id)", [], |r| {
            r.get(0)
        })
        .unwrap_or_default();
    Ok((page, encoding, application_id, orders, items))
}

/// `file.add-tables`: `init` and `add` on each application's database of
/// the table add the ukue tables (format_version 1; add's job), switch it
/// to WAL as the published command does (FORMAT.md §1.2), and keep its
/// table, rows, application_id, page size and text encoding.
pub fn app_databases(ctx: &mut Ctx) -> CaseResult {
    let subject = ctx.subject().clone();
    for (i, app) in APP_DATABASES.iter().enumerate() {
        for command in ["init", "add"] {
            let name = format!("app-{i}-{}-{}-{}-{command}.db", app.journal, app.page_size, app.encoding);
            let file = ctx.tracked_file(&name);
            let stamp = i % 2 == 0;
            app_database(&file, app, stamp)?;
            let before = layout(&file)?;
            let about = format!(
                "`{command}` on an application's database ({} mode, {}-byte pages, {})",
                app.journal, app.page_size, app.encoding
            );
            match command {
                "init" => {
                    ctx.ok(&subject, &["init", path_str(&file)])?;
                }
                _ => {
                    ctx.add(&subject, &file, "q", "x", &[])?;
                }
            }
            let after = layout(&file)?;
            ensure_eq!(after.0, before.0, format!("the page size after {about}"));
            ensure_eq!(&after.1, &before.1, format!("the text encoding after {about}"));
            ensure_eq!(
                after.2,
                if stamp { APP_ID } else { 0 },
                format!("the application_id after {about} (FORMAT.md §1.3)")
            );
            ensure_eq!(
                (after.3, &after.4),
                (APP_ROWS, &before.4),
                format!("the application's rows after {about}")
            );
            let conn = read(&file)?;
            let version: Option<String> = conn
                .query_row("SELECT value FROM ukue_meta WHERE key = 'format_version'", [], |r| r.get(0))
                .ok();
            ensure_eq!(version.as_deref(), Some("1"), format!("format_version after {about}"));
            drop(conn);
            ensure_eq!(job_count(&file)?, i64::from(command == "add"), format!("jobs after {about}"));
            let header = std::fs::read(&file)?;
            ensure!(
                header.get(18..20) == Some(&[2, 2][..]),
                format!(
                    "{about} to leave it in WAL mode (header bytes 18/19 2/2), as the published command does"
                ),
                match header.get(18..20) {
                    Some(b) => format!("header bytes 18/19 are {}/{} (1/1: a rollback journal)", b[0], b[1]),
                    None => format!("{} bytes: no SQLite header", header.len()),
                }
            );
        }
    }
    Ok(())
}
