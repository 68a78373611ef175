//! Extracting the named SQL blocks from spec/FORMAT.md.
//!
//! This file is compiled twice: into the library, and into build.rs (via
//! `#[path]`), so that a malformed FORMAT.md fails the build and the
//! library and the build agree on what a block is.

/// What a block is, by its info string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// ```` ```sql NAME ````: a statement the reference runs.
    Statement,
    /// ```` ```sql example ````: shown, not run by the reference.
    Example,
    /// ```` ```sql invariant NAME ````: a query for the rows of a file
    /// that break invariant NAME (FORMAT.md §7).
    Invariant,
}

/// A fenced block whose info string is `sql NAME`, `sql example` or
/// `sql invariant NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What the block is.
    pub kind: Kind,
    /// The statement's or invariant's name; [`EXAMPLE`] for an example.
    pub name: String,
    /// The block's text, trimmed.
    pub sql: String,
    /// 1-based line of the opening fence, for error messages.
    pub line: usize,
}

/// The name of blocks that are examples, not statements the reference runs.
pub const EXAMPLE: &str = "example";

/// The word that marks an invariant's block (`sql invariant NAME`).
pub const INVARIANT: &str = "invariant";

enum Fence {
    Outside,
    /// Inside a `sql …` block opened on `line`.
    Sql {
        kind: Kind,
        name: String,
        line: usize,
        body: Vec<String>,
    },
    /// Inside some other fenced block (a diagram).
    Other,
}

/// Every ```` ```sql … ```` block of `markdown`, in order, examples included.
pub fn sql_blocks(markdown: &str) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    let mut fence = Fence::Outside;
    for (index, line) in markdown.lines().enumerate() {
        let number = index + 1;
        let is_fence = line.trim_start().starts_with("```");
        fence = match fence {
            Fence::Outside if is_fence => opening(line, number)?,
            Fence::Outside => Fence::Outside,
            Fence::Other if is_fence => Fence::Outside,
            Fence::Other => Fence::Other,
            Fence::Sql { kind, name, line, body } if is_fence => {
                let sql = body.join("\n").trim().to_string();
                if sql.is_empty() {
                    return Err(format!("FORMAT.md line {line}: sql block `{name}` is empty"));
                }
                blocks.push(Block { kind, name, sql, line });
                Fence::Outside
            }
            Fence::Sql { kind, name, line: start, mut body } => {
                body.push(line.to_string());
                Fence::Sql { kind, name, line: start, body }
            }
        };
    }
    match fence {
        Fence::Outside => Ok(blocks),
        Fence::Sql { line, .. } => Err(format!("FORMAT.md line {line}: sql block is never closed")),
        Fence::Other => Err("FORMAT.md: a fenced block is never closed".to_string()),
    }
}

fn opening(line: &str, number: usize) -> Result<Fence, String> {
    let info = line.trim_start().trim_start_matches('`');
    let mut words = info.split_whitespace();
    if words.next() != Some("sql") {
        return Ok(Fence::Other);
    }
    let first = words.next().ok_or_else(|| format!("FORMAT.md line {number}: sql block without a name"))?;
    let (kind, name) = match first {
        EXAMPLE => (Kind::Example, first),
        INVARIANT => (
            Kind::Invariant,
            words.next().ok_or_else(|| format!("FORMAT.md line {number}: invariant block without a name"))?,
        ),
        _ => (Kind::Statement, first),
    };
    if !name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
        return Err(format!("FORMAT.md line {number}: block name `{name}` is not snake_case"));
    }
    if let Some(extra) = words.next() {
        return Err(format!("FORMAT.md line {number}: `{extra}` after the block's name"));
    }
    Ok(Fence::Sql { kind, name: name.to_string(), line: number, body: Vec::new() })
}
