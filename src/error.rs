//! The library's typed errors.

use std::path::PathBuf;

use crate::job::JobId;

/// The file format version this library reads and writes.
pub const FORMAT_VERSION: i64 = 1;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a file was refused (FORMAT.md §2.3). A refused file is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{path}: no such file")]
    NotFound { path: PathBuf },
    #[error("{path}: not a SQLite database")]
    NotADatabase { path: PathBuf },
    #[error("{path}: no ukue tables (ukue_meta, ukue_jobs) in this SQLite database")]
    NotUkue { path: PathBuf },
    #[error("{path}: has {present} but not {missing}; a half-made ukue file")]
    PartialSchema { path: PathBuf, present: String, missing: String },
    #[error("{path}: ukue_meta has no format_version row")]
    MissingVersion { path: PathBuf },
    #[error("{path}: format_version {value:?} is not a ukue file format version (a whole number from 1)")]
    BadVersion { path: PathBuf, value: String },
    #[error("{path}: ukue file format {found} is newer than this program knows (format {known})")]
    NewerVersion { path: PathBuf, found: i64, known: i64 },
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
pub enum Invalid {
    #[error("queue name must be 1 to 200 characters, got {0}")]
    QueueLength(usize),
    #[error("queue name must not contain NUL")]
    QueueNul,
    #[error("priority must be from -100 to 100, got {0}")]
    Priority(i64),
    #[error("max attempts must be at least 1, got {0}")]
    MaxAttempts(i64),
    #[error("lease must be at least 1 ms, got {0} ms")]
    Lease(i64),
    #[error("delay must not be negative, got {0} ms")]
    Delay(i64),
    /// `now` plus this duration is past the largest time (i64 ms) a file holds.
    #[error("{0} ms from now is past the largest time a ukue file can hold")]
    TooLong(i64),
    #[error("purge takes state dead or done, got {0:?}")]
    PurgeState(String),
    #[error("list limit must be from 1 to 1000, got {0}")]
    Limit(i64),
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The caller no longer holds the job (FORMAT.md §5.5).
    #[error("job {id}: lease lost (the job was reaped, claimed again, finished or deleted)")]
    LeaseLost { id: JobId },
    #[error("job {id}: no such job")]
    JobNotFound { id: JobId },
    #[error("job {id} is {state}, not dead")]
    NotDead { id: JobId, state: String },
    #[error("spec/FORMAT.md: {0}")]
    Spec(String),
    #[error("{0}")]
    Corrupt(String),
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
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
