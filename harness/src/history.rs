//! History: what happened in a run: the jobs producers added (with the ids
//! they printed), every execution the probe recorded, paired start to end,
//! and the file's jobs at the end. Kept with a failing case as Jepsen-style
//! operations ([`HistoryOp`]).
//!
//! [`HistoryOp`]: crate::history::HistoryOp

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::shown::{rfc3339, time_or_null, Shown};
use crate::subjects::observe::file::open_read_only;
use crate::subjects::probe::{Record, RecordKind};

/// A job a producer added and acknowledged (printed its id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    pub job: i64,
    pub payload: String,
    /// Which program added it.
    pub by: String,
}

/// An add whose producer was killed before it printed an id: it
/// committed, or it did not, and only the file and the runs can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAdd {
    pub payload: String,
    pub by: String,
}

/// One run of a job's command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Execution {
    pub job: i64,
    pub attempt: i64,
    pub max_attempts: i64,
    pub pid: u32,
    pub worker_pid: u32,
    pub start_ms: i64,
    /// None when the probe never wrote its end (it was killed).
    pub end_ms: Option<i64>,
    pub held_at_start: Option<bool>,
    /// Not held at its start because the job had been reaped (and maybe
    /// claimed again): its claim had committed, and its lease ran out
    /// before the command started.
    pub reaped_before_start: bool,
    pub held_at_end: Option<bool>,
    pub exit: Option<i32>,
    pub payload: String,
    /// The job's token while this run held it (as text), and SQLite's type
    /// of it: what the file showed at the run's start.
    pub token: Option<String>,
    pub token_type: Option<String>,
    /// When the claim took the job: its `updated_at` at the run's start.
    pub claimed_ms: Option<i64>,
    /// The lease's end as the run last saw it (at its end if it still held
    /// the job then, else at its start).
    pub lease_until: Option<i64>,
}

/// A run on one line, for a failure, in the contract's terms.
impl Shown for Execution {
    fn shown(&self) -> String {
        format!(
            "job {} attempt {}/{} (pid {}, worker {}, start {}, end {}, exit {}, payload {}, token {}, lease_until {})",
            self.job,
            self.attempt,
            self.max_attempts,
            self.pid,
            self.worker_pid,
            rfc3339(self.start_ms),
            time_or_null(self.end_ms),
            self.exit.shown(),
            self.payload.shown(),
            self.token.shown(),
            time_or_null(self.lease_until)
        )
    }
}

/// The identity of one run in a case: its job, attempt and probe pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RunRef {
    pub job: i64,
    pub attempt: i64,
    pub pid: u32,
}

impl From<&Execution> for RunRef {
    fn from(e: &Execution) -> RunRef {
        RunRef { job: e.job, attempt: e.attempt, pid: e.pid }
    }
}

/// What a failed case points at: the runs its checkers blame, and the jobs
/// they name without naming a run (a lost job: every run of it); made by
/// [`crate::check::blame`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blame {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunRef>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<i64>,
}

impl Blame {
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty() && self.jobs.is_empty()
    }

    /// Whether it blames `run`.
    pub fn blames(&self, run: &RunRef) -> bool {
        self.runs.binary_search(run).is_ok() || self.jobs.binary_search(&run.job).is_ok()
    }
}

/// What the harness did to a subject's worker process, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerEvent {
    pub at_ms: i64,
    pub worker_pid: u32,
    pub kind: WorkerEventKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerEventKind {
    Started,
    /// SIGTERM: asked to stop.
    Stopped,
    /// SIGKILLed with every process it started.
    Killed,
    /// SIGSTOP.
    Suspended,
    /// SIGCONT.
    Resumed,
}

/// The worker events of a case, shared by every [`WorkerProcess`] it starts.
///
/// [`WorkerProcess`]: crate::subjects::worker::WorkerProcess
#[derive(Debug, Clone, Default)]
pub struct WorkerEvents(Arc<Mutex<Vec<WorkerEvent>>>);

impl WorkerEvents {
    pub fn record(&self, worker_pid: u32, kind: WorkerEventKind) {
        let event = WorkerEvent { at_ms: crate::subjects::probe::now_ms(), worker_pid, kind };
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(event);
    }

    /// The events so far, in time order.
    pub fn all(&self) -> Vec<WorkerEvent> {
        let mut events = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        events.sort_by_key(|e| e.at_ms);
        events
    }
}

impl Execution {
    /// A run that ended well: exit 0, and still the holder at its end.
    pub fn succeeded(&self) -> bool {
        self.exit == Some(0) && self.held_at_end != Some(false)
    }
}

/// A job as the file holds it at the end of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalJob {
    pub id: i64,
    pub state: String,
    pub attempts: i64,
    pub max_attempts: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    pub added: Vec<Added>,
    /// Adds cut off by a kill before their id was printed.
    pub unknown: Vec<UnknownAdd>,
    pub executions: Vec<Execution>,
    /// Workers the case killed or stopped past their lease (their jobs
    /// may run again).
    pub killed_workers: BTreeSet<u32>,
    /// The file's jobs at the end.
    pub final_jobs: BTreeMap<i64, FinalJob>,
    /// What the harness did to the workers (starts, kills, stops).
    pub events: Vec<WorkerEvent>,
}

