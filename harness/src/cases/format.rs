//! format: a file made by the subject's `init` and `add` is a version 1
//! file as FORMAT.md §1 and §3 describe it, to the column.

use rusqlite::Connection;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::shown::Shown;
use crate::spec::FORMAT_MD;
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::file::read;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

pub fn cases() -> Vec<Case> {
    let case =
        |id, rule, summary, run| Case { id, rule, summary, needs: Needs::default(), level: Level::Must, run };
    vec![
        case("format/application-id", "1.3", "init stamps application_id 0x756B7565", application_id),
        case("format/journal-mode-wal", "1.2", "init leaves the file in WAL mode", journal_mode),
        case(
            "format/meta-keys",
            "3.1",
            "ukue_meta holds format_version 1, created_at, created_by",
            meta_keys,
        ),
        case("format/schema", "3.2", "tables, columns, types, defaults and CHECKs are FORMAT.md's", schema),
        Case {
            level: Level::Should,
            ..case(
                "format/indexes",
                "3.2",
                "init creates the four indexes of FORMAT.md (other programs need not)",
                indexes,
            )
        },
        case("format/add-creates-file", "3.3", "add on a missing path creates a version 1 file", add_creates),
    ]
}

/// A file the subject's `init` made. What `init` prints is
/// `init.prints`, a `should` (`cli/init-prints`).
fn init(ctx: &mut Ctx) -> Result<std::path::PathBuf, Failure> {
    let file = ctx.tracked_file("init.ukue");
    ctx.ok(&ctx.subject().clone(), &["init", path_str(&file)])?;
    Ok(file)
}

fn application_id(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx)?;
    let id: i64 = read(&file)?.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    ensure_eq!(id, 0x756B7565, "application_id");
    Ok(())
}

fn journal_mode(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx)?;
    // The header bytes 18 and 19 say WAL (2) without opening a connection.
    let bytes = std::fs::read(&file)?;
    ensure!(bytes.len() >= 100, "a SQLite header", format!("{} bytes", bytes.len()));
    ensure_eq!(
        (i64::from(bytes[18]), i64::from(bytes[19])),
        (2, 2),
        "file format write/read version bytes (2 = WAL)"
    );
    Ok(())
}

fn meta_keys(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx)?;
    let conn = read(&file)?;
    let get = |key: &str| -> Result<Option<String>, Failure> {
        match conn.query_row("SELECT value FROM ukue_meta WHERE key = ?1", [key], |r| r.get(0)) {
            Ok(v) => Ok(Some(v)),
            Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
            Err(e) => Err(e.into()),
        }
    };
    let version = get("format_version")?;
    ensure_eq!(version.as_deref(), Some("1"), "format_version");
    let created_at = get("created_at")?;
    let ms: i64 = created_at.as_deref().and_then(|t| t.parse().ok()).unwrap_or(-1);
    ensure!(ms > 1_500_000_000_000, "created_at as milliseconds since 1970", created_at.shown());
    let by = get("created_by")?;
    ensure!(by.as_deref().is_some_and(|b| !b.trim().is_empty()), "created_by naming the program", by.shown());
    Ok(())
}

/// A fact of a database's schema, one line, comparable across files.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Fact {
    /// The column a fact is about (None: the table as a whole).
    column: Option<String>,
    text: String,
}

/// The facts of the two tables: WITHOUT ROWID, AUTOINCREMENT, the CHECKs,
/// and each column's type, NOT NULL, default and primary key. Column order
/// is no fact: every statement names its columns.
pub fn table_facts(conn: &Connection) -> Result<Vec<Fact>, Failure> {
    let mut facts = Vec::new();
    for table in ["ukue_meta", "ukue_jobs"] {
        let whole = |text: String| Fact { column: None, text };
        let sql: Option<String> = conn
            .query_row("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |r| {
                r.get(0)
            })
            .ok();
        let Some(sql) = sql else {
            facts.push(whole(format!("{table}: missing")));
            continue;
        };
        let flat = sql.to_uppercase().split_whitespace().collect::<Vec<_>>().join(" ");
        facts.push(whole(format!("{table}: without rowid {}", flat.ends_with("WITHOUT ROWID"))));
        facts.push(whole(format!("{table}: autoincrement {}", flat.contains("AUTOINCREMENT"))));
        for check in checks(&flat) {
            facts.push(whole(format!("{table}: {check}")));
        }
        let mut st = conn.prepare(&format!("PRAGMA table_xinfo({table})"))?;
        let cols = st.query_map([], |r| {
            let name: String = r.get(1)?;
            let notnull: i64 = r.get(3)?;
            let default: Option<String> = r.get(4)?;
            let text = format!(
                "{table}.{name}: type {} notnull {notnull} default {} pk {}",
                r.get::<_, String>(2)?.to_uppercase(),
                default.as_deref().unwrap_or("none"),
                r.get::<_, i64>(5)?
            );
            // A column a later release may add (FORMAT.md §2.2) needs a
            // default, or must allow NULL, so that older writers can insert.
            let addable = notnull == 0 || default.is_some();
            Ok(Fact { column: Some(format!("{table}.{name} addable {addable}")), text })
        })?;
        for col in cols {
            facts.push(col?);
        }
    }
    facts.sort();
    Ok(facts)
}

