//! The legal variants' command line (crate::subjects::variants): the
//! reference's, with the other side of each choice the variant takes. The
//! words are edited before they are read ([`argv`]), a command line that
//! cannot be read ends as the variant ends it ([`unreadable`]), and each
//! command runs as the variant runs it ([`run`]).

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use ukue::cli::args::{Cmd, ListArgs, WorkArgs};
use ukue::cli::output::{escape, payload_fields};
use ukue::cli::work::CommandHandler;
use ukue::cli::{time, UsageError};
use ukue::worker::{Event, Handler, JobControl, Outcome, Worker};
use ukue::{Claimed, Failed, ListFilter, OpenOptions, State, Ukue};

use super::variants::{Choice, Variant};

/// How late `work-100ms-late` starts each job's command.
const WORK_LATE: Duration = Duration::from_millis(100);

/// The command line's words (the program's name first) as the variant
/// reads them, or the exit status it ends with before reading them.
pub fn argv(variant: &Variant, mut words: Vec<OsString>) -> Result<Vec<OsString>, u8> {
    let command = words.get(1).and_then(|w| w.to_str()).unwrap_or("").to_string();
    let end = flags_end(&words);
    if variant.has(Choice::NoEqualsFlags) {
        let equals = words[..end]
            .iter()
            .skip(2)
            .filter_map(|w| w.to_str())
            .find(|w| w.starts_with("--") && w.contains('='));
        if let Some(word) = equals {
            return Err(usage_error(
                variant,
                &format!("write {word:?} as two words: the flag, then its value"),
            ));
        }
    }
    if variant.has(Choice::DelaysUpToACentury) && command == "add" {
        if let Some(value) = delay_past_a_century(&words[..end]) {
            let why = format!("--delay {} is too long: a delay is at most 100 years", escape(&value));
            eprintln!("{}", error_line(variant, "add", &why));
            return Err(1);
        }
    }
    if variant.has(Choice::ListLimitTaken) && command == "list" {
        edit_flag(&mut words, "--limit", |v| match v.parse::<i64>() {
            Ok(n) if n > 1000 => Edit::Set("1000".into()),
            _ => Edit::Keep,
        });
    }
    if variant.has(Choice::AttemptsZeroDefault) && command == "add" {
        edit_flag(&mut words, "--attempts", |v| {
            if v.parse::<i64>() == Ok(0) {
                Edit::Remove
            } else {
                Edit::Keep
            }
        });
    }
    if variant.has(Choice::MaxBodyZeroDefault) && command == "serve" {
        edit_flag(&mut words, "--max-body", |v| match v.parse::<i64>() {
            Ok(n) if n < 1 => Edit::Remove,
            _ => Edit::Keep,
        });
    }
    Ok(words)
}

/// Where the flags end: at `--` (what follows is positional, or `work`'s
/// command), or at the end.
fn flags_end(words: &[OsString]) -> usize {
    words.iter().position(|w| w == "--").unwrap_or(words.len())
}

enum Edit {
    Keep,
    Set(String),
    Remove,
}

/// `flag`'s value edited, written `--flag VALUE` or `--flag=VALUE`, before
/// any `--`.
fn edit_flag(words: &mut Vec<OsString>, flag: &str, edit: impl Fn(&str) -> Edit) {
    let mut i = 2;
    while i < flags_end(words) {
        let word = words[i].to_str().unwrap_or("").to_string();
        let joined = word.strip_prefix(flag).and_then(|rest| rest.strip_prefix('='));
        let (value, span) = match joined {
            Some(value) => (value.to_string(), 1),
            None if word == flag && i + 1 < words.len() => (words[i + 1].to_string_lossy().into_owned(), 2),
            None => {
                i += 1;
                continue;
            }
        };
        match edit(&value) {
            Edit::Keep => i += span,
            Edit::Set(new) => {
                words[i + span - 1] = if span == 1 { format!("{flag}={new}") } else { new }.into();
                i += span;
            }
            Edit::Remove => {
                words.drain(i..i + span);
            }
        }
    }
}

