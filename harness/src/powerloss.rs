//! Power loss, simulated as SQLite's crash tests and ALICE do it: record
//! the writes and syncs that reach a ukue file and its `-wal` (from an
//! `strace -f -y -xx` log, so any program can be the subject), then build
//! the file states that a power cut could leave. A cut falls just before
//! each sync (and at the end of the trace); the writes to a file that a
//! sync of that file covered before the cut are on the disk, and each later
//! one may have been kept, dropped, or torn (only its first sectors
//! written). The cases (cases/powerloss.rs) open each state and check it;
//! this module is pure.
//!
//! The `-shm` is left out: it is only a cache, and SQLite rebuilds it from
//! the `-wal` when it opens a file that no one else has open.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use rand::seq::index;
use rand::Rng;

use crate::strace::{self, annotation, join, leading_int, quoted, Call, Lines, Stdout};

/// A write of at most one sector is atomic; a longer one may tear at a
/// multiple of it (SQLite's "powersafe overwrite" assumption).
pub const SECTOR: u64 = 512;

/// The files of one ukue file that recovery reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    Db,
    Wal,
    /// A rollback journal, in case a subject ever leaves WAL mode.
    Journal,
}

impl FileKind {
    pub const ALL: [FileKind; 3] = [FileKind::Db, FileKind::Wal, FileKind::Journal];

    /// What follows the database's name in the file's name.
    pub fn suffix(self) -> &'static str {
        match self {
            FileKind::Db => "",
            FileKind::Wal => "-wal",
            FileKind::Journal => "-journal",
        }
    }
}

/// A change to a file's bytes or existence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Write { offset: u64, data: Vec<u8> },
    Truncate(u64),
    Unlink,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Write { offset, data } => write!(f, "write of {} B at {offset}", data.len()),
            Op::Truncate(len) => write!(f, "truncate to {len} B"),
            Op::Unlink => write!(f, "unlink"),
        }
    }
}

/// What one traced call meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Op {
        file: FileKind,
        op: Op,
    },
    /// fsync or fdatasync of a file (or a write through O_SYNC/O_DSYNC);
    /// `None` is sync()/syncfs(), every file.
    Sync {
        file: Option<FileKind>,
    },
    /// A line holding only a number, written to stdout: an id acknowledged.
    Printed {
        id: i64,
    },
    /// A line appended to the log file (the probe's records).
    Logged {
        text: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The line of the trace where the call completed (from 1).
    pub line: usize,
    pub pid: u32,
    /// The program the process ran (its last execve), for reports.
    pub program: String,
    pub event: Event,
}

/// The files of a state: absent ones are missing.
pub type Images = BTreeMap<FileKind, Vec<u8>>;

/// What the trace showed.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    pub steps: Vec<Step>,
    /// What the model cannot follow (a rename of the file, a write whose
    /// bytes strace cut short): the cases report these as errors.
    pub problems: Vec<String>,
}

impl Recording {
    pub fn count(&self, what: impl Fn(&Event) -> bool) -> usize {
        self.steps.iter().filter(|s| what(&s.event)).count()
    }
}

/// Reads an strace log (made with [`strace::Invocation::record`]): the
/// changes to `db` (an absolute, resolved path), its `-wal` and its
/// `-journal`; their syncs; ids acknowledged on `stdout` (the stream the
/// harness reads, as `-y` names it); and lines appended to `log`. `base`
/// is what the files held when the trace began.
pub fn record(trace: &str, db: &str, stdout: &str, log: Option<&str>, base: &Images) -> Recording {
    let mut r = Recorder {
        db: db.to_string(),
        log: log.map(str::to_string),
        sizes: FileKind::ALL.iter().map(|k| (*k, base.get(k).map(|b| b.len() as u64))).collect(),
        stdout: Stdout::new(stdout),
        fds: HashMap::new(),
        logged: Lines::default(),
        programs: HashMap::new(),
        steps: Vec::new(),
        problems: Vec::new(),
    };
    for call in strace::calls(trace) {
        r.call(&call);
    }
    Recording { steps: r.steps, problems: r.problems }
}

