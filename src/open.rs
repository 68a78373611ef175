//! Opening a file: the refusal checks of FORMAT.md §2.3, and adding the
//! tables (§3.3). The checks only read, so a refused file is unchanged.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension};

use crate::busy;
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Refusal, Result};
use crate::file::Ukue;
use crate::spec::{Spec, Stmt};

/// What opening may do to a path that holds no ukue file yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Only an existing ukue file (every command but `init` and `add`).
    Existing,
    /// Create the file when the path does not exist or is empty (`add`).
    Create,
    /// Also add the tables to an existing SQLite database (`init`, and an
    /// application's own database).
    AddTables,
}

/// Options for opening; [`Ukue::open`] and friends use the defaults.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// What opening may do to a path without a ukue file.
    pub access: Access,
    /// Where the steps' `now` comes from.
    pub clock: Arc<dyn Clock>,
    /// The statements to run (FORMAT.md as built, unless a test says).
    pub spec: Arc<Spec>,
    /// Written to `ukue_meta.created_by` when the tables are added.
    pub created_by: String,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            access: Access::Existing,
            clock: Arc::new(SystemClock),
            spec: Spec::builtin(),
            created_by: format!("ukue {} (Rust)", env!("CARGO_PKG_VERSION")),
        }
    }
}

impl OpenOptions {
    /// With this access.
    pub fn access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }
    /// On this clock.
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }
    /// Running these statements.
    pub fn spec(mut self, spec: Arc<Spec>) -> Self {
        self.spec = spec;
        self
    }

    /// Opens the file at `path`.
    pub fn open(self, path: impl AsRef<Path>) -> Result<Ukue> {
        let path = path.as_ref();
        let absent = match std::fs::metadata(path) {
            Ok(meta) => meta.len() == 0,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(e.into()),
        };
        if !path.exists() && self.access == Access::Existing {
            return Err(Refusal::NotFound { path: path.to_path_buf() }.into());
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if self.access != Access::Existing {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = Connection::open_with_flags(path, flags)?;
        // `add` adds the tables only to a new file; an empty one counts as
        // new, since there is nothing in it to lose.
        let access = match self.access {
            Access::Create if absent => Access::AddTables,
            Access::Create => Access::Existing,
            other => other,
        };
        self.access(access).attach_at(conn, path.to_path_buf())
    }

    /// Uses the caller's connection, so the tables may sit inside an
    /// application's database. Sets the connection's busy timeout and
    /// synchronous mode (FORMAT.md §4.1).
    pub fn attach(self, conn: Connection) -> Result<Ukue> {
        let path = conn.path().map(PathBuf::from).unwrap_or_else(|| PathBuf::from(":memory:"));
        self.attach_at(conn, path)
    }

    fn attach_at(self, conn: Connection, path: PathBuf) -> Result<Ukue> {
        let mut checker = Checker { conn: &conn, spec: &self.spec, path: &path };
        checker.run(Stmt::SetBusyTimeout)?;
        checker.run(Stmt::SetSynchronous)?;
        let busy_ms = checker.busy_timeout()?;
        let waiter = busy::Waiter::install(&conn, busy_ms, &path);
        match self.check(&mut checker) {
            Ok(spec) => Ok(Ukue::new(conn, path, self.clock, spec, busy_ms, waiter)),
            Err(e) => {
                // The waiter goes before the connection does.
                busy::Waiter::remove(&conn);
                Err(e)
            }
        }
    }

    /// The checks of a file that has its busy timeout (FORMAT.md §4.2),
    /// then the tables added where `access` allows; the statements to run
    /// on it.
    fn check(&self, checker: &mut Checker) -> Result<Arc<Spec>> {
        match checker.tables()? {
            Tables::Both => checker.check_version()?,
            Tables::None if self.access == Access::AddTables => {}
            Tables::None => return Err(Refusal::NotUkue { path: checker.path.to_path_buf() }.into()),
            Tables::One { present, missing } => {
                return Err(
                    Refusal::PartialSchema { path: checker.path.to_path_buf(), present, missing }.into()
                )
            }
        }
        // The checks have passed: only now may anything be written.
        checker.add_tables(&self.created_by, self.clock.now_ms())?;
        checker.spec_for_indexes()
    }
}

enum Tables {
    None,
    Both,
    One { present: String, missing: String },
}

struct Checker<'a> {
    conn: &'a Connection,
    spec: &'a Arc<Spec>,
    path: &'a Path,
}

