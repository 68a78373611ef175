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
    for block in blocks.iter().filter(|b| b.name != markdown::EXAMPLE) {
        if names::Stmt::from_name(&block.name).is_none() {
            panic!("spec/FORMAT.md line {}: unknown statement `{}`", block.line, block.name);
        }
        if !seen.insert(block.name.clone()) {
            panic!("spec/FORMAT.md line {}: statement `{}` given twice", block.line, block.name);
        }
    }
    for stmt in names::Stmt::ALL {
        if !seen.contains(stmt.name()) {
            panic!("spec/FORMAT.md lacks the statement `{}`", stmt.name());
        }
    }
}
