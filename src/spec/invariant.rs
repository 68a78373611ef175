//! The invariants of FORMAT.md §7: each a query for the rows that break it.

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::job::JobId;

/// One ```` ```sql invariant NAME ```` block of FORMAT.md: a SELECT that
/// returns the rows of a file that break the invariant, none when it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invariant {
    /// The block's name, such as `lease_only_while_running`.
    pub name: String,
    /// The query.
    pub sql: String,
}

/// One row that breaks an invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The job the row is about, when the query returns an `id` column.
    pub job: Option<JobId>,
    /// The row as `column=value` pairs (`id=3, state="ready"`).
    pub row: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.row)
    }
}

impl Invariant {
    /// Runs the query on `conn`: the rows that break the invariant.
    pub fn violations(&self, conn: &Connection) -> rusqlite::Result<Vec<Violation>> {
        let mut st = conn.prepare_cached(&self.sql)?;
        let columns: Vec<String> = st.column_names().into_iter().map(str::to_string).collect();
        let id = columns.iter().position(|c| c == "id");
        let rows = st.query_map([], |row| {
            let cells = (0..columns.len())
                .map(|i| Ok(format!("{}={}", columns[i], show(row.get_ref(i)?))))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let job = match id {
                Some(i) => row.get::<_, Option<JobId>>(i).ok().flatten(),
                None => None,
            };
            Ok(Violation { job, row: cells.join(", ") })
        })?;
        rows.collect()
    }
}

fn show(value: ValueRef) -> String {
    match value {
        ValueRef::Null => "NULL".to_string(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(r) => r.to_string(),
        ValueRef::Text(t) => format!("{:?}", String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => format!("<{} bytes>", b.len()),
    }
}
