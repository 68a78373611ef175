//! ukue: a job queue that lives in one SQLite file.
//!
//! This crate is the reference implementation of the ukue file format,
//! version 1 (spec/FORMAT.md). Every SQL statement it runs is taken from
//! FORMAT.md when it is built ([`spec`]).
//!
//! ```no_run
//! use ukue::{NewJob, Ukue};
//! let mut file = Ukue::create("jobs.ukue")?;
//! file.add(&NewJob::new("emails", b"hello".to_vec()))?;
//! if let Some(job) = file.claim("emails", 60_000)? {
//!     file.finish(job.id, &job.token, false)?;
//! }
//! # Ok::<(), ukue::Error>(())
//! ```

mod busy;
#[doc(hidden)]
pub mod cli;
pub mod clock;
pub mod error;
#[doc(hidden)]
pub mod fault;
mod file;
pub mod job;
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
};
pub use open::{Access, OpenOptions};
pub use spec::{Spec, Stmt};
