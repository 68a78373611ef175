//! The file checks of FORMAT.md §7: the page's `sql invariant` blocks,
//! run on the file as written there.

use std::path::Path;

use rusqlite::Connection;

use super::{finding, Finding};
use crate::shown::Shown;
use crate::subjects::observe::file::open_read_only;

/// Checks a ukue file on a read-only connection.
pub fn invariants(path: &Path) -> Vec<Finding> {
    match open_read_only(path) {
        Ok(conn) => invariants_of(&conn),
        Err(e) => vec![finding("integrity", None, format!("{}: cannot open: {e}", path.display()))],
    }
}

/// Runs every `sql invariant` block of FORMAT.md §7 on a connection (the
/// model-based runs hold one, and check after every step): a finding per
/// row that breaks one, named for the invariant, and one for a query that
/// could not run, naming the invariant and what the file lacks.
pub fn invariants_of(conn: &Connection) -> Vec<Finding> {
    let mut findings = Vec::new();
    for invariant in ukue::Spec::builtin().invariants() {
        // The integrity check has a name of its own in reports, as before.
        let check = if invariant.name == "integrity" { "integrity" } else { "invariants" };
        match invariant.violations(conn) {
            Ok(violations) => findings.extend(
                violations
                    .into_iter()
                    .map(|v| finding(check, v.job, format!("{}: {}", invariant.name, v.row))),
            ),
            Err(e) => {
                findings.push(finding(check, None, query_failed(&invariant.name, &e)));
                // A file that cannot be read (not a database, corrupt,
                // locked) fails every query alike: once is enough. A query
                // the schema refuses says something of its own invariant.
                if !refused_by_schema(&e) {
                    break;
                }
            }
        }
    }
    findings
}

/// Whether SQLite refused the query itself (SQLITE_ERROR: a table or a
/// column the file lacks), rather than the file.
fn refused_by_schema(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.extended_code & 0xff == rusqlite::ffi::SQLITE_ERROR)
}

/// An invariant whose query failed, named with its rule, and what the
/// failure says of the file.
fn query_failed(invariant: &str, e: &rusqlite::Error) -> String {
    let text = e.to_string();
    if let Some(table) = text.strip_prefix("no such table: ") {
        return match (invariant, table) {
            ("ids_not_reused", "sqlite_sequence") => format!(
                "invariant {invariant} (FORMAT.md §7; §3.2 ukue_jobs is declared with AUTOINCREMENT): \
                 the file has no sqlite_sequence table, so ukue_jobs was not made with AUTOINCREMENT \
                 and ids may be reused"
            ),
            (_, "ukue_jobs") => format!(
                "invariant {invariant} (FORMAT.md §7; §3.2 declares ukue_jobs): the file has no ukue_jobs table"
            ),
            _ => format!("invariant {invariant} (FORMAT.md §7): the file has no {table} table"),
        };
    }
    if let Some(column) = text.strip_prefix("no such column: ") {
        return format!(
            "invariant {invariant} (FORMAT.md §7; §3.2 declares the columns of ukue_jobs): \
             ukue_jobs has no column {column}"
        );
    }
    format!("invariant {invariant} (FORMAT.md §7): its query failed: {text}")
}