/// One operation in the Jepsen style: a process invoked something, and it
/// went ok, failed, or nobody knows (the process died first).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HistoryOp {
    /// `add JOB by PRODUCER`, or `run` by the probe's pid.
    pub process: String,
    pub f: &'static str,
    #[serde(rename = "type")]
    pub kind: HistoryOpKind,
    pub job: i64,
    pub attempt: Option<i64>,
    pub at_ms: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryOpKind {
    Invoke,
    Ok,
    Fail,
    Unknown,
    /// Something done to a process from outside (a worker started, killed,
    /// stopped), as Jepsen's nemesis ops.
    Info,
}

impl History {
    /// The history as operations, in time order (adds first: producers
    /// report only what they acknowledged).
    pub fn ops(&self) -> Vec<HistoryOp> {
        let mut ops: Vec<HistoryOp> = self
            .added
            .iter()
            .map(|a| HistoryOp {
                process: a.by.clone(),
                f: "add",
                kind: HistoryOpKind::Ok,
                job: a.job,
                attempt: None,
                at_ms: None,
            })
            .collect();
        // A cut-off add names no job: job 0 (ids start at 1).
        ops.extend(self.unknown.iter().map(|u| HistoryOp {
            process: u.by.clone(),
            f: "add",
            kind: HistoryOpKind::Unknown,
            job: 0,
            attempt: None,
            at_ms: None,
        }));
        let mut runs = Vec::new();
        for e in &self.executions {
            let process = format!("probe {} (worker {})", e.pid, e.worker_pid);
            let op = |kind, at_ms| HistoryOp {
                process: process.clone(),
                f: "run",
                kind,
                job: e.job,
                attempt: Some(e.attempt),
                at_ms,
            };
            runs.push(op(HistoryOpKind::Invoke, Some(e.start_ms)));
            runs.push(match (e.end_ms, e.exit) {
                (Some(end), Some(0)) => op(HistoryOpKind::Ok, Some(end)),
                (Some(end), _) => op(HistoryOpKind::Fail, Some(end)),
                (None, _) => op(HistoryOpKind::Unknown, None),
            });
        }
        runs.extend(self.events.iter().map(|e| HistoryOp {
            process: format!("worker {}", e.worker_pid),
            f: match e.kind {
                WorkerEventKind::Started => "start",
                WorkerEventKind::Stopped => "stop",
                WorkerEventKind::Killed => "kill",
                WorkerEventKind::Suspended => "suspend",
                WorkerEventKind::Resumed => "resume",
            },
            kind: HistoryOpKind::Info,
            job: 0,
            attempt: None,
            at_ms: Some(e.at_ms),
        }));
        runs.sort_by_key(|o| o.at_ms.unwrap_or(i64::MAX));
        ops.extend(runs);
        ops
    }

    /// Writes [`History::ops`] as JSON lines (kept with a failing case).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut text = String::new();
        for op in self.ops() {
            text.push_str(&serde_json::to_string(&op).map_err(std::io::Error::other)?);
            text.push('\n');
        }
        std::fs::write(path, text)
    }
}

/// The probe's records in a log. A probe killed while it appends (a
/// command killed mid-run) can leave part of a record, cut short, which
/// the next record's line then follows: such a torn record is passed over,
/// and its run counts as one that never wrote it (the start or the end).
/// Anything else that is not a record is an error.
fn records(log: &str) -> Result<Vec<Record>, String> {
    const RECORD_START: &str = "{\"event\":";
    let mut records = Vec::new();
    for (n, line) in log.lines().enumerate() {
        let mut pieces: Vec<usize> = line.match_indices(RECORD_START).map(|(i, _)| i).collect();
        if pieces.first() != Some(&0) {
            pieces.insert(0, 0);
        }
        for (k, &at) in pieces.iter().enumerate() {
            let piece = &line[at..pieces.get(k + 1).copied().unwrap_or(line.len())];
            if piece.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Record>(piece) {
                Ok(record) => records.push(record),
                // Cut anywhere, even inside `{"event":` itself.
                Err(e)
                    if e.is_eof() && (piece.starts_with(RECORD_START) || RECORD_START.starts_with(piece)) => {
                }
                Err(e) => return Err(format!("probe log line {}: {e}: {line}", n + 1)),
            }
        }
    }
    Ok(records)
}

