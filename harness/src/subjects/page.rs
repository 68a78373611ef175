//! The reference command line running another FORMAT.md, whole: the page
//! at `UKUE_BROKEN_PAGE` (its statements and its version), as a release
//! built from that page would. `ukue-conformance evolve` runs such a
//! program as the new one beside the reference as the old one, so that the
//! catalogue's edits (harness/tests/fixtures/evolve/) run without building
//! a reference for each.
//!
//! With `UKUE_BROKEN_UPGRADE=1` the program also does what a release that
//! adds columns must do with an older file (FORMAT.md §2.4): on opening it,
//! it adds each column of the page's `ukue_jobs` that the file lacks and
//! that has a default. Without it, the program forgets that older files
//! lack them.

use std::path::Path;
use std::sync::Arc;

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use ukue::cli::args::Cmd;
use ukue::Spec;

use crate::spec::evolve::snapshot::Snapshot;

/// The environment variable naming the page to run.
pub const PAGE: &str = "UKUE_BROKEN_PAGE";
/// The environment variable that makes it add the page's columns to older files.
pub const UPGRADE: &str = "UKUE_BROKEN_UPGRADE";

/// A column's name and its definition, as `ALTER TABLE … ADD COLUMN` takes it.
pub type Column = (String, String);

/// The page at `path`, parsed as the reference parses its own, with the
/// definitions of its `ukue_jobs` columns that have a default, as `ALTER
/// TABLE … ADD COLUMN` takes them (read by evolve's snapshot of the page).
pub fn spec(path: &Path) -> Result<(Arc<Spec>, Vec<Column>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{PAGE}={}: {e}", path.display()))?;
    let spec = Spec::from_markdown(&text).map_err(|e| format!("{PAGE}={}: {e}", path.display()))?;
    let snapshot = Snapshot::read(&text).map_err(|e| format!("{PAGE}={}: {e}", path.display()))?;
    let columns = snapshot
        .tables
        .get("ukue_jobs")
        .map(|t| {
            t.columns.iter().filter(|c| c.default.is_some()).map(|c| (c.name.clone(), c.definition.clone()))
        })
        .into_iter()
        .flatten()
        .collect();
    Ok((Arc::new(spec), columns))
}

/// Whether `UKUE_BROKEN_UPGRADE` asks for older files to get the page's columns.
pub fn upgrading() -> bool {
    std::env::var_os(UPGRADE).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The ukue file a command opens, if it opens one.
pub fn file_of(command: &Cmd) -> Option<&Path> {
    match command {
        Cmd::Init { file }
        | Cmd::Stats { file, .. }
        | Cmd::Show { file, .. }
        | Cmd::Retry { file, .. }
        | Cmd::Purge { file, .. }
        | Cmd::Delete { file, .. } => Some(file),
        Cmd::Add(args) => Some(&args.file),
        Cmd::Work(args) => Some(&args.file),
        Cmd::Serve(args) => Some(&args.file),
        Cmd::List(args) => Some(&args.file),
        Cmd::Version => None,
    }
}

/// Adds to the file at `path` each of `wanted` (the page's columns with a
/// default, [`spec`]) that it lacks, in one transaction. A path that holds
/// no ukue file yet, or one the page's program refuses (a newer version),
/// is left alone: opening it afterwards says what is wrong with it.
pub fn add_missing_columns(path: &Path, version: i64, wanted: &[Column]) -> Result<(), String> {
    let fail = |e: rusqlite::Error| format!("adding the page's columns to {}: {e}", path.display());
    if std::fs::metadata(path).map_or(true, |m| m.len() == 0) {
        return Ok(());
    }
    // Whatever keeps this from reading the file as a ukue file of the
    // page's version or older is left for the command to report.
    let Ok(conn) = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE) else {
        return Ok(());
    };
    conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(fail)?;
    if conn.execute_batch("BEGIN IMMEDIATE").is_err() {
        return Ok(());
    }
    let added = (|| {
        let found: Option<String> = conn
            .query_row("SELECT value FROM ukue_meta WHERE key = 'format_version'", [], |r| r.get(0))
            .optional()
            .unwrap_or(None);
        if found.and_then(|v| v.parse::<i64>().ok()).is_none_or(|v| v > version) {
            return Ok(());
        }
        let present = columns(&conn)?;
        for (name, definition) in wanted {
            if !present.contains(name) {
                conn.execute_batch(&format!("ALTER TABLE ukue_jobs ADD COLUMN {definition}"))?;
            }
        }
        Ok(())
    })();
    match added {
        Ok(()) => conn.execute_batch("COMMIT").map_err(fail),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(fail(e))
        }
    }
}

/// The names of the file's `ukue_jobs` columns.
fn columns(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut query = conn.prepare("SELECT name FROM pragma_table_info('ukue_jobs')")?;
    let names = query.query_map([], |r| r.get(0))?.collect();
    names
}
