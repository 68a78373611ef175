//! The fixtures' manifests, fixtures/refusal/manifest.json and
//! fixtures/compat/manifest.json (fixtures/README.md): one entry a fixture
//! file, carrying the conformance cases made from it, so that a case is
//! data, as in sqllogictest or toml-test. harness/build.rs compiles this
//! module too and checks both manifests against their folders, so a
//! manifest that does not fit stops the build, naming the entry; it uses
//! nothing from the rest of the crate for that reason.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

/// How binding a case is (`crate::cases::Level`, which this module cannot
/// name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LevelName {
    Must,
    Should,
}

/// The journal mode a fixture was left in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JournalMode {
    Wal,
    Delete,
    Truncate,
    Persist,
}

impl JournalMode {
    pub fn name(self) -> &'static str {
        match self {
            JournalMode::Wal => "wal",
            JournalMode::Delete => "delete",
            JournalMode::Truncate => "truncate",
            JournalMode::Persist => "persist",
        }
    }

    /// Bytes 18 and 19 of the SQLite header: 1 for a rollback journal, 2
    /// for WAL.
    pub fn header_byte(self) -> u8 {
        if self == JournalMode::Wal {
            2
        } else {
            1
        }
    }
}

/// What commands must do with a refusal fixture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalOutcome {
    /// Exit status 1, a message, the file and its sidecars unchanged and
    /// no new file beside them.
    Refuse,
    /// Exit status 0, and the file holds the ukue tables (format_version 1)
    /// with the application's tables and id as they were.
    AddTables,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefusalExpect {
    /// Every command but init and add.
    pub others: Option<RefusalOutcome>,
    /// init and add.
    pub init_add: Option<RefusalOutcome>,
}

/// One case of an entry: what it is called and checks, and what commands
/// must do with the entry's file (`X`: [`RefusalExpect`], [`CompatExpect`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestCase<X> {
    pub id: String,
    pub rule: String,
    pub level: LevelName,
    pub summary: String,
    pub expect: X,
}

pub type RefusalCase = ManifestCase<RefusalExpect>;
pub type CompatCase = ManifestCase<CompatExpect>;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefusalEntry {
    pub file: String,
    /// Files that go beside `file` (its `-journal`), named after it.
    #[serde(default)]
    pub sidecars: Vec<String>,
    /// None for a file that is not a SQLite database (or an empty one).
    pub journal_mode: Option<JournalMode>,
    /// The kind of refusal (the reference's `Refusal::kind`).
    pub error: String,
    /// A lowercase fragment that a good message contains.
    pub message_contains: String,
    pub why: String,
    /// The application's tables and their rows, which adding the tables
    /// keeps.
    #[serde(default)]
    pub app_rows: BTreeMap<String, i64>,
    /// The application id once init or add added the tables.
    pub application_id: Option<i64>,
    pub cases: Vec<RefusalCase>,
}

/// What commands must do with a compat fixture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompatExpect {
    /// Counted, added to, listed and worked, with its additions and the
    /// application's tables kept.
    Accept,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompatEntry {
    pub file: String,
    #[serde(default)]
    pub sidecars: Vec<String>,
    pub journal_mode: Option<JournalMode>,
    pub why: String,
    /// Jobs in the file, all ready and due in queue `work`, with payloads
    /// `job-1`, `job-2`, ….
    pub jobs: i64,
    pub application_id: i64,
    #[serde(default)]
    pub app_tables: Vec<String>,
    pub cases: Vec<CompatCase>,
}

/// What both kinds of entry share, for the checks and the cases.
pub trait Entry {
    /// What its cases expect.
    type CaseExpect;
    fn file(&self) -> &str;
    fn sidecars(&self) -> &[String];
    fn journal_mode(&self) -> Option<JournalMode>;
    fn cases(&self) -> &[ManifestCase<Self::CaseExpect>];
    /// The ids of its cases.
    fn case_ids(&self) -> Vec<&str> {
        self.cases().iter().map(|c| c.id.as_str()).collect()
    }
}

/// `impl Entry for ENTRY` from its fields `file`, `sidecars`,
/// `journal_mode` and `cases`.
macro_rules! entry {
    ($entry:ty, $expect:ty) => {
        impl Entry for $entry {
            type CaseExpect = $expect;
            fn file(&self) -> &str {
                &self.file
            }
            fn sidecars(&self) -> &[String] {
                &self.sidecars
            }
            fn journal_mode(&self) -> Option<JournalMode> {
                self.journal_mode
            }
            fn cases(&self) -> &[ManifestCase<$expect>] {
                &self.cases
            }
        }
    };
}