/// The facts of the `ukue_jobs_*` indexes that FORMAT.md names: key columns
/// and partial WHERE. The direction of a key is no fact: either serves.
pub fn index_facts(conn: &Connection) -> Result<Vec<String>, Failure> {
    let mut facts = Vec::new();
    let mut st = conn.prepare(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ukue_jobs' AND sql IS NOT NULL ORDER BY name",
    )?;
    let indexes: Vec<(String, String)> =
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
    for (name, sql) in indexes {
        if !name.starts_with("ukue_jobs_") || !FORMAT_MD.contains(&format!("INDEX {name} ")) {
            continue; // an index a program added: allowed within version 1
        }
        let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        let partial = flat.split_once(" WHERE ").map(|(_, w)| w.to_string()).unwrap_or_default();
        let mut st = conn.prepare(&format!("PRAGMA index_xinfo({name})"))?;
        let cols: Vec<String> = st
            .query_map([], |r| Ok((r.get::<_, Option<String>>(2)?, r.get::<_, i64>(5)?)))?
            .filter_map(|c| c.ok())
            .filter(|(_, key)| *key == 1)
            .map(|(name, _)| name.unwrap_or_default())
            .collect();
        facts.push(format!("index {name}: ({}) where {partial}", cols.join(", ")));
    }
    Ok(facts)
}

/// What of `expected` is missing from `seen`, and what `seen` has beyond
/// it that FORMAT.md §2.2 does not allow (a column without a default that
/// an older writer could not fill, a constraint more).
fn table_differences(seen: &[Fact], expected: &[Fact]) -> (Vec<String>, Vec<String>) {
    let known_columns: Vec<&str> = expected
        .iter()
        .filter_map(|f| f.column.as_deref())
        .filter_map(|c| c.split_once(' ').map(|(name, _)| name))
        .collect();
    let missing = expected.iter().filter(|f| !seen.contains(f)).map(|f| f.text.clone()).collect();
    let extra = seen
        .iter()
        .filter(|f| !expected.contains(f))
        .filter(|f| match f.column.as_deref().and_then(|c| c.split_once(' ')) {
            Some((name, addable)) => known_columns.contains(&name) || addable == "addable false",
            None => true,
        })
        .map(|f| f.text.clone())
        .collect();
    (missing, extra)
}

/// The CHECK constraints of a CREATE TABLE, in order.
fn checks(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = sql;
    while let Some(start) = rest.find("CHECK") {
        let after = &rest[start..];
        let Some(open) = after.find('(') else { break };
        let mut depth = 0;
        let mut end = open;
        for (i, c) in after[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push(format!(
            "check {}",
            after[open..=end].replace(" (", "(").replace("( ", "(").replace(" )", ")")
        ));
        rest = &after[end.max(open) + 1..];
    }
    out
}

/// The schema of FORMAT.md's `create_*` blocks, built in memory.
pub fn format_md_schema() -> Result<Connection, Failure> {
    let conn = Connection::open_in_memory()?;
    let blocks =
        ukue::spec::markdown::sql_blocks(FORMAT_MD).map_err(|e| Failure::error("a readable FORMAT.md", e))?;
    for block in blocks.iter().filter(|b| b.name.starts_with("create_")) {
        conn.execute_batch(&block.sql)?;
    }
    Ok(conn)
}

/// The tables of `file` against FORMAT.md's (§3.1, §3.2).
fn tables_as_format_md(file: &std::path::Path) -> CaseResult {
    let expected = table_facts(&format_md_schema()?)?;
    let seen = table_facts(&read(file)?)?;
    let (missing, extra) = table_differences(&seen, &expected);
    ensure!(
        missing.is_empty() && extra.is_empty(),
        format!("the tables of FORMAT.md §3, which include:\n{}", missing.join("\n")),
        format!("instead:\n{}", extra.join("\n"))
    );
    Ok(())
}

fn schema(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx)?;
    tables_as_format_md(&file)
}

fn indexes(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx)?;
    let expected = index_facts(&format_md_schema()?)?;
    let seen = index_facts(&read(&file)?)?;
    let missing: Vec<&String> = expected.iter().filter(|f| !seen.contains(f)).collect();
    ensure!(
        missing.is_empty(),
        "the four indexes of FORMAT.md §3.2 (the published command creates them with the tables)",
        format!("missing or different: {}; the file has {}", missing.shown(), seen.shown())
    );
    Ok(())
}

fn add_creates(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.tracked_file("added.ukue");
    let subject = ctx.subject().clone();
    let id = ctx.add(&subject, &file, "q", "hello", &[])?;
    ensure_eq!(id, 1, "the first job's id");
    let conn = read(&file)?;
    let version: String =
        conn.query_row("SELECT value FROM ukue_meta WHERE key = 'format_version'", [], |r| r.get(0))?;
    ensure_eq!(version.as_str(), "1", "format_version");
    let app: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    ensure_eq!(app, 0x756B7565, "application_id");
    tables_as_format_md(&file)
}
