//! strace, for the cases that watch a subject's system calls (durability,
//! powerloss, ioerror): how it is run ([`Invocation`]), and how its log is
//! read into completed calls ([`calls`]), whatever layout strace gave it:
//! results padded to a column, calls split by other threads into
//! `<unfinished ...>` and `<... resumed>`, strings in `-xx` hex or in the
//! default escapes, signal and exit lines. Also the one place that knows
//! what an acknowledged add looks like on stdout ([`acknowledged_id`],
//! [`Stdout`]).

use std::collections::HashMap;
use std::hash::Hash;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::Failure;
use crate::subjects::Subject;

/// The calls the durability and power-loss cases read: what opens, writes,
/// moves and syncs a file, what starts a program, and what makes a process
/// (for the program a child runs). `?` marks ones an architecture may lack.
pub const TRACED: &str = "openat,?open,?creat,write,pwrite64,writev,pwritev,?pwritev2,lseek,\
fsync,fdatasync,?sync,?syncfs,ftruncate,?truncate,unlink,unlinkat,?rename,?renameat,?renameat2,execve,\
?fork,?vfork,?clone,?clone3";

/// The writes the I/O-error cases fail.
pub const WRITES: &str = "pwrite64,pwritev,write,writev";

/// The syncs the I/O-error cases fail.
pub const SYNCS: &str = "fsync,fdatasync";

/// An `strace` command line, before `-o TRACE -- COMMAND`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// `-e trace=`.
    calls: String,
    /// `-y`: each descriptor with its path, which the readers need to tell
    /// the ukue file, its `-wal` and stdout apart.
    paths: bool,
    /// `-xx -s 1 MiB`: every byte of every write, which the power-loss
    /// model replays; and no stdout line cut short.
    every_byte: bool,
    /// `-P`: only calls on these files.
    only: Vec<String>,
    /// `-e inject=…`.
    inject: Option<String>,
}

impl Invocation {
    /// What the durability and power-loss cases record: [`TRACED`] in
    /// every process, with paths and every byte.
    pub fn record() -> Self {
        Invocation { calls: TRACED.into(), paths: true, every_byte: true, only: Vec::new(), inject: None }
    }

    /// Only `calls` on `files`: the I/O-error cases count these calls, and
    /// fail the N-th.
    pub fn calls_on(calls: &str, files: impl IntoIterator<Item = String>) -> Self {
        Invocation {
            calls: calls.into(),
            paths: false,
            every_byte: false,
            only: files.into_iter().collect(),
            inject: None,
        }
    }

    /// Fail the `when`-th of the traced calls with `error` (from then on,
    /// when `persistent`): `-e inject=CALLS:error=E:when=N[+]`.
    pub fn inject(mut self, error: &str, when: usize, persistent: bool) -> Self {
        let from_then_on = if persistent { "+" } else { "" };
        self.inject = Some(format!("inject={}:error={error}:when={when}{from_then_on}", self.calls));
        self
    }

    /// The arguments of strace that trace `command` (a program and its
    /// arguments) into `trace`. `-f` follows children and threads, and
    /// with it every line starts with the pid; `-qq` leaves out the
    /// attach and exit notes. `--seccomp-bpf` (strace 5.3 or newer) stops
    /// the subject only at the calls traced, not at every call: a Python
    /// subject makes thousands at its start, and each stop costs two
    /// context switches, which a loaded machine makes long (the ioerror
    /// cases against the Python command took 34 s alone, 23 s with the
    /// filter). The trace is the same: where the kernel refuses the
    /// filter, strace says so and stops at every call; an strace too old
    /// for the option is not used ([`usable`]).
    pub fn args<S: AsRef<str>>(&self, trace: &Path, command: &[S]) -> Vec<String> {
        let mut args: Vec<String> = vec!["-f".into(), "--seccomp-bpf".into()];
        if self.paths {
            args.push("-y".into());
        }
        args.push("-qq".into());
        if self.every_byte {
            args.extend(["-xx".into(), "-s".into(), "1048576".into()]);
        }
        for file in &self.only {
            args.extend(["-P".into(), file.clone()]);
        }
        args.extend(["-e".into(), format!("trace={}", self.calls)]);
        if let Some(inject) = &self.inject {
            args.extend(["-e".into(), inject.clone()]);
        }
        args.extend(["-o".into(), path_str(trace).into(), "--".into()]);
        args.extend(command.iter().map(|a| a.as_ref().to_string()));
        args
    }
}

