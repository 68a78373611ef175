//! The ukue conformance suite. The modules follow the pipeline: spec →
//! reference (the `ukue` crate) → generate ([`cases`]) → run subjects
//! ([`subjects`]) → [`history`] → [`check`] → [`report`], with [`runner`]
//! driving a run. [`explore`] is the same pipeline for generated step
//! sequences and fuzzing; [`commands`] and [`bench`](mod@bench) are the binaries.
//!
//! # Names
//!
//! Each name means one thing. Where two things were easy to confuse:
//!
//! - [`subjects::Failure`]: how a case went wrong; [`explore::run::ModelFailure`]:
//!   where a model run went wrong.
//! - [`check::model::Op`]: a step of a model run; [`history::HistoryOp`]: an
//!   operation of a case's history (Jepsen style);
//!   [`subjects::observe::recording::Change`]: a change to a file's bytes.
//! - [`subjects::observe::recording::Recorded`] (with its
//!   [`Effect`](subjects::observe::recording::Effect)): a traced call that
//!   reached a ukue file; [`check::durability::Sighting`] (with its
//!   [`Seen`](check::durability::Seen)): a traced call that matters to
//!   durability; [`subjects::probe::Action`]: a word of a payload script.
//! - [`subjects::worker::WorkerProcess`]: a subject's `work` process (the
//!   library's `ukue::worker::Worker` is its thread pool);
//!   [`subjects::http_worker`]: a worker over HTTP (the runner's own, a
//!   thread of a case, or http_worker.py), taking jobs from a subject's
//!   `serve` ([`subjects::server::ServerProcess`]);
//!   [`subjects::driver::ReferenceDriver`]: the reference behind the
//!   step-driver protocol (the library's `ukue::worker::Handler` runs a job).
//! - [`subjects::observe::file::Row`]: a row of `ukue_jobs`, read one way.
//! - [`spec::evolve::Finding`]: a difference between two versions of
//!   FORMAT.md, with its rule and verdict (the differential cases'
//!   `Difference` is where a subject first did otherwise than the reference).
//! - [`check::model::Allowed`]: what the model allows an op to answer;
//!   [`subjects::observe::strace::CallOutcome`]: how a traced call ended;
//!   [`cases::manifest::RefusalOutcome`]: what a refused fixture must do.
//! - [`subjects::observe::strace::TracedRun`]: a command run under strace;
//!   [`explore::run::ModelRun`]: a model run in progress.

/// Spec: FORMAT.md (embedded once, by the library) read as rules (sections, MUST and SHOULD sentences), which cases check each, CONFORMANCE.md; two versions of FORMAT.md judged by its §2.4 (`evolve`).
pub mod spec;

/// Generate: the [`Case`](cases::Case) type, every case by family, fixtures as data.
pub mod cases;

/// Run subjects: the programs under test, a case's context, processes, the probe, drivers, what is observed of them.
pub mod subjects;

/// History: what producers added and what the probe recorded, paired into executions.
pub mod history;

/// Check: delivery, file invariants, durability, crash states, and the model as the step oracle.
pub mod check;

/// Explore: generated step sequences against the model (proptest, shrinking), and the fuzz targets' logic.
pub mod explore;

/// The runner: each case in a fresh directory, in parallel, bounded by a timeout.
pub mod runner;

/// Values in the contract's terms (`null`, RFC 3339 times, JSON strings), as every failure and finding shows them.
pub mod shown;

/// Report: a case's outcome for a person, for machines (JSON), for CI (JUnit) and for a browser (HTML), with its history's timeline.
pub mod report;

/// Commands: one file per binary (`ukue-conformance`, `ukue-probe`, `ukue-broken`, `ukue-driver`).
pub mod commands;

/// The `ukue-bench` command: the reference against the disk's own ceiling.
pub mod bench;
