//! The folders show the pipeline (spec → generate → run subjects → history
//! → check → report), and the imports keep to it: no two top-level modules
//! of the harness import each other, but the pairs listed below with the
//! reason they still do. Read from the source: every `crate::MODULE` path
//! outside a comment.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Pairs that still import each other, and why.
const STILL_TIED: &[(&str, &str, &str)] = &[
    ("cases", "spec", "spec::coverage maps every case (cases::all) to the rules it checks"),
    (
        "history",
        "subjects",
        "history reads the probe's records and the file's rows; a case's context keeps its history",
    ),
];

/// Every source file at or under `path`.
fn sources(path: &Path) -> Vec<PathBuf> {
    if !path.is_dir() {
        return vec![path.to_path_buf()];
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).unwrap() {
        files.extend(sources(&entry.unwrap().path()));
    }
    files
}

/// The other top-level modules `file` names (`crate::NAME`) outside comments.
fn named(file: &Path, top: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut names = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (at, _) in line.match_indices("crate::") {
            let name: String =
                line[at + 7..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
            // The case macros (`crate::ensure!`) are the crate root's.
            if !name.is_empty() && name != top && !name.starts_with("ensure") {
                names.insert(name);
            }
        }
    }
    names
}

#[test]
fn no_two_modules_import_each_other_but_those_listed() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let top = path.file_stem().unwrap().to_string_lossy().into_owned();
        if top == "lib" || top == "bin" {
            continue;
        }
        for file in sources(&path) {
            found.entry(top.clone()).or_default().extend(named(&file, &top));
        }
    }
    let none = BTreeSet::new();
    let mut tied = Vec::new();
    for (a, uses) in &found {
        for b in uses.iter().filter(|b| a < *b) {
            if found.get(b).unwrap_or(&none).contains(a) {
                tied.push((a.clone(), b.clone()));
            }
        }
    }
    let allowed: Vec<(String, String)> =
        STILL_TIED.iter().map(|(a, b, _)| (a.to_string(), b.to_string())).collect();
    assert_eq!(tied, allowed, "modules that import each other (the imports: {found:?})");
    // The two ties of issue 22, cut: the subjects raise Failure without
    // reaching up to cases, and the runner and the reports share the
    // verdict types without a circle.
    assert!(!found["subjects"].contains("cases"), "{:?}", found["subjects"]);
    assert!(!found["report"].contains("runner"), "{:?}", found["report"]);
}