/// `file` as `strace -y` names it and `-P` matches it: absolute, its
/// directory's links resolved (the file itself need not exist yet).
pub fn traced_path(file: &Path) -> Result<String, Failure> {
    let dir = std::fs::canonicalize(file.parent().unwrap_or(Path::new(".")))?;
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    Ok(dir.join(name).display().to_string())
}

/// Whether `strace` can trace as [`Invocation::args`] asks: `--seccomp-bpf`
/// needs strace 5.3 or newer, and tracing at all needs ptrace (a container
/// may forbid it). Any other strace is no strace to the cases, which are
/// then skipped, saying why, instead of each failing to start it.
pub fn usable(strace: &Path) -> bool {
    std::process::Command::new(strace)
        .args(["-f", "--seccomp-bpf", "-qq", "-e", "trace=write", "-o", "/dev/null", "--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The strace that the cases run (found on PATH by the runner).
pub fn program(ctx: &Ctx) -> Result<PathBuf, Failure> {
    ctx.subjects
        .strace
        .clone()
        .ok_or_else(|| Failure::error("strace", "not found (the case should be skipped)"))
}

/// `WHO ARGS…`: a subject's command line, to trace.
pub fn command<'a>(who: &'a Subject, args: &[&'a str]) -> Vec<&'a str> {
    let mut command = vec![path_str(&who.program)];
    command.extend(who.args.iter().map(String::as_str));
    command.extend_from_slice(args);
    command
}

/// A file as `-y` names it: absolute, resolved.
pub fn named(path: &Path) -> Result<String, Failure> {
    Ok(std::fs::canonicalize(path)?.display().to_string())
}

/// A traced command that ran to its end.
#[derive(Debug)]
pub struct TracedRun {
    /// strace's status (the command's), and what the command printed.
    pub out: Output,
    /// The command's stdout, as the trace names it: see [`Stdout`].
    pub stdout: String,
}

impl Invocation {
    /// Runs strace with these options on `command` to its end (in the
    /// case's directory, within [`Ctx::command_timeout`]), the trace in
    /// `trace`. The command's stdout and stderr go to files named after
    /// the trace (`.stdout`, `.stderr`), so that the trace names the
    /// stream the harness reads.
    pub fn run<S: AsRef<str>>(&self, ctx: &Ctx, trace: &Path, command: &[S]) -> Result<TracedRun, Failure> {
        let stdout_path = trace.with_extension("stdout");
        let stderr_path = trace.with_extension("stderr");
        let stdout = std::fs::File::create(&stdout_path)?;
        let stderr = std::fs::File::create(&stderr_path)?;
        let args = self.args(trace, command);
        let shown: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut traced = ctx.spawn(&program(ctx)?, &shown, Stdio::from(stdout), Stdio::from(stderr))?;
        let limit = ctx.command_timeout().min(ctx.remaining());
        let Some(status) = traced.wait_timeout(limit)? else {
            traced.signal_group(nix::sys::signal::Signal::SIGKILL);
            let command: Vec<&str> = command.iter().map(AsRef::as_ref).collect();
            return Err(Failure::timeout(
                format!("`{}` under strace to end within {} s", command.join(" "), limit.as_secs()),
                "it was still running; killed",
            ));
        };
        let out =
            Output { status, stdout: std::fs::read(&stdout_path)?, stderr: std::fs::read(&stderr_path)? };
        Ok(TracedRun { out, stdout: named(&stdout_path)? })
    }
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// It returned this value; a descriptor comes with the path `-y`
    /// showed for it (`= 3</tmp/jobs.ukue>`).
    Returned { value: i64, path: Option<String> },
    /// `= -1 ENOSPC (No space left on device)`; `injected` when strace
    /// made it fail (`(INJECTED)`).
    Failed { errno: String, injected: bool },
    /// `= ?`: it never returned (the process exited or was killed in it,
    /// or the call is to be restarted).
    Unknown,
}

/// One completed system call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The line of the trace where it completed (from 1).
    pub line: usize,
    /// The process (with `-f`, the thread) that made it.
    pub pid: u32,
    pub name: String,
    /// The arguments as strace printed them, split at the top-level commas.
    pub args: Vec<String>,
    pub outcome: CallOutcome,
}

/// The calls of an strace log, in the order they completed. A call that
/// strace split into `<unfinished ...>` and `<... NAME resumed>` (another
/// thread or process made a call meanwhile) is joined, and counted at the
/// line of its end; signal (`--- SIG… ---`) and exit (`+++ … +++`) lines
/// are no calls.
pub fn calls(trace: &str) -> Vec<Call> {
    let mut pending: HashMap<u32, String> = HashMap::new();
    let mut calls = Vec::new();
    for (number, line) in trace.lines().enumerate() {
        let (pid, rest) = split_pid(line);
        let rest = rest.trim();
        if rest.starts_with("---") || rest.starts_with("+++") {
            continue;
        }
        let text = match rest.strip_prefix("<... ") {
            Some(resumed) => {
                let Some((name, tail)) = resumed.split_once(" resumed>") else { continue };
                // A resumed line without its start (the trace began in the
                // middle of the call) says too little to count.
                let Some(start) = pending.remove(&pid) else { continue };
                if start.strip_prefix(name).is_none_or(|args| !args.starts_with('(')) {
                    continue;
                }
                format!("{start}{tail}")
            }
            None => rest.to_string(),
        };
        if let Some(start) = text.strip_suffix("<unfinished ...>") {
            pending.insert(pid, start.trim_end().to_string());
            continue;
        }
        if let Some(call) = Call::parse(number + 1, pid, &text) {
            calls.push(call);
        }
    }
    calls
}

/// `PID   rest` (with `-f` and `-o`), `[pid PID] rest` (with `-f` on
/// stderr), or a line of a single process (pid 0).
fn split_pid(line: &str) -> (u32, &str) {
    if let Some(tagged) = line.strip_prefix("[pid") {
        if let Some((pid, rest)) = tagged.split_once(']') {
            if let Ok(pid) = pid.trim().parse() {
                return (pid, rest);
            }
        }
    }
    match line.split_once(|c: char| c.is_ascii_whitespace()) {
        Some((pid, rest)) => match pid.parse() {
            Ok(pid) => (pid, rest),
            Err(_) => (0, line),
        },
        None => (0, line),
    }
}

impl Call {
    /// `name(args) = result`, with any whitespace before the `=`.
    fn parse(line: usize, pid: u32, text: &str) -> Option<Call> {
        let open = text.find('(')?;
        let name = &text[..open];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        let close = open + 1 + top_level(&text[open + 1..], b')')?;
        let result = text[close + 1..].trim_start().strip_prefix('=')?.trim();
        Some(Call {
            line,
            pid,
            name: name.to_string(),
            args: split_args(&text[open + 1..close]),
            outcome: outcome(result),
        })
    }

    /// The `i`-th argument as printed, or "".
    pub fn arg(&self, i: usize) -> &str {
        self.args.get(i).map(String::as_str).unwrap_or("")
    }

    /// What it returned, when it returned and did not fail.
    pub fn returned(&self) -> Option<i64> {
        match self.outcome {
            CallOutcome::Returned { value, .. } if value >= 0 => Some(value),
            _ => None,
        }
    }

    /// The path of the descriptor it returned (`openat`).
    pub fn returned_path(&self) -> Option<&str> {
        match &self.outcome {
            CallOutcome::Returned { path, .. } => path.as_deref(),
            _ => None,
        }
    }

    pub fn failed(&self) -> bool {
        matches!(self.outcome, CallOutcome::Failed { .. })
    }

    /// It failed because strace made it fail.
    pub fn injected(&self) -> bool {
        matches!(self.outcome, CallOutcome::Failed { injected: true, .. })
    }

    /// The descriptor and path of a `3</path>` argument.
    pub fn fd(&self, i: usize) -> Option<(i64, String)> {
        Some((leading_int(self.arg(i))?, annotation(self.arg(i))?))
    }

    /// The path of the file an fsync or fdatasync that returned made durable.
    pub fn synced(&self) -> Option<String> {
        if !matches!(self.name.as_str(), "fsync" | "fdatasync") {
            return None;
        }
        self.returned()?;
        self.fd(0).map(|(_, path)| path)
    }

    /// The program an execve that returned started.
    pub fn executed(&self) -> Option<String> {
        if self.name != "execve" {
            return None;
        }
        self.returned()?;
        let (program, _) = quoted(self.arg(0))?;
        Some(String::from_utf8_lossy(&program).into_owned())
    }

    /// What a write, pwrite64, writev, pwritev or pwritev2 that returned wrote.
    pub fn written(&self) -> Option<Written> {
        let name = self.name.as_str();
        if !matches!(name, "write" | "writev" | "pwrite64" | "pwritev" | "pwritev2") {
            return None;
        }
        let count = usize::try_from(self.returned()?).ok()?;
        let vectored = name.ends_with('v') || name.ends_with("v2");
        let (mut data, cut) = if vectored { iovecs(self.arg(1))? } else { quoted(self.arg(1))? };
        // A short write wrote only the first `count` bytes it was given.
        data.truncate(count);
        let offset =
            if name.starts_with('p') { Some(u64::try_from(leading_int(self.arg(3))?).ok()?) } else { None };
        let flags = if name == "pwritev2" { self.arg(4) } else { "" };
        Some(Written {
            fd: leading_int(self.arg(0))?,
            path: annotation(self.arg(0)).unwrap_or_default(),
            data,
            count,
            cut,
            offset,
            synced: flags.contains("RWF_SYNC") || flags.contains("RWF_DSYNC"),
        })
    }
}

/// What one write call wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub fd: i64,
    /// The descriptor's path as `-y` showed it (`pipe:[77]` for a pipe),
    /// or "" without `-y`.
    pub path: String,
    /// The bytes written, as far as strace showed them.
    pub data: Vec<u8>,
    /// How many bytes the call wrote.
    pub count: usize,
    /// strace cut the string short (`"…"...`).
    pub cut: bool,
    /// Where a pwrite wrote; None for a write at the descriptor's offset.
    pub offset: Option<u64>,
    /// A pwritev2 with RWF_SYNC or RWF_DSYNC: durable when it returns.
    pub synced: bool,
}

impl Written {
    /// The trace shows every byte written.
    pub fn whole(&self) -> bool {
        self.data.len() >= self.count
    }
}

fn outcome(result: &str) -> CallOutcome {
    if result.starts_with('?') {
        return CallOutcome::Unknown;
    }
    let end = result.find(|c: char| c.is_ascii_whitespace() || c == '<' || c == '(').unwrap_or(result.len());
    let (number, rest) = result.split_at(end);
    let value = match number.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|v| v as i64),
        None => number.parse().ok(),
    };
    let Some(value) = value else { return CallOutcome::Unknown };
    if value < 0 {
        let errno = rest.split_whitespace().next().filter(|e| e.starts_with('E')).unwrap_or_default();
        return CallOutcome::Failed { errno: errno.to_string(), injected: rest.contains("(INJECTED)") };
    }
    let rest = rest.trim_start();
    let path = if rest.starts_with('<') { annotation(rest) } else { None };
    CallOutcome::Returned { value, path }
}

