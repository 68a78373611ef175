//! One sequence run on twin files, the reference's and the subject's,
//! compared after every step: the exit class, what `--json` printed and
//! what `retry --all` and `purge` counted, and the rows of the file.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::seen::{self, Ids, Job};
use super::step::{Command, Step, Word};
use crate::cases::common;
use crate::check;
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::file::read;
use crate::subjects::probe::now_ms;
use crate::subjects::worker::WorkerProcess;
use crate::subjects::Failure;
use crate::subjects::Subject;

/// An id that no job of a sequence has.
const MISSING: i64 = 9_999_999;

/// How long a `work` step may take to run what is due.
const WORK_LIMIT: Duration = Duration::from_secs(20);

/// The first step at which the subject did not do what the reference did.
#[derive(Debug, Clone)]
pub struct Difference {
    /// Its index in the sequence.
    pub step: usize,
    /// The step as the reference ran it.
    pub line: String,
    /// Every step up to it, as the reference ran them.
    pub lines: Vec<String>,
    pub expected: String,
    pub seen: String,
}

/// One implementation's side of the twin.
struct Side {
    who: Subject,
    file: PathBuf,
    ids: Ids,
}

/// Runs `steps` on new twin files named after `name`; the first
/// difference, if any. The files are removed when there is none.
pub fn run(ctx: &Ctx, name: &str, steps: &[Step]) -> Result<Option<Difference>, Failure> {
    let side = |who: &Subject, role: &str| Side {
        who: who.clone(),
        file: ctx.path(&format!("{name}-{role}.ukue")),
        ids: Ids::default(),
    };
    let mut reference = side(ctx.reference(), "reference");
    let mut subject = side(ctx.subject(), "subject");
    for side in [&reference, &subject] {
        ctx.ok(&side.who, &["init", path_str(&side.file)])?;
    }
    let mut lines = Vec::new();
    for (at, step) in steps.iter().enumerate() {
        let step = &for_both(step, &reference)?;
        let line = shown(ctx, step, &reference);
        lines.push(line.clone());
        let differ = |expected: String, seen: String| Difference {
            step: at,
            line,
            lines: lines.clone(),
            expected,
            seen,
        };
        if let Some((expected, seen)) = compare(ctx, step, &mut reference, &mut subject)? {
            return Ok(Some(differ(expected, seen)));
        }
        let now = now_ms();
        let theirs = seen::jobs(&reference.file, &reference.ids, now)?;
        let ours = seen::jobs(&subject.file, &subject.ids, now)?;
        if let Some((expected, seen)) = jobs_differ(&theirs, &ours) {
            return Ok(Some(differ(expected, seen)));
        }
    }
    let findings = check::file::invariants(&subject.file);
    if !findings.is_empty() {
        let line = "(after the last step)".to_string();
        let expected = "the subject's file to keep FORMAT.md §7's invariants".to_string();
        let seen = check::describe(&findings);
        return Ok(Some(Difference { step: steps.len(), line, lines, expected, seen }));
    }
    for side in [&reference, &subject] {
        remove(&side.file);
    }
    Ok(None)
}

fn remove(file: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut path = file.as_os_str().to_owned();
        path.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(path));
    }
}

/// The step both sides run: `retry` and `delete` of several ids keep only
/// the ids that the reference's file holds good, each once (the others
/// alone are kept when none is). An id named twice is gone, or no longer
/// dead, by its second time: a missing id among others is one where the
/// published command stops and the reference goes on (COMMAND.md
/// `delete.missing`, `retry.not-dead`), so the two may leave different
/// files, both right.
fn for_both(step: &Step, reference: &Side) -> Result<Step, Failure> {
    let Command::Ids { dead_only } = step.command else { return Ok(step.clone()) };
    let named = step.words.iter().filter(|w| matches!(w, Word::Job(_) | Word::Missing)).count();
    if named < 2 {
        return Ok(step.clone());
    }
    let conn = read(&reference.file)?;
    let good = |word: &Word| -> Result<bool, Failure> {
        let Word::Job(label) = word else { return Ok(!matches!(word, Word::Missing)) };
        let Some(id) = reference.ids.id(*label) else { return Ok(false) };
        let state: Option<String> =
            match conn.query_row("SELECT state FROM ukue_jobs WHERE id = ?1", [id], |r| r.get(0)) {
                Ok(state) => Some(state),
                Err(rusqlite::Error::QueryReturnedNoRows) => None,
                Err(e) => return Err(e.into()),
            };
        Ok(state.is_some_and(|s| !dead_only || s == "dead"))
    };
    let mut words: Vec<Word> = Vec::new();
    let mut first_id = None;
    for word in &step.words {
        let is_id = matches!(word, Word::Job(_) | Word::Missing);
        if is_id && first_id.is_none() {
            first_id = Some(word.clone());
        }
        if !is_id || (!words.contains(word) && good(word)?) {
            words.push(word.clone());
        }
    }
    if !words.iter().any(|w| matches!(w, Word::Job(_) | Word::Missing)) {
        let at = words.iter().position(|w| *w == Word::File).map_or(words.len(), |i| i + 1);
        words.insert(at, first_id.expect("an id"));
    }
    Ok(Step { words, ..step.clone() })
}