struct Recorder {
    db: String,
    log: Option<String>,
    /// (pid, fd) → where a plain write goes.
    fds: HashMap<(u32, i64), Fd>,
    sizes: HashMap<FileKind, Option<u64>>,
    stdout: Stdout,
    /// The log's records, per process: each probe appends its own.
    logged: Lines<u32>,
    programs: HashMap<u32, String>,
    steps: Vec<Step>,
    problems: Vec<String>,
}

#[derive(Debug, Clone)]
struct Fd {
    path: String,
    offset: u64,
    append: bool,
    /// Opened with O_SYNC or O_DSYNC: each write is on the disk when it returns.
    sync: bool,
}

impl Recorder {
    fn kind(&self, path: &str) -> Option<FileKind> {
        let rest = path.strip_prefix(self.db.as_str())?;
        FileKind::ALL.into_iter().find(|k| k.suffix() == rest)
    }

    fn push(&mut self, line: usize, pid: u32, event: Event) {
        let program = self.programs.get(&pid).cloned().unwrap_or_default();
        self.steps.push(Step { line, pid, program, event });
    }

    fn op(&mut self, line: usize, pid: u32, file: FileKind, op: Op) {
        let size = self.sizes.entry(file).or_insert(None);
        *size = match &op {
            Op::Write { offset, data } => Some(size.unwrap_or(0).max(offset + data.len() as u64)),
            Op::Truncate(len) => Some(*len),
            Op::Unlink => None,
        };
        self.push(line, pid, Event::Op { file, op });
    }

