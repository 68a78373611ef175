//! bad-input: arguments outside what FORMAT.md allows (a queue of 0 or 201
//! characters, a priority outside -100..100) are rejected: exit status 1
//! (or 2), a message on stderr, and no job added. The published `add`
//! creates a missing file (with the tables) before it looks at the job, so
//! leaving no file behind, and an existing file byte-for-byte unchanged, is
//! good practice (`should`), not the contract. Usage errors (an unknown
//! flag, a duration that is not one, `work` without a command) come before
//! any file is opened: nothing is written at all. `--attempts 0` means the
//! default in the published command; rejecting it is a `should`. And a
//! queue of exactly 200 characters, each of two bytes, is accepted.

use std::path::Path;

use serde_json::Value;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::ensure;
use crate::shown::{text, Shown};
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::observe::file::{job_count, read, rows_as_text};
use crate::subjects::Failure;

use super::common;

pub fn cases() -> Vec<Case> {
    let case =
        |id, rule, summary, run| Case { id, rule, summary, needs: Needs::default(), level: Level::Must, run };
    let should = |id, rule, summary, run| Case { level: Level::Should, ..case(id, rule, summary, run) };
    vec![
        case(
            "bad-input/queue-empty",
            "3.2",
            "add with an empty queue name is rejected, no job added",
            queue_empty,
        ),
        case(
            "bad-input/queue-201-chars",
            "3.2",
            "add with a queue of 201 characters is rejected, no job added",
            queue_201,
        ),
        case("bad-input/priority-101", "5.3", "add --priority 101 is rejected, no job added", priority_101),
        case(
            "bad-input/priority-minus-101",
            "5.3",
            "add --priority -101 is rejected, no job added",
            priority_minus_101,
        ),
        case(
            "bad-input/attempts-0",
            "5.3",
            "add --attempts 0 is rejected, or takes the default of 10 attempts as the published command does",
            attempts_0,
        ),
        should(
            "bad-input/attempts-0-rejected",
            "5.3",
            "add --attempts 0 is rejected, no job added",
            attempts_0_rejected,
        ),
        should(
            "bad-input/rejected-add-writes-nothing",
            "5.3",
            "a rejected add leaves no file on a missing path, and an existing file byte-for-byte unchanged",
            rejected_add_writes_nothing,
        ),
        case(
            "bad-input/unknown-flag",
            "5.3",
            "add with an unknown flag is a usage error, nothing written",
            unknown_flag,
        ),
        case(
            "bad-input/bad-duration",
            "5.3",
            "add --delay soon is a usage error, nothing written",
            bad_duration,
        ),
        case(
            "bad-input/work-without-command",
            "5.4",
            "work without `-- COMMAND` is a usage error: nothing claimed, nothing written",
            work_without_command,
        ),
        case(
            "bad-input/queue-200-chars-accepted",
            "3.2",
            "a queue of 200 characters (400 bytes of UTF-8) is accepted and listed intact",
            queue_200_accepted,
        ),
    ]
}

/// The adds whose values the format refuses, each with the same add with a
/// value in range.
const REJECTED_ADDS: &[(&[&str], &[&str])] = &[
    (&["add", "FILE", "", "x"], &["add", "FILE", "q", "x"]),
    (&["add", "FILE", "q", "x", "--priority", "101"], &["add", "FILE", "q", "x", "--priority", "100"]),
    (&["add", "FILE", "q", "x", "--priority", "-101"], &["add", "FILE", "q", "x", "--priority", "-100"]),
    (&["add", "FILE", "q", "x", "--attempts", "0"], &["add", "FILE", "q", "x", "--attempts", "1"]),
];

/// `template` with `FILE` replaced by `file`.
fn fill(template: &[&str], file: &Path) -> Vec<String> {
    template.iter().map(|a| if *a == "FILE" { path_str(file).to_string() } else { a.to_string() }).collect()
}

/// `template` for a report: the subject's name, the arguments, FILE as it is.
fn shown(ctx: &Ctx, template: &[&str]) -> String {
    format!("{} {}", ctx.subject().name, common::show_args(template))
}