/// Prints a usage error as the variant words it (twice, for
/// `UsageTwice`); its exit status, 2.
fn usage_error(variant: &Variant, message: &str) -> u8 {
    let text = if variant.has(Choice::OtherWording) {
        format!("ukue: this command line cannot be read: {message}\n(ukue help lists the commands)\n")
    } else {
        format!("error: {message}\n")
    };
    let times = if variant.has(Choice::UsageTwice) { 2 } else { 1 };
    for _ in 0..times {
        eprint!("{text}");
    }
    2
}

/// How a command line that clap cannot read ends: help, a value out of
/// range (`RangeErrorsExit1`), or a usage error.
pub fn unreadable(variant: &Variant, words: &[OsString], e: clap::Error) -> u8 {
    let command = words.get(1).and_then(|w| w.to_str()).unwrap_or("");
    match e.kind() {
        ErrorKind::DisplayHelp if variant.has(Choice::HelpOnStderr) => {
            eprint!("{}", e.render());
            return 2;
        }
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(2);
        }
        _ => {}
    }
    if variant.has(Choice::RangeErrorsExit1) && out_of_range(command, &e) {
        let value = context(&e, ContextKind::InvalidValue).unwrap_or_default();
        let arg = context(&e, ContextKind::InvalidArg).unwrap_or_default();
        let why = if variant.has(Choice::OtherWording) {
            format!("{value:?} is out of range for {arg}")
        } else {
            format!("invalid value {value:?} for {arg}")
        };
        eprintln!("{}", error_line(variant, command, &escape(&why)));
        return 1;
    }
    let rendered = e.render().to_string();
    let first = rendered.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
    if variant.has(Choice::OtherWording) || variant.has(Choice::UsageTwice) {
        let message = if variant.has(Choice::OtherWording) {
            first
        } else {
            rendered.trim_end().trim_start_matches("error: ").to_string()
        };
        return usage_error(variant, &message);
    }
    let _ = e.print();
    2
}

fn context(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(s) => Some(s.join(" ")),
        _ => None,
    }
}

/// A value of the right kind that its item lets a program refuse with an
/// error as well as with a usage error.
fn out_of_range(command: &str, e: &clap::Error) -> bool {
    if !matches!(e.kind(), ErrorKind::ValueValidation | ErrorKind::InvalidValue) {
        return false;
    }
    let (Some(arg), Some(value)) =
        (context(e, ContextKind::InvalidArg), context(e, ContextKind::InvalidValue))
    else {
        return false;
    };
    let duration = |v: &str| ukue::cli::duration::parse(v.strip_prefix('-').unwrap_or(v)).is_ok();
    match command {
        "work" if arg.starts_with("--concurrency") => value.parse::<i64>().is_ok_and(|n| n < 1),
        "work" if arg.starts_with("--lease") || arg.starts_with("--poll") || arg.starts_with("--grace") => {
            duration(&value)
        }
        "list" => arg.starts_with("--state"),
        "add" | "work" => arg.starts_with("<QUEUE"),
        _ => false,
    }
}