/// The index of the first `stop` outside strings, brackets and `<…>`
/// annotations. A `>` outside an annotation is no bracket (`[128 => 16]`),
/// and `<`/`>` inside a path are escaped by strace.
fn top_level(text: &str, stop: u8) -> Option<usize> {
    let (mut depth, mut quoted, mut escaped, mut angle) = (0i32, false, false, false);
    for (i, b) in text.bytes().enumerate() {
        if quoted {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => quoted = false,
                _ => {}
            }
            continue;
        }
        if angle {
            angle = b != b'>';
            continue;
        }
        if depth == 0 && b == stop {
            return Some(i);
        }
        match b {
            b'"' => quoted = true,
            b'<' => angle = true,
            b'[' | b'{' | b'(' => depth += 1,
            b']' | b'}' | b')' => depth -= 1,
            _ => {}
        }
    }
    None
}

fn split_args(mut args: &str) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(comma) = top_level(args, b',') {
        out.push(args[..comma].trim().to_string());
        args = &args[comma + 1..];
    }
    if !args.trim().is_empty() {
        out.push(args.trim().to_string());
    }
    out
}

/// The number an argument starts with (`3` of `3</t/x>`, `-100` of `AT_FDCWD`'s value).
pub fn leading_int(text: &str) -> Option<i64> {
    let text = text.trim_start();
    let end =
        text.char_indices().find(|(i, c)| !(c.is_ascii_digit() || (*i == 0 && *c == '-'))).map(|(i, _)| i);
    text[..end.unwrap_or(text.len())].parse().ok()
}

