//! Extracting the named SQL statements from spec/FORMAT.md.
//!
//! This file is compiled twice: into the library, and into build.rs (via
//! `#[path]`), so that a malformed FORMAT.md fails the build and the
//! library and the build agree on what a statement block is.

/// A fenced block whose info string is `sql NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub name: String,
    pub sql: String,
    /// 1-based line of the opening fence, for error messages.
    pub line: usize,
}

/// The name of blocks that are examples, not statements the reference runs.
pub const EXAMPLE: &str = "example";

enum Fence {
    Outside,
    /// Inside a `sql NAME` block opened on `line`.
    Sql {
        name: String,
        line: usize,
        body: Vec<String>,
    },
    /// Inside some other fenced block (a diagram).
    Other,
}

/// Every ```` ```sql NAME ```` block of `markdown`, in order, examples included.
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
            Fence::Sql { name, line, body } if is_fence => {
                let sql = body.join("\n").trim().to_string();
                if sql.is_empty() {
                    return Err(format!("FORMAT.md line {line}: sql block `{name}` is empty"));
                }
                blocks.push(Block { name, sql, line });
                Fence::Outside
            }
            Fence::Sql { name, line: start, mut body } => {
                body.push(line.to_string());
                Fence::Sql { name, line: start, body }
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
    let name = words.next().ok_or_else(|| format!("FORMAT.md line {number}: sql block without a name"))?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
        return Err(format!("FORMAT.md line {number}: block name `{name}` is not snake_case"));
    }
    Ok(Fence::Sql { name: name.to_string(), line: number, body: Vec::new() })
}
