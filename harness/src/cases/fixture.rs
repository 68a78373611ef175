//! Fixtures as data: every file of fixtures/refusal and fixtures/compat
//! and their manifests, embedded, so that the runner needs nothing beside
//! itself; the manifests parsed once, each case with the place in its
//! manifest that defines it; and a fixture written into a case's
//! directory with its sidecars. The refusal and compat families share it.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::subjects::ctx::Ctx;
use crate::subjects::Failure;

use super::manifest::{self, CompatEntry, Entry, LevelName, ManifestCase, RefusalEntry};

pub const REFUSAL_MANIFEST: &str = include_str!("../../../fixtures/refusal/manifest.json");
pub const COMPAT_MANIFEST: &str = include_str!("../../../fixtures/compat/manifest.json");

/// Every fixture file, by its path under fixtures/ (`refusal/empty.ukue`):
/// harness/build.rs lists the folders, so a new fixture needs no line here.
pub const FIXTURES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/fixtures.rs"));

/// The bytes of fixture `name` (`refusal/empty.ukue`).
pub fn bytes(name: &str) -> Option<&'static [u8]> {
    FIXTURES.iter().find(|(n, _)| *n == name).map(|(_, bytes)| *bytes)
}

/// A case of a manifest, with its entry and where it is defined.
pub struct Defined<E: Entry + 'static> {
    pub entry: &'static E,
    pub case: &'static ManifestCase<E::CaseExpect>,
    /// `fixtures/refusal/manifest.json:14`: the line of the case's id.
    pub source: String,
}

/// The refusal cases, in manifest order.
pub fn refusal() -> &'static [Defined<RefusalEntry>] {
    static CASES: OnceLock<Vec<Defined<RefusalEntry>>> = OnceLock::new();
    CASES.get_or_init(|| {
        static ENTRIES: OnceLock<Vec<RefusalEntry>> = OnceLock::new();
        let entries = ENTRIES.get_or_init(|| parsed(manifest::refusal(REFUSAL_MANIFEST), "refusal"));
        defined(entries, REFUSAL_MANIFEST, "refusal")
    })
}

/// The compat cases, in manifest order.
pub fn compat() -> &'static [Defined<CompatEntry>] {
    static CASES: OnceLock<Vec<Defined<CompatEntry>>> = OnceLock::new();
    CASES.get_or_init(|| {
        static ENTRIES: OnceLock<Vec<CompatEntry>> = OnceLock::new();
        let entries = ENTRIES.get_or_init(|| parsed(manifest::compat(COMPAT_MANIFEST), "compat"));
        defined(entries, COMPAT_MANIFEST, "compat")
    })
}

/// harness/build.rs has parsed and checked the same text with the same
/// code, so this cannot fail in a built harness.
fn parsed<T>(result: Result<T, String>, family: &str) -> T {
    result
        .unwrap_or_else(|e| panic!("fixtures/{family}/manifest.json: {e} (harness/build.rs let it through)"))
}

fn defined<E: Entry>(entries: &'static [E], text: &str, family: &str) -> Vec<Defined<E>> {
    entries
        .iter()
        .flat_map(|entry| entry.cases().iter().map(move |case| (entry, case)))
        .map(|(entry, case)| Defined { entry, case, source: source_line(text, family, &case.id) })
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

/// A case's function. A manifest's cases are `run::<0>`, `run::<1>`, …,
/// listed by harness/build.rs: a case's function takes nothing but the
/// context, so the index it is built with tells it which case it is.
pub type Run = fn(&mut Ctx) -> CaseResult;

/// The cases of a manifest, each with its function from `runs`.
pub fn cases<E: Entry>(defined: &'static [Defined<E>], runs: &[Run]) -> Vec<Case> {
    assert_eq!(runs.len(), defined.len(), "harness/build.rs counted another manifest");
    defined
        .iter()
        .zip(runs)
        .map(|(d, &run)| Case {
            id: &d.case.id,
            rule: &d.case.rule,
            summary: &d.case.summary,
            needs: Needs::default(),
            level: level(d.case.level),
            run,
        })
        .collect()
}

/// Runs a manifest case with `check`; a failure names where the case is
/// defined.
pub fn run_defined<E: Entry>(
    ctx: &mut Ctx,
    defined: &Defined<E>,
    check: fn(&mut Ctx, &E, &ManifestCase<E::CaseExpect>) -> CaseResult,
) -> CaseResult {
    check(ctx, defined.entry, defined.case).map_err(|mut f| {
        f.expected.push_str(&format!("\n(the case: {})", defined.source));
        f
    })
}

/// Where a case made from a manifest is defined; None for a case written
/// as code.
pub fn source(id: &str) -> Option<String> {
    let refusal = refusal().iter().find(|d| d.case.id == id).map(|d| d.source.clone());
    refusal.or_else(|| compat().iter().find(|d| d.case.id == id).map(|d| d.source.clone()))
}

fn level(level: LevelName) -> Level {
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
        let bytes = bytes(&fixture)
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
    use crate::cases::manifest::check_bytes;

    /// Every case of a manifest is a case of its family, names a rule of
    /// FORMAT.md, and its fixture files pass the checks harness/build.rs
    /// made of them.
    fn check_family<E: Entry>(family: &str, defined: &[Defined<E>], cases: Vec<Case>) {
        let ids: Vec<&str> = cases.iter().map(|c| c.id).collect();
        for d in defined {
            assert!(ids.contains(&d.case.id.as_str()), "{} is not a case", d.case.id);
            assert!(crate::spec::title(&d.case.rule).is_some(), "{}: no rule {}", d.case.id, d.case.rule);
            let fixture = |name: &str| bytes(&format!("{family}/{name}")).expect(name);
            let sidecars: Vec<(&str, &[u8])> =
                d.entry.sidecars().iter().map(|s| (s.as_str(), fixture(s))).collect();
            check_bytes(d.entry, fixture(d.entry.file()), &sidecars).unwrap();
        }
    }

    #[test]
    fn every_manifest_case_is_a_case_with_a_rule_and_its_files() {
        check_family("refusal", refusal(), super::super::refusal::cases());
        check_family("compat", compat(), super::super::compat::cases());
    }

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
