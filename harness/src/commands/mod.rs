//! The binaries, one file each; `src/bin/*.rs` call their `main`:
//!
//! - [`conformance`]: `ukue-conformance`, the runner, with its `model` and
//!   `replay` subcommands;
//! - [`probe`]: `ukue-probe`, the command that `ukue work` runs in the cases;
//! - [`broken`]: `ukue-broken`, a deliberately broken `ukue`;
//! - [`variant`]: `ukue-variant`, a correct `ukue` that differs from the
//!   reference;
//! - [`driver`]: `ukue-driver`, the step-driver protocol over the reference;
//! - [`merge`]: the runner's `merge`, a run's shards as one verdict;
//! - [`coverage`]: the runner's `coverage`, the rules of FORMAT.md and
//!   the cases that check them;
//! - [`evolve`]: the runner's `evolve`, an edit of FORMAT.md judged by
//!   the format's promise;
//! - [`compare`]: the runner's `compare`, implementations side by side;
//! - [`mutation_score`]: the runner's `mutants --run-cases`, the cases
//!   judged by the mutants they kill.
//!
//! What the runner's commands share (its flags, exit statuses, a run of
//! the suite and its replay line) is [`suite`], which uses no command.
//!
//! `ukue-bench` is [`crate::bench`]; `ukue-reference` is the reference
//! `ukue` itself (`ukue::cli`), installed with the runner.
//!
//! [`conformance`]: crate::commands::conformance
//! [`probe`]: crate::commands::probe
//! [`broken`]: crate::commands::broken
//! [`variant`]: crate::commands::variant
//! [`driver`]: crate::commands::driver
//! [`merge`]: crate::commands::merge
//! [`coverage`]: crate::commands::coverage
//! [`evolve`]: crate::commands::evolve
//! [`compare`]: crate::commands::compare
//! [`mutation_score`]: crate::commands::mutation_score
//! [`suite`]: crate::commands::suite

pub mod broken;
pub mod compare;
pub mod conformance;
pub mod coverage;
pub mod driver;
pub mod evolve;
pub mod merge;
pub mod mutation_score;
pub mod probe;
pub mod suite;
pub mod variant;
