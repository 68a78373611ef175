//! The hand-made mutations of FORMAT.md's statements
//! (tests/spec_mutations.txt), read for tests/spec_mutations.rs and, by
//! path, for the harness's mutants (harness/src/subjects/mutants.rs), so
//! that one reader serves both.

use ukue::{Spec, Stmt};

/// The text of tests/spec_mutations.txt.
pub const HAND_MADE: &str = include_str!("../spec_mutations.txt");

/// One hand-made mutation: the first `count` occurrences of `from` in
/// `stmt` become `to`.
#[derive(Debug, Clone)]
pub struct HandMade {
    /// The `[group]` it is listed under.
    pub group: String,
    pub stmt: Stmt,
    pub from: String,
    pub to: String,
    pub count: usize,
}

impl HandMade {
    /// The statement's text in `spec` with this mutation, or an error
    /// when it no longer applies.
    pub fn apply(&self, spec: &Spec) -> Result<String, String> {
        let original = spec.sql(self.stmt);
        let text = original.replacen(&self.from, &self.to, self.count);
        if text == original {
            return Err(format!(
                "the mutation of `{}` ({:?} -> {:?}) no longer applies to FORMAT.md",
                self.stmt.name(),
                self.from,
                self.to
            ));
        }
        Ok(text)
    }
}

/// Reads the mutations: `[group]` lines, then one a line, `statement |
/// from | to`, and `| all` to replace every occurrence. `\n` is a newline,
/// a field in double quotes is what is between them, and `*` as `from` is
/// the whole statement (of `spec`).
pub fn hand_made(text: &str, spec: &Spec) -> Result<Vec<HandMade>, String> {
    let mut group = String::new();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            group = name.to_string();
            continue;
        }
        let bad = |why: &str| format!("tests/spec_mutations.txt line {}: {why}: {line}", n + 1);
        let fields: Vec<&str> = line.split(" | ").collect();
        let (name, from, to, count) = match fields[..] {
            [name, from, to] => (name, from, to, 1),
            [name, from, to, "all"] => (name, from, to, usize::MAX),
            _ => return Err(bad("not `statement | from | to [| all]`")),
        };
        let stmt = Stmt::from_name(name).ok_or_else(|| bad("no such statement"))?;
        let field = |s: &str| {
            let s = s.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(s);
            s.replace("\\n", "\n")
        };
        let from = if from == "*" { spec.sql(stmt).to_string() } else { field(from) };
        out.push(HandMade { group: group.clone(), stmt, from, to: field(to), count });
    }
    Ok(out)
}