    fn call(&mut self, call: &Call) {
        let (line, pid) = (call.line, call.pid);
        // A failed call changed nothing.
        let Some(ret) = call.returned() else { return };
        let arg = |i: usize| call.arg(i);
        let name = call.name.as_str();
        match name {
            "execve" => {
                if let Some(program) = call.executed() {
                    let short = program.rsplit('/').next().unwrap_or(&program).to_string();
                    self.programs.insert(pid, short);
                }
            }
            "fork" | "vfork" | "clone" | "clone3" => {
                // A child (or thread) runs its parent's program until it execs.
                if let Some(program) = self.programs.get(&pid).cloned() {
                    self.programs.entry(ret as u32).or_insert(program);
                }
            }
            "openat" | "open" | "creat" => {
                let (path_arg, flags) = match name {
                    "openat" => (arg(1), arg(2)),
                    "open" => (arg(0), arg(1)),
                    _ => (arg(0), "O_CREAT|O_WRONLY|O_TRUNC"),
                };
                let path = match call.returned_path() {
                    Some(p) => p.to_string(),
                    None => {
                        let Some((p, _)) = quoted(path_arg) else { return };
                        let p = String::from_utf8_lossy(&p).into_owned();
                        let dir = if name == "openat" { annotation(arg(0)) } else { None };
                        join(dir.as_deref(), &p)
                    }
                };
                let append = flags.contains("O_APPEND");
                let sync = flags.contains("O_SYNC") || flags.contains("O_DSYNC");
                self.fds.insert((pid, ret), Fd { path: path.clone(), offset: 0, append, sync });
                if let Some(kind) = self.kind(&path) {
                    if flags.contains("O_TRUNC") {
                        self.op(line, pid, kind, Op::Truncate(0));
                    } else if self.sizes.get(&kind).copied().flatten().is_none() && flags.contains("O_CREAT")
                    {
                        self.sizes.insert(kind, Some(0));
                    }
                }
            }
            "write" | "writev" | "pwrite64" | "pwritev" | "pwritev2" => {
                let Some(written) = call.written() else { return };
                let (fd, path) = (written.fd, written.path.clone());
                if !written.whole() {
                    if self.kind(&path).is_some() || self.stdout.takes(&written) {
                        self.problems.push(format!(
                            "line {line}: strace showed {} of the {} bytes written{}",
                            written.data.len(),
                            written.count,
                            if written.cut { " (cut short)" } else { "" }
                        ));
                    }
                    return;
                }
                if self.stdout.takes(&written) {
                    for id in self.stdout.write(&written) {
                        self.push(line, pid, Event::Printed { id });
                    }
                    return;
                }
                if self.log.as_deref() == Some(path.as_str()) {
                    for text in self.logged.feed(pid, &written.data) {
                        self.push(line, pid, Event::Logged { text });
                    }
                    return;
                }
                let Some(kind) = self.kind(&path) else { return };
                let offset = match written.offset {
                    Some(offset) => offset,
                    None => {
                        let size = self.sizes.get(&kind).copied().flatten().unwrap_or(0);
                        let Some(state) = self.fd(pid, fd, &path) else {
                            self.problems
                                .push(format!("line {line}: a write to {path} at an unknown offset"));
                            return;
                        };
                        let at = if state.append { size } else { state.offset };
                        state.offset = at + written.count as u64;
                        at
                    }
                };
                let synced = written.synced;
                self.op(line, pid, kind, Op::Write { offset, data: written.data });
                // A write through O_SYNC/O_DSYNC (or with RWF_SYNC/RWF_DSYNC)
                // is synced when it returns; taken as a sync of the file.
                if synced || self.fd(pid, fd, &path).is_some_and(|f| f.sync) {
                    self.push(line, pid, Event::Sync { file: Some(kind) });
                }
            }
            "lseek" => {
                if let Some((fd, path)) = call.fd(0) {
                    if let Some(state) = self.fd(pid, fd, &path) {
                        state.offset = ret as u64;
                    }
                }
            }
            "ftruncate" | "truncate" => {
                let path = if name == "ftruncate" {
                    call.fd(0).map(|(_, p)| p)
                } else {
                    quoted(arg(0)).map(|(p, _)| String::from_utf8_lossy(&p).into_owned())
                };
                let (Some(path), Some(len)) = (path, leading_int(arg(1))) else { return };
                if let Some(kind) = self.kind(&path) {
                    self.op(line, pid, kind, Op::Truncate(len as u64));
                }
            }
            "fsync" | "fdatasync" => {
                if let Some(kind) = call.synced().and_then(|p| self.kind(&p)) {
                    self.push(line, pid, Event::Sync { file: Some(kind) });
                }
            }
            "sync" | "syncfs" => self.push(line, pid, Event::Sync { file: None }),
            "unlink" | "unlinkat" => {
                let (dir, path) =
                    if name == "unlink" { (None, arg(0)) } else { (annotation(arg(0)), arg(1)) };
                let Some((path, _)) = quoted(path) else { return };
                let path = join(dir.as_deref(), &String::from_utf8_lossy(&path));
                if let Some(kind) = self.kind(&path) {
                    self.op(line, pid, kind, Op::Unlink);
                }
            }
            "rename" | "renameat" | "renameat2" => {
                let paths = if name == "rename" {
                    vec![(None, arg(0)), (None, arg(1))]
                } else {
                    vec![(annotation(arg(0)), arg(1)), (annotation(arg(2)), arg(3))]
                };
                for (dir, path) in paths {
                    let Some((path, _)) = quoted(path) else { continue };
                    let path = join(dir.as_deref(), &String::from_utf8_lossy(&path));
                    if self.kind(&path).is_some() {
                        self.problems
                            .push(format!("line {line}: a rename of {path}, which the model cannot follow"));
                    }
                }
            }
            _ => {}
        }
    }

    /// The offset state of `fd` in `pid`; a thread shares its process's
    /// descriptors, so an unknown (pid, fd) takes another's with the same path.
    fn fd(&mut self, pid: u32, fd: i64, path: &str) -> Option<&mut Fd> {
        if self.fds.get(&(pid, fd)).is_none_or(|f| f.path != path) {
            let other =
                self.fds.iter().find(|((_, n), f)| *n == fd && f.path == path).map(|(_, f)| f.clone())?;
            self.fds.insert((pid, fd), other);
        }
        self.fds.get_mut(&(pid, fd))
    }
}

// ---- Crash states ----

/// What became of one unsynced change when the power went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Choice {
    Keep,
    Drop,
    /// A write of which only the first this many bytes (whole sectors of
    /// the file) reached the disk.
    Torn(u64),
}

/// One file state a power cut could leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashState {
    /// The steps before this index happened: the cut falls just before
    /// `steps[at]` (a sync), or after the last step.
    pub at: usize,
    /// What became of each unsynced change (by step index).
    pub choices: Vec<(usize, Choice)>,
    /// How the choices were made: `all dropped`, `in order`, `random`, …
    pub how: &'static str,
}