/// Runs one command as `variant` runs it; what it prints goes to `out`.
pub fn run(
    variant: &'static Variant,
    command: Cmd,
    options: &OpenOptions,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let name = command.name();
    let json = matches!(&command, Cmd::List(a) if a.json) || matches!(&command, Cmd::Show { json: true, .. });
    // text.escape: what stats, list and show print for a terminal.
    let for_a_terminal = matches!(&command, Cmd::List(a) if !a.json)
        || matches!(&command, Cmd::Show { json: false, .. } | Cmd::Stats { json: false, .. });
    match command {
        Cmd::Work(args) if runs_own_work(variant) => return work(variant, options, args),
        Cmd::Serve(args) if super::variant_serve::changes_serve(variant) => {
            return super::variant_serve::serve(variant, options.clone(), args)
        }
        _ => {}
    }
    let mut printed = Vec::new();
    let result = match command {
        Cmd::Retry { file, ids, all: false, .. } if variant.has(Choice::StopsAtFirstBadId) => {
            each_id(options, &file, &ids, &mut printed, |f, id| {
                f.retry(id).map(|()| format!("job {id} is ready again"))
            })
        }
        Cmd::Delete { file, ids } if variant.has(Choice::StopsAtFirstBadId) => {
            each_id(options, &file, &ids, &mut printed, |f, id| {
                f.delete(id).map(|()| format!("deleted job {id}"))
            })
        }
        Cmd::Stats { file, json: false } if variant.has(Choice::OtherTextLayouts) => {
            stats_text(&open(options, &file)?, &mut printed)
        }
        Cmd::List(args) if !args.json && variant.has(Choice::OtherTextLayouts) => {
            list_text(options, args, &mut printed)
        }
        Cmd::Show { file, id, json: false } if variant.has(Choice::OtherTextLayouts) => {
            show_text(&open(options, &file)?, id, &mut printed)
        }
        command => ukue::cli::run(command, options, &mut printed),
    };
    let edits = JobEdits::of(variant);
    if json && (edits.delayed || edits.empty_last_error) {
        if let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&printed) {
            edit_jobs(&mut value, edits);
            printed = serde_json::to_vec(&value)?;
            printed.push(b'\n');
        }
    }
    if variant.has(Choice::RetryCountsOnly) && name == "retry" {
        printed = counted(&printed).into_bytes();
    }
    if variant.has(Choice::OtherWording) {
        printed = reworded(name, &printed).into_bytes();
    }
    if variant.has(Choice::JsonEscapes) && for_a_terminal {
        printed = json_escapes(&String::from_utf8_lossy(&printed)).into_bytes();
    }
    out.write_all(&printed)?;
    result
}

/// Text escaped as the reference escapes it (`\xNN`, and a backslash
/// doubled, so that it reads back one way) with each `\xNN` written as
/// JSON writes that character, `\u00NN`.
fn json_escapes(escaped: &str) -> String {
    let mut out = String::with_capacity(escaped.len());
    let mut rest = escaped;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let hex = after
            .strip_prefix('x')
            .and_then(|h| h.get(..2))
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
        let (written, skip) = match (hex, after.starts_with('\\')) {
            (Some(hex), _) => (format!("\\u00{hex}"), 3),
            (None, true) => ("\\\\".to_string(), 1),
            (None, false) => ("\\".to_string(), 0),
        };
        out.push_str(&written);
        rest = &after[skip..];
    }
    out.push_str(rest);
    out
}

fn open(options: &OpenOptions, file: &Path) -> anyhow::Result<Ukue> {
    Ok(options.clone().open(file)?)
}

/// Applies `step` to each id in turn, and stops at the first that fails,
/// as the published command does.
fn each_id(
    options: &OpenOptions,
    file: &Path,
    ids: &[i64],
    out: &mut dyn Write,
    step: impl Fn(&mut Ukue, i64) -> ukue::Result<String>,
) -> anyhow::Result<()> {
    let mut file = open(options, file)?;
    for &id in ids {
        writeln!(out, "{}", step(&mut file, id)?)?;
    }
    Ok(())
}