/// Runs `who args`, which must be rejected: exit status 2 (a usage error)
/// or 1, and a message on stderr.
fn expect_rejected(ctx: &Ctx, args: &[String], on: &str) -> Result<(), Failure> {
    let subject = ctx.subject();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let expected = format!(
        "`{} {}` ({on}) to be rejected: exit status 2 (or 1) and a message on stderr, nothing written",
        subject.name,
        common::show_args(&common::relative(ctx, &args))
    );
    let out = common::run_to_refusal(ctx, subject, &args, &expected, "reject its arguments")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(1 | 2) if !stderr.trim().is_empty() => Ok(()),
        Some(1 | 2) => Err(Failure::fail(expected, format!("{}: no message", common::outcome(&out)))),
        Some(0) => Err(Failure::fail(
            expected,
            format!(
                "it succeeded (exit status 0; stdout: {}; stderr: {})",
                text(&clip(String::from_utf8_lossy(&out.stdout).trim())),
                text(&clip(stderr.trim()))
            ),
        )),
        Some(_) => Err(Failure::fail(expected, common::outcome(&out))),
        None => Err(Failure::error(expected, format!("it crashed: {}", common::outcome(&out)))),
    }
}

/// What a rejection may leave on disk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LeftBehind {
    /// Nothing at all: no file on a missing path, an existing file
    /// byte-for-byte the same (usage errors, and the `should` case).
    Nothing,
    /// No job: a missing path may become a file with the tables (as the
    /// published `add` makes it), but holds no job; an existing file keeps
    /// its jobs as they were.
    NoJob,
}

/// The common body: `template` (with `FILE`) is rejected on a missing path
/// and on a file the subject made (`init`, one `add`), leaving what
/// `left` allows. Then `control` (with `FILE`), the same command with a
/// good value, must succeed on that file, so that the rejection was for
/// the value and not for the way it was spelled.
fn reject(ctx: &mut Ctx, template: &[&str], control: Option<&[&str]>, left: LeftBehind) -> CaseResult {
    let subject = ctx.subject().clone();

    let missing = ctx.tracked_file(&format!("missing-{}.ukue", common::listing(&ctx.dir)?.len()));
    let before = common::listing(&ctx.dir)?;
    expect_rejected(ctx, &fill(template, &missing), "on a path that does not exist")?;
    let after = common::listing(&ctx.dir)?;
    let new: Vec<&String> = after.difference(&before).collect();
    match left {
        LeftBehind::Nothing => ensure!(
            new.is_empty(),
            format!("`{}` (on a path that does not exist) to make no file", shown(ctx, template)),
            format!("new files in the directory: {}", new.shown())
        ),
        LeftBehind::NoJob if missing.exists() => ensure!(
            job_count(&missing)? == 0,
            format!("`{}` (on a path that does not exist) to add no job", shown(ctx, template)),
            format!("{} jobs in the file it made", job_count(&missing)?)
        ),
        LeftBehind::NoJob => {}
    }

    let file = ctx.tracked_file(&format!("existing-{}.ukue", common::listing(&ctx.dir)?.len()));
    ctx.ok(&subject, &["init", path_str(&file)])?;
    ctx.add(&subject, &file, "q", "first", &[])?;
    let bytes = std::fs::read(&file)?;
    let jobs = rows_as_text(&file)?;
    expect_rejected(ctx, &fill(template, &file), "on a file made by its own init and add")?;
    match left {
        LeftBehind::Nothing => {
            let now = std::fs::read(&file)?;
            ensure!(
                now == bytes,
                format!("`{}` to leave the file byte-for-byte unchanged", shown(ctx, template)),
                format!("it changed: {}", common::bytes_diff(&bytes, &now))
            );
        }
        LeftBehind::NoJob => {
            let now = rows_as_text(&file)?;
            ensure!(
                now == jobs,
                format!("`{}` to add no job and change none", shown(ctx, template)),
                format!("the jobs were {}, now {}", jobs.shown(), now.shown())
            );
        }
    }

    if let Some(control) = control {
        let args = fill(control, &file);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ctx.ok(&subject, &args).map_err(|f| Failure {
            expected: format!(
                "{} (the same command with a value in range, so the rejection above was for the value)",
                f.expected
            ),
            ..f
        })?;
    }
    Ok(())
}

fn rejected_add(ctx: &mut Ctx, index: usize) -> CaseResult {
    let (template, control) = REJECTED_ADDS[index];
    reject(ctx, template, Some(control), LeftBehind::NoJob)
}

fn queue_empty(ctx: &mut Ctx) -> CaseResult {
    rejected_add(ctx, 0)
}

