//! Setting files up: a subject-made file, and rows written into it with
//! plain SQL (the format is the contract).

use std::path::Path;

use rusqlite::types::Value as SqlValue;

use crate::subjects::observe::file::write;
use crate::subjects::Failure;

/// A row to write with plain SQL.
#[derive(Debug, Clone)]
pub(crate) struct Put {
    queue: &'static str,
    payload: SqlValue,
    state: &'static str,
    priority: i64,
    attempts: i64,
    max_attempts: i64,
    run_at: i64,
    lease_until: Option<i64>,
    token: Option<String>,
    last_error: Option<&'static str>,
    created_at: i64,
    updated_at: i64,
}

impl Put {
    /// A job of `queue` in `state`, due a second ago, made a minute ago
    /// (with odd milliseconds, so that times show them). Running jobs get
    /// a token and a lease an hour ahead.
    pub(crate) fn new(queue: &'static str, state: &'static str, now: i64) -> Put {
        let running = state == "running";
        Put {
            queue,
            payload: SqlValue::Text(format!("{queue}-{state}")),
            state,
            priority: 0,
            attempts: if state == "ready" { 0 } else { 1 },
            max_attempts: 10,
            run_at: now - 1_000,
            lease_until: running.then_some(now + 3_600_000),
            token: running.then(|| format!("token-{queue}-{now}")),
            last_error: (state == "dead").then_some("exit status 3"),
            created_at: now - 60_123,
            updated_at: now - 30_457,
        }
    }
    pub(crate) fn text(mut self, text: &str) -> Put {
        self.payload = SqlValue::Text(text.to_string());
        self
    }
    pub(crate) fn blob(mut self, bytes: &[u8]) -> Put {
        self.payload = SqlValue::Blob(bytes.to_vec());
        self
    }
    pub(crate) fn priority(mut self, priority: i64) -> Put {
        self.priority = priority;
        self
    }
    pub(crate) fn attempts(mut self, attempts: i64, max_attempts: i64) -> Put {
        self.attempts = attempts;
        self.max_attempts = max_attempts;
        self
    }
    pub(crate) fn run_at(mut self, run_at: i64) -> Put {
        self.run_at = run_at;
        self
    }
    pub(crate) fn lease(mut self, lease_until: i64, token: &str) -> Put {
        self.lease_until = Some(lease_until);
        self.token = Some(token.to_string());
        self
    }
    pub(crate) fn error(mut self, error: &'static str) -> Put {
        self.last_error = Some(error);
        self
    }
}

/// Writes the rows in one transaction; returns their ids.
pub(crate) fn insert(file: &Path, puts: &[Put]) -> Result<Vec<i64>, Failure> {
    let mut conn = write(file)?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut ids = Vec::new();
    for p in puts {
        tx.execute(
            "INSERT INTO ukue_jobs (queue, payload, state, priority, attempts, max_attempts, run_at, lease_until, \
             token, last_error, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            rusqlite::params![
                p.queue,
                p.payload,
                p.state,
                p.priority,
                p.attempts,
                p.max_attempts,
                p.run_at,
                p.lease_until,
                p.token,
                p.last_error,
                p.created_at,
                p.updated_at
            ],
        )?;
        ids.push(tx.last_insert_rowid());
    }
    tx.commit()?;
    Ok(ids)
}
