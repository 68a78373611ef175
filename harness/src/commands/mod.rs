//! The binaries, one file each; `src/bin/*.rs` call their `main`:
//!
//! - [`conformance`]: `ukue-conformance`, the runner, with its `model` and
//!   `replay` subcommands;
//! - [`probe`]: `ukue-probe`, the command that `ukue work` runs in the cases;
//! - [`broken`]: `ukue-broken`, a deliberately broken `ukue`;
//! - [`driver`]: `ukue-driver`, the step-driver protocol over the reference;
//! - [`shard`]: the runner's `--partition`, soak flags and `merge`.
//!
//! `ukue-bench` is [`crate::bench`].
//!
//! [`conformance`]: crate::commands::conformance
//! [`probe`]: crate::commands::probe
//! [`broken`]: crate::commands::broken
//! [`driver`]: crate::commands::driver
//! [`shard`]: crate::commands::shard

pub mod broken;
pub mod conformance;
pub mod driver;
pub mod probe;
pub mod shard;