/// How many states to build.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Random combinations per cut.
    pub random_per_cut: usize,
    /// At most this many states in all; the `all dropped` and `all kept`
    /// state of every cut come first, the rest are a seeded sample.
    pub budget: usize,
}

/// The bytes of a write of `len` at `offset` that a tear at a sector
/// boundary near its middle leaves; None when it lies within one sector
/// (and cannot tear).
pub fn torn_len(offset: u64, len: u64) -> Option<u64> {
    let first = (offset / SECTOR + 1) * SECTOR;
    if first >= offset + len {
        return None;
    }
    Some(((offset + len / 2) / SECTOR * SECTOR).max(first) - offset)
}

fn tear(op: &Op) -> Option<u64> {
    match op {
        Op::Write { offset, data } => torn_len(*offset, data.len() as u64),
        _ => None,
    }
}

/// Where the cuts fall: before each sync of a traced file, and at the end.
pub fn cuts(steps: &[Step]) -> Vec<usize> {
    let mut at: Vec<usize> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s.event, Event::Sync { .. }))
        .map(|(i, _)| i)
        .collect();
    at.push(steps.len());
    at
}

/// The index of the last sync of each file before `at`.
fn last_syncs(steps: &[Step], at: usize) -> HashMap<FileKind, usize> {
    let mut last = HashMap::new();
    for (i, step) in steps[..at].iter().enumerate() {
        match step.event {
            Event::Sync { file: Some(file) } => {
                last.insert(file, i);
            }
            Event::Sync { file: None } => {
                for file in FileKind::ALL {
                    last.insert(file, i);
                }
            }
            _ => {}
        }
    }
    last
}

/// The changes before `at` that no sync of their file covered.
pub fn pending(steps: &[Step], at: usize) -> Vec<usize> {
    let last = last_syncs(steps, at);
    steps[..at]
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match &s.event {
            Event::Op { file, .. } if last.get(file).is_none_or(|&synced| i > synced) => Some(i),
            _ => None,
        })
        .collect()
}

/// The crash states of a recording: per cut, every unsynced change
/// dropped; all kept; kept in order up to each one (and the next torn);
/// each one alone kept or torn; and `plan.random_per_cut` random
/// combinations. Within the budget, in cut order.
pub fn states(steps: &[Step], rng: &mut impl Rng, plan: Plan) -> Vec<CrashState> {
    let mut must = Vec::new();
    let mut rest = Vec::new();
    for at in cuts(steps) {
        let pending = pending(steps, at);
        let ops: Vec<&Op> = pending
            .iter()
            .map(|&i| match &steps[i].event {
                Event::Op { op, .. } => op,
                _ => unreachable!("pending() returns changes only"),
            })
            .collect();
        let n = pending.len();
        let mut seen = HashSet::new();
        let mut add = |choices: Vec<Choice>, how: &'static str, must_check: bool| {
            if seen.insert(choices.clone()) {
                let state = CrashState { at, choices: pending.iter().copied().zip(choices).collect(), how };
                if must_check {
                    must.push(state);
                } else {
                    rest.push(state);
                }
            }
        };
        let torn = |i: usize| tear(ops[i]).map(Choice::Torn);
        add(vec![Choice::Drop; n], "all dropped", true);
        add(vec![Choice::Keep; n], "all kept", true);
        for k in 0..n {
            let prefix = |last: Choice| {
                (0..n)
                    .map(|j| {
                        if j < k {
                            Choice::Keep
                        } else if j == k {
                            last
                        } else {
                            Choice::Drop
                        }
                    })
                    .collect()
            };
            add(prefix(Choice::Keep), "in order", false);
            if let Some(t) = torn(k) {
                add(prefix(t), "in order, the last torn", false);
            }
            let alone = |c: Choice| (0..n).map(|j| if j == k { c } else { Choice::Drop }).collect();
            add(alone(Choice::Keep), "one kept", false);
            if let Some(t) = torn(k) {
                add(alone(t), "one torn", false);
            }
        }
        if n > 1 {
            for _ in 0..plan.random_per_cut {
                let choices = (0..n)
                    .map(|j| match (rng.gen_range(0..3), torn(j)) {
                        (0, _) => Choice::Keep,
                        (1, Some(t)) => t,
                        _ => Choice::Drop,
                    })
                    .collect();
                add(choices, "random", false);
            }
        }
    }
    let mut chosen = if must.len() >= plan.budget {
        sample(must, plan.budget, rng)
    } else {
        let room = plan.budget - must.len();
        let mut all = must;
        all.extend(sample(rest, room, rng));
        all
    };
    chosen.sort_by_key(|s| s.at);
    chosen
}