/// What the reference's `retry ID...` prints, one line a job it sent
/// back, as a count of them (`retry.ids-named` left undone).
fn counted(printed: &[u8]) -> String {
    let text = String::from_utf8_lossy(printed);
    let back = text.lines().filter(|l| l.starts_with("job ") && l.ends_with(" is ready again")).count();
    let rest: Vec<&str> =
        text.lines().filter(|l| !(l.starts_with("job ") && l.ends_with(" is ready again"))).collect();
    let mut out = String::new();
    if back > 0 {
        out.push_str(&format!("{back} dead job(s) ready again\n"));
    }
    for line in rest {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The longest `--delay` that `delays-up-to-a-century` takes.
const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `add --delay D` past a century, if the words hold one.
fn delay_past_a_century(words: &[OsString]) -> Option<String> {
    let mut values = words.iter().filter_map(|w| w.to_str());
    let mut found = None;
    while let Some(word) = values.next() {
        let value = match word.strip_prefix("--delay") {
            Some("") => values.next(),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        };
        if let Some(v) = value.filter(|v| ukue::cli::duration::parse(v).is_ok_and(|d| d > CENTURY)) {
            found = Some(v.to_string());
        }
    }
    found
}

/// What the reference's `init`, `retry`, `purge` and `delete` print, in
/// other words: each line still says what was done, and how many.
fn reworded(command: &str, printed: &[u8]) -> String {
    let text = String::from_utf8_lossy(printed);
    if command == "init" {
        // init.prints, a `should`, left undone.
        return text
            .lines()
            .map(|line| match line.strip_suffix(" is ready (ukue file format 1)") {
                Some(file) => format!("made {file}: an empty ukue file\n"),
                None => format!("{line}\n"),
            })
            .collect();
    }
    if !matches!(command, "retry" | "purge" | "delete") {
        return text.into_owned();
    }
    let mut out = String::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        let line = match words.as_slice() {
            ["job", id, "is", "ready", "again"] => format!("sent job {id} back to its queue"),
            [n, "dead", "job(s)", "ready", "again"] => format!("sent back {n} dead job(s)"),
            ["deleted", n, state, "job(s)"] => format!("purged {state} jobs: {n}"),
            ["deleted", "job", id] => format!("job {id} is gone"),
            _ => line.to_string(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The line that says why `command` failed: `ukue COMMAND: TEXT`, or in
/// the variant's words (exit.error-prefix, a `should`, left undone).
pub fn error_line(variant: &Variant, command: &str, text: &str) -> String {
    if variant.has(Choice::OtherWording) {
        format!("error: `ukue {command}` could not go on: {text}")
    } else {
        format!("ukue {command}: {text}")
    }
}

/// The text of an error as the variant words it, escaped as the
/// reference escapes it ([`error_line`] puts it in its line).
pub fn error_text(variant: &Variant, e: &anyhow::Error) -> String {
    let text = worded_error(variant, e);
    if variant.has(Choice::JsonEscapes) {
        return json_escapes(&text);
    }
    text
}

/// The text of an error in the variant's words, escaped as the reference
/// escapes it.
fn worded_error(variant: &Variant, e: &anyhow::Error) -> String {
    if !variant.has(Choice::OtherWording) {
        return escape(&format!("{e:#}"));
    }
    let text = match e.downcast_ref::<ukue::Error>() {
        Some(ukue::Error::JobNotFound { id }) => format!("there is no job {id}"),
        Some(ukue::Error::NotDead { id, state }) => format!("job {id} cannot be retried: it is {state}"),
        // file.newer-version-message (a should): no version named.
        Some(ukue::Error::Refused(ukue::Refusal::NewerVersion { path, .. })) => {
            format!("{}: made by a newer ukue; this one cannot read it", path.display())
        }
        Some(ukue::Error::Refused(refusal)) => format!("refusing the file: {refusal}"),
        _ if e.is::<UsageError>() => format!("{e:#}"),
        _ => format!("cannot do that: {e:#}"),
    };
    escape(&text)
}

/// How the variant shows a JOB (json.job), in `list --json`, `show --json`
/// and the API.
#[derive(Debug, Clone, Copy)]
pub struct JobEdits {
    /// A ready job whose `run_at` is ahead shown `delayed` (json.state).
    pub delayed: bool,
    /// A null `last_error` shown `""` (json.last-error).
    pub empty_last_error: bool,
}

impl JobEdits {
    pub fn of(variant: &Variant) -> JobEdits {
        JobEdits {
            delayed: variant.has(Choice::DelayedShown),
            empty_last_error: variant.has(Choice::EmptyLastError),
        }
    }
}

/// Each JOB in `value` (a JOB, or `{"jobs": [JOB...]}`) edited.
pub fn edit_jobs(value: &mut serde_json::Value, edits: JobEdits) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let jobs: Vec<&mut serde_json::Value> = match value.get_mut("jobs").and_then(|j| j.as_array_mut()) {
        Some(jobs) => jobs.iter_mut().collect(),
        None => vec![value],
    };
    for job in jobs {
        if job.get("id").is_none() {
            continue;
        }
        let ahead = job["run_at"].as_str().and_then(|t| time::parse(t).ok()).is_some_and(|at| at > now);
        if edits.delayed && job["state"] == "ready" && ahead {
            job["state"] = "delayed".into();
        }
        if edits.empty_last_error && job["last_error"].is_null() {
            job["last_error"] = "".into();
        }
    }
}

/// `stats` as lines, one a queue, without `oldest_due`.
fn stats_text(file: &Ukue, out: &mut dyn Write) -> anyhow::Result<()> {
    let stats = file.stats()?;
    if stats.is_empty() {
        writeln!(out, "(the file holds no jobs)")?;
    }
    for s in stats {
        writeln!(
            out,
            "{}: {} due, {} waiting, {} running, {} expired, {} dead, {} done",
            escape(&s.queue),
            s.ready,
            s.delayed,
            s.running,
            s.expired,
            s.dead,
            s.done
        )?;
    }
    Ok(())
}

/// `list` as a table of other columns in another order: no error column,
/// the start of the payload instead.
fn list_text(options: &OpenOptions, args: ListArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let file = open(options, &args.file)?;
    let filter = ListFilter { queue: args.queue, state: args.state, after: args.after, limit: args.limit };
    let jobs = file.list(&filter)?;
    if jobs.is_empty() {
        writeln!(out, "(none)")?;
        return Ok(());
    }
    let now = file.now();
    writeln!(out, "{:<8} {:>6} {:>5} {:<24} {:<20} PAYLOAD", "STATE", "ID", "PRIO", "DUE", "QUEUE")?;
    for j in &jobs {
        let state = if j.state == State::Ready && j.run_at > now { "waiting" } else { j.state.as_str() };
        let payload = match payload_fields(&j.payload) {
            (Some(text), _) => escape(&text.chars().take(20).collect::<String>()),
            _ => format!("({} bytes, binary)", j.payload.len()),
        };
        writeln!(
            out,
            "{state:<8} {:>6} {:>5} {:<24} {:<20} {payload}",
            j.id,
            j.priority,
            time::format(j.run_at),
            escape(&j.queue)
        )?;
    }
    Ok(())
}

/// `show` as a heading and indented fields, the optional ones left out.
fn show_text(file: &Ukue, id: i64, out: &mut dyn Write) -> anyhow::Result<()> {
    let Some(job) = file.get(id)? else {
        return Err(ukue::Error::JobNotFound { id }.into());
    };
    writeln!(out, "Job {} in queue {}", job.id, escape(&job.queue))?;
    writeln!(
        out,
        "  {} after {} of {} tries, due {}",
        job.state,
        job.attempts,
        job.max_attempts,
        time::format(job.run_at)
    )?;
    if let Some(error) = &job.last_error {
        writeln!(out, "  failed with: {}", escape(error))?;
    }
    match payload_fields(&job.payload) {
        (Some(text), _) => writeln!(out, "  payload: {}", escape(&text))?,
        _ => writeln!(out, "  payload: {} bytes, not text", job.payload.len())?,
    }
    Ok(())
}

/// Whether `work` runs as the variant's own, not the reference's.
fn runs_own_work(variant: &Variant) -> bool {
    [Choice::OtherWording, Choice::WorkLate, Choice::StatusOnlyError, Choice::TimeoutUnnamed]
        .into_iter()
        .any(|c| variant.has(c))
}

/// The reference's handler, late and with its outcomes worded as the
/// variant words them.
struct VariantHandler {
    inner: CommandHandler,
    variant: &'static Variant,
}

impl Handler for VariantHandler {
    fn handle(&self, job: &Claimed, control: &JobControl) -> Outcome {
        if self.variant.has(Choice::WorkLate) {
            // The variant's behaviour: slow, not wrong.
            std::thread::sleep(WORK_LATE);
        }
        match self.inner.handle(job, control) {
            Outcome::Fail { mut error, retry } => {
                if self.variant.has(Choice::TimeoutUnnamed) {
                    error = error.replace("timed out", "stopped");
                }
                if self.variant.has(Choice::StatusOnlyError) {
                    error = error.split(": ").next().unwrap_or_default().to_string();
                }
                Outcome::Fail { error, retry }
            }
            other => other,
        }
    }
}

/// `ukue work` as the reference's `work_with` runs it, with the variant's
/// handler and its own lines on stderr.
fn work(variant: &'static Variant, options: &OpenOptions, args: WorkArgs) -> anyhow::Result<()> {
    ukue::cli::work::find_command(&args.command[0]).map_err(UsageError)?;
    drop(open(options, &args.file)?);
    let handler = VariantHandler { inner: CommandHandler::of(&args), variant };
    let worker = Worker::new(&args.file, &args.queue, ukue::cli::work::worker_options(&args))
        .open_options(options.clone());
    let quiet = args.quiet;
    let reworded = variant.has(Choice::OtherWording);
    let result = ukue::cli::work::run_until_signalled(&worker, &handler, &|event| {
        if reworded {
            report(event, quiet)
        } else {
            ukue::cli::work::report(event, quiet)
        }
    })
    .context("installing signal handlers")?;
    if let Err(e) = result {
        bail!("stopped: {e}");
    }
    Ok(())
}

/// work's lines in other words; `quiet` keeps only the errors.
fn report(event: Event, quiet: bool) {
    let line = match event {
        Event::Error { message } => format!("ukue work: trouble: {}", escape(&message)),
        _ if quiet => return,
        Event::Claimed { id, attempt } => format!("[work] took job {id} (try {attempt})"),
        Event::Finished { id, elapsed } => {
            format!("[work] job {id} done after {:.3}s", elapsed.as_secs_f64())
        }
        Event::Failed { id, error, to: Failed::Ready { run_at } } => {
            format!("[work] job {id} went wrong ({}), next try at {}", escape(&error), time::format(run_at))
        }
        Event::Failed { id, error, to: Failed::Dead } => {
            format!("[work] job {id} went wrong ({}), no more tries", escape(&error))
        }
        Event::Released { id } => format!("[work] job {id} handed back"),
        Event::LeaseLost { id } => format!("[work] job {id} is no longer ours"),
        Event::Busy { id, step } => format!("[work] job {id}: file busy; trying the {step} again"),
        Event::Stopping { reason, id } => format!("[work] job {id}: stopping its command ({reason:?})"),
    };
    eprintln!("{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn flags_are_edited_in_either_spelling_and_not_after_double_dash() {
        let all = super::super::variants::named(super::super::variants::ALL_OTHER_CHOICES).unwrap();
        let only = |name| super::super::variants::named(name).unwrap();
        let limit = only("list-limit-taken-as-1000");
        assert_eq!(
            argv(limit, words("ukue list F --limit 5000")).unwrap(),
            words("ukue list F --limit 1000")
        );
        assert_eq!(
            argv(limit, words("ukue list F --limit=1001")).unwrap(),
            words("ukue list F --limit=1000")
        );
        assert_eq!(argv(limit, words("ukue list F --limit 10")).unwrap(), words("ukue list F --limit 10"));
        let attempts = only("attempts-zero-default");
        assert_eq!(argv(attempts, words("ukue add F q --attempts 0 p")).unwrap(), words("ukue add F q p"));
        assert_eq!(
            argv(attempts, words("ukue add F q -- --attempts")).unwrap(),
            words("ukue add F q -- --attempts")
        );
        assert_eq!(argv(all, words("ukue add F q --priority=5")), Err(2));
        assert!(argv(all, words("ukue add F q -- --priority=5")).is_ok());
    }

    #[test]
    fn json_escapes_rewrite_each_escape_and_nothing_else() {
        assert_eq!(json_escapes(&escape("a\x1b[31mb\u{9b}c\\x41 \\")), "a\\u001b[31mb\\u009bc\\\\x41 \\\\");
        assert_eq!(json_escapes("cut \\x1"), "cut \\x1");
        assert_eq!(json_escapes("plain é"), "plain é");
    }

    #[test]
    fn messages_are_reworded_but_keep_their_numbers() {
        assert_eq!(reworded("retry", b"3 dead job(s) ready again\n"), "sent back 3 dead job(s)\n");
        assert_eq!(reworded("purge", b"deleted 2 done job(s)\n"), "purged done jobs: 2\n");
        assert_eq!(reworded("init", b"F is ready (ukue file format 1)\n"), "made F: an empty ukue file\n");
        assert_eq!(reworded("version", b"ukue 0.1.0 (file format 1)\n"), "ukue 0.1.0 (file format 1)\n");
    }
}
