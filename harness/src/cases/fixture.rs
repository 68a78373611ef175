//! What the refusal and compat cases share: their manifests, parsed once,
//! each case with the place in its manifest that defines it, and a fixture
//! written into a case's directory with its sidecars.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::case::{Failure, Level};
use crate::ctx::Ctx;
use crate::embedded::{self, COMPAT_MANIFEST, REFUSAL_MANIFEST};

use super::manifest::{self, CompatCase, CompatEntry, Entry, LevelName, RefusalCase, RefusalEntry};

/// A case of a manifest, with its entry and where it is defined.
pub struct Defined<E: 'static, C: 'static> {
    pub entry: &'static E,
    pub case: &'static C,
    /// `fixtures/refusal/manifest.json:14`: the line of the case's id.
    pub source: String,
}

/// The refusal cases, in manifest order.
pub fn refusal() -> &'static [Defined<RefusalEntry, RefusalCase>] {
    static CASES: OnceLock<Vec<Defined<RefusalEntry, RefusalCase>>> = OnceLock::new();
    CASES.get_or_init(|| {
        static ENTRIES: OnceLock<Vec<RefusalEntry>> = OnceLock::new();
        let entries = ENTRIES.get_or_init(|| parsed(manifest::refusal(REFUSAL_MANIFEST), "refusal"));
        defined(entries, REFUSAL_MANIFEST, "refusal", |e| &e.cases, |c| &c.id)
    })
}

/// The compat cases, in manifest order.
pub fn compat() -> &'static [Defined<CompatEntry, CompatCase>] {
    static CASES: OnceLock<Vec<Defined<CompatEntry, CompatCase>>> = OnceLock::new();
    CASES.get_or_init(|| {
        static ENTRIES: OnceLock<Vec<CompatEntry>> = OnceLock::new();
        let entries = ENTRIES.get_or_init(|| parsed(manifest::compat(COMPAT_MANIFEST), "compat"));
        defined(entries, COMPAT_MANIFEST, "compat", |e| &e.cases, |c| &c.id)
    })
}

/// harness/build.rs has parsed and checked the same text with the same
/// code, so this cannot fail in a built harness.
fn parsed<T>(result: Result<T, String>, family: &str) -> T {
    result
        .unwrap_or_else(|e| panic!("fixtures/{family}/manifest.json: {e} (harness/build.rs let it through)"))
}

fn defined<E, C>(
    entries: &'static [E],
    text: &str,
    family: &str,
    cases: impl Fn(&'static E) -> &'static Vec<C>,
    id: impl Fn(&C) -> &str,
) -> Vec<Defined<E, C>> {
    entries
        .iter()
        .flat_map(|entry| cases(entry).iter().map(move |case| (entry, case)))
        .map(|(entry, case)| Defined { entry, case, source: source_line(text, family, id(case)) })
        .collect()
}

/// The manifest's path and the line where `id` is written.
fn source_line(text: &str, family: &str, id: &str) -> String {
    let quoted = serde_json::to_string(id).unwrap_or_default();
    match text.find(&quoted) {
        Some(at) => format!("fixtures/{family}/manifest.json:{}", text[..at].matches('\n').count() + 1),
        None => format!("fixtures/{family}/manifest.json"),
    }
}

/// Where a case made from a manifest is defined; None for a case written
/// as code.
pub fn source(id: &str) -> Option<String> {
    let refusal = refusal().iter().find(|d| d.case.id == id).map(|d| d.source.clone());
    refusal.or_else(|| compat().iter().find(|d| d.case.id == id).map(|d| d.source.clone()))
}

pub fn level(level: LevelName) -> Level {
    match level {
        LevelName::Must => Level::Must,
        LevelName::Should => Level::Should,
    }
}

/// A fixture written into a case's directory: the file, and every file
/// written (it and its sidecars) with the bytes it was given.
pub struct Placed {
    pub file: PathBuf,
    pub originals: Vec<(PathBuf, &'static [u8])>,
}

/// Writes `entry`'s file under `name` in the case's directory, and its
/// sidecars beside it under the names SQLite looks for (`NAME-journal`).
pub fn place<E: Entry>(ctx: &Ctx, family: &str, entry: &E, name: &str) -> Result<Placed, Failure> {
    let mut originals = Vec::new();
    for stored in std::iter::once(entry.file()).chain(entry.sidecars().iter().map(String::as_str)) {
        let fixture = format!("{family}/{stored}");
        let bytes = embedded::fixture(&fixture)
            .ok_or_else(|| Failure::error(format!("fixture {fixture}"), "no such fixture in the harness"))?;
        let suffix = stored.strip_prefix(entry.file()).unwrap_or_default();
        let path = ctx.path(&format!("{name}{suffix}"));
        std::fs::write(&path, bytes)?;
        originals.push((path, bytes));
    }
    Ok(Placed { file: originals[0].0.clone(), originals })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_case_points_at_its_id_in_the_manifest() {
        for d in refusal() {
            let line: usize = d.source.rsplit(':').next().unwrap().parse().unwrap();
            let text = REFUSAL_MANIFEST.lines().nth(line - 1).unwrap();
            assert!(text.contains(&format!("{:?}", d.case.id)), "{}: line {line} is {text:?}", d.case.id);
        }
        assert!(source("compat/extra-column").unwrap().starts_with("fixtures/compat/manifest.json:"));
        assert_eq!(source("refusal/missing-path"), None);
    }
}