/// `n` of `states`, chosen by `rng`, in their order.
fn sample(states: Vec<CrashState>, n: usize, rng: &mut impl Rng) -> Vec<CrashState> {
    if states.len() <= n {
        return states;
    }
    let keep: HashSet<usize> = index::sample(rng, states.len(), n).into_iter().collect();
    states.into_iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, s)| s).collect()
}

/// The files a state holds: `base`, every change a sync covered, and the
/// unsynced ones as the state chose.
pub fn image(base: &Images, steps: &[Step], state: &CrashState) -> Images {
    let last = last_syncs(steps, state.at);
    let chosen: HashMap<usize, Choice> = state.choices.iter().copied().collect();
    let mut images = base.clone();
    for (i, step) in steps[..state.at].iter().enumerate() {
        let Event::Op { file, op } = &step.event else { continue };
        let choice = if last.get(file).is_some_and(|&synced| i < synced) {
            Choice::Keep
        } else {
            chosen.get(&i).copied().unwrap_or(Choice::Drop)
        };
        apply(&mut images, *file, op, choice);
    }
    images
}

fn apply(images: &mut Images, file: FileKind, op: &Op, choice: Choice) {
    match (op, choice) {
        (_, Choice::Drop) | (Op::Truncate(_) | Op::Unlink, Choice::Torn(_)) => {}
        (Op::Write { offset, data }, Choice::Keep | Choice::Torn(_)) => {
            let keep = match choice {
                Choice::Torn(n) => (n as usize).min(data.len()),
                _ => data.len(),
            };
            let bytes = images.entry(file).or_default();
            let start = *offset as usize;
            if bytes.len() < start + keep {
                bytes.resize(start + keep, 0);
            }
            bytes[start..start + keep].copy_from_slice(&data[..keep]);
        }
        (Op::Truncate(len), Choice::Keep) => images.entry(file).or_default().resize(*len as usize, 0),
        (Op::Unlink, Choice::Keep) => {
            images.remove(&file);
        }
    }
}

/// Where a cut falls and what became of each unsynced change, for a
/// report; `name` names a file.
pub fn describe(steps: &[Step], state: &CrashState, name: impl Fn(FileKind) -> String) -> String {
    let place = match steps.get(state.at) {
        Some(step) => {
            let what = match step.event {
                Event::Sync { file: Some(file) } => format!("the fsync of {}", name(file)),
                _ => "a sync of every file".to_string(),
            };
            format!(
                "a power cut just before {what} at trace line {} (pid {}{})",
                step.line,
                step.pid,
                program(step)
            )
        }
        None => "a power cut after the last traced call".to_string(),
    };
    if state.choices.is_empty() {
        return format!("{place}, with every change synced");
    }
    let shown: Vec<String> = state
        .choices
        .iter()
        .take(12)
        .map(|&(i, choice)| {
            let step = &steps[i];
            let Event::Op { file, op } = &step.event else { return String::new() };
            let fate = match choice {
                Choice::Keep => "kept".to_string(),
                Choice::Drop => "dropped".to_string(),
                Choice::Torn(n) => format!("torn to its first {n} B"),
            };
            format!("{} {op} (line {}) {fate}", name(*file), step.line)
        })
        .collect();
    let more = state.choices.len().saturating_sub(shown.len());
    let more = if more > 0 { format!("; and {more} more") } else { String::new() };
    format!(
        "{place}, with the {} unsynced changes ({}): {}{more}",
        state.choices.len(),
        state.how,
        shown.join("; ")
    )
}

fn program(step: &Step) -> String {
    if step.program.is_empty() {
        String::new()
    } else {
        format!(", {}", step.program)
    }
}

