//! FORMAT.md §5.4's look: a worker may look for a due job without the
//! write lock before it claims, and "idle workers that look first do not
//! hold up the programs that add jobs, however many of them poll". The
//! published command and the reference look first; a program that claims
//! at every poll is no less correct, so the case is a `should`.
//!
//! What shows it: the locks SQLite takes on the file's `-shm`, traced. A
//! read transaction takes a shared lock on a read mark (bytes 123 to 127);
//! the write lock is an exclusive lock on byte 120 (SQLite's
//! WAL_WRITE_LOCK), which every claim's `BEGIN IMMEDIATE` takes.

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::cases::CaseResult;
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::strace::{self, calls, command, Invocation};
use crate::subjects::probe::now_ms;
use crate::subjects::Failure;

use super::setup::{insert, Put};

/// The read transactions (looks, and a claim's start) to see.
const LOOKS: usize = 40;

/// A worker that looks first may take the write lock now and then (as it
/// opens the file, say), but not at a quarter of its looks.
const MOST_WRITES_PER_LOOK: f64 = 0.25;

/// The locks of a trace: (read transactions begun, write locks tried).
fn locks(trace: &str) -> (usize, usize) {
    let (mut reads, mut writes) = (0, 0);
    for call in calls(trace).into_iter().filter(|c| c.name == "fcntl") {
        let lock = call.arg(2);
        let at = |start: &str| lock.contains(&format!("l_start={start},"));
        let read_mark = ["123", "124", "125", "126", "127"].into_iter().any(at);
        if lock.contains("l_type=F_RDLCK") && read_mark && !call.failed() {
            reads += 1;
        } else if lock.contains("l_type=F_WRLCK") && at("120") {
            // Taken or not: the worker tried.
            writes += 1;
        }
    }
    (reads, writes)
}

/// An idle worker (`--poll 20ms`) looks without the write lock: it takes
/// SQLite's write lock at under a quarter of its reads. Its queue's one
/// job is due in an hour; another queue has a job due and one running,
/// its lease an hour ahead: nothing for the worker to claim or reap.
pub fn idle_worker_looks_first(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let now = now_ms();
    insert(
        &file,
        &[
            Put::new("q", "ready", now).run_at(now + 3_600_000),
            Put::new("other", "ready", now),
            Put::new("other", "running", now),
        ],
    )?;
    let subject = ctx.subject().clone();
    let trace = ctx.path("work.strace");
    let work = ["work", path_str(&file), "q", "--poll", "20ms", "--", "true"];
    let args = Invocation::calls_on("fcntl", [format!("{}-shm", strace::traced_path(&file)?)])
        .args(&trace, &command(&subject, &work));
    let shown: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut traced = ctx.spawn(&strace::program(ctx)?, &shown, Stdio::null(), Stdio::null())?;
    let looked = ctx.wait_for(
        &format!("the idle worker to read the file {LOOKS} times"),
        Duration::from_secs(30),
        || Ok(locks(&std::fs::read_to_string(&trace).unwrap_or_default()).0 >= LOOKS),
    );
    // strace and the worker share a process group: SIGTERM stops both.
    traced.signal_group(Signal::SIGTERM);
    let _ = traced.wait_timeout(Duration::from_secs(10));
    looked?;
    let (reads, writes) = locks(&std::fs::read_to_string(&trace)?);
    if writes as f64 > reads as f64 * MOST_WRITES_PER_LOOK {
        return Err(Failure::fail(
            "an idle worker to look for a due job without the write lock (FORMAT.md §5.4: idle workers that look first do not hold up the programs that add jobs)",
            format!("with no job to claim or reap, it took the write lock {writes} times in {reads} reads"),
        ));
    }
    ctx.notes.push(format!("{reads} reads of the file, {writes} write locks"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_write_locks_are_told_apart() {
        let trace = "\
7 fcntl(5, F_SETLK, {l_type=F_WRLCK, l_whence=SEEK_SET, l_start=120, l_len=1}) = 0
7 fcntl(5, F_SETLK, {l_type=F_WRLCK, l_whence=SEEK_SET, l_start=121, l_len=2}) = 0
7 fcntl(5, F_SETLK, {l_type=F_RDLCK, l_whence=SEEK_SET, l_start=124, l_len=1}) = 0
7 fcntl(5, F_SETLK, {l_type=F_UNLCK, l_whence=SEEK_SET, l_start=124, l_len=1}) = 0
7 fcntl(5, F_SETLK, {l_type=F_RDLCK, l_whence=SEEK_SET, l_start=123, l_len=1}) = 0
7 fcntl(5, F_SETLK, {l_type=F_WRLCK, l_whence=SEEK_SET, l_start=123, l_len=1}) = 0
7 fcntl(5, F_SETLK, {l_type=F_WRLCK, l_whence=SEEK_SET, l_start=120, l_len=1}) = -1 EAGAIN (Resource temporarily unavailable)
7 fcntl(5, F_SETLK, {l_type=F_RDLCK, l_whence=SEEK_SET, l_start=128, l_len=1}) = 0
";
        assert_eq!(locks(trace), (2, 2));
    }
}
