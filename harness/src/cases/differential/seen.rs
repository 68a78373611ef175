//! What a side did, in terms both sides can be compared in: its jobs
//! named by the add that made them, and with what the contract leaves to
//! each program taken out (ids, times, tokens, the words of an error, a
//! ready job shown as `delayed`, a `last_error` of null or `""`).

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde_json::Value;

use crate::shown;
use crate::subjects::ctx::clip as clip_text;
use crate::subjects::observe::file::rows;
use crate::subjects::Failure;

/// A side's jobs: the id of each add's job, by label.
#[derive(Debug, Default, Clone)]
pub struct Ids {
    by_label: HashMap<usize, i64>,
}

impl Ids {
    pub fn insert(&mut self, label: usize, id: i64) {
        self.by_label.insert(label, id);
    }

    pub fn id(&self, label: usize) -> Option<i64> {
        self.by_label.get(&label).copied()
    }

    /// `#label` for a job of this side, `?id` for one no add of it made.
    pub fn name(&self, id: i64) -> String {
        match self.by_label.iter().find(|(_, &i)| i == id) {
            Some((label, _)) => format!("#{label}"),
            None => format!("?{id}"),
        }
    }
}

/// A row of `ukue_jobs`, as far as the two sides must agree on it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Job {
    pub name: String,
    pub queue: String,
    pub state: String,
    pub priority: i64,
    pub attempts: i64,
    pub max_attempts: i64,
    /// `run_at` is now or past (the sequences use no delay near now).
    pub due: bool,
    pub leased: bool,
    pub failed: bool,
    pub payload: Vec<u8>,
}

impl fmt::Display for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}{} priority {} attempts {}/{}{}{} payload {}",
            self.name,
            shown::text(&self.queue),
            self.state,
            if self.state == "ready" && !self.due { " (not yet due)" } else { "" },
            self.priority,
            self.attempts,
            self.max_attempts,
            if self.leased { " leased" } else { "" },
            if self.failed { " with a last_error" } else { "" },
            clipped_payload(&self.payload),
        )
    }
}

fn clipped_payload(bytes: &[u8]) -> String {
    if bytes.len() > 40 {
        format!("{}…({} bytes)", shown::payload(&bytes[..12]), bytes.len())
    } else {
        shown::payload(bytes)
    }
}

/// Every job of the file, in label order.
pub fn jobs(file: &Path, ids: &Ids, now_ms: i64) -> Result<Vec<Job>, Failure> {
    let mut jobs: Vec<Job> = rows(file)?
        .into_iter()
        .map(|r| Job {
            name: ids.name(r.id),
            queue: r.queue,
            state: r.state,
            priority: r.priority,
            attempts: r.attempts,
            max_attempts: r.max_attempts,
            due: r.run_at <= now_ms,
            leased: r.lease_until.is_some(),
            failed: r.last_error.is_some_and(|e| !e.is_empty()),
            payload: r.payload,
        })
        .collect();
    jobs.sort_by_key(|j| label_order(&j.name));
    Ok(jobs)
}

fn label_order(name: &str) -> (bool, i64) {
    let number = name[1..].parse().unwrap_or(i64::MAX);
    (name.starts_with('?'), number)
}

/// What `list`, `show` or `stats` printed with `--json`, with what may
/// differ between programs taken out; an error when it is no JSON.
pub fn json(stdout: &[u8], ids: &Ids) -> Result<Value, String> {
    let text = std::str::from_utf8(stdout).map_err(|e| format!("stdout is not UTF-8 ({e})"))?;
    let mut value: Value =
        serde_json::from_str(text).map_err(|e| format!("stdout is no JSON ({e}): {}", clip_text(text)))?;
    normalize(&mut value, ids);
    Ok(value)
}

fn normalize(value: &mut Value, ids: &Ids) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| normalize(v, ids)),
        Value::Object(map) => {
            if map.contains_key("queues") || map.contains_key("jobs") {
                map.values_mut().for_each(|v| normalize(v, ids));
                return;
            }
            if map.contains_key("oldest_due") {
                // A stats row: the counts are the rows', the time is now's.
                let due = map.get("oldest_due").is_some_and(|t| !t.is_null());
                map.insert("oldest_due".into(), Value::from(if due { "set" } else { "null" }));
                return;
            }
            // A JOB (COMMAND.md §12).
            if let Some(id) = map.get("id").and_then(Value::as_i64) {
                map.insert("id".into(), Value::from(ids.name(id)));
            }
            for time in ["created_at", "updated_at", "run_at"] {
                if map.contains_key(time) {
                    map.insert(time.into(), Value::from("…"));
                }
            }
            if let Some(lease) = map.get("lease_until") {
                let set = !lease.is_null();
                map.insert("lease_until".into(), Value::from(if set { "set" } else { "null" }));
            }
            if let Some(error) = map.get("last_error") {
                let set = error.as_str().is_some_and(|e| !e.is_empty());
                map.insert("last_error".into(), Value::from(if set { "set" } else { "none" }));
            }
            if map.get("state").and_then(Value::as_str) == Some("delayed") {
                map.insert("state".into(), Value::from("ready"));
            }
        }
        _ => {}
    }
}

/// A JSON value on one line, cut for a report.
pub fn clip(value: &Value) -> String {
    clip_text(&value.to_string())
}
