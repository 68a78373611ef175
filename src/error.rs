//! The library's typed errors.

use std::path::PathBuf;
use std::time::Duration;

use crate::job::JobId;

/// The file format version this library reads and writes.
pub const FORMAT_VERSION: i64 = 1;

/// A result whose error is, unless said otherwise, the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a file was refused (FORMAT.md §2.3). A refused file is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// Nothing is at the path (and the caller did not ask to create it).
    #[error("{path}: no such file")]
    NotFound {
        /// The path as given.
        path: PathBuf,
    },
    /// The file is not an SQLite database.
    #[error("{path}: not a SQLite database")]
    NotADatabase {
        /// The path as given.
        path: PathBuf,
    },
    /// An SQLite database without the ukue tables.
    #[error("{path}: no ukue tables (ukue_meta, ukue_jobs) in this SQLite database")]
    NotUkue {
        /// The path as given.
        path: PathBuf,
    },
    /// One of the two tables is there and the other is not.
    #[error("{path}: has {present} but not {missing}; a half-made ukue file")]
    PartialSchema {
        /// The path as given.
        path: PathBuf,
        /// The table that is there.
        present: String,
        /// The table that is not.
        missing: String,
    },
    /// `ukue_meta` lacks the `format_version` key.
    #[error("{path}: ukue_meta has no format_version row")]
    MissingVersion {
        /// The path as given.
        path: PathBuf,
    },
    /// `format_version` is not a whole number from 1.
    #[error("{path}: format_version {value:?} is not a ukue file format version (a whole number from 1)")]
    BadVersion {
        /// The path as given.
        path: PathBuf,
        /// The stored value, as text.
        value: String,
    },
    /// A format version this library does not know.
    #[error("{path}: ukue file format {found} is newer than this program knows (format {known})")]
    NewerVersion {
        /// The path as given.
        path: PathBuf,
        /// The file's version.
        found: i64,
        /// The newest version this program knows: its page's
        /// ([`FORMAT_VERSION`] for the builtin one).
        known: i64,
    },
}

impl Refusal {
    /// A stable name for each kind of refusal (fixtures/refusal/manifest.json).
    pub fn kind(&self) -> &'static str {
        match self {
            Refusal::NotFound { .. } => "not_found",
            Refusal::NotADatabase { .. } => "not_a_database",
            Refusal::NotUkue { .. } => "not_ukue",
            Refusal::PartialSchema { .. } => "partial_schema",
            Refusal::MissingVersion { .. } => "missing_version",
            Refusal::BadVersion { .. } => "bad_version",
            Refusal::NewerVersion { .. } => "newer_version",
        }
    }
}

/// Input that no step accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Invalid {
    /// A queue name of this many characters (it takes 1 to 200).
    #[error("queue name must be 1 to 200 characters, got {0}")]
    QueueLength(usize),
    /// A queue name with a NUL character.
    #[error("queue name must not contain NUL")]
    QueueNul,
    /// A priority outside -100 to 100.
    #[error("priority must be from -100 to 100, got {0}")]
    Priority(i64),
    /// A max_attempts below 1.
    #[error("max attempts must be at least 1, got {0}")]
    MaxAttempts(i64),
    /// A lease shorter than one millisecond (the file holds whole ms).
    #[error("lease must be at least 1 ms, got {0:?}")]
    Lease(Duration),
    /// `now` plus this duration is past the largest time (i64 ms) a file holds.
    #[error("{0:?} from now is past the largest time a ukue file can hold")]
    TooLong(Duration),
    /// Purge takes `dead` or `done`; the state it was given.
    #[error("purge takes state dead or done, got {0:?}")]
    PurgeState(String),
    /// A list limit outside 1 to 1000.
    #[error("list limit must be from 1 to 1000, got {0}")]
    Limit(i64),
}

/// What a step can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file is not one this library opens; it is unchanged.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The step's input; nothing was written.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The caller no longer holds the job (FORMAT.md §5.5).
    #[error("job {id}: lease lost (the job was reaped, claimed again, finished or deleted)")]
    LeaseLost {
        /// The job the caller held.
        id: JobId,
    },
    /// No job has this id.
    #[error("job {id}: no such job")]
    JobNotFound {
        /// The id asked for.
        id: JobId,
    },
    /// Retry takes a dead job only.
    #[error("job {id} is {state}, not dead")]
    NotDead {
        /// The job asked for.
        id: JobId,
        /// Its state.
        state: String,
    },
    /// A FORMAT.md that does not give the statements the library runs.
    #[error("spec/FORMAT.md: {0}")]
    Spec(String),
    /// The file holds what no step writes.
    #[error("{0}")]
    Corrupt(String),
    /// SQLite's own error (a busy file among them: see [`Error::is_busy`]).
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// An error of the operating system.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Error {
    /// True for a transient lock conflict that a later try may get past.
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            Error::Sqlite(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    }
}
