//! What one version of FORMAT.md says, as the comparison needs it: its
//! schema as SQLite reports it after running the page's CREATE statements
//! in an empty in-memory database, its version, its `ukue_meta` keys and
//! its named statements.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::Connection;
use ukue::spec::markdown::{self, Kind};

use super::lex::{self, Token};
use super::EvolveError;
use crate::spec::rules;

/// A column as `pragma table_info` reports it, with its CHECK clauses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    /// Its place among the table's columns, from 0.
    pub position: usize,
    pub declared_type: String,
    pub not_null: bool,
    /// The default's SQL, as SQLite keeps it; None for none.
    pub default: Option<String>,
    /// Its place in the primary key, from 1; 0 for none.
    pub primary_key: u32,
    pub autoincrement: bool,
    /// Its CHECK clauses' expressions, joined with AND.
    pub check: Option<Vec<Token>>,
    /// Its definition, as `ALTER TABLE … ADD COLUMN` takes it.
    pub definition: String,
}

/// A table as `pragma table_list` and `table_info` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub without_rowid: bool,
    pub strict: bool,
    pub columns: Vec<Column>,
    /// The table's own CHECK constraints, each rendered.
    pub checks: Vec<String>,
}

/// An index as `pragma index_list` and `index_xinfo` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    pub table: String,
    pub unique: bool,
    /// Its key columns: name (or `<expr>`), descending, collation.
    pub columns: Vec<(String, bool, String)>,
    /// Its WHERE clause, rendered; empty for a full index.
    pub partial: String,
}

/// One version of FORMAT.md.
#[derive(Debug)]
pub struct Snapshot {
    pub version: u64,
    pub tables: BTreeMap<String, Table>,
    pub indexes: BTreeMap<String, Index>,
    /// The keys of the table of `ukue_meta` keys.
    pub keys: BTreeSet<String>,
    /// Named statements and invariants (`invariant NAME`) but the schema's,
    /// each as tokens, with the section it sits in.
    pub statements: BTreeMap<String, (Vec<Token>, String)>,
    /// What SQLite said to §5.3's complete add, `INSERT INTO ukue_jobs
    /// (queue, payload)`, when it refused it.
    pub complete_add: Result<(), String>,
    /// The connection holding the schema, for probes.
    pub db: Connection,
    /// The page itself, for what is read from its words.
    pub markdown: String,
}

/// The complete add of §5.3, with a queue and a payload only.
pub const COMPLETE_ADD: &str = "INSERT INTO ukue_jobs (queue, payload) VALUES ('emails', x'00')";

impl Snapshot {
    /// Reads a FORMAT.md.
    pub fn read(markdown: &str) -> Result<Snapshot, EvolveError> {
        let blocks = markdown::sql_blocks(markdown).map_err(EvolveError::Blocks)?;
        let db = Connection::open_in_memory()?;
        let sections = rules::sections(markdown);
        let mut statements = BTreeMap::new();
        for block in blocks {
            let creates = lex::tokens(&block.sql).first().is_some_and(|t| t.is_word("create"));
            match block.kind {
                Kind::Example => {}
                Kind::Statement if creates => db.execute_batch(&block.sql).map_err(|error| {
                    EvolveError::Statement { name: block.name.clone(), line: block.line, error }
                })?,
                Kind::Statement | Kind::Invariant => {
                    let name = match block.kind {
                        Kind::Invariant => format!("{} {}", markdown::INVARIANT, block.name),
                        _ => block.name.clone(),
                    };
                    let fence = block_fence(&block);
                    let section = sections
                        .iter()
                        .find(|s| s.text.lines().any(|l| l.trim() == fence))
                        .map(|s| s.number.clone())
                        .unwrap_or_default();
                    statements.insert(name, (lex::tokens(&block.sql), section));
                }
            }
        }
        for table in ["ukue_meta", "ukue_jobs"] {
            let found: bool = db.query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )?;
            if !found {
                return Err(EvolveError::NoTable(table));
            }
        }
        let complete_add = db.execute(COMPLETE_ADD, []).map(drop).map_err(|e| e.to_string());
        let tables = tables(&db)?;
        let indexes = indexes(&db)?;
        Ok(Snapshot {
            version: version(&sections)?,
            tables,
            indexes,
            keys: keys(markdown)?,
            statements,
            complete_add,
            db,
            markdown: markdown.to_string(),
        })
    }

    /// The states: the texts that the CHECK of `ukue_jobs.state` names.
    pub fn states(&self) -> BTreeSet<String> {
        let check = self
            .tables
            .get("ukue_jobs")
            .and_then(|t| t.columns.iter().find(|c| c.name == "state"))
            .and_then(|c| c.check.clone())
            .unwrap_or_default();
        check
            .into_iter()
            .filter_map(|t| match t {
                Token::Str(text) => Some(text),
                _ => None,
            })
            .collect()
    }
}

