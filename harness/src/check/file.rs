//! The file checks of FORMAT.md §7: the page's `sql invariant` blocks,
//! run on the file as written there.

use std::path::Path;

use rusqlite::Connection;

use super::{finding, Finding};
use crate::shown::Shown;
use crate::subjects::observe::file::open_read_only;

/// Checks a ukue file on a read-only connection.
pub fn invariants(path: &Path) -> Vec<Finding> {
    let conn = match open_read_only(path) {
        Ok(conn) => conn,
        Err(e) => return vec![finding("integrity", None, format!("{}: cannot open: {e}", path.display()))],
    };
    match check(&conn) {
        Ok(findings) => findings,
        Err(e) => vec![finding("integrity", None, format!("{}: {e}", path.display()))],
    }
}

/// The same checks on a connection the caller holds (the model-based runs
/// check after every step).
pub fn invariants_of(conn: &Connection) -> Vec<Finding> {
    check(conn).unwrap_or_else(|e| vec![finding("integrity", None, e.to_string())])
}

/// Runs every `sql invariant` block of FORMAT.md §7; a finding per row
/// that breaks one, named for the invariant.
fn check(conn: &Connection) -> rusqlite::Result<Vec<Finding>> {
    let mut findings = Vec::new();
    for invariant in ukue::Spec::builtin().invariants() {
        // The integrity check has a name of its own in reports, as before.
        let check = if invariant.name == "integrity" { "integrity" } else { "invariants" };
        for violation in invariant.violations(conn)? {
            findings.push(finding(check, violation.job, format!("{}: {}", invariant.name, violation.row)));
        }
    }
    Ok(findings)
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
}
