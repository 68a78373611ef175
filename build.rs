//! Fails the build when spec/FORMAT.md does not hold exactly the
//! statements the reference runs, each once.

#[path = "src/spec/markdown.rs"]
mod markdown;
#[path = "src/spec/names.rs"]
#[allow(dead_code)]
mod names;

use std::collections::BTreeSet;

fn main() {
    println!("cargo:rerun-if-changed=spec/FORMAT.md");
    let text = std::fs::read_to_string("spec/FORMAT.md").expect("spec/FORMAT.md is readable");
    let blocks = markdown::sql_blocks(&text).unwrap_or_else(|e| panic!("{e}"));
    let mut seen = BTreeSet::new();
    for block in blocks.iter().filter(|b| b.kind == markdown::Kind::Statement) {
        if names::Stmt::from_name(&block.name).is_none() {
            panic!("spec/FORMAT.md line {}: unknown statement `{}`", block.line, block.name);
        }
        if !seen.insert(block.name.clone()) {
            panic!("spec/FORMAT.md line {}: statement `{}` given twice", block.line, block.name);
        }
    }
    let mut invariants = BTreeSet::new();
    for block in blocks.iter().filter(|b| b.kind == markdown::Kind::Invariant) {
        if !invariants.insert(block.name.clone()) {
            panic!("spec/FORMAT.md line {}: invariant `{}` given twice", block.line, block.name);
        }
    }
    if invariants.is_empty() {
        panic!("spec/FORMAT.md has no invariant blocks (§7)");
    }
    for stmt in names::Stmt::ALL {
        if !seen.contains(stmt.name()) {
            panic!("spec/FORMAT.md lacks the statement `{}`", stmt.name());
        }
    }
}