fn block_fence(block: &markdown::Block) -> String {
    match block.kind {
        Kind::Invariant => format!("```sql {} {}", markdown::INVARIANT, block.name),
        _ => format!("```sql {}", block.name),
    }
}

/// The version §2.1 names: "This page is version `1`".
fn version(sections: &[rules::Section]) -> Result<u64, EvolveError> {
    let text = sections.iter().find(|s| s.number == "2.1").map(|s| s.text.as_str()).unwrap_or("");
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let after =
        words.split_once("This page is version `").map(|(_, rest)| rest).ok_or(EvolveError::NoVersion)?;
    after.split('`').next().and_then(|v| v.parse().ok()).ok_or(EvolveError::NoVersion)
}

/// The keys of the page's table of `ukue_meta` keys (`| key | value |`).
fn keys(markdown: &str) -> Result<BTreeSet<String>, EvolveError> {
    let mut lines = markdown.lines().skip_while(|l| {
        let cells: Vec<&str> = l.split('|').map(str::trim).collect();
        !(cells.len() > 2 && cells[1].eq_ignore_ascii_case("key") && cells[2].eq_ignore_ascii_case("value"))
    });
    lines.next().ok_or(EvolveError::NoKeys)?;
    let keys: BTreeSet<String> = lines
        .take_while(|l| l.trim_start().starts_with('|'))
        .filter_map(|l| l.split('|').nth(1))
        .filter_map(|cell| cell.trim().strip_prefix('`')?.strip_suffix('`').map(str::to_string))
        .collect();
    if keys.is_empty() {
        return Err(EvolveError::NoKeys);
    }
    Ok(keys)
}

fn tables(db: &Connection) -> Result<BTreeMap<String, Table>, EvolveError> {
    let mut list = db.prepare(
        "SELECT name, wr, strict FROM pragma_table_list WHERE schema = 'main' AND type = 'table' \
         AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
    )?;
    let listed: Vec<(String, bool, bool)> =
        list.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<Result<_, _>>()?;
    let mut tables = BTreeMap::new();
    for (name, without_rowid, strict) in listed {
        let sql: String =
            db.query_row("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1", [&name], |r| {
                r.get(0)
            })?;
        let definitions = lex::definitions(&lex::tokens(&sql));
        let (constraints, column_defs): (Vec<_>, Vec<_>) =
            definitions.into_iter().partition(|d| lex::is_table_constraint(d));
        let mut info =
            db.prepare("SELECT cid, name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1)")?;
        let columns = info
            .query_map([&name], |r| {
                Ok(Column {
                    position: r.get::<_, i64>(0)? as usize,
                    name: r.get(1)?,
                    declared_type: r.get(2)?,
                    not_null: r.get(3)?,
                    default: r.get(4)?,
                    primary_key: r.get(5)?,
                    autoincrement: false,
                    check: None,
                    definition: String::new(),
                })
            })?
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .map(|mut column| {
                let own = column_defs.iter().find(|d| {
                    matches!(d.first(), Some(Token::Word { text, .. }) if *text == column.name.to_lowercase())
                });
                if let Some(def) = own {
                    column.autoincrement = lex::has_word(def, "autoincrement");
                    let checks = lex::checks(def);
                    column.check = (!checks.is_empty()).then(|| and_all(&checks));
                    column.definition = lex::render(def);
                }
                column
            })
            .collect();
        let checks = constraints.iter().flat_map(|d| lex::checks(d)).map(|c| lex::render(&c)).collect();
        tables.insert(name, Table { without_rowid, strict, columns, checks });
    }
    Ok(tables)
}

/// CHECK clauses as one expression.
fn and_all(checks: &[Vec<Token>]) -> Vec<Token> {
    let mut all = Vec::new();
    for (i, check) in checks.iter().enumerate() {
        if i > 0 {
            all.push(Token::word("AND"));
        }
        all.push(Token::Punct("(".into()));
        all.extend(check.iter().cloned());
        all.push(Token::Punct(")".into()));
    }
    if checks.len() == 1 {
        checks[0].clone()
    } else {
        all
    }
}

fn indexes(db: &Connection) -> Result<BTreeMap<String, Index>, EvolveError> {
    let mut list = db.prepare(
        "SELECT m.name, m.tbl_name, m.sql, l.\"unique\" FROM sqlite_master m \
         JOIN pragma_index_list(m.tbl_name) l ON l.name = m.name WHERE m.type = 'index' AND m.sql IS NOT NULL",
    )?;
    let listed: Vec<(String, String, String, bool)> = list
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<Result<_, _>>()?;
    let mut indexes = BTreeMap::new();
    for (name, table, sql, unique) in listed {
        let mut info = db.prepare(
            "SELECT coalesce(name, '<expr>'), \"desc\", coll FROM pragma_index_xinfo(?1) WHERE key",
        )?;
        let columns =
            info.query_map([&name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<Result<_, _>>()?;
        let partial = lex::render(&lex::where_clause(&lex::tokens(&sql)));
        indexes.insert(name, Index { table, unique, columns, partial });
    }
    Ok(indexes)
}
