//! The operations of a model-based run: what one logical worker does, or
//! the clock moving. A script file is these as JSON lines.
//!
//! Jobs and tokens are named by the step that made them, never by the
//! values a run happened to see: `label` of an add names its job, `label`
//! of a claim names the token (and job) it took, and later steps refer to
//! those labels. A sequence with steps removed (shrunk) keeps its meaning.
//!
//! [`Op`] is the harness's only `Op`: an operation of a case's history is
//! a [`HistoryOp`](crate::history::HistoryOp), a change to a file's bytes
//! in a trace a [`Change`](crate::subjects::observe::recording::Change).

use serde::{Deserialize, Serialize};

use crate::subjects::driver::Request;

/// The name an add gives its job, or a claim its token.
pub type Label = u32;

/// How a holder fails its job (FORMAT.md §5.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailHow {
    /// Ready after the backoff (dead on the last attempt).
    Backoff,
    /// Ready after this many ms (dead on the last attempt).
    After(i64),
    /// Dead at once.
    Permanent,
}

/// What purge takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PurgeState {
    Dead,
    Done,
}

impl PurgeState {
    pub fn as_str(self) -> &'static str {
        match self {
            PurgeState::Dead => "dead",
            PurgeState::Done => "done",
        }
    }
}

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Adds job `label` (payload `job <label>`), due `delay_ms` from now.
    Add {
        worker: u8,
        label: Label,
        queue: String,
        priority: i64,
        max_attempts: i64,
        delay_ms: i64,
    },
    /// Claims the next due job of `queue`; `label` names what it took.
    Claim {
        worker: u8,
        label: Label,
        queue: String,
        lease_ms: i64,
    },
    /// A holder step with the token of claim `claim` (or, `forged`, with a
    /// token nobody was given) on the job that claim took (or, `job_of`,
    /// on the job another claim took: a step that names one job with the
    /// token of another must be refused, and a statement that picks the
    /// row by anything but `id =` would take it).
    Finish {
        worker: u8,
        claim: Label,
        keep_done: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        forged: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        job_of: Option<Label>,
    },
    Fail {
        worker: u8,
        claim: Label,
        how: FailHow,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        forged: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        job_of: Option<Label>,
    },
    Renew {
        worker: u8,
        claim: Label,
        lease_ms: i64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        forged: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        job_of: Option<Label>,
    },
    Release {
        worker: u8,
        claim: Label,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        forged: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        job_of: Option<Label>,
    },
    /// Retries job `job` (an add's label).
    Retry {
        worker: u8,
        job: Label,
    },
    RetryAll {
        worker: u8,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        queue: Option<String>,
    },
    /// Deletes job `job` (an add's label).
    Delete {
        worker: u8,
        job: Label,
    },
    Purge {
        worker: u8,
        state: PurgeState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        queue: Option<String>,
    },
    Stats {
        worker: u8,
    },
    /// The clock moves `ms` forward (every worker shares the clock).
    Advance {
        ms: i64,
    },
}

/// The token a forged holder step presents when it has no claim's token
/// to forge: no claim ever gives it.
pub const FORGED_TOKEN: &str = "forged-token-00000000000000000000";

/// A forgery of `token`: its last character one before or after (which,
/// depends on the character), so that the forgery sorts next to the real
/// one, on either side, and a statement that compares tokens with
/// anything but `=` takes it (tokens are random: no claim gives it).
pub fn forge(token: &str) -> String {
    let mut chars: Vec<char> = token.chars().collect();
    if let Some(last) = chars.last_mut() {
        let code = u32::from(*last);
        let near = if code % 2 == 0 { code.saturating_sub(1) } else { code + 1 };
        *last = char::from_u32(near).filter(|c| c != last).unwrap_or('!');
    }
    chars.into_iter().collect()
}

impl Op {
    /// The worker that performs the step (none for a clock advance).
    pub fn worker(&self) -> Option<u8> {
        match self {
            Op::Add { worker, .. }
            | Op::Claim { worker, .. }
            | Op::Finish { worker, .. }
            | Op::Fail { worker, .. }
            | Op::Renew { worker, .. }
            | Op::Release { worker, .. }
            | Op::Retry { worker, .. }
            | Op::RetryAll { worker, .. }
            | Op::Delete { worker, .. }
            | Op::Purge { worker, .. }
            | Op::Stats { worker } => Some(*worker),
            Op::Advance { .. } => None,
        }
    }

    /// The payload of the job an add makes.
    pub fn payload(label: Label) -> String {
        format!("job {label}")
    }

    /// The error text a fail of claim `claim` stores.
    pub fn fail_text(claim: Label) -> String {
        format!("failed by claim {claim}")
    }

    /// One line of a script.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("an op is JSON")
    }

    /// Builds the request for this op, given the job id and token it acts
    /// on (holder steps), or the job id (retry, delete).
    pub fn request(&self, now: i64, id: Option<i64>, token: Option<&str>) -> Option<Request> {
        let now_ms = Some(now);
        let token = |forged: bool| match (forged, token) {
            (false, token) => token.unwrap_or("").to_string(),
            (true, Some(token)) => forge(token),
            (true, None) => FORGED_TOKEN.to_string(),
        };
        Some(match self {
            Op::Add { label, queue, priority, max_attempts, delay_ms, .. } => Request::Add {
                queue: queue.clone(),
                payload: Op::payload(*label),
                priority: Some(*priority),
                max_attempts: Some(*max_attempts),
                delay_ms: Some(*delay_ms),
                now_ms,
            },
            Op::Claim { queue, lease_ms, .. } => {
                Request::Claim { queue: queue.clone(), lease_ms: *lease_ms, now_ms }
            }
            Op::Finish { keep_done, forged, .. } => {
                Request::Finish { id: id?, token: token(*forged), keep_done: *keep_done, now_ms }
            }
            Op::Fail { claim, how, forged, .. } => Request::Fail {
                id: id?,
                token: token(*forged),
                error: Op::fail_text(*claim),
                permanent: matches!(how, FailHow::Permanent),
                retry_in_ms: match how {
                    FailHow::After(ms) => Some(*ms),
                    _ => None,
                },
                now_ms,
            },
            Op::Renew { lease_ms, forged, .. } => {
                Request::Renew { id: id?, token: token(*forged), lease_ms: *lease_ms, now_ms }
            }
            Op::Release { forged, .. } => Request::Release { id: id?, token: token(*forged), now_ms },
            Op::Retry { .. } => Request::Retry { id: Some(id?), all: false, queue: None, now_ms },
            Op::RetryAll { queue, .. } => {
                Request::Retry { id: None, all: true, queue: queue.clone(), now_ms }
            }
            Op::Delete { .. } => Request::Delete { id: id?, now_ms },
            Op::Purge { state, queue, .. } => {
                Request::Purge { state: state.as_str().to_string(), queue: queue.clone(), now_ms }
            }
            Op::Stats { .. } => Request::Stats { now_ms },
            Op::Advance { .. } => return None,
        })
    }
}

/// Reads a script: one op a JSON line; blank lines and `#` comments are
/// skipped.
pub fn parse_script(text: &str) -> Result<Vec<Op>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(n, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}: {l}", n + 1)))
        .collect()
}

/// Writes a script: `comments` as `#` lines, then one op a line.
pub fn script_text(comments: &[String], ops: &[Op]) -> String {
    let mut text = String::new();
    for c in comments {
        for line in c.lines() {
            text.push_str("# ");
            text.push_str(line);
            text.push('\n');
        }
    }
    for op in ops {
        text.push_str(&op.to_line());
        text.push('\n');
    }
    text
}