/// Where a step happened, for a report: `trace line 12 (pid 40, ukue)`.
pub fn place(step: &Step) -> String {
    format!("trace line {} (pid {}{})", step.line, step.pid, program(step))
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    use super::*;

    const DB: &str = "/t/jobs.ukue";
    const WAL: &str = "/t/jobs.ukue-wal";
    const STDOUT: &str = "pipe:[9]";

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("\\x{b:02x}")).collect()
    }

    fn fd(n: i64, path: &str) -> String {
        format!("{n}<{}>", hex(path.as_bytes()))
    }

    fn pwrite(pid: u32, path: &str, data: &[u8], offset: u64) -> String {
        format!(
            "{pid} pwrite64({}, \"{}\", {}, {offset}) = {}",
            fd(4, path),
            hex(data),
            data.len(),
            data.len()
        )
    }

    fn fsync(pid: u32, path: &str) -> String {
        format!("{pid} fsync({}) = 0", fd(4, path))
    }

    fn print(pid: u32, id: i64) -> String {
        let text = format!("{id}\n");
        format!(
            "{pid} write({}, \"{}\", {}) = {}",
            fd(1, STDOUT),
            hex(text.as_bytes()),
            text.len(),
            text.len()
        )
    }

    fn trace(lines: &[String]) -> String {
        lines.join("\n") + "\n"
    }

    fn ops(recording: &Recording) -> Vec<(FileKind, Op)> {
        recording
            .steps
            .iter()
            .filter_map(|s| match &s.event {
                Event::Op { file, op } => Some((*file, op.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn reads_writes_syncs_and_acknowledgements() {
        let t = trace(&[
            format!("7 execve(\"{}\", [\"{}\"], 0x7ff /* 3 vars */) = 0", hex(b"/bin/ukue"), hex(b"ukue")),
            format!(
                "7 openat(AT_FDCWD<{}>, \"{}\", O_RDWR|O_CREAT, 0644) = 3<{}>",
                hex(b"/t"),
                hex(b"jobs.ukue"),
                hex(DB.as_bytes())
            ),
            // Plain writes go where the offset is.
            format!("7 write({}, \"{}\", 2) = 2", fd(3, DB), hex(b"ab")),
            format!("7 write({}, \"{}\", 3) = 2", fd(3, DB), hex(b"cde")),
            format!("7 pwrite64({}, \"{}\", 2, 100 <unfinished ...>", fd(4, WAL), hex(b"xy")),
            format!("8 write({}, \"{}\", 1) = 1", fd(5, "/t/other"), hex(b"z")),
            "7 <... pwrite64 resumed>) = 2".to_string(),
            format!(
                "7 pwritev({}, [{{iov_base=\"{}\", iov_len=1}}, {{iov_base=\"{}\", iov_len=2}}], 2, 7) = 3",
                fd(4, WAL),
                hex(b"p"),
                hex(b"qr")
            ),
            format!(
                "7 pwrite64({}, \"{}\", 1, 0) = -1 ENOSPC (No space left on device)",
                fd(4, WAL),
                hex(b"!")
            ),
            format!("7 pwrite64({}, \"{}\", 1, 0) = 1", fd(4, &format!("{WAL} (deleted)")), hex(b"!")),
            fsync(7, WAL),
            print(7, 41),
            format!("7 ftruncate({}, 1) = 0", fd(3, DB)),
            format!("7 fdatasync({}) = 0", fd(3, DB)),
            format!("7 unlink(\"{}\") = 0", hex(WAL.as_bytes())),
            // A write through O_DSYNC counts as synced.
            format!(
                "7 openat(AT_FDCWD<{}>, \"{}\", O_RDWR|O_DSYNC) = 6<{}>",
                hex(b"/t"),
                hex(b"jobs.ukue-journal"),
                hex(b"/t/jobs.ukue-journal")
            ),
            format!("7 pwrite64({}, \"{}\", 1, 0) = 1", fd(6, "/t/jobs.ukue-journal"), hex(b"j")),
        ]);
        let recording = record(&t, DB, STDOUT, None, &Images::new());
        assert_eq!(recording.problems, Vec::<String>::new());
        assert_eq!(
            ops(&recording),
            vec![
                (FileKind::Db, Op::Write { offset: 0, data: b"ab".to_vec() }),
                (FileKind::Db, Op::Write { offset: 2, data: b"cd".to_vec() }),
                (FileKind::Wal, Op::Write { offset: 100, data: b"xy".to_vec() }),
                (FileKind::Wal, Op::Write { offset: 7, data: b"pqr".to_vec() }),
                (FileKind::Db, Op::Truncate(1)),
                (FileKind::Wal, Op::Unlink),
                (FileKind::Journal, Op::Write { offset: 0, data: b"j".to_vec() }),
            ]
        );
        assert_eq!(recording.steps.last().unwrap().event, Event::Sync { file: Some(FileKind::Journal) });
        let printed: Vec<&Step> =
            recording.steps.iter().filter(|s| matches!(s.event, Event::Printed { id: 41 })).collect();
        assert_eq!(printed.len(), 1);
        assert_eq!((printed[0].line, printed[0].program.as_str()), (12, "ukue"));
        assert_eq!(recording.count(|e| matches!(e, Event::Sync { file: Some(FileKind::Db) })), 1);
        assert_eq!(recording.steps.iter().find(|s| matches!(s.event, Event::Op { .. })).unwrap().line, 3);
    }

    #[test]
    fn log_lines_and_short_strings() {
        let t = trace(&[
            format!("9 write({}, \"{}\", 4) = 4", fd(3, "/t/probe.log"), hex(b"{\"a\"")),
            format!("9 write({}, \"{}\", 3) = 3", fd(3, "/t/probe.log"), hex(b":1}")),
            format!("9 write({}, \"{}\", 1) = 1", fd(3, "/t/probe.log"), hex(b"\n")),
            format!("9 pwrite64({}, \"{}\"..., 4096, 0) = 4096", fd(4, WAL), hex(b"only a part")),
        ]);
        let recording = record(&t, DB, STDOUT, Some("/t/probe.log"), &Images::new());
        let logged: Vec<&Event> = recording.steps.iter().map(|s| &s.event).collect();
        assert_eq!(logged, vec![&Event::Logged { text: "{\"a\":1}".into() }]);
        assert_eq!(recording.problems.len(), 1, "{:?}", recording.problems);
        assert!(recording.problems[0].contains("cut short"));
    }

    #[test]
    fn tears_only_across_sectors() {
        assert_eq!(torn_len(0, 512), None);
        assert_eq!(torn_len(100, 24), None);
        assert_eq!(torn_len(0, 4096), Some(2048));
        assert_eq!(torn_len(56, 4096), Some(1992)); // a -wal frame's page: to byte 2048
        assert_eq!(torn_len(0, 1024), Some(512));
        assert_eq!(torn_len(500, 24), Some(12)); // spans a boundary
    }

    /// A -wal write and its commit record, synced, then acknowledged; then
    /// a second commit acknowledged before its sync (the bug to catch).
    fn two_commits() -> Vec<Step> {
        let t = trace(&[
            pwrite(7, WAL, &[1; 1024], 0),                        // 0
            pwrite(7, WAL, &[2; 24], 1024),                       // 1
            fsync(7, WAL),                                        // 2
            print(7, 1),                                          // 3
            pwrite(7, WAL, &[3; 1024], 2048),                     // 4
            print(7, 2),                                          // 5: before its sync
            fsync(7, WAL),                                        // 6
            pwrite(7, DB, &[4; 1024], 0),                         // 7
            format!("7 unlink(\"{}\") = 0", hex(WAL.as_bytes())), // 8
        ]);
        record(&t, DB, STDOUT, None, &Images::new()).steps
    }

    #[test]
    fn cuts_fall_before_syncs_and_pending_changes_are_the_unsynced_ones() {
        let steps = two_commits();
        assert_eq!(cuts(&steps), vec![2, 6, 9]);
        assert_eq!(pending(&steps, 2), vec![0, 1]);
        assert_eq!(pending(&steps, 6), vec![4]);
        assert_eq!(pending(&steps, 9), vec![7, 8], "the db was never synced; the unlink neither");
    }

    #[test]
    fn images_keep_synced_changes_and_apply_the_choices() {
        let steps = two_commits();
        let base: Images = [(FileKind::Db, vec![9; 8])].into();
        let state = |at, choices: Vec<(usize, Choice)>| CrashState { at, choices, how: "test" };
        let dropped = image(&base, &steps, &state(6, vec![(4, Choice::Drop)]));
        assert_eq!(dropped[&FileKind::Wal].len(), 1048, "the synced frame only");
        assert_eq!(dropped[&FileKind::Db], vec![9; 8]);
        let torn = image(&base, &steps, &state(6, vec![(4, Choice::Torn(512))]));
        assert_eq!(torn[&FileKind::Wal].len(), 2048 + 512);
        assert_eq!(torn[&FileKind::Wal][1048..2048], [0; 1000], "the gap before a write reads as zeros");
        let end = image(&base, &steps, &state(9, vec![(7, Choice::Keep), (8, Choice::Keep)]));
        assert_eq!(end.get(&FileKind::Wal), None, "unlinked");
        assert_eq!(end[&FileKind::Db], vec![4; 1024]);
        let end = image(&base, &steps, &state(9, vec![(7, Choice::Drop), (8, Choice::Drop)]));
        assert_eq!(end[&FileKind::Wal].len(), 3072, "every -wal write was synced");
        assert_eq!(end[&FileKind::Db], vec![9; 8]);
    }

    #[test]
    fn the_all_dropped_state_shows_an_acknowledgement_that_came_before_its_sync() {
        let steps = two_commits();
        let mut rng = StdRng::seed_from_u64(1);
        let states = states(&steps, &mut rng, Plan { random_per_cut: 4, budget: 100 });
        let before_second_sync: Vec<&CrashState> = states.iter().filter(|s| s.at == 6).collect();
        assert!(before_second_sync.iter().any(|s| s.how == "all dropped"));
        // Id 2 was printed at step 5 < 6, yet its frame (step 4) is not on
        // the disk in that state: the check a case makes.
        let all_dropped = before_second_sync.iter().find(|s| s.how == "all dropped").unwrap();
        let wal = &image(&Images::new(), &steps, all_dropped)[&FileKind::Wal];
        assert_eq!(wal.len(), 1048);
        let text = describe(&steps, all_dropped, |k| format!("jobs.ukue{}", k.suffix()));
        assert!(text.contains("just before the fsync of jobs.ukue-wal at trace line 7"), "{text}");
        assert!(text.contains("jobs.ukue-wal write of 1024 B at 2048 (line 5) dropped"), "{text}");
    }

    #[test]
    fn states_cover_each_cut_within_the_budget_and_follow_the_seed() {
        let steps = two_commits();
        let plan = Plan { random_per_cut: 4, budget: 100 };
        let a = states(&steps, &mut StdRng::seed_from_u64(7), plan);
        let b = states(&steps, &mut StdRng::seed_from_u64(7), plan);
        assert_eq!(a, b);
        for at in cuts(&steps) {
            assert!(a.iter().any(|s| s.at == at && s.how == "all dropped"), "cut {at}");
        }
        let hows: HashSet<&str> = a.iter().map(|s| s.how).collect();
        // (A lone torn write is also the first of "in order, the last torn":
        // states are made once.)
        for how in ["all kept", "in order", "one kept", "in order, the last torn", "random"] {
            assert!(hows.contains(how), "{how} in {hows:?}");
        }
        let small = states(&steps, &mut StdRng::seed_from_u64(7), Plan { random_per_cut: 4, budget: 5 });
        assert_eq!(small.len(), 5);
        assert!(small.iter().all(|s| s.how == "all dropped" || s.how == "all kept"));
        assert!(small.windows(2).all(|w| w[0].at <= w[1].at));
        let every = states(&steps, &mut StdRng::seed_from_u64(7), Plan { random_per_cut: 0, budget: 1000 });
        // Cut 2: DD KK KD TD DK; cut 6: D K T; cut 9: DD KK KD TD DK.
        assert_eq!(every.len(), 13, "{every:#?}");
        let tiny = states(&steps, &mut StdRng::seed_from_u64(7), Plan { random_per_cut: 0, budget: 2 });
        assert_eq!(tiny.len(), 2);
    }
}