impl Checker<'_> {
    fn refusal(&self, e: rusqlite::Error) -> Error {
        match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => Refusal::NotADatabase { path: self.path.to_path_buf() }.into(),
            _ => e.into(),
        }
    }

    fn run(&mut self, stmt: Stmt) -> Result<()> {
        let mut st = self.conn.prepare_cached(self.spec.sql(stmt)).map_err(|e| self.refusal(e))?;
        let mut rows = st.query([]).map_err(|e| self.refusal(e))?;
        while rows.next().map_err(|e| self.refusal(e))?.is_some() {}
        Ok(())
    }

    /// The busy timeout that `set_busy_timeout` set (FORMAT.md §4.1).
    fn busy_timeout(&mut self) -> Result<i64> {
        let mut st =
            self.conn.prepare_cached(self.spec.sql(Stmt::ReadBusyTimeout)).map_err(|e| self.refusal(e))?;
        st.query_row([], |r| r.get(0)).map_err(|e| self.refusal(e))
    }

    fn tables(&mut self) -> Result<Tables> {
        let mut st =
            self.conn.prepare_cached(self.spec.sql(Stmt::FindTables)).map_err(|e| self.refusal(e))?;
        let names: Vec<String> = st
            .query_map([], |row| row.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.refusal(e))?;
        let has = |name: &str| names.iter().any(|n| n == name);
        Ok(match (has("ukue_meta"), has("ukue_jobs")) {
            (true, true) => Tables::Both,
            (false, false) => Tables::None,
            (true, false) => Tables::One { present: "ukue_meta".into(), missing: "ukue_jobs".into() },
            (false, true) => Tables::One { present: "ukue_jobs".into(), missing: "ukue_meta".into() },
        })
    }

    fn check_version(&mut self) -> Result<()> {
        let path = self.path.to_path_buf();
        let value: Option<String> = self
            .conn
            .prepare_cached(self.spec.sql(Stmt::ReadVersion))?
            // As a ValueRef: TEXT that is not UTF-8 (found by the open_bytes
            // fuzzer) must be refused, not panic in a conversion.
            .query_row([], |row| {
                Ok(match row.get_ref(0)? {
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        String::from_utf8_lossy(t).into_owned()
                    }
                    rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                    rusqlite::types::ValueRef::Real(r) => r.to_string(),
                    rusqlite::types::ValueRef::Null => String::new(),
                })
            })
            .optional()?;
        let value = value.ok_or(Refusal::MissingVersion { path: path.clone() })?;
        let version =
            parse_version(&value).ok_or_else(|| Refusal::BadVersion { path: path.clone(), value })?;
        let known = self.spec.version();
        if version > known {
            return Err(Refusal::NewerVersion { path, found: version, known }.into());
        }
        Ok(())
    }

    fn ensure_wal(&mut self) -> Result<()> {
        let mode: String =
            self.conn.prepare_cached(self.spec.sql(Stmt::ReadJournalMode))?.query_row([], |r| r.get(0))?;
        // In-memory databases cannot use WAL; they report "memory".
        if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
            self.run(Stmt::SetWal)?;
        }
        Ok(())
    }

    /// FORMAT.md §3.3; does nothing when the tables are there, and then
    /// leaves the journal mode as it is (§1.2).
    fn add_tables(&mut self, created_by: &str, now: i64) -> Result<()> {
        if matches!(self.tables()?, Tables::Both) {
            return Ok(());
        }
        self.ensure_wal()?;
        self.run(Stmt::BeginImmediate)?;
        let result = self.add_tables_in_transaction(created_by, now);
        match result {
            Ok(()) => self.run(Stmt::Commit),
            Err(e) => {
                let _ = self.run(Stmt::Rollback);
                Err(e)
            }
        }
    }

    fn add_tables_in_transaction(&mut self, created_by: &str, now: i64) -> Result<()> {
        match self.tables()? {
            // Another program added them since we looked.
            Tables::Both => return self.check_version(),
            Tables::One { present, missing } => {
                return Err(Refusal::PartialSchema { path: self.path.to_path_buf(), present, missing }.into())
            }
            Tables::None => {}
        }
        let objects: i64 =
            self.conn.prepare_cached(self.spec.sql(Stmt::CountSchema))?.query_row([], |r| r.get(0))?;
        let application_id: i64 =
            self.conn.prepare_cached(self.spec.sql(Stmt::ReadApplicationId))?.query_row([], |r| r.get(0))?;
        // An application that stamped its own id keeps it, tables or not.
        if objects == 0 && application_id == 0 {
            self.run(Stmt::SetApplicationId)?;
        }
        for stmt in Stmt::SCHEMA {
            self.run(*stmt)?;
        }
        let mut insert = self.conn.prepare_cached(self.spec.sql(Stmt::InsertMeta))?;
        for (key, value) in [
            ("format_version", self.spec.version().to_string()),
            ("created_at", now.to_string()),
            ("created_by", created_by.to_string()),
        ] {
            insert.execute(rusqlite::named_params! {":key": key, ":value": value})?;
        }
        Ok(())
    }
}

impl Checker<'_> {
    /// The statements to run on this file: those of the page, without the
    /// `INDEXED BY` of an index the file lacks (FORMAT.md §5.4).
    fn spec_for_indexes(&mut self) -> Result<Arc<Spec>> {
        let mut spec: Option<Spec> = None;
        for index in self.spec.named_indexes() {
            let present: bool = self
                .conn
                .prepare_cached(self.spec.sql(Stmt::FindIndex))?
                .query_row(rusqlite::named_params! {":name": index}, |r| r.get(0))?;
            if !present {
                spec = Some(spec.as_ref().unwrap_or(self.spec).without_index(&index));
            }
        }
        Ok(spec.map(Arc::new).unwrap_or_else(|| self.spec.clone()))
    }
}

/// A format version is the decimal text of a whole number from 1.
fn parse_version(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<i64>().ok().filter(|v| *v >= 1)
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn versions() {
        assert_eq!(parse_version("1"), Some(1));
        assert_eq!(parse_version("2"), Some(2));
        for bad in ["", "0", "abc", "-1", "1.0", " 1", "99999999999999999999"] {
            assert_eq!(parse_version(bad), None, "{bad:?}");
        }
    }
}
