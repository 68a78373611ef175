//! The programs a run drives: the implementation under test, the
//! reference `ukue`, Python's add_job.py, and the probe that `work` runs.

use std::path::PathBuf;

/// A program with the ukue command line (shared/ukue-contract.md), or the
/// subset of it that add_job.py offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// How reports name it.
    pub name: String,
    pub program: PathBuf,
    /// Arguments that come before the command's own (add_job.py's path).
    pub args: Vec<String>,
}

impl Subject {
    pub fn binary(program: impl Into<PathBuf>) -> Subject {
        let program = program.into();
        let name = program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Subject { name, program, args: Vec::new() }
    }
}

/// Everything a case may drive.
#[derive(Debug, Clone)]
pub struct Subjects {
    pub subject: Subject,
    pub reference: Subject,
    /// `python3 add_job.py`, when python is there. Its `add` is spelled
    /// without the word `add`, so cases use [`crate::ctx::Ctx::python_add`].
    pub python: Option<Subject>,
    /// The probe binary that `work` runs as its command.
    pub probe: PathBuf,
    /// strace, for the durability cases.
    pub strace: Option<PathBuf>,
    /// `python3 ukue_driver.py`, the Python step driver, when python is there.
    pub python_driver: Option<Subject>,
}
