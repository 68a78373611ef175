//! spec/COMMAND.md §1 and §11: usage errors (exit status 2), errors
//! (exit status 1; the published messages start `ukue COMMAND: `), help,
//! and `version`.
//!
//! The published command reads its whole command line before it opens a
//! file (cmd/ukue/main.go: `parse`, then the count of positional
//! arguments, then the values), so a line it cannot read leaves every file
//! as it was; only `retry` and `delete` open the file before they read
//! their IDs, so a bad ID here comes alone.

use std::process::Output;

use crate::cases::{common, CaseResult};
use crate::ensure;
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::Failure;

use super::{file_with_job, fill, run, shown, succeeded, text, Untouched};

/// A command line that cannot be read, and the item that says so. `FILE`
/// is a ukue file with one job, `MISSING` a path that does not exist
/// (`work` and `serve` get that one: a subject that took the line would
/// refuse the path, not run).
struct Unreadable {
    item: &'static str,
    what: &'static str,
    args: &'static [&'static str],
}

const fn line(item: &'static str, what: &'static str, args: &'static [&'static str]) -> Unreadable {
    Unreadable { item, what, args }
}

#[rustfmt::skip]
const UNREADABLE: &[Unreadable] = &[
    line("exit.no-command", "no arguments", &[]),
    line("exit.unknown-command", "an unknown command", &["frobnicate"]),
    line("exit.unknown-command", "an unknown command", &["frobnicate", "FILE"]),
    line("exit.unknown-command", "a command in capitals", &["Stats", "FILE"]),
    line("exit.unknown-command", "a flag in place of the command", &["--bogus", "FILE"]),
    line("exit.usage", "an unknown flag", &["init", "MISSING", "--bogus"]),
    line("exit.usage", "an unknown flag", &["add", "FILE", "q", "p", "--bogus"]),
    line("exit.usage", "an unknown flag", &["work", "MISSING", "q", "--bogus", "--", "true"]),
    line("exit.usage", "an unknown flag", &["serve", "MISSING", "--bogus"]),
    line("exit.usage", "an unknown flag", &["stats", "FILE", "--bogus"]),
    line("exit.usage", "an unknown one-letter flag", &["list", "FILE", "-z"]),
    line("exit.usage", "an unknown flag", &["show", "FILE", "1", "--bogus"]),
    line("exit.usage", "an unknown flag", &["retry", "FILE", "1", "--bogus"]),
    line("exit.usage", "an unknown flag", &["purge", "FILE", "--state", "dead", "--bogus"]),
    line("exit.usage", "an unknown flag", &["delete", "FILE", "1", "--bogus"]),
    line("exit.usage", "a flag without its value", &["add", "FILE", "q", "p", "--priority"]),
    line("exit.usage", "a flag without its value", &["list", "FILE", "--limit"]),
    line("exit.usage", "a priority that is no number", &["add", "FILE", "q", "p", "--priority", "high"]),
    line("exit.usage", "a priority that is no whole number", &["add", "FILE", "q", "p", "--priority", "1.5"]),
    line("exit.usage", "attempts that are no number", &["add", "FILE", "q", "p", "--attempts", "many"]),
    line("exit.usage", "a delay that is no duration", &["add", "FILE", "q", "p", "--delay", "soon"]),
    line("exit.usage", "a limit that is no number", &["list", "FILE", "--limit", "many"]),
    line("exit.usage", "an --after that is no number", &["list", "FILE", "--after", "x"]),
    line("exit.usage", "an ID that is no number", &["show", "FILE", "abc"]),
    line("exit.usage", "an ID that is no number", &["retry", "FILE", "abc"]),
    line("exit.usage", "an ID that is no number", &["delete", "FILE", "abc"]),
    line("exit.usage", "a concurrency that is no number", &["work", "MISSING", "q", "--concurrency", "many", "--", "true"]),
    line("exit.usage", "a lease that is no duration", &["work", "MISSING", "q", "--lease", "soon", "--", "true"]),
    line("exit.usage", "a body limit that is no number", &["serve", "MISSING", "--max-body", "lots"]),
    line("exit.usage", "no FILE", &["stats"]),
    line("exit.usage", "no FILE", &["list", "--json"]),
    line("exit.usage", "no FILE", &["serve"]),
    line("exit.usage", "no ID", &["show", "FILE"]),
    line("exit.usage", "a second FILE", &["stats", "FILE", "MISSING"]),
    line("exit.usage", "a second FILE", &["list", "FILE", "MISSING"]),
    line("exit.usage", "a second FILE", &["serve", "MISSING", "MISSING"]),
    line("exit.usage", "a second ID", &["show", "FILE", "1", "2"]),
    line("init.args", "no FILE", &["init"]),
    line("init.args", "two FILEs", &["init", "FILE", "MISSING"]),
    line("init.args", "two FILEs", &["init", "MISSING", "FILE"]),
    line("add.args", "no argument", &["add"]),
    line("add.args", "no QUEUE", &["add", "FILE"]),
    line("add.args", "a fourth argument", &["add", "FILE", "q", "p", "extra"]),
    line("add.args", "a fourth argument after -", &["add", "MISSING", "q", "-", "extra"]),
    line("retry.args", "neither IDs nor --all", &["retry", "FILE"]),
    line("retry.args", "neither FILE, IDs nor --all", &["retry"]),
    line("retry.args", "an ID with --all", &["retry", "FILE", "1", "--all"]),
    line("retry.args", "IDs with --all", &["retry", "--all", "FILE", "1", "2"]),
    line("retry.args", "an ID with --all --queue", &["retry", "FILE", "--all", "--queue", "q", "1"]),
    line("purge.state-bad", "no --state", &["purge", "FILE"]),
    line("purge.state-bad", "no --state", &["purge", "FILE", "--queue", "q"]),
    line("purge.state-bad", "the state ready", &["purge", "FILE", "--state", "ready"]),
    line("purge.state-bad", "the state running", &["purge", "FILE", "--state", "running"]),
    line("purge.state-bad", "the state delayed", &["purge", "FILE", "--state", "delayed"]),
    line("purge.state-bad", "a state in capitals", &["purge", "FILE", "--state", "Dead"]),
    line("purge.state-bad", "an unknown state", &["purge", "FILE", "--state", "bogus"]),
    line("purge.state-bad", "an empty state", &["purge", "FILE", "--state", ""]),
    line("delete.args", "no ID", &["delete", "FILE"]),
    line("delete.args", "neither FILE nor ID", &["delete"]),
];

