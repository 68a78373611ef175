//! Helpers the case families share: the history of a case (the probe's
//! log and the file), findings as a failure, what a command did and how it
//! was called, for a report.

use std::collections::BTreeSet;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Output;

use crate::check::{self, Finding};
use crate::history::{self, Added, Execution, History};
use crate::subjects::ctx::{clip, path_str, Ctx, COMMAND_TIMEOUT};
use crate::subjects::observe::file::read;
use crate::subjects::worker::probe_log;
use crate::subjects::Subject;
use crate::subjects::{Failure, FailureKind};

/// The probe's executions so far.
pub fn executions(ctx: &Ctx) -> Result<Vec<Execution>, Failure> {
    history::read_log(&probe_log(ctx)).map_err(|e| Failure::error("a readable probe log", e))
}

/// The history of the case: the probe's log and the file at the end.
pub fn history(ctx: &Ctx, file: &Path, added: Vec<Added>) -> Result<History, Failure> {
    let history = History {
        added,
        executions: executions(ctx)?,
        final_jobs: history::final_jobs(file)?,
        events: ctx.events.all(),
        ..History::default()
    };
    // Kept with the case's directory when it fails (--keep).
    history.save(&ctx.path("history.jsonl"))?;
    ctx.keep_history(&history);
    Ok(history)
}

/// The history of a case that kept none (it failed before its checks):
/// the probe's executions so far and the worker events, if it ran any.
pub fn history_so_far(ctx: &Ctx) -> Option<History> {
    let executions = executions(ctx).ok().filter(|e| !e.is_empty())?;
    Some(History { executions, events: ctx.events.all(), ..History::default() })
}

/// Fails with the checkers' findings, if any.
pub fn no_findings(what: &str, findings: Vec<Finding>) -> Result<(), Failure> {
    if findings.is_empty() {
        Ok(())
    } else {
        Err(Failure::fail(what.to_string(), check::describe(&findings)).blaming(check::blame(&findings)))
    }
}

// ---- Helpers of the refusal, compat, bad-input and interop families. ----

/// Runs `who args`, which must refuse them and end: a command still
/// running at [`COMMAND_TIMEOUT`] has not refused them, and fails the case
/// (`expected`; it did not `refuse`, such as "refuse the file").
pub fn run_to_refusal(
    ctx: &Ctx,
    who: &Subject,
    args: &[&str],
    expected: &str,
    refuse: &str,
) -> Result<Output, Failure> {
    match ctx.run(who, args) {
        Err(f) if f.kind == FailureKind::Timeout => Err(Failure::fail(
            expected,
            format!(
                "it was still running after {} s (killed): it did not {refuse}",
                COMMAND_TIMEOUT.as_secs()
            ),
        )),
        result => result,
    }
}

/// The names in a directory, sorted (to show that a command made no file).
pub fn listing(dir: &Path) -> Result<BTreeSet<String>, Failure> {
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(dir)? {
        names.insert(entry?.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

/// The whole numbers in `text` (`format 2 … format 1`: `["2", "1"]`).
pub fn numbers(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_ascii_digit()).filter(|n| !n.is_empty()).collect()
}

/// What a finished command did, for a report: `exit status 1` or
/// `killed by signal 9`, then its stderr (clipped), or `nothing on stderr`.
pub fn outcome(out: &Output) -> String {
    let status = match (out.status.code(), out.status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => out.status.to_string(),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.trim().is_empty() {
        format!("{status}, nothing on stderr")
    } else {
        format!("{status}: {}", clip(stderr.trim()))
    }
}

/// How `before` became `after`, in bytes: for a report.
pub fn bytes_diff(before: &[u8], after: &[u8]) -> String {
    let first = before.iter().zip(after).position(|(a, b)| a != b).unwrap_or(before.len().min(after.len()));
    format!("{} bytes before, {} after, first difference at byte {first}", before.len(), after.len())
}

/// The file's jobs, in id order, as the [`Added`] of a history (payloads
/// as their UTF-8 text, whatever their SQLite type).
pub fn jobs_as_added(file: &Path, by: &str) -> Result<Vec<Added>, Failure> {
    let conn = read(file)?;
    let mut st = conn.prepare("SELECT id, CAST(payload AS BLOB) FROM ukue_jobs ORDER BY id")?;
    let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))?;
    let mut added = Vec::new();
    for row in rows {
        let (job, payload) = row?;
        added.push(Added {
            job,
            payload: String::from_utf8_lossy(&payload).into_owned(),
            by: by.to_string(),
        });
    }
    Ok(added)
}

/// After a drain without crashes: every job of `added` ran exactly once,
/// with its payload.
pub fn ran_exactly_once(ctx: &Ctx, file: &Path, added: Vec<Added>) -> Result<(), Failure> {
    let history = history(ctx, file, added)?;
    let mut findings = check::exactly_once(&history);
    findings.extend(check::payloads(&history));
    let jobs = history.added.len();
    no_findings(
        &format!("each of the {jobs} jobs to run exactly once, with its payload on stdin (FORMAT.md §6.3)"),
        findings,
    )
}

use crate::subjects::LOCKED;

/// The lines of the case's workers' output (the `worker-N.stdout` and
/// `.stderr` files of its directory) that say [`LOCKED`]: a step that gave
/// up on a busy file, told to the user.
pub fn locked_lines(ctx: &Ctx) -> usize {
    let Ok(entries) = std::fs::read_dir(&ctx.dir) else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with("worker-")))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .map(|bytes| String::from_utf8_lossy(&bytes).lines().filter(|l| l.contains(LOCKED)).count())
        .sum()
}

/// The figures of a case that runs many processes on one file: how many
/// worker and producer processes ran at once, the jobs, and the lines of
/// [`locked_lines`] (`database_locked`: 0 is what a program that waits
/// out the busy file as FORMAT.md §4.1 says shows).
pub fn note_contention(ctx: &mut Ctx, workers: usize, producers: usize, jobs: usize) {
    let locked = locked_lines(ctx);
    ctx.notes.push(format!(
        "{workers} worker processes and {producers} producers on one file, {jobs} jobs; {locked} lines of output said \"{LOCKED}\""
    ));
    for (name, n) in
        [("worker_processes", workers), ("producer_processes", producers), ("database_locked", locked)]
    {
        ctx.figures.insert(name.to_string(), n as u64);
    }
    ctx.figures.entry("jobs".to_string()).or_insert(jobs as u64);
}

/// `args` with the case's directory taken off the front of each path, for
/// a report (the subject runs in that directory, so the line still works).
pub fn relative<'a>(ctx: &Ctx, args: &[&'a str]) -> Vec<&'a str> {
    let prefix = format!("{}/", path_str(&ctx.dir));
    args.iter().map(|a| a.strip_prefix(&prefix).unwrap_or(a)).collect()
}

/// Arguments as one line for a report: empty ones and ones with spaces
/// quoted, long ones cut to their start and their length.
pub fn show_args(args: &[&str]) -> String {
    args.iter()
        .map(|a| {
            let n = a.chars().count();
            let a = if n > 40 {
                format!("{}…({n} characters)", a.chars().take(12).collect::<String>())
            } else {
                a.to_string()
            };
            if a.is_empty() || a.contains(char::is_whitespace) {
                format!("'{a}'")
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_in_a_message() {
        assert_eq!(numbers("ukue file format 2 is newer than this program knows (format 1)"), vec!["2", "1"]);
        assert_eq!(numbers("no number"), Vec::<&str>::new());
    }
}