/// Rows whose payload is none of `known` (every payload the case's adds
/// had): a row that became visible before all of it was written.
pub fn partly_written(path: &Path, known: &std::collections::HashSet<String>) -> Vec<Finding> {
    let rows = open_read_only(path).and_then(|conn| {
        let mut st = conn.prepare("SELECT id, CAST(payload AS TEXT) FROM ukue_jobs")?;
        let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?)))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
    });
    match rows {
        Ok(rows) => rows
            .into_iter()
            .filter(|(_, payload)| payload.as_ref().is_none_or(|p| !known.contains(p)))
            .map(|(id, payload)| {
                finding(
                    "partly written",
                    Some(id),
                    format!("holds the payload {}, which no add had", payload.shown()),
                )
            })
            .collect(),
        Err(e) => vec![finding("integrity", None, format!("{}: {e}", path.display()))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(sql: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.ukue");
        let mut file = ukue::Ukue::create(&path).unwrap();
        file.add(&ukue::NewJob::new("q", b"x".to_vec())).unwrap();
        file.connection().execute_batch(sql).unwrap();
        drop(file);
        (dir, path)
    }

    #[test]
    fn a_good_file_passes() {
        let (_dir, path) = file_with("");
        assert_eq!(invariants(&path), vec![]);
    }

    #[test]
    fn a_row_with_a_payload_no_add_had_is_partly_written() {
        let (_d, path) = file_with("");
        assert_eq!(partly_written(&path, &["x".to_string()].into()), vec![]);
        let found = partly_written(&path, &["y".to_string()].into());
        assert_eq!((found.len(), found[0].check), (1, "partly written"));
    }

    #[test]
    fn broken_invariants_are_found() {
        let (_d, path) = file_with("UPDATE ukue_jobs SET state = 'running'");
        let found = invariants(&path);
        assert_eq!((found[0].check, found[0].job), ("invariants", Some(1)));
        assert!(found[0].message.starts_with("running_holds_lease: id=1"), "{}", found[0].message);
        let (_d, path) = file_with("UPDATE ukue_jobs SET token = 'x'");
        let found = invariants(&path);
        assert_eq!(found.len(), 1);
        assert!(found[0].message.starts_with("lease_only_while_running: "), "{}", found[0].message);
        let (_d, path) = file_with("UPDATE ukue_jobs SET attempts = 11");
        assert!(invariants(&path)[0].message.contains("attempts=11"));
        let (_d, path) = file_with("UPDATE sqlite_sequence SET seq = 0");
        assert!(invariants(&path)[0].message.starts_with("ids_not_reused: largest_id=1, sequence=0"));
    }

    /// ukue_jobs as FORMAT.md §3.2 declares it, but for AUTOINCREMENT.
    fn file_without_autoincrement() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.ukue");
        let create = ukue::Spec::builtin().sql(ukue::Stmt::CreateJobs).to_string();
        let without = create.replace(" AUTOINCREMENT", "");
        assert_ne!(create, without, "FORMAT.md's create_jobs no longer says AUTOINCREMENT");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&without).unwrap();
        conn.execute("INSERT INTO ukue_jobs (queue, payload) VALUES ('q', x'78')", []).unwrap();
        (dir, path)
    }

    #[test]
    fn a_file_without_autoincrement_names_the_rule_it_breaks() {
        let (_d, path) = file_without_autoincrement();
        let found = invariants(&path);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].check, found[0].job), ("invariants", None));
        assert_eq!(
            found[0].message,
            "invariant ids_not_reused (FORMAT.md §7; §3.2 ukue_jobs is declared with AUTOINCREMENT): \
             the file has no sqlite_sequence table, so ukue_jobs was not made with AUTOINCREMENT \
             and ids may be reused"
        );
        assert!(!found[0].message.contains("no such table"), "{}", found[0].message);
    }

    #[test]
    fn the_other_invariants_still_run_after_one_query_fails() {
        let (_d, path) = file_without_autoincrement();
        Connection::open(&path).unwrap().execute_batch("UPDATE ukue_jobs SET token = 't'").unwrap();
        let found = invariants(&path);
        let names: Vec<&str> = found.iter().map(|f| f.message.split([':', ' ']).next().unwrap()).collect();
        assert_eq!(names, ["lease_only_while_running", "invariant"], "{found:?}");
    }

    #[test]
    fn a_file_without_ukue_jobs_names_each_invariant_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.db");
        Connection::open(&path).unwrap().execute_batch("CREATE TABLE notes (n TEXT)").unwrap();
        let found = invariants(&path);
        let rules = ukue::Spec::builtin().invariants().len();
        assert_eq!(found.len(), rules - 1, "every invariant but integrity: {found:?}");
        for f in &found {
            assert!(f.message.starts_with("invariant "), "{}", f.message);
            assert!(f.message.contains("(FORMAT.md §7"), "{}", f.message);
            assert!(!f.message.contains("no such table"), "{}", f.message);
        }
    }

    #[test]
    fn a_file_that_is_no_database_is_one_finding() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.ukue");
        std::fs::write(&path, vec![b'x'; 4096]).unwrap();
        let found = invariants(&path);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].check, "integrity");
        assert!(
            found[0].message.starts_with("invariant integrity (FORMAT.md §7): its query failed: "),
            "{found:?}"
        );
    }
}