entry!(RefusalEntry, RefusalExpect);
entry!(CompatEntry, CompatExpect);

/// Parses and checks fixtures/refusal/manifest.json.
pub fn refusal(text: &str) -> Result<Vec<RefusalEntry>, String> {
    let entries: Vec<RefusalEntry> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    check_common(&entries, "refusal")?;
    for (i, entry) in entries.iter().enumerate() {
        let at = at(i, &entry.file);
        for case in &entry.cases {
            let expect = &case.expect;
            if expect.others.is_none() && expect.init_add.is_none() {
                return Err(format!("{at}: case {} expects nothing (give `others` or `init_add`)", case.id));
            }
            if expect.others == Some(RefusalOutcome::AddTables) {
                return Err(format!(
                    "{at}: case {}: only init and add may add the tables (`others` must be \"refuse\")",
                    case.id
                ));
            }
            if expect.init_add == Some(RefusalOutcome::AddTables) && entry.application_id.is_none() {
                return Err(format!(
                    "{at}: case {} has init and add add the tables, but the entry gives no \
                     `application_id` for the file they leave",
                    case.id
                ));
            }
        }
    }
    Ok(entries)
}

/// Parses and checks fixtures/compat/manifest.json.
pub fn compat(text: &str) -> Result<Vec<CompatEntry>, String> {
    let entries: Vec<CompatEntry> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    check_common(&entries, "compat")?;
    for (i, entry) in entries.iter().enumerate() {
        if entry.jobs < 0 {
            return Err(format!("{}: `jobs` is {}, below 0", at(i, &entry.file), entry.jobs));
        }
    }
    Ok(entries)
}

fn at(index: usize, file: &str) -> String {
    format!("entry {} ({file})", index + 1)
}

fn check_common<E: Entry>(entries: &[E], family: &str) -> Result<(), String> {
    if entries.is_empty() {
        return Err("no entries".into());
    }
    let mut files = BTreeSet::new();
    let mut ids = BTreeSet::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = at(i, entry.file());
        for name in std::iter::once(entry.file()).chain(entry.sidecars().iter().map(String::as_str)) {
            if name.is_empty()
                || name.contains(['/', '\\'])
                || name.starts_with('.')
                || name == "manifest.json"
            {
                return Err(format!("{at}: {name:?} is not the name of a fixture file in fixtures/{family}"));
            }
            if !files.insert(name.to_string()) {
                return Err(format!("{at}: {name} is named by another entry too"));
            }
        }
        for sidecar in entry.sidecars() {
            // SQLite finds a sidecar by its name: the file's, and a suffix.
            let suffix = sidecar.strip_prefix(entry.file()).unwrap_or_default();
            if !["-journal", "-wal"].contains(&suffix) {
                return Err(format!(
                    "{at}: sidecar {sidecar} is not named {}-journal or {}-wal",
                    entry.file(),
                    entry.file()
                ));
            }
        }
        if entry.case_ids().is_empty() {
            return Err(format!("{at}: no cases"));
        }
        for id in entry.case_ids() {
            let name = id.strip_prefix(family).and_then(|rest| rest.strip_prefix('/')).unwrap_or_default();
            if name.is_empty() || name.contains('/') {
                return Err(format!("{at}: case id {id:?} is not {family}/NAME"));
            }
            if !ids.insert(id.to_string()) {
                return Err(format!("{at}: case id {id} is given twice"));
            }
        }
    }
    Ok(())
}

/// Checks a fixture's bytes against its entry: the SQLite header's journal
/// mode is the one the entry names, and no `-journal` beside it is hot. A
/// hot journal (one whose first byte is not 0, beside a database with
/// pages) is rolled back by SQLite itself, so a file that has one is no
/// fair case: reading it changes it.
pub fn check_bytes<E: Entry>(entry: &E, file: &[u8], sidecars: &[(&str, &[u8])]) -> Result<(), String> {
    if let Some(mode) = entry.journal_mode() {
        let want = mode.header_byte();
        let shown = |b: Option<&u8>| b.map_or("none".to_string(), u8::to_string);
        if file.get(18) != Some(&want) || file.get(19) != Some(&want) {
            return Err(format!(
                "{}: header bytes 18/19 are {}/{}, where journal mode {} has {want}/{want}",
                entry.file(),
                shown(file.get(18)),
                shown(file.get(19)),
                mode.name()
            ));
        }
    }
    for (name, bytes) in sidecars {
        if name.ends_with("-journal") && bytes.first().is_some_and(|&b| b != 0) && !file.is_empty() {
            return Err(format!(
                "{name} is a hot journal (its first byte is not 0): SQLite would roll it back"
            ));
        }
    }
    Ok(())
}
