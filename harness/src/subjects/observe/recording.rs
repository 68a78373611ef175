//! A trace turned into a recording: the changes that reach a ukue file,
//! its `-wal` and its `-journal` (writes, truncations, unlinks, with every
//! byte written, from an `strace -f -y -xx` log, so any program can be the
//! subject), their syncs, the ids acknowledged on stdout and the lines the
//! probe appended to its log, each with the place in the trace where it
//! completed. [`crate::check::crash_states`] builds from it the file states
//! a power cut could leave. Pure: it reads text.
//!
//! The `-shm` is left out: it is only a cache, and SQLite rebuilds it from
//! the `-wal` when it opens a file that no one else has open.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use super::strace::{self, annotation, join, leading_int, quoted, Call, Lines, Stdout};

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
pub enum Change {
    Write { offset: u64, data: Vec<u8> },
    Truncate(u64),
    Unlink,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Write { offset, data } => write!(f, "write of {} B at {offset}", data.len()),
            Change::Truncate(len) => write!(f, "truncate to {len} B"),
            Change::Unlink => write!(f, "unlink"),
        }
    }
}

/// What one traced call meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Change {
        file: FileKind,
        change: Change,
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

/// One traced call that had an effect, and where it completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The line of the trace where the call completed (from 1).
    pub line: usize,
    pub pid: u32,
    /// The program the process ran (its last execve), for reports.
    pub program: String,
    pub effect: Effect,
}

/// The files of a state: absent ones are missing.
pub type Images = BTreeMap<FileKind, Vec<u8>>;

/// What the trace showed.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    /// In the order the calls completed.
    pub recorded: Vec<Recorded>,
    /// What the model cannot follow (a rename of the file, a write whose
    /// bytes strace cut short): the cases report these as errors.
    pub problems: Vec<String>,
}

impl Recording {
    pub fn count(&self, what: impl Fn(&Effect) -> bool) -> usize {
        self.recorded.iter().filter(|r| what(&r.effect)).count()
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
        recorded: Vec::new(),
        problems: Vec::new(),
    };
    for call in strace::calls(trace) {
        r.call(&call);
    }
    Recording { recorded: r.recorded, problems: r.problems }
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
    recorded: Vec<Recorded>,
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

    fn push(&mut self, line: usize, pid: u32, effect: Effect) {
        let program = self.programs.get(&pid).cloned().unwrap_or_default();
        self.recorded.push(Recorded { line, pid, program, effect });
    }