/// The words of `step` as `side` runs them.
fn args(step: &Step, side: &Side) -> Vec<OsString> {
    step.words
        .iter()
        .map(|word| match word {
            Word::Lit(text) => OsString::from(text),
            Word::Bytes(bytes) => OsString::from_vec(bytes.clone()),
            Word::File => side.file.clone().into_os_string(),
            Word::Job(label) => OsString::from(side.ids.id(*label).unwrap_or(MISSING).to_string()),
            Word::Missing => OsString::from(MISSING.to_string()),
        })
        .collect()
}

/// `ukue add FILE q job-0 < 3 bytes`, as the reference runs it.
fn shown(ctx: &Ctx, step: &Step, reference: &Side) -> String {
    let words: Vec<String> = args(step, reference)
        .iter()
        .map(|w| {
            let text = w.to_string_lossy().into_owned();
            if text == path_str(&reference.file) {
                "FILE".to_string()
            } else {
                text.chars()
                    .flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] })
                    .collect()
            }
        })
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let mut line = format!("ukue {}", common::show_args(&common::relative(ctx, &words)));
    if let Some(stdin) = &step.stdin {
        line.push_str(&format!(" < ({} bytes: {})", stdin.len(), seen_payload(stdin)));
    }
    line
}

fn seen_payload(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(12)];
    crate::shown::payload(head) + if bytes.len() > 12 { "…" } else { "" }
}

fn class(out: &Output) -> &'static str {
    match out.status.code() {
        Some(0) => "exit status 0",
        Some(_) => "a refusal (an exit status other than 0)",
        None => "an end by a signal",
    }
}

/// Runs `step` on both sides, the reference first: (what the reference
/// did, what the subject did) where they part.
fn compare(
    ctx: &Ctx,
    step: &Step,
    reference: &mut Side,
    subject: &mut Side,
) -> Result<Option<(String, String)>, Failure> {
    if step.command == Command::Work {
        work(ctx, step, reference)
            .map_err(|f| Failure::error(format!("the reference's {}", f.expected), f.seen))?;
        return Ok(work(ctx, step, subject).err().map(|f| (f.expected, f.seen)));
    }
    let theirs = ctx.run_os_with(&reference.who, &args(step, reference), step.stdin.as_deref())?;
    let ours = ctx.run_os_with(&subject.who, &args(step, subject), step.stdin.as_deref())?;
    if class(&theirs) != class(&ours) {
        return Ok(Some((class(&theirs).to_string(), common::outcome(&ours))));
    }
    if theirs.status.code() != Some(0) {
        return Ok(None);
    }
    match step.command {
        Command::Add(label) => {
            let printed = |out: &Output| String::from_utf8_lossy(&out.stdout).trim().parse::<i64>().ok();
            let id = printed(&theirs).ok_or_else(|| {
                Failure::error("the reference's add to print an id", common::outcome(&theirs))
            })?;
            reference.ids.insert(label, id);
            match printed(&ours) {
                Some(id) => subject.ids.insert(label, id),
                None => {
                    let stdout = String::from_utf8_lossy(&ours.stdout).into_owned();
                    return Ok(Some((
                        "the new job's id alone on a line".into(),
                        format!("stdout {stdout:?}"),
                    )));
                }
            }
        }
        Command::Json => {
            let expected = seen::json(&theirs.stdout, &reference.ids)
                .map_err(|e| Failure::error("the reference to print JSON", e))?;
            let printed = match seen::json(&ours.stdout, &subject.ids) {
                Ok(value) => value,
                Err(e) => return Ok(Some(("JSON on stdout".into(), e))),
            };
            if let Some((at, expected, printed)) = first_difference("", &expected, &printed) {
                return Ok(Some((format!("JSON {at}: {expected}"), format!("JSON {at}: {printed}"))));
            }
        }
        Command::Counted => {
            let stdout = String::from_utf8_lossy(&theirs.stdout).into_owned();
            let count = common::numbers(&stdout).first().map(|n| n.to_string()).unwrap_or_default();
            let printed = String::from_utf8_lossy(&ours.stdout).into_owned();
            if !common::numbers(&printed).contains(&count.as_str()) {
                return Ok(Some((
                    format!("how many it did, {count}, on stdout"),
                    format!("stdout {printed:?}"),
                )));
            }
        }
        Command::Text | Command::Ids { .. } | Command::Work => {}
    }
    Ok(None)
}

