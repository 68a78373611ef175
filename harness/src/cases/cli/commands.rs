//! The conventions, the files, and every command but `work` and `serve`
//! (spec/COMMAND.md §1–4 and §7–12), seen from outside: tables of command
//! lines, each with what the published command does with it. One module a
//! part: [`conventions`] (exit statuses, usage errors, help, errors,
//! `version`), [`arguments`] (where options stand, `--`, paths),
//! [`files`] (`init`, a newer format), [`add`] (stdin, refusals),
//! [`reading`] (`list` and `show` limits and refusals, `stats` order),
//! [`text`] (the text output and its escapes), [`manage`] (`retry`,
//! `delete` and `purge`).

mod add;
mod arguments;
mod conventions;
mod files;
mod manage;
mod reading;
mod text;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::cases::common;
use crate::cases::{Case, Level, Needs};
use crate::subjects::ctx::Ctx;
use crate::subjects::Failure;
use crate::subjects::Subject;

#[rustfmt::skip]
pub fn cases() -> Vec<Case> {
    let case = |id, rule, summary, run| Case { id, rule, summary, needs: Needs::default(), level: Level::Must, run };
    let should = |id, rule, summary, run| Case { level: Level::Should, ..case(id, rule, summary, run) };
    vec![
        case("cli/usage-exit-2", "exit.usage", "an unknown flag or command, a missing or extra argument, a bad flag value: exit status 2, a message, nothing written", conventions::usage_exit_2),
        should("cli/usage-once", "exit.usage-once", "the message of a usage error is printed once", conventions::usage_once),
        should("cli/help", "exit.help", "help, -h and --help print the usage on stdout and exit 0; COMMAND -h exits 0 and does nothing", conventions::help),
        case("cli/error-exit-1", "exit.error", "a refused file, a missing job, a job that is not dead: exit status 1, a message on stderr", conventions::error_exit_1),
        should("cli/error-prefix", "exit.error-prefix", "the message of an error (a refused file, a missing job, a job that is not dead) starts `ukue COMMAND: `", conventions::error_prefix),
        case("cli/version", "version.output", "version prints `ukue VERSION (file format 1)` and exits 0", conventions::version),
        case("cli/options-anywhere", "args.options-anywhere", "options before, between and after the positional arguments mean the same", arguments::options_anywhere),
        should("cli/equals", "args.equals", "--flag=value is --flag value", arguments::equals),
        case("cli/double-dash", "args.double-dash", "what follows `--` is positional, even when it starts with a dash", arguments::double_dash),
        case("cli/path", "args.path", "relative and absolute paths with spaces, non-ASCII, # and % are paths like any other", arguments::path),
        case("cli/init-creates", "init.creates", "init FILE exits 0 and makes a file of format 1 at FILE, relative, absolute, with a space or non-ASCII", files::init_creates),
        should("cli/init-prints", "init.prints", "init prints `FILE is ready (ukue file format 1)` with FILE as given", files::init_prints),
        case("cli/init-existing", "init.existing", "init on a ukue file with jobs exits 0 and changes no job", files::init_existing),
        should("cli/newer-version-message", "file.newer-version-message", "the refusal of a format 2 file names version 2 and version 1", files::newer_version_message),
        case("cli/add-stdin", "add.payload-stdin", "add without PAYLOAD, or with -, stores every byte of stdin (none for an empty stdin)", add::stdin),
        case("cli/add-stdin-interrupted", "add.stdin-interrupted", "an add stopped by SIGTERM or SIGINT while it reads stdin adds no job", add::stdin_interrupted),
        case("cli/add-refused", "add.delay-negative", "a negative delay, a delay with --at, negative attempts, an --at that is no RFC 3339 time: no job added", add::refused),
        case("cli/list-limit", "list.limit-most", "list shows 50 jobs by default, --limit N the first N, and at most 1000", reading::list_limit),
        case("cli/list-state-bad", "list.state-bad", "list --state with a state it does not know is refused", reading::list_state_bad),
        case("cli/show-missing", "show.missing", "show of an id no job has is an error (exit status 1), with or without --json", reading::show_missing),
        case("cli/stats-queue-order", "stats.json", "stats --json lists the queues in queue order, whatever order their jobs came in", reading::stats_queue_order),
        case("cli/text-escape", "text.escape", "stats, list and show write no control character of a queue, payload or error raw", text::escape),
        should("cli/text-escape-form", "text.escape-form", "stats, list and show write the control characters of a queue, payload or error as \\xNN", text::escape_form),
        should("cli/stats-text", "stats.text", "stats without --json prints a row per queue, or `no jobs`", text::stats_text),
        should("cli/list-text", "list.text", "list without --json prints a row per job, or `no jobs`", text::list_text),
        should("cli/show-text", "show.text", "show without --json prints the fields one a line and the payload, or says it is binary", text::show_text),
        case("cli/retry-delete-bad-ids", "retry.not-dead", "retry of a job that is not dead and delete of a missing id are errors that change no job they may not", manage::bad_ids),
        case("cli/manage-prints", "retry.ids", "retry says on stdout that it sent jobs back; retry --all and purge print how many", manage::prints),
        should("cli/retry-names-ids", "retry.ids-named", "retry ID... names each job it sends back", manage::names_ids),
    ]
}