/// The path `-y` shows in `<…>` after a descriptor, decoded (a deleted
/// file's ends with ` (deleted)`).
pub fn annotation(text: &str) -> Option<String> {
    let open = text.find('<')?;
    let close = text.rfind('>')?;
    (close > open).then(|| String::from_utf8_lossy(&unescape(&text[open + 1..close])).into_owned())
}

/// `path` under the directory `dir` (an `*at` call's), unless absolute.
pub fn join(dir: Option<&str>, path: &str) -> String {
    match dir {
        Some(dir) if !path.starts_with('/') => format!("{}/{path}", dir.trim_end_matches('/')),
        _ => path.to_string(),
    }
}

/// A quoted string's bytes, and whether strace cut it short (`"…"...`).
pub fn quoted(text: &str) -> Option<(Vec<u8>, bool)> {
    let body = text.trim_start().strip_prefix('"')?;
    let end = closing_quote(body)?;
    Some((unescape(&body[..end]), body[end + 1..].starts_with("...")))
}

fn closing_quote(body: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, b) in body.bytes().enumerate() {
        match (escaped, b) {
            (true, _) => escaped = false,
            (false, b'\\') => escaped = true,
            (false, b'"') => return Some(i),
            _ => {}
        }
    }
    None
}

/// The bytes of `[{iov_base="…", iov_len=N}, …]`, and whether any was cut short.
fn iovecs(text: &str) -> Option<(Vec<u8>, bool)> {
    let mut data = Vec::new();
    let mut cut = false;
    let mut rest = text;
    while let Some(at) = rest.find("iov_base=") {
        rest = &rest[at + "iov_base=".len()..];
        let (bytes, short) = quoted(rest)?;
        data.extend(bytes);
        cut |= short;
    }
    Some((data, cut))
}

