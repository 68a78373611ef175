//! What the runner carries inside itself, so that a third party needs only
//! the binary: FORMAT.md, add_job.py, the Python step driver (with the
//! steps it imports) and the fixture files.

pub const FORMAT_MD: &str = include_str!("../../spec/FORMAT.md");
pub const CONFORMANCE_MD: &str = include_str!("../../spec/CONFORMANCE.md");
pub const ADD_JOB_PY: &str = include_str!("../../clients/python/add_job.py");
pub const UKUE_DRIVER_PY: &str = include_str!("../../clients/python/ukue_driver.py");
/// The steps ukue_driver.py imports: written beside it.
pub const UKUE_STEPS_PY: &str = include_str!("../../clients/python/ukue_steps.py");

pub const REFUSAL_MANIFEST: &str = include_str!("../../fixtures/refusal/manifest.json");
pub const COMPAT_MANIFEST: &str = include_str!("../../fixtures/compat/manifest.json");

/// Every fixture file, by its path under fixtures/ (`refusal/empty.ukue`):
/// harness/build.rs lists the folders, so a new fixture needs no line here.
pub const FIXTURES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/fixtures.rs"));

pub fn fixture(name: &str) -> Option<&'static [u8]> {
    FIXTURES.iter().find(|(n, _)| *n == name).map(|(_, bytes)| *bytes)
}
