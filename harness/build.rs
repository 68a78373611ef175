//! Embeds the fixtures, so that the runner needs nothing beside itself:
//! every file of fixtures/refusal and fixtures/compat, found by listing
//! the folders, so that a new fixture needs only its file and its manifest
//! entry. Each manifest is checked against its folder first (every file
//! named, every named file there, the journal mode in each header, no hot
//! journal), so a mistake stops the build with a message naming it.
//!
//! Writes to OUT_DIR:
//! - `fixtures.rs`: `FIXTURES`, (path under fixtures/, bytes), for
//!   src/cases/fixture.rs;
//! - `refusal_runs.rs`, `compat_runs.rs`: one function a manifest case
//!   (see src/cases/refusal.rs).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

// The crate uses all of it; the build script only parses and checks.
#[allow(dead_code)]
#[path = "src/cases/manifest.rs"]
mod manifest;

use manifest::Entry;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/cases/manifest.rs");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut fixtures = String::from("&[\n");
    for family in ["refusal", "compat"] {
        let dir = root.join(family);
        // A folder as a whole: a file added or removed reruns this script.
        println!("cargo:rerun-if-changed={}", dir.display());
        let (files, cases) = match check(&dir, family) {
            Ok(found) => found,
            Err(e) => {
                eprintln!("error: fixtures/{family}/manifest.json: {e}");
                std::process::exit(1);
            }
        };
        for name in files {
            let path = dir.join(&name).canonicalize().expect("a listed file");
            writeln!(
                fixtures,
                "    ({:?}, include_bytes!({:?}) as &[u8]),",
                format!("{family}/{name}"),
                path
            )
            .unwrap();
        }
        let runs: Vec<String> = (0..cases).map(|i| format!("run::<{i}>")).collect();
        write(&out.join(format!("{family}_runs.rs")), &format!("&[{}]\n", runs.join(", ")));
    }
    fixtures.push_str("]\n");
    write(&out.join("fixtures.rs"), &fixtures);
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// The fixture files of `dir` and the number of cases its manifest makes.
fn check(dir: &Path, family: &str) -> Result<(BTreeSet<String>, usize), String> {
    let text = std::fs::read_to_string(dir.join("manifest.json")).map_err(|e| e.to_string())?;
    match family {
        "refusal" => check_entries(dir, &manifest::refusal(&text)?),
        _ => check_entries(dir, &manifest::compat(&text)?),
    }
}

fn check_entries<E: Entry>(dir: &Path, entries: &[E]) -> Result<(BTreeSet<String>, usize), String> {
    let mut present = BTreeSet::new();
    for item in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let item = item.map_err(|e| e.to_string())?;
        let name = item.file_name().to_string_lossy().into_owned();
        // Dotfiles (.gitignore, make_fixtures.py's .build-* scratch) are
        // not fixtures.
        if name.starts_with('.') || name == "manifest.json" || !item.path().is_file() {
            continue;
        }
        present.insert(name);
    }
    let read = |name: &str| std::fs::read(dir.join(name)).map_err(|e| format!("{name}: {e}"));
    let mut named = BTreeSet::new();
    for entry in entries {
        let file = read(entry.file())?;
        let mut sidecars = Vec::new();
        for sidecar in entry.sidecars() {
            sidecars.push((sidecar.as_str(), read(sidecar)?));
        }
        let sidecars: Vec<(&str, &[u8])> = sidecars.iter().map(|(n, b)| (*n, b.as_slice())).collect();
        manifest::check_bytes(entry, &file, &sidecars)?;
        named.insert(entry.file().to_string());
        named.extend(entry.sidecars().iter().cloned());
    }
    let unnamed: Vec<&String> = present.difference(&named).collect();
    if !unnamed.is_empty() {
        return Err(format!(
            "no entry names {unnamed:?}: give each an entry (or list it as an entry's sidecar), or delete it"
        ));
    }
    let cases = entries.iter().map(|e| e.case_ids().len()).sum();
    Ok((present, cases))
}
