//! What the runner carries inside itself, so that a third party needs only
//! the binary: FORMAT.md, add_job.py and the fixture files.

pub const FORMAT_MD: &str = include_str!("../../spec/FORMAT.md");
pub const CONFORMANCE_MD: &str = include_str!("../../spec/CONFORMANCE.md");
pub const ADD_JOB_PY: &str = include_str!("../../clients/python/add_job.py");
pub const UKUE_DRIVER_PY: &str = include_str!("../../clients/python/ukue_driver.py");

pub const REFUSAL_MANIFEST: &str = include_str!("../../fixtures/refusal/manifest.json");
pub const COMPAT_MANIFEST: &str = include_str!("../../fixtures/compat/manifest.json");

macro_rules! fixtures {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_bytes!(concat!("../../fixtures/", $name)) as &[u8]),)*]
    };
}

/// Every fixture file, by its path under fixtures/.
pub const FIXTURES: &[(&str, &[u8])] = fixtures![
    "refusal/format-version-2.ukue",
    "refusal/format-version-abc.ukue",
    "refusal/format-version-0.ukue",
    "refusal/missing-version.ukue",
    "refusal/no-meta-table.ukue",
    "refusal/not-sqlite.ukue",
    "refusal/empty.ukue",
    "refusal/plain-sqlite.db",
    "compat/extra-column.ukue",
    "compat/extra-index.ukue",
    "compat/extra-meta-key.ukue",
    "compat/app-database.db",
    "compat/text-payload.ukue",
];

pub fn fixture(name: &str) -> Option<&'static [u8]> {
    FIXTURES.iter().find(|(n, _)| *n == name).map(|(_, bytes)| *bytes)
}