/// strace's escapes to bytes: `\xHH` (every byte with `-xx`), and by
/// default `\n`, `\t`, `\"`, `\\`, … and octal (`\0`, `\27`; three digits
/// when an octal digit follows, so the longest run is right).
pub fn unescape(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 4 + 1);
    let mut i = 0;
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    while i < b.len() {
        if b[i] != b'\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        match c {
            b'x' => match (b.get(i).and_then(|c| hex(*c)), b.get(i + 1).and_then(|c| hex(*c))) {
                (Some(high), Some(low)) => {
                    out.push(high << 4 | low);
                    i += 2;
                }
                _ => out.push(b'x'),
            },
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'0'..=b'7' => {
                let mut value = u32::from(c - b'0');
                let mut n = 1;
                while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    value = value * 8 + u32::from(b[i] - b'0');
                    i += 1;
                    n += 1;
                }
                out.push(value as u8);
            }
            other => out.push(other),
        }
    }
    out
}

/// Bytes written to streams, cut into lines as the writes complete them.
#[derive(Debug)]
pub struct Lines<K> {
    partial: HashMap<K, Vec<u8>>,
}

impl<K> Default for Lines<K> {
    fn default() -> Self {
        Lines { partial: HashMap::new() }
    }
}

impl<K: Hash + Eq> Lines<K> {
    /// Appends `data` to the stream `key`; returns the lines it completed
    /// (without their `\n`).
    pub fn feed(&mut self, key: K, data: &[u8]) -> Vec<String> {
        let buf = self.partial.entry(key).or_default();
        buf.extend_from_slice(data);
        let mut lines = Vec::new();
        while let Some(end) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            lines.push(String::from_utf8_lossy(&line[..end]).into_owned());
        }
        lines
    }
}

/// The id a line of stdout acknowledges: a number alone (`ukue add`,
/// add_job.py), or a step driver's answer to an add, `{"ok": true, "id": N}`
/// (an answer carrying a `job` is a claim's, not an add's).
pub fn acknowledged_id(line: &str) -> Option<i64> {
    if let Ok(id) = line.trim().parse::<i64>() {
        return Some(id);
    }
    let answer: serde_json::Value = serde_json::from_str(line).ok()?;
    let object = answer.as_object()?;
    if object.get("ok") != Some(&serde_json::Value::Bool(true)) || object.contains_key("job") {
        return None;
    }
    object.get("id")?.as_i64()
}

