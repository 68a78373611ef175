//! What the commands print: the contract's JSON shapes, and human text
//! with control characters escaped so a payload cannot drive the terminal.

use crate::{Job, QueueStats};
use base64::Engine;
use serde::Serialize;

use super::time;

#[derive(Serialize)]
pub struct JobJson {
    id: i64,
    queue: String,
    state: &'static str,
    priority: i64,
    attempts: i64,
    max_attempts: i64,
    run_at: Option<String>,
    lease_until: Option<String>,
    last_error: Option<String>,
    created_at: Option<String>,
    updated_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload_base64: Option<String>,
}

impl From<&Job> for JobJson {
    fn from(job: &Job) -> Self {
        let (payload, payload_base64) = payload_fields(&job.payload);
        JobJson {
            id: job.id,
            queue: job.queue.clone(),
            state: job.state.as_str(),
            priority: job.priority,
            attempts: job.attempts,
            max_attempts: job.max_attempts,
            run_at: Some(time::format(job.run_at)),
            lease_until: job.lease_until.map(time::format),
            last_error: job.last_error.clone(),
            created_at: Some(time::format(job.created_at)),
            updated_at: Some(time::format(job.updated_at)),
            payload,
            payload_base64,
        }
    }
}

/// A payload is shown as text when it is valid UTF-8, else as base64.
pub fn payload_fields(bytes: &[u8]) -> (Option<String>, Option<String>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (Some(text.to_string()), None),
        Err(_) => (None, Some(base64::engine::general_purpose::STANDARD.encode(bytes))),
    }
}

#[derive(Serialize)]
pub struct StatsJson {
    queues: Vec<QueueStatsJson>,
}

#[derive(Serialize)]
struct QueueStatsJson {
    queue: String,
    ready: i64,
    delayed: i64,
    running: i64,
    expired: i64,
    dead: i64,
    done: i64,
    oldest_due: Option<String>,
}

impl StatsJson {
    pub fn new(stats: &[QueueStats]) -> Self {
        StatsJson {
            queues: stats
                .iter()
                .map(|s| QueueStatsJson {
                    queue: s.queue.clone(),
                    ready: s.ready,
                    delayed: s.delayed,
                    running: s.running,
                    expired: s.expired,
                    dead: s.dead,
                    done: s.done,
                    oldest_due: s.oldest_due.map(time::format),
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
pub struct ListJson {
    pub jobs: Vec<JobJson>,
}

/// Text for a terminal: every control character (U+0000 to U+001F,
/// U+007F, U+0080 to U+009F) written as `\xNN` (spec/COMMAND.md
/// `text.escape`), newlines and tabs as `\n` and `\t` so that a field
/// stays on its line, and backslashes doubled so the escaping can be read
/// back.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// A payload for a terminal: escaped text, or base64 when not UTF-8.
pub fn payload_text(bytes: &[u8]) -> String {
    match payload_fields(bytes) {
        (Some(text), _) => escape(&text),
        (_, Some(b64)) => format!("(base64) {b64}"),
        _ => String::new(),
    }
}

/// Left-aligned columns, two spaces apart.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_control_characters() {
        assert_eq!(escape("a\x1b[31mb\n"), "a\\x1b[31mb\\n");
        assert_eq!(escape("\r\0\x7f\u{85}\u{9f}\t\\"), "\\x0d\\x00\\x7f\\x85\\x9f\\t\\\\");
        assert_eq!(escape("plain é"), "plain é");
        assert_eq!(payload_text(&[0xff, 0x00]), "(base64) /wA=");
    }
}