    fn change(&mut self, line: usize, pid: u32, file: FileKind, change: Change) {
        let size = self.sizes.entry(file).or_insert(None);
        *size = match &change {
            Change::Write { offset, data } => Some(size.unwrap_or(0).max(offset + data.len() as u64)),
            Change::Truncate(len) => Some(*len),
            Change::Unlink => None,
        };
        self.push(line, pid, Effect::Change { file, change });
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
                        self.change(line, pid, kind, Change::Truncate(0));
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
                        self.push(line, pid, Effect::Printed { id });
                    }
                    return;
                }
                if self.log.as_deref() == Some(path.as_str()) {
                    for text in self.logged.feed(pid, &written.data) {
                        self.push(line, pid, Effect::Logged { text });
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
                self.change(line, pid, kind, Change::Write { offset, data: written.data });
                // A write through O_SYNC/O_DSYNC (or with RWF_SYNC/RWF_DSYNC)
                // is synced when it returns; taken as a sync of the file.
                if synced || self.fd(pid, fd, &path).is_some_and(|f| f.sync) {
                    self.push(line, pid, Effect::Sync { file: Some(kind) });
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
                    self.change(line, pid, kind, Change::Truncate(len as u64));
                }
            }
            "fsync" | "fdatasync" => {
                if let Some(kind) = call.synced().and_then(|p| self.kind(&p)) {
                    self.push(line, pid, Effect::Sync { file: Some(kind) });
                }
            }
            "sync" | "syncfs" => self.push(line, pid, Effect::Sync { file: None }),
            "unlink" | "unlinkat" => {
                let (dir, path) =
                    if name == "unlink" { (None, arg(0)) } else { (annotation(arg(0)), arg(1)) };
                let Some((path, _)) = quoted(path) else { return };
                let path = join(dir.as_deref(), &String::from_utf8_lossy(&path));
                if let Some(kind) = self.kind(&path) {
                    self.change(line, pid, kind, Change::Unlink);
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

fn program(recorded: &Recorded) -> String {
    if recorded.program.is_empty() {
        String::new()
    } else {
        format!(", {}", recorded.program)
    }
}

/// Where a call happened, for a report: `trace line 12 (pid 40, ukue)`.
pub fn place(recorded: &Recorded) -> String {
    format!("trace line {} (pid {}{})", recorded.line, recorded.pid, program(recorded))
}

/// strace lines, as `strace -f -y -xx` writes them, for the tests here and
/// in crate::check::crash_states.
#[cfg(test)]
pub(crate) mod test_trace {
    pub const DB: &str = "/t/jobs.ukue";
    pub const WAL: &str = "/t/jobs.ukue-wal";
    pub const STDOUT: &str = "pipe:[9]";

    pub fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("\\x{b:02x}")).collect()
    }

    pub fn fd(n: i64, path: &str) -> String {
        format!("{n}<{}>", hex(path.as_bytes()))
    }

    pub fn pwrite(pid: u32, path: &str, data: &[u8], offset: u64) -> String {
        format!(
            "{pid} pwrite64({}, \"{}\", {}, {offset}) = {}",
            fd(4, path),
            hex(data),
            data.len(),
            data.len()
        )
    }

    pub fn fsync(pid: u32, path: &str) -> String {
        format!("{pid} fsync({}) = 0", fd(4, path))
    }

    pub fn print(pid: u32, id: i64) -> String {
        let text = format!("{id}\n");
        format!(
            "{pid} write({}, \"{}\", {}) = {}",
            fd(1, STDOUT),
            hex(text.as_bytes()),
            text.len(),
            text.len()
        )
    }

    pub fn trace(lines: &[String]) -> String {
        lines.join("\n") + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::test_trace::*;
    use super::*;

    fn changes(recording: &Recording) -> Vec<(FileKind, Change)> {
        recording
            .recorded
            .iter()
            .filter_map(|s| match &s.effect {
                Effect::Change { file, change } => Some((*file, change.clone())),
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
            changes(&recording),
            vec![
                (FileKind::Db, Change::Write { offset: 0, data: b"ab".to_vec() }),
                (FileKind::Db, Change::Write { offset: 2, data: b"cd".to_vec() }),
                (FileKind::Wal, Change::Write { offset: 100, data: b"xy".to_vec() }),
                (FileKind::Wal, Change::Write { offset: 7, data: b"pqr".to_vec() }),
                (FileKind::Db, Change::Truncate(1)),
                (FileKind::Wal, Change::Unlink),
                (FileKind::Journal, Change::Write { offset: 0, data: b"j".to_vec() }),
            ]
        );
        assert_eq!(recording.recorded.last().unwrap().effect, Effect::Sync { file: Some(FileKind::Journal) });
        let printed: Vec<&Recorded> =
            recording.recorded.iter().filter(|s| matches!(s.effect, Effect::Printed { id: 41 })).collect();
        assert_eq!(printed.len(), 1);
        assert_eq!((printed[0].line, printed[0].program.as_str()), (12, "ukue"));
        assert_eq!(recording.count(|e| matches!(e, Effect::Sync { file: Some(FileKind::Db) })), 1);
        assert_eq!(
            recording.recorded.iter().find(|s| matches!(s.effect, Effect::Change { .. })).unwrap().line,
            3
        );
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
        let logged: Vec<&Effect> = recording.recorded.iter().map(|s| &s.effect).collect();
        assert_eq!(logged, vec![&Effect::Logged { text: "{\"a\":1}".into() }]);
        assert_eq!(recording.problems.len(), 1, "{:?}", recording.problems);
        assert!(recording.problems[0].contains("cut short"));
    }
}