/// Pairs the probe's start and end records into executions.
pub fn executions(log: &str) -> Result<Vec<Execution>, String> {
    let mut open: HashMap<u32, Execution> = HashMap::new();
    let mut done = Vec::new();
    for record in records(log)? {
        match record.event {
            RecordKind::Start => {
                if let Some(previous) = open.insert(record.pid, start(&record)) {
                    done.push(previous);
                }
            }
            RecordKind::End => {
                let mut execution = open.remove(&record.pid).unwrap_or_else(|| start(&record));
                execution.end_ms = Some(record.at_ms);
                execution.held_at_end = record.held;
                execution.exit = record.exit;
                if record.held == Some(true) {
                    execution.lease_until = record.lease_until.or(execution.lease_until);
                }
                done.push(execution);
            }
        }
    }
    done.extend(open.into_values());
    done.sort_by_key(|e| (e.start_ms, e.job, e.attempt));
    Ok(done)
}

fn start(record: &Record) -> Execution {
    Execution {
        job: record.job,
        attempt: record.attempt,
        max_attempts: record.max_attempts,
        pid: record.pid,
        worker_pid: record.worker_pid,
        start_ms: record.at_ms,
        end_ms: None,
        held_at_start: record.held,
        reaped_before_start: record.saw_it_reaped(),
        held_at_end: None,
        exit: None,
        payload: record.payload.clone(),
        token: record.token.clone(),
        token_type: record.token_type.clone(),
        claimed_ms: record.updated_at.filter(|_| record.held == Some(true)),
        lease_until: record.lease_until,
    }
}

/// The probe's records in the log at `path`, in the order they were
/// written (an absent log holds none).
pub fn read_records(path: &Path) -> Result<Vec<Record>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => records(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Reads the probe log at `path` (an absent log holds no executions).
pub fn read_log(path: &Path) -> Result<Vec<Execution>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => executions(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The jobs of a ukue file, read without writing.
pub fn final_jobs(file: &Path) -> rusqlite::Result<BTreeMap<i64, FinalJob>> {
    let conn = open_read_only(file)?;
    let mut st = conn.prepare("SELECT id, state, attempts, max_attempts FROM ukue_jobs ORDER BY id")?;
    let rows = st.query_map([], |r| {
        Ok(FinalJob { id: r.get(0)?, state: r.get(1)?, attempts: r.get(2)?, max_attempts: r.get(3)? })
    })?;
    rows.map(|r| r.map(|j| (j.id, j))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(event: &str, pid: u32, job: i64, at: i64, exit: Option<i32>) -> String {
        serde_json::json!({
            "event": event, "job": job, "attempt": 1, "max_attempts": 10, "queue": "q",
            "pid": pid, "worker_pid": 1, "at_ms": at, "payload_sha256": "", "payload": "",
            "held": true, "exit": exit,
        })
        .to_string()
    }

    #[test]
    fn pairs_records_by_process() {
        let log = [
            line("start", 10, 1, 100, None),
            line("start", 11, 2, 105, None),
            line("end", 11, 2, 110, Some(0)),
            line("end", 10, 1, 120, Some(3)),
            line("start", 12, 3, 130, None),
        ]
        .join("\n");
        let runs = executions(&log).unwrap();
        assert_eq!(runs.len(), 3);
        assert_eq!((runs[0].job, runs[0].end_ms, runs[0].exit), (1, Some(120), Some(3)));
        assert_eq!((runs[1].job, runs[1].end_ms, runs[1].exit), (2, Some(110), Some(0)));
        assert_eq!((runs[2].job, runs[2].end_ms), (3, None), "a killed probe has no end");
        assert!(executions("not json").is_err());
        // A probe killed while it appended its end: part of a record, which
        // the next record follows on the same line, or which ends the log.
        // (As the probe writes them: `event` first.)
        let probe_line = |event, pid, job, at, exit| {
            let record: Record = serde_json::from_str(&line(event, pid, job, at, exit)).unwrap();
            serde_json::to_string(&record).unwrap()
        };
        let end = probe_line("end", 10, 1, 120, Some(3));
        let torn = &end[..end.len() / 2];
        let log = [
            probe_line("start", 10, 1, 100, None),
            format!("{torn}{}", probe_line("start", 11, 2, 130, None)),
            torn.into(),
        ]
        .join("\n");
        let cut = executions(&log).unwrap();
        assert_eq!(cut.iter().map(|r| (r.job, r.end_ms)).collect::<Vec<_>>(), [(1, None), (2, None)]);
        // Cut inside the record's first key (seen in a 1,000-kill run).
        let log = [
            probe_line("start", 10, 1, 100, None),
            format!("{{\"ev{}", probe_line("start", 11, 2, 130, None)),
        ];
        assert_eq!(executions(&log.join("\n")).unwrap().len(), 2);
        assert_eq!(executions(&format!("{}\n{{\"ev", log[0])).unwrap().len(), 1);
        assert!(executions(&format!("{}\n{{\"event\": 3}}", line("start", 10, 1, 100, None))).is_err());
        let history = History { executions: runs, ..History::default() };
        let kinds: Vec<HistoryOpKind> = history.ops().iter().map(|o| o.kind).collect();
        use HistoryOpKind::*;
        assert_eq!(kinds, [Invoke, Invoke, Ok, Fail, Invoke, Unknown]);
    }
}
