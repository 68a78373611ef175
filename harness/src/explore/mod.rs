//! Explore: the pipeline again for generated step sequences. [`gen`]
//! generates sequences of steps by several workers from the model
//! (crate::check::model); [`run`] performs them against a subject (the
//! reference in this process, or a step-driver process), checks every
//! answer and the file after every step against the model, and shrinks a
//! failing sequence; [`fuzzing`] is the fuzz targets' logic, on the same
//! runs; [`fuzz_serve`] the HTTP server's target, [`fuzz_cli`] the
//! command line's.
//!
//! [`gen`]: crate::explore::gen
//! [`run`]: crate::explore::run
//! [`fuzzing`]: crate::explore::fuzzing
//! [`fuzz_serve`]: crate::explore::fuzz_serve
//! [`fuzz_cli`]: crate::explore::fuzz_cli

pub mod fuzz_cli;
pub mod fuzz_serve;
pub mod fuzzing;
pub mod gen;
pub mod run;