/// `template` with each placeholder (`FILE`, `MISSING`…) replaced by its
/// value.
fn fill(template: &[&str], values: &[(&str, &str)]) -> Vec<String> {
    template
        .iter()
        .map(|word| {
            let value = values.iter().find(|(name, _)| name == word).map(|(_, value)| *value);
            value.unwrap_or(word).to_string()
        })
        .collect()
}

/// `who args` for a report, in backquotes, paths relative to the case's
/// directory (where the subject runs).
fn shown(ctx: &Ctx, who: &Subject, args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let line = format!("{} {}", who.name, common::show_args(&common::relative(ctx, &args)));
    format!("`{}`", line.trim_end())
}

/// Runs `who args` to its end.
fn run(ctx: &Ctx, who: &Subject, args: &[String], stdin: Option<&[u8]>) -> Result<Output, Failure> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ctx.run_with(who, &args, stdin)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Fails unless `who args` exited 0; returns its stdout.
fn succeeded(ctx: &Ctx, who: &Subject, args: &[String], out: &Output, why: &str) -> Result<String, Failure> {
    if out.status.code() == Some(0) {
        return Ok(text(&out.stdout));
    }
    Err(Failure::fail(format!("{} ({why}) to succeed", shown(ctx, who, args)), common::outcome(out)))
}

/// What a command must leave as it was: the names in the case's directory,
/// and the bytes of some files.
struct Untouched {
    names: BTreeSet<String>,
    files: Vec<(PathBuf, Vec<u8>)>,
}

impl Untouched {
    fn take(ctx: &Ctx, files: &[&Path]) -> Result<Untouched, Failure> {
        let mut kept = Vec::new();
        for file in files {
            kept.push((file.to_path_buf(), std::fs::read(file)?));
        }
        Ok(Untouched { names: common::listing(&ctx.dir)?, files: kept })
    }

    /// What changed since [`take`](Self::take), for a report; empty when
    /// nothing did.
    fn changes(&self, ctx: &Ctx) -> Result<Vec<String>, Failure> {
        let mut changes = Vec::new();
        for (file, bytes) in &self.files {
            let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            match std::fs::read(file) {
                Ok(now) if now == *bytes => {}
                Ok(now) => changes.push(format!("{name} changed ({})", common::bytes_diff(bytes, &now))),
                Err(e) => changes.push(format!("{name} is gone ({e})")),
            }
        }
        let names = common::listing(&ctx.dir)?;
        let new: Vec<&String> = names.difference(&self.names).collect();
        let gone: Vec<&String> = self.names.difference(&names).collect();
        if !new.is_empty() {
            changes.push(format!("new files in the directory: {new:?}"));
        }
        if !gone.is_empty() {
            changes.push(format!("files gone from the directory: {gone:?}"));
        }
        Ok(changes)
    }
}

/// A ukue file made by the subject's own `init` and `add` (one job in
/// queue `q`): its path and the job's id.
fn file_with_job(ctx: &mut Ctx, name: &str) -> Result<(PathBuf, i64), Failure> {
    let who = ctx.subject().clone();
    let file = ctx.init(name)?;
    let id = ctx.add(&who, &file, "q", "first", &[])?;
    Ok((file, id))
}