/// The ids that the lines of `stdout` acknowledge, in order.
pub fn acknowledged_ids(stdout: &str) -> Vec<i64> {
    stdout.lines().filter_map(acknowledged_id).collect()
}

/// The id one `add` printed: its whole output is one acknowledging line.
pub fn printed_id(stdout: &str) -> Option<i64> {
    let mut lines = stdout.lines().filter(|l| !l.trim().is_empty());
    let id = acknowledged_id(lines.next()?)?;
    lines.next().is_none().then_some(id)
}

/// The acknowledgements on the stdout the harness reads, from the writes
/// to it in a trace (`-y` names the stream: the file of [`TracedRun::stdout`],
/// or a pipe, `pipe:[77]`). An id is acknowledged at the write that
/// completes its line, whatever process or thread made the writes, and
/// however many it took (Python unbuffered writes `1`, then `\n`). A line
/// that a program writes elsewhere (to a pipe that a wrapper reads, to
/// relay it later) is no acknowledgement yet.
#[derive(Debug)]
pub struct Stdout {
    stream: String,
    bytes: Lines<()>,
}

impl Stdout {
    pub fn new(stream: impl Into<String>) -> Self {
        Stdout { stream: stream.into(), bytes: Lines::default() }
    }

    /// `w` went to this stdout (at its offset: a pwrite to it is no output).
    pub fn takes(&self, w: &Written) -> bool {
        w.path == self.stream && w.offset.is_none()
    }

