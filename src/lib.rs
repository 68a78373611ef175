//! ukue: a job queue that lives in one SQLite file.
//!
//! This crate is the reference implementation of the ukue file format,
//! version 1 (spec/FORMAT.md). Every SQL statement it runs is taken from
//! FORMAT.md when it is built ([`spec`]).
//!
//! ```no_run
//! use std::time::Duration;
//! use ukue::{NewJob, Ukue};
//! let mut file = Ukue::create("jobs.ukue")?;
//! file.add(&NewJob::new("emails", b"hello".to_vec()))?;
//! if let Some(job) = file.claim("emails", Duration::from_secs(60))? {
//!     file.finish(job.id, &job.token, false)?;
//! }
//! # Ok::<(), ukue::Error>(())
//! ```
//!
//! Durations (leases, delays, retries) are [`std::time::Duration`]s;
//! points in time (`run_at`, `lease_until`, a [`Clock`]'s now) are
//! [`Millis`], the milliseconds since 1970 that the file stores.
//!
//! Features: `cli` (on by default) builds the `ukue` command and pulls in
//! what only it needs; without it the crate depends on rusqlite,
//! thiserror and getrandom alone. `fault-injection` is for this crate's
//! own crash tests and nothing else.
#![warn(missing_docs)]

mod busy;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
mod clock;
mod error;
#[cfg(feature = "fault-injection")]
#[doc(hidden)]
pub mod fault;
#[cfg(not(feature = "fault-injection"))]
mod fault;
mod file;
mod job;
mod open;
pub mod spec;
mod token;
pub mod validate;
pub mod worker;

pub use clock::{Clock, ManualClock, Millis, SystemClock};
pub use error::{Error, Invalid, Refusal, Result, FORMAT_VERSION};
pub use file::{add_in, Ukue};
pub use job::{
    Claim, Claimed, Failed, Job, JobId, ListFilter, ListState, NewJob, QueueStats, Retry, RunAt, State,
    DEFAULT_LEASE, DEFAULT_MAX_ATTEMPTS,
};
pub use open::{Access, OpenOptions};
pub use spec::{Invariant, Spec, Stmt};