/// The first place where two JSON values differ (its path, then each
/// side's value there), ignoring the order of an object's keys.
fn first_difference(at: &str, a: &Value, b: &Value) -> Option<(String, String, String)> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|key| match (x.get(key), y.get(key)) {
                (Some(p), Some(q)) => first_difference(&format!("{at}.{key}"), p, q),
                (p, q) => Some((format!("{at}.{key}"), absent(p), absent(q))),
            })
        }
        (Value::Array(x), Value::Array(y)) => {
            let found = x
                .iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| first_difference(&format!("{at}[{i}]"), p, q));
            found.or_else(|| {
                (x.len() != y.len()).then(|| {
                    (format!("{at} (its length)"), format!("{} items", x.len()), format!("{} items", y.len()))
                })
            })
        }
        _ if a == b => None,
        _ => {
            Some((if at.is_empty() { "(the whole)".into() } else { at.into() }, seen::clip(a), seen::clip(b)))
        }
    }
}

fn absent(value: Option<&Value>) -> String {
    value.map_or_else(|| "(no such key)".to_string(), seen::clip)
}

/// Where the jobs of the two files part: the reference's job and the
/// subject's, by label.
fn jobs_differ(theirs: &[Job], ours: &[Job]) -> Option<(String, String)> {
    let lines = |jobs: &[Job]| jobs.iter().map(|j| j.to_string()).collect::<Vec<_>>();
    if theirs == ours {
        return None;
    }
    let (a, b) = (lines(theirs), lines(ours));
    let only_a: Vec<&String> = a.iter().filter(|l| !b.contains(l)).collect();
    let only_b: Vec<&String> = b.iter().filter(|l| !a.contains(l)).collect();
    let join = |lines: Vec<&String>| {
        if lines.is_empty() {
            "no job that the other file lacks".to_string()
        } else {
            lines.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("; ")
        }
    };
    Some((
        format!("in the reference's file: {}", join(only_a)),
        format!("in the subject's file: {}", join(only_b)),
    ))
}

/// Runs `work` until its queue has nothing due and nothing running, then
/// stops it with SIGTERM: it must have kept running, and exit 0. So that
/// the signal finds a worker at work (not one still starting, which a
/// signal may end), the side's own `add` first puts a job of the highest
/// priority in the queue, and the wait lasts until its command has run;
/// the side's own `delete` takes it away again when `--keep-done` kept it.
fn work(ctx: &Ctx, step: &Step, side: &Side) -> Result<(), Failure> {
    let queue = match step.words.get(2) {
        Some(Word::Lit(queue)) => queue.clone(),
        _ => return Err(Failure::error("a work step to name its queue", format!("{:?}", step.words))),
    };
    let file = path_str(&side.file);
    let added = ctx.ok(&side.who, &["add", file, &queue, "first", "--priority", "100"])?;
    let first: i64 = added.trim().parse().map_err(|_| {
        Failure::fail("`add` to print the new job's id alone on a line", format!("stdout {added:?}"))
    })?;
    let n = std::fs::read_dir(&ctx.dir).map(|d| d.count()).unwrap_or(0);
    let stderr_path = ctx.path(&format!("work-{n}.stderr"));
    let stderr = std::fs::File::create(&stderr_path)?;
    let mut words: Vec<String> = side.who.args.clone();
    words.extend(args(step, side).into_iter().map(|w| w.to_string_lossy().into_owned()));
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let process = ctx.spawn(&side.who.program, &words, Stdio::null(), Stdio::from(stderr))?;
    let mut worker = WorkerProcess::started(ctx, process, stderr_path);
    let what = format!("`{} work` to run every job of queue {queue:?} that is due", side.who.name);
    let mut kept = false;
    ctx.wait_for(&what, WORK_LIMIT, || {
        worker.still_running(&format!("{what}, and keep running until stopped"))?;
        let conn = read(&side.file)?;
        let first: Option<String> =
            match conn.query_row("SELECT state FROM ukue_jobs WHERE id = ?1", [first], |r| r.get(0)) {
                Ok(state) => Some(state),
                Err(rusqlite::Error::QueryReturnedNoRows) => None,
                Err(e) => return Err(e.into()),
            };
        kept = first.as_deref() == Some("done");
        let left: i64 = conn.query_row(
            "SELECT count(*) FROM ukue_jobs WHERE queue = ?1 AND (state = 'running' OR (state = 'ready' AND run_at <= ?2))",
            rusqlite::params![queue, now_ms()],
            |r| r.get(0),
        )?;
        Ok(left == 0 && first.as_deref().is_none_or(|s| s == "done"))
    })?;
    worker.stop(Duration::from_secs(30))?;
    if kept {
        ctx.ok(&side.who, &["delete", file, &first.to_string()])?;
    }
    Ok(())
}
