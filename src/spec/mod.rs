//! The SQL of spec/FORMAT.md, as the reference runs it.
//!
//! FORMAT.md is embedded at build time and every statement the library
//! runs is looked up here by name; no SQL text lives anywhere else in the
//! library. The page's §7 invariants are here too ([`Spec::invariants`]),
//! for the tests and the conformance suite to check files with.
//! [`Spec::from_markdown`] loads another version of the page, so that
//! tests can check that an edit to FORMAT.md is caught.

mod invariant;
pub mod markdown;
mod names;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

pub use invariant::{Invariant, Violation};
pub use markdown::Kind;
pub use names::Stmt;

use crate::error::Error;

/// The text of spec/FORMAT.md that this library was built with.
pub const FORMAT_MD: &str = include_str!("../../spec/FORMAT.md");

/// The statements of one version of FORMAT.md, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The format version the page names (§2.1), which the reference
    /// writes into the files it makes and refuses files above.
    version: i64,
    sql: BTreeMap<Stmt, String>,
    examples: Vec<String>,
    invariants: Vec<Invariant>,
}

impl Spec {
    /// The statements of the FORMAT.md this library was built with.
    pub fn builtin() -> Arc<Spec> {
        static BUILTIN: OnceLock<Arc<Spec>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                // build.rs parses the same text with the same code, so this
                // cannot fail in a library that compiled.
                Arc::new(Spec::from_markdown(FORMAT_MD).expect("spec/FORMAT.md was checked by build.rs"))
            })
            .clone()
    }

    /// Parses a FORMAT.md: every statement the reference runs must be
    /// there exactly once, and no other named statement; each invariant's
    /// name once.
    pub fn from_markdown(markdown: &str) -> Result<Spec, Error> {
        let mut sql = BTreeMap::new();
        let mut examples = Vec::new();
        let mut invariants: Vec<Invariant> = Vec::new();
        for block in markdown::sql_blocks(markdown).map_err(Error::Spec)? {
            match block.kind {
                Kind::Statement => {}
                Kind::Example => {
                    examples.push(block.sql);
                    continue;
                }
                Kind::Invariant => {
                    if invariants.iter().any(|i| i.name == block.name) {
                        return Err(Error::Spec(format!(
                            "FORMAT.md line {}: invariant `{}` is given twice",
                            block.line, block.name
                        )));
                    }
                    invariants.push(Invariant { name: block.name, sql: block.sql });
                    continue;
                }
            }
            let stmt = Stmt::from_name(&block.name).ok_or_else(|| {
                Error::Spec(format!(
                    "FORMAT.md line {}: `{}` is not a statement the reference knows",
                    block.line, block.name
                ))
            })?;
            if sql.insert(stmt, block.sql).is_some() {
                return Err(Error::Spec(format!(
                    "FORMAT.md line {}: statement `{}` is given twice",
                    block.line, block.name
                )));
            }
        }
        let missing: Vec<&str> =
            Stmt::ALL.iter().filter(|s| !sql.contains_key(*s)).map(|s| s.name()).collect();
        if !missing.is_empty() {
            return Err(Error::Spec(format!("FORMAT.md lacks the statements {}", missing.join(", "))));
        }
        if invariants.is_empty() {
            return Err(Error::Spec("FORMAT.md has no invariant blocks (§7)".to_string()));
        }
        Ok(Spec { version: page_version(markdown)?, sql, examples, invariants })
    }

    /// The format version the page names: "This page is version `N`"
    /// (§2.1). The builtin page's is [`FORMAT_VERSION`](crate::FORMAT_VERSION).
    pub fn version(&self) -> i64 {
        self.version
    }

    /// The SQL text of one statement.
    pub fn sql(&self, stmt: Stmt) -> &str {
        &self.sql[&stmt]
    }

    /// The `sql example` blocks, which the reference does not run.
    pub fn examples(&self) -> &[String] {
        &self.examples
    }

    /// The invariants of §7, in the page's order: each a query for the
    /// rows of a file that break it.
    pub fn invariants(&self) -> &[Invariant] {
        &self.invariants
    }

    /// Every named statement with its text.
    pub fn statements(&self) -> impl Iterator<Item = (Stmt, &str)> {
        self.sql.iter().map(|(s, q)| (*s, q.as_str()))
    }

    /// A copy whose statements do not name `index` (`INDEXED BY index`),
    /// for a file that lacks it: other programs need not create the
    /// indexes (FORMAT.md §3.2), and SQLite refuses a statement that names
    /// an index the file does not have.
    pub fn without_index(&self, index: &str) -> Spec {
        let hint = format!(" INDEXED BY {index}");
        let mut copy = self.clone();
        for sql in copy.sql.values_mut() {
            *sql = sql.replace(&hint, "");
        }
        copy
    }

    /// The indexes that some statement names with `INDEXED BY`.
    pub fn named_indexes(&self) -> std::collections::BTreeSet<String> {
        self.sql
            .values()
            .flat_map(|sql| sql.split(" INDEXED BY ").skip(1))
            .filter_map(|rest| rest.split_whitespace().next())
            .map(str::to_string)
            .collect()
    }

    /// A copy with one statement's text replaced (for mutation tests).
    pub fn with(&self, stmt: Stmt, text: impl Into<String>) -> Spec {
        let mut copy = self.clone();
        copy.sql.insert(stmt, text.into());
        copy
    }
}

/// The version §2.1 names, in words that may wrap across lines.
fn page_version(markdown: &str) -> Result<i64, Error> {
    const PHRASE: &str = "This page is version `";
    let words = markdown.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut found = words.match_indices(PHRASE).map(|(at, _)| &words[at + PHRASE.len()..]);
    let version = found
        .next()
        .and_then(|rest| rest.split('`').next())
        .and_then(|digits| digits.parse::<i64>().ok())
        .filter(|v| *v >= 1)
        .ok_or_else(|| Error::Spec(format!("FORMAT.md does not say \"{PHRASE}N`\" (§2.1)")))?;
    if found.next().is_some() {
        return Err(Error::Spec(format!("FORMAT.md says \"{PHRASE}\" twice")));
    }
    Ok(version)
}