/// The lines whose message [`usage_once`] reads: one of each kind.
const ONCE: &[&[&str]] = &[
    &["add", "FILE", "q", "p", "--bogus"],
    &["add", "FILE", "q", "p", "--priority", "high"],
    &["list", "FILE", "--limit"],
    &["show", "FILE"],
    &["init", "FILE", "MISSING"],
    &["retry", "FILE", "1", "--all"],
    &["purge", "FILE", "--state", "ready"],
    &["frobnicate"],
];

/// Whether `said` is a usage: it says so, or lists the commands (how a
/// usage reads is the program's own).
fn shows_usage(said: &str) -> bool {
    let said = said.to_lowercase();
    let words: Vec<&str> = said.split(|c: char| !c.is_alphanumeric()).collect();
    said.contains("usage") || ["init", "add", "work", "list"].iter().all(|c| words.contains(c))
}

pub(super) fn usage_exit_2(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let (file, _) = file_with_job(ctx, "usage.ukue")?;
    let missing = ctx.path("missing.ukue");
    let values = [("FILE", path_str(&file)), ("MISSING", path_str(&missing))];
    let untouched = Untouched::take(ctx, &[&file])?;
    let mut problems = Vec::new();
    for line in UNREADABLE {
        let args = fill(line.args, &values);
        let out = run(ctx, &who, &args, None)?;
        let mut wrong = Vec::new();
        if out.status.code() != Some(2) {
            wrong.push(common::outcome(&out));
        } else if text(&out.stderr).trim().is_empty() {
            wrong.push("nothing on stderr".to_string());
        }
        if line.item == "exit.no-command" {
            if !shows_usage(&text(&out.stderr)) {
                wrong.push(format!("no usage on stderr: {:?}", clip(&text(&out.stderr))));
            }
            if !out.stdout.is_empty() {
                wrong.push(format!("stdout {:?}", clip(&text(&out.stdout))));
            }
        }
        wrong.extend(untouched.changes(ctx)?);
        if !wrong.is_empty() {
            problems.push(format!(
                "{}: {} ({}): {}",
                line.item,
                shown(ctx, &who, &args),
                line.what,
                wrong.join("; ")
            ));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Failure::fail(
        "each command line that cannot be read to be a usage error: exit status 2, a message on stderr, \
         FILE (a ukue file with one job) byte for byte as it was and no file made (MISSING stays missing)",
        problems.join("\n"),
    ))
}

pub(super) fn usage_once(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let (file, _) = file_with_job(ctx, "once.ukue")?;
    let missing = ctx.path("missing.ukue");
    let values = [("FILE", path_str(&file)), ("MISSING", path_str(&missing))];
    let mut problems = Vec::new();
    for template in ONCE {
        let args = fill(template, &values);
        let stderr = text(&run(ctx, &who, &args, None)?.stderr);
        let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        let Some(message) = lines.first() else {
            problems.push(format!("{}: nothing on stderr", shown(ctx, &who, &args)));
            continue;
        };
        let times = lines.iter().filter(|l| *l == message).count();
        if times > 1 {
            problems.push(format!("{}: {message:?} {times} times", shown(ctx, &who, &args)));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Failure::fail(
        "the message of each usage error (the first line on stderr) printed once",
        problems.join("\n"),
    ))
}

/// The commands whose `-h` must work (not `serve`: a program may offer
/// the command line without the HTTP API).
const COMMANDS: [&str; 9] = ["init", "add", "work", "stats", "list", "show", "retry", "purge", "delete"];

pub(super) fn help(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let (file, _) = file_with_job(ctx, "help.ukue")?;
    let new = ctx.path("new.ukue");
    let untouched = Untouched::take(ctx, &[&file])?;
    let mut problems = Vec::new();
    for word in ["help", "-h", "--help"] {
        let args = vec![word.to_string()];
        let out = run(ctx, &who, &args, None)?;
        let stdout = text(&out.stdout);
        let missing: Vec<&str> = COMMANDS.iter().copied().filter(|c| !stdout.contains(c)).collect();
        if out.status.code() != Some(0) || !stdout.to_lowercase().contains("usage") || !missing.is_empty() {
            problems.push(format!(
                "{}: {}; stdout {:?} (names no {missing:?})",
                shown(ctx, &who, &args),
                common::outcome(&out),
                clip(&stdout)
            ));
        }
    }
    let mut lines: Vec<Vec<String>> =
        COMMANDS.iter().map(|c| vec![c.to_string(), "-h".to_string()]).collect();
    lines.push(fill(&["init", "NEW", "-h"], &[("NEW", path_str(&new))]));
    lines.push(fill(&["add", "FILE", "q", "p", "--help"], &[("FILE", path_str(&file))]));
    for args in lines {
        let out = run(ctx, &who, &args, None)?;
        let said = format!("{}{}", text(&out.stdout), text(&out.stderr)).to_lowercase();
        let mut wrong = untouched.changes(ctx)?;
        if out.status.code() != Some(0) || !said.contains("usage") {
            wrong.push(format!("{}, stdout {:?}", common::outcome(&out), clip(&text(&out.stdout))));
        }
        if !wrong.is_empty() {
            problems.push(format!("{}: {}", shown(ctx, &who, &args), wrong.join("; ")));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Failure::fail(
        "`help`, `-h` and `--help` to print the usage (naming the commands) on stdout and exit 0; \
         `COMMAND -h` to print its usage, exit 0, and do nothing else",
        problems.join("\n"),
    ))
}

/// A command that cannot do what it was asked. `FILE` holds a ready job
/// (`READY`); `NOJOB` is an id no job has; `TEXT` is a text file.
#[rustfmt::skip]
const ERRORS: &[(&str, &[&str])] = &[
    ("a path that does not exist", &["stats", "MISSING"]),
    ("a path that does not exist", &["list", "MISSING", "--json"]),
    ("a path that does not exist", &["show", "MISSING", "1"]),
    ("a path that does not exist", &["retry", "MISSING", "--all"]),
    ("a path that does not exist", &["purge", "MISSING", "--state", "dead"]),
    ("a path that does not exist", &["delete", "MISSING", "1"]),
    ("a path that does not exist", &["work", "MISSING", "q", "--", "true"]),
    ("a text file", &["init", "TEXT"]),
    ("a text file", &["add", "TEXT", "q", "p"]),
    ("a text file", &["stats", "TEXT", "--json"]),
    ("a text file", &["list", "TEXT"]),
    ("a text file", &["show", "TEXT", "1"]),
    ("a text file", &["retry", "TEXT", "1"]),
    ("a text file", &["purge", "TEXT", "--state", "done"]),
    ("a text file", &["delete", "TEXT", "1"]),
    ("a text file", &["work", "TEXT", "q", "--", "true"]),
    ("a job that does not exist", &["show", "FILE", "NOJOB"]),
    ("a job that does not exist", &["show", "FILE", "NOJOB", "--json"]),
    ("a job that does not exist", &["retry", "FILE", "NOJOB"]),
    ("a job that does not exist", &["delete", "FILE", "NOJOB"]),
    ("a job that is not dead", &["retry", "FILE", "READY"]),
];

/// Runs each command of [`ERRORS`]; those whose outcome `wrong` (given
/// the command's name and its outcome) finds wrong, for a report.
fn errors_where(ctx: &mut Ctx, wrong: impl Fn(&str, &Output) -> bool) -> Result<Vec<String>, Failure> {
    let who = ctx.subject().clone();
    let (file, ready) = file_with_job(ctx, "errors.ukue")?;
    let missing = ctx.path("missing.ukue");
    let notes = ctx.path("notes.txt");
    let (ready, nojob) = (ready.to_string(), (ready + 100).to_string());
    let values = [
        ("FILE", path_str(&file)),
        ("MISSING", path_str(&missing)),
        ("TEXT", path_str(&notes)),
        ("READY", ready.as_str()),
        ("NOJOB", nojob.as_str()),
    ];
    let mut problems = Vec::new();
    for (what, template) in ERRORS {
        // Afresh each time: a subject that took the text file for its
        // own has failed already, and the next line must see text again.
        std::fs::write(&notes, "not a ukue file\n")?;
        let args = fill(template, &values);
        let out = run(ctx, &who, &args, None)?;
        if wrong(template[0], &out) {
            problems.push(format!("{} ({what}): {}", shown(ctx, &who, &args), common::outcome(&out)));
        }
    }
    Ok(problems)
}

/// exit.error (must): exit status 1 and a message, in any words.
pub(super) fn error_exit_1(ctx: &mut Ctx) -> CaseResult {
    let problems =
        errors_where(ctx, |_, out| out.status.code() != Some(1) || text(&out.stderr).trim().is_empty())?;
    ensure!(
        problems.is_empty(),
        "each command that cannot do what it was asked to be an error: exit status 1, and a message on stderr",
        problems.join("\n")
    );
    Ok(())
}

/// exit.error-prefix (should): the message starts as the published
/// command's do.
pub(super) fn error_prefix(ctx: &mut Ctx) -> CaseResult {
    let problems =
        errors_where(ctx, |command, out| !text(&out.stderr).starts_with(&format!("ukue {command}: ")))?;
    ensure!(
        problems.is_empty(),
        "the message of each error to start `ukue COMMAND: ` (such as `ukue show: `)",
        problems.join("\n")
    );
    Ok(())
}

pub(super) fn version(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let args = vec!["version".to_string()];
    let out = run(ctx, &who, &args, None)?;
    let stdout = succeeded(ctx, &who, &args, &out, "the version")?;
    let version = stdout
        .strip_suffix('\n')
        .and_then(|line| line.strip_prefix("ukue "))
        .and_then(|rest| rest.strip_suffix(" (file format 1)"))
        .filter(|v| !v.is_empty() && !v.contains(char::is_whitespace));
    if version.is_none() {
        return Err(Failure::fail(
            "`version` to print one line, `ukue VERSION (file format 1)` (VERSION one word)",
            format!("stdout {stdout:?}"),
        ));
    }
    Ok(())
}
