//! format: a file made by the subject's `init` and `add` is a version 1
//! file as FORMAT.md §1 and §3 describe it, to the column.

use rusqlite::Connection;

use crate::case::{Case, CaseResult, Failure, Needs};
use crate::ctx::{path_str, Ctx};
use crate::embedded::FORMAT_MD;
use crate::{ensure, ensure_eq};

use super::common::read;

pub fn cases() -> Vec<Case> {
    let case = |id, rule, summary, run| Case { id, rule, summary, needs: Needs::default(), run };
    vec![
        case("format/application-id", "1.3", "init stamps application_id 0x756B7565", application_id),
        case("format/journal-mode-wal", "1.2", "init leaves the file in WAL mode", journal_mode),
        case(
            "format/meta-keys",
            "3.1",
            "ukue_meta holds format_version 1, created_at, created_by",
            meta_keys,
        ),
        case("format/schema", "3.2", "tables, columns, defaults, CHECKs and indexes are FORMAT.md's", schema),
        case("format/add-creates-file", "3.3", "add on a missing path creates a version 1 file", add_creates),
    ]
}

fn init(ctx: &mut Ctx) -> Result<std::path::PathBuf, Failure> {
    let file = ctx.tracked_file("init.ukue");
    let out = ctx.ok(&ctx.subject().clone(), &["init", path_str(&file)])?;
    ensure!(
        out.trim() == format!("{} is ready (ukue file format 1)", path_str(&file)),
        "init to print `FILE is ready (ukue file format 1)`",
        out
    );
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
    ensure_eq!((bytes[18], bytes[19]), (2, 2), "file format write/read version bytes (2 = WAL)");
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
    let created_at = get("created_at")?.unwrap_or_default();
    let ms: i64 = created_at.parse().unwrap_or(-1);
    ensure!(ms > 1_500_000_000_000, "created_at as milliseconds since 1970", format!("{created_at:?}"));
    let by = get("created_by")?.unwrap_or_default();
    ensure!(!by.trim().is_empty(), "created_by naming the program", format!("{by:?}"));
    Ok(())
}

/// The schema facts of a database, one line each, comparable across files.
pub fn schema_facts(conn: &Connection) -> Result<Vec<String>, Failure> {
    let mut facts = Vec::new();
    for table in ["ukue_meta", "ukue_jobs"] {
        let sql: Option<String> = conn
            .query_row("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |r| {
                r.get(0)
            })
            .ok();
        let Some(sql) = sql else {
            facts.push(format!("{table}: missing"));
            continue;
        };
        let flat = sql.to_uppercase().split_whitespace().collect::<Vec<_>>().join(" ");
        facts.push(format!("{table}: without rowid {}", flat.ends_with("WITHOUT ROWID")));
        facts.push(format!("{table}: autoincrement {}", flat.contains("AUTOINCREMENT")));
        for check in checks(&flat) {
            facts.push(format!("{table}: {check}"));
        }
        let mut st = conn.prepare(&format!("PRAGMA table_xinfo({table})"))?;
        let cols = st.query_map([], |r| {
            Ok(format!(
                "{table}.{}: type {} notnull {} default {} pk {}",
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?.to_uppercase(),
                r.get::<_, i64>(3)?,
                r.get::<_, Option<String>>(4)?.unwrap_or_else(|| "none".into()),
                r.get::<_, i64>(5)?
            ))
        })?;
        for col in cols {
            facts.push(col?);
        }
    }
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
            .query_map([], |r| {
                Ok((r.get::<_, Option<String>>(2)?, r.get::<_, i64>(3)?, r.get::<_, i64>(5)?))
            })?
            .filter_map(|c| c.ok())
            .filter(|(_, _, key)| *key == 1)
            .map(|(name, desc, _)| {
                format!("{}{}", name.unwrap_or_default(), if desc == 1 { " DESC" } else { "" })
            })
            .collect();
        facts.push(format!("index {name}: ({}) where {partial}", cols.join(", ")));
    }
    Ok(facts)
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

fn schema(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx)?;
    let expected = schema_facts(&format_md_schema()?)?;
    let seen = schema_facts(&read(&file)?)?;
    let missing: Vec<&String> = expected.iter().filter(|f| !seen.contains(f)).collect();
    let extra: Vec<&String> = seen.iter().filter(|f| !expected.contains(f)).collect();
    ensure!(
        missing.is_empty() && extra.is_empty(),
        format!(
            "the schema of FORMAT.md, which includes:\n{}",
            missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
        ),
        format!("instead:\n{}", extra.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"))
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
    let facts = schema_facts(&conn)?;
    let expected = schema_facts(&format_md_schema()?)?;
    ensure!(facts == expected, "the schema of FORMAT.md", format!("{facts:#?}"));
    Ok(())
}