fn queue_201(ctx: &mut Ctx) -> CaseResult {
    let long = "q".repeat(201);
    let fine = "q".repeat(200);
    reject(ctx, &["add", "FILE", &long, "x"], Some(&["add", "FILE", &fine, "x"]), LeftBehind::NoJob)
}

fn priority_101(ctx: &mut Ctx) -> CaseResult {
    rejected_add(ctx, 1)
}

fn priority_minus_101(ctx: &mut Ctx) -> CaseResult {
    rejected_add(ctx, 2)
}

/// The published `add` reads `--attempts 0` as "the default" (10): either
/// that, or a rejection that adds no job.
fn attempts_0(ctx: &mut Ctx) -> CaseResult {
    let subject = ctx.subject().clone();
    let file = ctx.init("attempts.ukue")?;
    let out = ctx.run(&subject, &["add", path_str(&file), "q", "x", "--attempts", "0"])?;
    let jobs = rows_as_text(&file)?;
    match out.status.code() {
        Some(0) => {
            let max: Vec<i64> = read(&file)?
                .prepare("SELECT max_attempts FROM ukue_jobs")?
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            ensure!(
                max == [10],
                "`add --attempts 0`, when it succeeds, to add one job with the default max_attempts 10",
                format!("max_attempts {}", max.shown())
            );
            Ok(())
        }
        Some(1 | 2) => {
            ensure!(
                jobs.is_empty(),
                "`add --attempts 0`, when it is rejected, to add no job",
                format!("jobs {}", jobs.shown())
            );
            Ok(())
        }
        _ => Err(Failure::fail(
            "`add --attempts 0` to add a job with 10 attempts (exit 0), or to be rejected (exit 1 or 2)",
            common::outcome(&out),
        )),
    }
}

fn attempts_0_rejected(ctx: &mut Ctx) -> CaseResult {
    rejected_add(ctx, 3)
}

fn rejected_add_writes_nothing(ctx: &mut Ctx) -> CaseResult {
    let long = "q".repeat(201);
    let mut templates: Vec<Vec<&str>> = REJECTED_ADDS[..3].iter().map(|(t, _)| t.to_vec()).collect();
    templates.push(vec!["add", "FILE", &long, "x"]);
    for template in &templates {
        reject(ctx, template, None, LeftBehind::Nothing)?;
    }
    Ok(())
}

fn unknown_flag(ctx: &mut Ctx) -> CaseResult {
    reject(ctx, &["add", "FILE", "q", "x", "--no-such-flag"], None, LeftBehind::Nothing)
}

fn bad_duration(ctx: &mut Ctx) -> CaseResult {
    reject(
        ctx,
        &["add", "FILE", "q", "x", "--delay", "soon"],
        Some(&["add", "FILE", "q", "x", "--delay", "1h30m"]),
        LeftBehind::Nothing,
    )
}

fn work_without_command(ctx: &mut Ctx) -> CaseResult {
    reject(ctx, &["work", "FILE", "q"], None, LeftBehind::Nothing)
}

fn queue_200_accepted(ctx: &mut Ctx) -> CaseResult {
    let subject = ctx.subject().clone();
    let file = ctx.tracked_file("q200.ukue");
    let queue = "é".repeat(200);
    ctx.ok(&subject, &["init", path_str(&file)])?;
    let id = ctx.add(&subject, &file, &queue, "x", &[])?;
    let list = ctx.json(&subject, &["list", path_str(&file), "--json"])?;
    let listed: Vec<&str> = list
        .get("jobs")
        .and_then(Value::as_array)
        .map(|jobs| jobs.iter().filter_map(|j| j.get("queue").and_then(Value::as_str)).collect())
        .unwrap_or_default();
    ensure!(
        listed == [queue.as_str()],
        "`list --json` to show one job in the queue of 200 × 'é'",
        format!(
            "queues [{}] in {}",
            listed.iter().map(|q| format!("{} chars", q.chars().count())).collect::<Vec<_>>().join(", "),
            clip(&list.to_string())
        )
    );
    let stored: String =
        read(&file)?.query_row("SELECT queue FROM ukue_jobs WHERE id = ?1", [id], |r| r.get(0))?;
    ensure!(
        stored == queue,
        "the file's queue column to hold the 200 × 'é' (400 bytes)",
        format!("{} characters, {} bytes", stored.chars().count(), stored.len())
    );
    Ok(())
}
