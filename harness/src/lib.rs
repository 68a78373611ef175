//! The ukue conformance suite. The modules follow the pipeline:
//! cases (generate) → ctx and subject (run subjects) → history → check →
//! report, with [`runner`] driving it and [`probe`] the command that the
//! subjects' workers run.

pub mod bench;
pub mod broken;
pub mod case;
pub mod cases;
pub mod check;
pub mod conformance;
pub mod ctx;
pub mod driver;
pub mod embedded;
pub mod fuzzing;
pub mod history;
pub mod model;
pub mod powerloss;
pub mod probe;
pub mod process;
pub mod report;
pub mod rules;
pub mod runner;
pub mod strace;
pub mod subject;
pub mod syscalls;
