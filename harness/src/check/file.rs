//! The file checks of FORMAT.md §7: integrity and the state invariants.

use std::path::Path;

use rusqlite::Connection;

use super::{finding, Finding};
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

fn check(conn: &Connection) -> rusqlite::Result<Vec<Finding>> {
    let mut findings = Vec::new();
    let integrity: Vec<String> =
        conn.prepare("PRAGMA integrity_check")?.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    if integrity != ["ok"] {
        findings.push(finding("integrity", None, format!("integrity_check: {}", integrity.join("; "))));
    }
    let mut st = conn.prepare(
        "SELECT id, state, token IS NOT NULL, lease_until IS NOT NULL FROM ukue_jobs
         WHERE (state = 'running') != (token IS NOT NULL AND lease_until IS NOT NULL)
            OR (state != 'running' AND (token IS NOT NULL OR lease_until IS NOT NULL))",
    )?;
    for row in st.query_map([], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, bool>(2)?, r.get::<_, bool>(3)?))
    })? {
        let (id, state, token, lease) = row?;
        findings.push(finding(
            "invariants",
            Some(id),
            format!("state {state} with token {} and lease_until {}", set(token), set(lease)),
        ));
    }
    let mut st = conn.prepare(
        "SELECT id, attempts, max_attempts FROM ukue_jobs WHERE attempts < 0 OR attempts > max_attempts",
    )?;
    for row in st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)))? {
        let (id, attempts, max) = row?;
        findings.push(finding("invariants", Some(id), format!("attempts {attempts} outside 0..={max}")));
    }
    let (max_id, seq): (Option<i64>, Option<i64>) = conn.query_row(
        "SELECT (SELECT max(id) FROM ukue_jobs), (SELECT seq FROM sqlite_sequence WHERE name = 'ukue_jobs')",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if let Some(max_id) = max_id {
        if seq.unwrap_or(0) < max_id {
            findings.push(finding(
                "invariants",
                None,
                format!("sqlite_sequence says {seq:?} but job {max_id} exists: ids may be reused"),
            ));
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
                    format!("holds the payload {payload:?}, which no add had"),
                )
            })
            .collect(),
        Err(e) => vec![finding("integrity", None, format!("{}: {e}", path.display()))],
    }
}

fn set(yes: bool) -> &'static str {
    if yes {
        "set"
    } else {
        "NULL"
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
        assert_eq!(invariants(&path)[0].check, "invariants");
        let (_d, path) = file_with("UPDATE ukue_jobs SET token = 'x'");
        assert_eq!(invariants(&path).len(), 1);
        let (_d, path) = file_with("UPDATE ukue_jobs SET attempts = 11");
        assert!(invariants(&path)[0].message.contains("attempts 11"));
        let (_d, path) = file_with("UPDATE sqlite_sequence SET seq = 0");
        assert!(invariants(&path)[0].message.contains("reused"));
    }
}
