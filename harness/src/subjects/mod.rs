//! Run subjects: the programs a run drives (the implementation under
//! test, the reference `ukue`, Python's add_job.py and step driver, the
//! probe that `work` runs), how a case starts and stops them, and what it
//! observes of them.
//!
//! - [`Failure`]: how a case went wrong, whoever found it;
//! - [`ctx`]: what a case works with: its directory, the subjects, a seeded
//!   generator, commands run to their end, waits with a deadline;
//! - [`process`]: every process in a group of its own, marked, killed at
//!   the end of its case;
//! - [`worker`]: a subject's `work` running the probe ([`WorkerProcess`]);
//! - [`probe`]: the probe's records and payload scripts;
//! - [`python`]: the Python programs the runner carries;
//! - [`broken`]: deliberately broken subjects, and [`broken_serve`] their
//!   flawed servers; [`page`]: the reference running another FORMAT.md;
//! - [`variants`]: legal variants, correct programs that differ from the
//!   reference, with [`variant_cli`] their command line and
//!   [`variant_serve`] their servers;
//! - [`server`]: a subject's `serve` and a client of its API;
//!   [`http_worker`]: workers over HTTP (the runner's own, http_worker.py);
//! - [`driver`]: the step-driver protocol, the reference behind it
//!   ([`ReferenceDriver`]) and a driver process;
//! - [`observe`]: the file as any program sees it, and strace.
//!
//! [`ctx`]: crate::subjects::ctx
//! [`process`]: crate::subjects::process
//! [`worker`]: crate::subjects::worker
//! [`WorkerProcess`]: crate::subjects::worker::WorkerProcess
//! [`probe`]: crate::subjects::probe
//! [`python`]: crate::subjects::python
//! [`broken`]: crate::subjects::broken
//! [`broken_serve`]: crate::subjects::broken_serve
//! [`page`]: crate::subjects::page
//! [`variants`]: crate::subjects::variants
//! [`variant_cli`]: crate::subjects::variant_cli
//! [`variant_serve`]: crate::subjects::variant_serve
//! [`server`]: crate::subjects::server
//! [`http_worker`]: crate::subjects::http_worker
//! [`driver`]: crate::subjects::driver
//! [`observe`]: crate::subjects::observe
//! [`ReferenceDriver`]: crate::subjects::driver::ReferenceDriver

pub mod broken;
pub mod broken_cli;
pub mod broken_serve;
pub mod ctx;
pub mod driver;
mod failure;
pub mod http_worker;
pub mod mutants;
pub mod observe;
pub mod page;
pub mod probe;
pub mod process;
pub mod python;
pub mod server;
pub mod variant_cli;
pub mod variant_serve;
pub mod variants;
pub mod worker;

use std::path::PathBuf;

pub use failure::{Failure, FailureKind, LOCKED};

/// A program with the ukue command line (spec/COMMAND.md), or the
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
    /// without the word `add`, so cases use [`ctx::Ctx::python_add`].
    pub python: Option<Subject>,
    /// The probe binary that `work` runs as its command.
    pub probe: PathBuf,
    /// strace, for the durability cases.
    pub strace: Option<PathBuf>,
    /// `python3 ukue_driver.py`, the Python step driver, when python is there.
    pub python_driver: Option<Subject>,
    /// `python3 http_worker.py`, a worker over HTTP, when python is there.
    pub python_http_worker: Option<Subject>,
}

/// The first line `PROGRAM version` prints (`ukue 0.1.0 (file format 1)`),
/// for a report; None when it does not end with exit 0 within 10 s.
pub fn version(subject: &Subject) -> Option<String> {
    let procs = process::Procs::new(format!("{}-version", std::process::id()));
    let mut cmd = std::process::Command::new(&subject.program);
    cmd.args(&subject.args)
        .arg("version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut spawned = procs.spawn(&mut cmd).ok()?;
    let status = spawned.wait_timeout(std::time::Duration::from_secs(10)).ok()??;
    let mut out = String::new();
    std::io::Read::read_to_string(&mut spawned.child.stdout.take()?, &mut out).ok()?;
    let line = out.lines().next()?.trim();
    (status.success() && !line.is_empty()).then(|| line.chars().take(200).collect())
}