    /// The ids acknowledged by the lines that `w` (a write that
    /// [`Stdout::takes`]) completes.
    pub fn write(&mut self, w: &Written) -> Vec<i64> {
        self.bytes.feed((), &w.data).iter().filter_map(|l| acknowledged_id(l)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ukue add` under `strace -f -y -qq` in a new pid namespace (pid 4):
    /// strace pads a short line so that its `=` stands at column 40.
    const ADD: &str = r#"4     execve("/work/main/target/release/ukue", ["/work/main/target/release/ukue", "add", "/tmp/st/j.ukue", "q", "payload"], 0x7ffe16073f40 /* 39 vars */) = 0
4     pwrite64(4</tmp/st/j.ukue-wal>, "7\177\6\202\0-\342\30\0\0\20\0\0\0\0\0a\353R\263\223\1\336\22\2109\356tR\377\307\254", 32, 0) = 32
4     fsync(4</tmp/st/j.ukue-wal>)      = 0
4     fsync(6</tmp/st>)                 = 0
4     pwrite64(4</tmp/st/j.ukue-wal>, "\0\0\0\10\0\0\0\10a\353R\263\223\1\336\22g\347\203#\377@\223\5", 24, 16512) = 24
4     pwrite64(4</tmp/st/j.ukue-wal>, "\n\0\0\0\1\17\364\0\17\364\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"..., 4096, 16536) = 4096
4     fsync(4</tmp/st/j.ukue-wal>)      = 0
4     write(1<pipe:[14326]>, "1\n", 2)  = 2
"#;

    #[test]
    fn reads_padded_lines() {
        let calls = calls(ADD);
        assert_eq!(calls.len(), 8, "{calls:#?}");
        assert!(calls.iter().all(|c| c.pid == 4));
        assert_eq!(calls[0].executed().as_deref(), Some("/work/main/target/release/ukue"));
        assert_eq!(calls[2].synced().as_deref(), Some("/tmp/st/j.ukue-wal"));
        assert_eq!(calls[3].synced().as_deref(), Some("/tmp/st"));
        let header = calls[1].written().unwrap();
        assert_eq!((header.fd, header.path.as_str(), header.offset), (4, "/tmp/st/j.ukue-wal", Some(0)));
        assert_eq!(&header.data[..6], b"7\x7f\x06\x82\x00-");
        assert_eq!(header.data.len(), 32);
        let frame = calls[4].written().unwrap();
        assert_eq!(&frame.data[..8], b"\0\0\0\x08\0\0\0\x08", "octal escapes: \\10 is 8");
        assert_eq!(frame.data.len(), 24);
        let cut = calls[5].written().unwrap();
        assert!(cut.cut && !cut.whole() && cut.count == 4096);
        let ack = calls[7].written().unwrap();
        assert_eq!((ack.path.as_str(), ack.data.as_slice(), calls[7].line), ("pipe:[14326]", &b"1\n"[..], 8));
        assert!(Stdout::new("pipe:[14326]").takes(&ack));
        // The line of the report, from a machine with longer pids.
        let long = super::calls("17140 write(1<pipe:[32749]>, \"1\\n\", 2)  = 2\n");
        assert_eq!(long[0].pid, 17140);
        assert_eq!(long[0].written().unwrap().data, b"1\n");
    }

    #[test]
    fn joins_unfinished_calls_across_pids_at_their_end() {
        // `ukue work` under `strace -f -y -qq -xx` (pids 5 to 8).
        let trace = r#"6     clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD <unfinished ...>
5     pwrite64(5<\x2f\x74\x6d\x70\x2f\x73\x74\x2f\x77\x2e\x75\x6b\x75\x65\x2d\x73\x68\x6d>, "\x00", 1, 20479 <unfinished ...>
7     openat(AT_FDCWD<\x2f\x74\x6d\x70\x2f\x73\x74>, "\x2f\x74\x6d\x70\x2f\x73\x74\x2f\x77\x2e\x75\x6b\x75\x65", O_RDWR|O_NOFOLLOW|O_CLOEXEC <unfinished ...>
6     <... clone resumed>, child_tidptr=0x7f7020c53a10) = 8
7     <... openat resumed>)             = 3<\x2f\x74\x6d\x70\x2f\x73\x74\x2f\x77\x2e\x75\x6b\x75\x65>
8     --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=9, si_uid=0, si_status=0, si_utime=0, si_stime=0} ---
5     <... pwrite64 resumed>)           = 1
9     <... fsync resumed>)              = 0
5     read(0</dev/zero>,  <unfinished ...>) = ?
5     +++ killed by SIGKILL +++
4     +++ exited with 0 +++
"#;
        let calls = calls(trace);
        let seen: Vec<(usize, u32, &str)> = calls.iter().map(|c| (c.line, c.pid, c.name.as_str())).collect();
        // The fsync resumed without a start is left out.
        assert_eq!(seen, vec![(4, 6, "clone"), (5, 7, "openat"), (7, 5, "pwrite64"), (9, 5, "read")]);
        assert_eq!(calls[0].returned(), Some(8));
        assert_eq!(calls[0].arg(1), "flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD");
        assert_eq!(calls[0].arg(2), "child_tidptr=0x7f7020c53a10");
        assert_eq!(calls[1].returned_path(), Some("/tmp/st/w.ukue"));
        assert_eq!(quoted(calls[1].arg(1)).unwrap().0, b"/tmp/st/w.ukue");
        let w = calls[2].written().unwrap();
        assert_eq!(
            (w.path.as_str(), w.data.as_slice(), w.offset),
            ("/tmp/st/w.ukue-shm", &b"\0"[..], Some(20479))
        );
        assert_eq!(calls[3].outcome, CallOutcome::Unknown, "killed in the call");
    }

    #[test]
    fn reads_failures_injected_or_not() {
        // `ukue add` under `strace -f -y -qq -e inject=pwrite64,write:error=ENOSPC:when=12`.
        let trace = r#"4     pwrite64(4</tmp/st/k.ukue-wal>, "\0\0\0\4\0\0\0\0Lz\2302U\354\300\363\256\344\0270kL\303\253", 24, 4152) = -1 ENOSPC (No space left on device) (INJECTED)
4     openat(AT_FDCWD</tmp/st>, "a>b\"c)", O_RDONLY) = -1 ENOENT (No such file or directory)
4     openat(AT_FDCWD</tmp/st>, "a>b\"c)", O_RDONLY) = 3</tmp/st/a\76b\"c)>
4     exit_group(0)                     = ?
"#;
        let calls = calls(trace);
        assert_eq!(calls.len(), 4);
        assert_eq!(calls[0].outcome, CallOutcome::Failed { errno: "ENOSPC".into(), injected: true });
        assert!(calls[0].written().is_none() && calls[0].injected());
        assert_eq!(calls[1].outcome, CallOutcome::Failed { errno: "ENOENT".into(), injected: false });
        assert!(calls[1].failed() && !calls[1].injected());
        assert_eq!(quoted(calls[2].arg(1)).unwrap().0, b"a>b\"c)", "quotes and parentheses in a string");
        assert_eq!(calls[2].returned_path(), Some("/tmp/st/a>b\"c)"));
        assert_eq!(calls[2].arg(2), "O_RDONLY");
        assert_eq!(calls[3].outcome, CallOutcome::Unknown);
        // \0270 is \027 then '0': three digits when an octal digit follows.
        let (data, _) = quoted(r#""\344\0270kL""#).unwrap();
        assert_eq!(data, [0o344, 0o27, b'0', b'k', b'L']);
    }

    #[test]
    fn an_id_written_in_two_writes_is_acknowledged_at_the_second() {
        // python3 -c 'os.write(1, b"1"); os.write(1, b"\n")' under strace -f -y.
        let python = r#"4     write(1<pipe:[18012]>, "1", 1)    = 1
5     write(1<pipe:[18099]>, "2\n", 2)  = 2
4     write(1<pipe:[18012]>, "\n", 1)   = 1
4     write(1</dev/null>, "5\n", 2)     = 2
4     pwrite64(1<pipe:[18012]>, "6\n", 2, 0) = 2
"#;
        let acks = |trace: &str, stream: &str| {
            let mut stdout = Stdout::new(stream);
            calls(trace)
                .iter()
                .filter_map(|c| c.written().filter(|w| stdout.takes(w)).map(|w| (c.line, stdout.write(&w))))
                .collect::<Vec<(usize, Vec<i64>)>>()
        };
        assert_eq!(acks(python, "pipe:[18012]"), vec![(1, vec![]), (3, vec![1])]);
        assert_eq!(acks(python, "pipe:[18099]"), vec![(2, vec![2])], "another stream");
        // A thread (pid 6) ends the line that another began, on a file;
        // and a step driver's answer.
        let threads = r#"4     write(1<\x2f\x74\x2f\x6f\x75\x74>, "\x33", 1) = 1
6     write(1<\x2f\x74\x2f\x6f\x75\x74>, "\x0a\x7b\x22\x6f\x6b\x22\x3a\x74\x72\x75\x65\x2c\x22\x69\x64\x22\x3a\x34\x7d\x0a", 20) = 20
"#;
        assert_eq!(acks(threads, "/t/out"), vec![(1, vec![]), (2, vec![3, 4])]);
    }

    #[test]
    fn acknowledgements_of_adds_and_drivers() {
        assert_eq!(acknowledged_id(" 12 "), Some(12));
        assert_eq!(acknowledged_id(r#"{"ok": true, "id": 7}"#), Some(7));
        assert_eq!(acknowledged_id(r#"{"ok": true, "id": 7, "job": {}}"#), None);
        assert_eq!(acknowledged_id(r#"{"ok": false, "id": 7}"#), None);
        assert_eq!(acknowledged_id("3.11.7"), None);
        assert_eq!(acknowledged_ids("1\nx\n2\n"), vec![1, 2]);
        assert_eq!(printed_id("5\n"), Some(5));
        assert_eq!(printed_id("5\n6\n"), None);
        assert_eq!(printed_id(""), None);
    }

    #[test]
    fn invocations() {
        let trace = Path::new("/t/x.strace");
        let record = Invocation::record().args(trace, &["ukue", "add"]);
        assert_eq!(record[..7], ["-f", "--seccomp-bpf", "-y", "-qq", "-xx", "-s", "1048576"]);
        assert_eq!(record[record.len() - 5..], ["-o", "/t/x.strace", "--", "ukue", "add"]);
        let faults =
            Invocation::calls_on(SYNCS, ["/t/a".to_string()]).inject("EIO", 3, true).args(trace, &["u"]);
        assert_eq!(
            faults,
            [
                "-f",
                "--seccomp-bpf",
                "-qq",
                "-P",
                "/t/a",
                "-e",
                "trace=fsync,fdatasync",
                "-e",
                "inject=fsync,fdatasync:error=EIO:when=3+",
                "-o",
                "/t/x.strace",
                "--",
                "u"
            ]
        );
        for call in WRITES.split(',').chain(SYNCS.split(',')) {
            assert!(TRACED.split(',').any(|c| c == call), "{call} is recorded");
        }
    }
}
