//! Values of arguments and flags, each table tried whole: queue names
//! (on the command line and over HTTP), `--priority`, `--attempts`,
//! durations (`--delay`, and `work`'s `--lease`, `--timeout`, `--poll`,
//! `--grace`), ids, and the JSON that names and errors of any text make.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};

use crate::cases::CaseResult;
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::observe::file::{job_count, row, rows, rows_as_text, write, Row};
use crate::subjects::server::{self, Client};
use crate::subjects::worker::{probe_log, start_worker};
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::payloads::{check_payload, json_output, starts, Made};
use super::values::{Want, ATTEMPTS, DURATIONS, GO_LIMIT, IDS, LONG_DELAYS, PRIORITIES, QUEUE_NAMES};
use super::{common, expect_success, insert};

/// How a command that refuses its input must end: exit status 2 for a
/// usage error (`usage`), else 1 or 2; a message on stderr.
pub(super) fn expect_refused(out: &Output, usage: bool, shown: &str) -> CaseResult {
    let expected = if usage {
        format!("{shown} to be a usage error: exit status 2 and a message on stderr")
    } else {
        format!("{shown} to be refused: exit status 1 (or 2, a usage error) and a message on stderr")
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(2) if !stderr.trim().is_empty() => Ok(()),
        Some(1) if !usage && !stderr.trim().is_empty() => Ok(()),
        Some(0) => Err(Failure::fail(
            expected,
            format!("it succeeded (stdout: {:?})", clip(String::from_utf8_lossy(&out.stdout).trim())),
        )),
        None => Err(Failure::error(expected, format!("it crashed: {}", common::outcome(out)))),
        Some(_) => Err(Failure::fail(expected, common::outcome(out))),
    }
}

/// `args` for a report, the case's directory taken off.
pub(super) fn shown(ctx: &Ctx, args: &[&str]) -> String {
    format!("`{}`", common::show_args(&common::relative(ctx, args)))
}

/// Runs `args`, which must refuse (`usage`: with a usage error) and add no
/// job to `file`.
pub(super) fn refused_adding_nothing(ctx: &Ctx, file: &Path, args: &[&str], usage: bool) -> CaseResult {
    let before = job_count(file)?;
    let shown = shown(ctx, args);
    let out = common::run_to_refusal(ctx, ctx.subject(), args, &format!("{shown} to be refused"), "refuse")?;
    expect_refused(&out, usage, &shown)?;
    let after = job_count(file)?;
    ensure!(
        after == before,
        format!("{shown} to add no job"),
        format!("{} jobs before, {after} after", before)
    );
    Ok(())
}

/// Runs `args`, which must add a job; its row.
pub(super) fn added_row(ctx: &Ctx, file: &Path, args: &[&str]) -> Result<Row, Failure> {
    let shown = shown(ctx, args);
    let out = ctx.run(ctx.subject(), args)?;
    expect_success(&out, &shown)?;
    let text = String::from_utf8_lossy(&out.stdout);
    let id: i64 = text
        .trim()
        .parse()
        .map_err(|_| Failure::fail(format!("{shown} to print the new id"), clip(&text)))?;
    row(file, id)?.ok_or_else(|| Failure::fail(format!("{shown} to add job {id}"), "no such job in the file"))
}

/// A numeric flag of `add` over its table: each value stored in the
/// column `column` reads, or refused as the table says.
fn numbers(ctx: &mut Ctx, flag: &str, table: &[(&str, Want)], column: fn(&Row) -> i64) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let f = path_str(&file).to_string();
    for (i, (text, want)) in table.iter().enumerate() {
        let payload = format!("value-{i}");
        let args = ["add", &f, "q", &payload, flag, text];
        let what = shown(ctx, &args);
        match *want {
            Want::Value(v) => {
                ensure_eq!(column(&added_row(ctx, &file, &args)?), v, format!("{what}: the value stored"))
            }
            Want::DefaultOrRefused(default) => {
                let before = job_count(&file)?;
                let out = ctx.run(ctx.subject(), &args)?;
                if out.status.success() {
                    let added = rows(&file)?.into_iter().find(|r| r.payload == payload.as_bytes());
                    let seen = added.map(|r| column(&r));
                    ensure_eq!(seen, Some(default), format!("{what}: the default, or a refusal"));
                } else {
                    expect_refused(&out, false, &what)?;
                    ensure_eq!(job_count(&file)?, before, format!("{what}: jobs after a refusal"));
                }
            }
            Want::Refused => refused_adding_nothing(ctx, &file, &args, false)?,
            Want::Usage => refused_adding_nothing(ctx, &file, &args, true)?,
        }
    }
    Ok(())
}

/// `add.priority-range`, and `add.priority` in every form of a number.
pub fn priority(ctx: &mut Ctx) -> CaseResult {
    numbers(ctx, "--priority", PRIORITIES, |r| r.priority)
}

/// `add.attempts`, up to the largest 64-bit integer.
pub fn attempts(ctx: &mut Ctx) -> CaseResult {
    numbers(ctx, "--attempts", ATTEMPTS, |r| r.max_attempts)
}

const NS_PER_MS: i64 = 1_000_000;

/// `args.duration` through `--delay`: run_at is the add's time plus the
/// parsed duration, in whole milliseconds (a part of one may round either
/// way), so a wrong parse shows.
pub fn delay(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let f = path_str(&file).to_string();
    for (i, d) in DURATIONS.iter().enumerate() {
        let payload = format!("delay-{i}");
        let args = ["add", &f, "q", &payload, "--delay", d.text];
        match d.nanos {
            Some(nanos) if nanos >= 0 => {
                let r = added_row(ctx, &file, &args)?;
                let (low, high) = (nanos / NS_PER_MS, (nanos + NS_PER_MS - 1) / NS_PER_MS + 1);
                let delay = r.run_at - r.created_at;
                ensure!(
                    (low..=high).contains(&delay),
                    format!("{}: run_at {low} ms after created_at (up to {high})", shown(ctx, &args)),
                    format!("run_at {delay} ms after created_at")
                );
            }
            // Negative: refused, by the parser (a usage error) or after it.
            Some(_) => refused_adding_nothing(ctx, &file, &args, false)?,
            None => refused_adding_nothing(ctx, &file, &args, true)?,
        }
    }
    for (i, (text, ms)) in LONG_DELAYS.iter().enumerate() {
        let payload = format!("long-delay-{i}");
        let args = ["add", &f, "q", &payload, "--delay", text];
        let what = shown(ctx, &args);
        let before = job_count(&file)?;
        let out = ctx.run(ctx.subject(), &args)?;
        if !out.status.success() {
            expect_refused(&out, false, &what)?;
            ensure_eq!(job_count(&file)?, before, format!("{what}: jobs after a refusal"));
            continue;
        }
        let added = rows(&file)?.into_iter().find(|r| r.payload == payload.as_bytes());
        let delay = added.map(|r| r.run_at - r.created_at);
        ensure!(
            delay.is_some_and(|d| (*ms..=ms + 1).contains(&d)),
            format!("{what}: refused, or run_at {ms} ms after created_at"),
            match delay {
                Some(d) => format!("taken, run_at {d} ms after created_at"),
                None => "it succeeded and added no job".to_string(),
            }
        );
    }
    Ok(())
}

/// `args.duration-range`: the published command's limit, Go's: the
/// longest duration a Go program holds is taken, the next hour is a
/// usage error.
pub fn delay_go_range(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let f = path_str(&file).to_string();
    let (most, ms, past) = GO_LIMIT;
    let r = added_row(ctx, &file, &["add", &f, "q", "most", "--delay", most])?;
    ensure_eq!(r.run_at - r.created_at, ms, format!("`--delay {most}`: run_at after created_at (ms)"));
    refused_adding_nothing(ctx, &file, &["add", &f, "q", "past", "--delay", past], true)
}

/// Good values of `work`'s durations, a row a worker: `--lease`,
/// `--timeout`, `--poll`, `--grace`. Leases of a second and more (the
/// probe reads its lease before a renewal), timeouts the probe never meets.
/// Each row: the lease and its milliseconds, then the others.
const WORK_ROWS: &[(&str, i64, [&str; 3])] = &[
    ("1m30s", 90_000, ["0", "500ms", "0"]),
    ("1.5s", 1_500, ["2h", "10ms", "1ns"]),
    ("2h", 7_200_000, ["1h30m", "1.5s", "1.5s"]),
    ("+1m", 60_000, ["90s", "100000\u{b5}s", "0s"]),
];

/// Values no flag of `work` takes: not durations (usage errors), or
/// negative (refused).
const WORK_BAD: &[(&str, bool)] = &[("5", true), ("soon", true), ("", true), ("1x", true), ("-1s", false)];

/// `args.duration` through `work`: each row of durations is taken (the
/// worker runs a job, and its lease_until is the claim's time plus the
/// lease); each bad value is refused before any job is claimed.
pub fn work_durations(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let subject = ctx.subject().clone();
    let probe = path_str(&ctx.subjects.probe).to_string();
    let log = path_str(&probe_log(ctx)).to_string();
    let f = path_str(&file).to_string();
    insert(&file, "q", &[b"must not run".as_slice()])?;
    for flag in ["--lease", "--timeout", "--poll", "--grace"] {
        for (value, usage) in WORK_BAD {
            let args = ["work", &f, "q", flag, value, "--", &probe, &log];
            let shown = shown(ctx, &args);
            let out =
                common::run_to_refusal(ctx, &subject, &args, &format!("{shown} to be refused"), "refuse it")?;
            expect_refused(&out, *usage, &shown)?;
        }
    }
    ensure!(
        starts(ctx)?.is_empty(),
        "no job claimed by a `work` whose durations were refused",
        "the probe ran"
    );
    write(&file)?.execute("DELETE FROM ukue_jobs", [])?;
    for (lease, lease_ms, [timeout, poll, grace]) in WORK_ROWS {
        let id = insert(&file, "q", &[b"run me".as_slice()])?[0];
        let options = ["--lease", lease, "--timeout", timeout, "--poll", poll, "--grace", grace, "--quiet"];
        let what = format!("`work {}` to run job {id}", options.join(" "));
        let mut worker = start_worker(ctx, &subject, &file, "q", &options)?;
        ctx.wait_for(&what, Duration::from_secs(30), || {
            worker.still_running(&format!("{what} and keep running until stopped"))?;
            Ok(job_count(&file)? == 0)
        })?;
        worker.stop(Duration::from_secs(30))?;
        let start =
            starts(ctx)?.remove(&id).ok_or_else(|| Failure::fail(what.clone(), "its command never ran"))?;
        let lease_ms = *lease_ms;
        let held = start.lease_until.zip(start.updated_at).map(|(until, at)| until - at);
        ensure!(
            held.is_some_and(|h| (lease_ms..=lease_ms + 1).contains(&h)),
            format!("{what}: lease_until {lease_ms} ms after the claim (--lease {lease})"),
            match held {
                Some(held) =>
                    format!("lease_until {held} ms after the claim (its updated_at), as the command saw it"),
                None => "the command saw no lease_until".to_string(),
            }
        );
    }
    Ok(())
}

/// Jobs 1 to 7, dead, for the ids to name.
fn dead_jobs(ctx: &mut Ctx) -> Result<std::path::PathBuf, Failure> {
    let file = ctx.init("jobs.ukue")?;
    let payloads: Vec<Vec<u8>> = (1..=7).map(|i| format!("job-{i}").into_bytes()).collect();
    let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
    let ids = insert(&file, "q", &refs)?;
    ensure_eq!(ids, (1..=7).collect::<Vec<i64>>(), "the ids of the first seven jobs of a new file");
    write(&file)?.execute("UPDATE ukue_jobs SET state = 'dead', attempts = 1, last_error = 'failed'", [])?;
    Ok(file)
}

/// `args.id`: each id of the table through `show`, `retry` and `delete`;
/// a number that names a job names that one, a number that names none is
/// an error (exit status 1) that changes nothing, anything else a usage
/// error. A negative id follows `--` (`args.double-dash`), as an option
/// would be read otherwise.
pub fn ids(ctx: &mut Ctx) -> CaseResult {
    let file = dead_jobs(ctx)?;
    let f = path_str(&file).to_string();
    for command in ["show", "retry", "delete"] {
        for (text, want) in IDS {
            let id_args: Vec<&str> = if text.starts_with('-') { vec!["--", text] } else { vec![text] };
            let args: Vec<&str> = match command {
                "show" => [&["show", f.as_str(), "--json"][..], &id_args].concat(),
                _ => [&[command, f.as_str()][..], &id_args].concat(),
            };
            let shown = shown(ctx, &args);
            let before = rows_as_text(&file)?;
            let exists = match *want {
                Want::Value(id) => row(&file, id)?,
                _ => None,
            };
            let out = ctx.run(ctx.subject(), &args)?;
            let Want::Value(id) = *want else {
                expect_refused(&out, true, &shown)?;
                ensure!(rows_as_text(&file)? == before, format!("{shown} to change no job"), "jobs changed");
                continue;
            };
            if exists.is_none() {
                ensure!(
                    out.status.code() == Some(1),
                    format!("{shown}: an error (exit status 1: job {id} does not exist), not a usage error"),
                    common::outcome(&out)
                );
                ensure!(rows_as_text(&file)? == before, format!("{shown} to change no job"), "jobs changed");
                continue;
            }
            expect_success(&out, &shown)?;
            match command {
                "show" => {
                    let job: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
                    ensure_eq!(job["id"].as_i64(), Some(id), format!("{shown}: the job shown"));
                }
                "retry" => {
                    let state = row(&file, id)?.map(|r| r.state);
                    ensure_eq!(state.as_deref(), Some("ready"), format!("{shown}: job {id}'s state"));
                }
                _ => ensure!(
                    row(&file, id)?.is_none(),
                    format!("{shown} to delete job {id}"),
                    "it is still there"
                ),
            }
        }
    }
    Ok(())
}

/// `args.queue` on the command line: `add` takes each name of 1 to 200
/// characters as given and refuses the others; `work` refuses those before
/// it claims anything (a queue cut to 200 characters would find a job),
/// and takes the multibyte ones, handing the job's queue to its command.
pub fn queue_names(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let f = path_str(&file).to_string();
    let mut accepted = Vec::new();
    for name in QUEUE_NAMES {
        let queue = name.text();
        let args = ["add", &f, &queue, name.name];
        if name.accepted {
            let r = added_row(ctx, &file, &args)?;
            ensure!(
                r.queue == queue,
                format!(
                    "`add FILE QUEUE` with queue {} ({} characters) to store it as given",
                    name.name,
                    name.chars()
                ),
                format!("stored as {:?} ({} characters)", clip(&r.queue), r.queue.chars().count())
            );
            accepted.push((r.id, name, queue));
        } else {
            refused_adding_nothing(ctx, &file, &args, false)?;
        }
    }
    let subject = ctx.subject().clone();
    let probe = path_str(&ctx.subjects.probe).to_string();
    let log = path_str(&probe_log(ctx)).to_string();
    for name in QUEUE_NAMES.iter().filter(|n| !n.accepted) {
        let queue = name.text();
        let args = ["work", &f, &queue, "--poll", "10ms", "--", &probe, &log];
        let shown = format!("`work FILE QUEUE` with queue {} ({} characters)", name.name, name.chars());
        let out =
            common::run_to_refusal(ctx, &subject, &args, &format!("{shown} to be refused"), "refuse it")?;
        expect_refused(&out, false, &shown)?;
    }
    ensure!(starts(ctx)?.is_empty(), "no job claimed by a `work` whose queue was refused", "the probe ran");
    for (id, name, queue) in
        accepted.iter().filter(|(_, n, _)| ["200-4-byte", "200-combining"].contains(&n.name))
    {
        let what = format!("`work FILE QUEUE` with queue {} to run job {id}", name.name);
        let mut worker = start_worker(ctx, &subject, &file, queue, &["--poll", "50ms", "--quiet"])?;
        ctx.wait_for(&what, Duration::from_secs(30), || {
            worker.still_running(&format!("{what} and keep running until stopped"))?;
            Ok(row(&file, *id)?.is_none())
        })?;
        worker.stop(Duration::from_secs(30))?;
        let start =
            starts(ctx)?.remove(id).ok_or_else(|| Failure::fail(what.clone(), "its command never ran"))?;
        ensure!(
            start.queue == *queue,
            format!("{what}, with UKUE_QUEUE the queue as given"),
            format!("UKUE_QUEUE {:?}", clip(&start.queue))
        );
    }
    Ok(())
}

/// `args.queue` over HTTP: `POST /v1/jobs` takes each name of 1 to 200
/// characters as given, and refuses with a 4xx the others and one with a
/// NUL (which no argument can hold), adding nothing.
pub fn queue_names_http(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let server = server::serve(ctx, &file, &[], &[])?;
    let client = Client::new(server.port, None);
    let nul = ("nul", "a\u{0}b".to_string(), false);
    let names = QUEUE_NAMES.iter().map(|n| (n.name, n.text(), n.accepted)).chain([nul]);
    for (name, queue, accepted) in names {
        let body = json!({"queue": queue, "payload": name});
        if accepted {
            let id = client.add(body)?;
            let stored = row(&file, id)?.map(|r| r.queue);
            ensure!(
                stored.as_deref() == Some(queue.as_str()),
                format!("POST /v1/jobs with queue {name} to store it as given"),
                match stored {
                    Some(q) => format!("stored as {:?}", clip(&q)),
                    None => format!("job {id} is not in the file"),
                }
            );
            continue;
        }
        let before = job_count(&file)?;
        let reply = client.post("/v1/jobs", body)?;
        ensure!(
            (400..500).contains(&reply.status) && reply.is_json_error(),
            format!("POST /v1/jobs with queue {name} to be refused: a 4xx with a JSON error"),
            reply.show()
        );
        ensure_eq!(job_count(&file)?, before, format!("jobs after POST /v1/jobs with queue {name}"));
    }
    Ok(())
}

/// Queue names, payloads and errors that JSON must escape, and that a
/// terminal would act on.
const NASTY: &[&str] = &[
    "\u{1b}[31mred\u{1b}[0m",
    "quote\" back\\slash \\u0041",
    "line\u{2028}sep\u{2029}",
    "tab\tnew\nline\rreturn",
    "\u{7f}\u{80}\u{85}\u{9f}\u{1}\u{1f}",
    "</script>\u{feff}\u{1f600}e\u{301}",
];

/// `json.valid`: with queue names, payloads and last errors that hold
/// control characters, quotes, backslashes, U+2028 and 4-byte characters,
/// `list --json`, `show --json` and `stats --json` each print one JSON
/// value and nothing else, in valid UTF-8, with each text as it is.
pub fn json_valid(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let mut ids: BTreeMap<i64, (Made, &str, Option<&str>)> = BTreeMap::new();
    for (i, &text) in NASTY.iter().enumerate() {
        let made = Made { name: format!("nasty-{i}"), bytes: text.as_bytes().to_vec(), ways: 0 };
        let id = insert(&file, text, &[made.bytes.as_slice()])?[0];
        let binary =
            Made { name: format!("binary-{i}"), bytes: [text.as_bytes(), b"\xff\x00"].concat(), ways: 0 };
        let failed = insert(&file, text, &[binary.bytes.as_slice()])?[0];
        write(&file)?.execute(
            "UPDATE ukue_jobs SET state = 'dead', attempts = 1, last_error = ?1 WHERE id = ?2",
            rusqlite::params![text, failed],
        )?;
        ids.insert(id, (made, text, None));
        ids.insert(failed, (binary, text, Some(text)));
    }
    let f = path_str(&file).to_string();
    let listed = json_output(ctx, &["list", &f, "--json", "--limit", "1000"])?;
    let jobs = listed["jobs"].as_array().cloned().unwrap_or_default();
    ensure_eq!(jobs.len(), ids.len(), "jobs in `list --json`");
    for job in &jobs {
        let id = job["id"].as_i64().unwrap_or_default();
        let (made, queue, error) = ids
            .get(&id)
            .ok_or_else(|| Failure::fail("`list --json` to list the jobs added", job.to_string()))?;
        let (queue, error) = (*queue, *error);
        let what = format!("job {id} in `list --json`");
        ensure_eq!(job["queue"].as_str(), Some(queue), format!("{what}: its queue"));
        check_payload(job, made, &what)?;
        if let Some(error) = error {
            ensure_eq!(job["last_error"].as_str(), Some(error), format!("{what}: its last_error"));
        }
        let shown = json_output(ctx, &["show", &f, &id.to_string(), "--json"])?;
        ensure_eq!(shown["queue"].as_str(), Some(queue), format!("`show {id} --json`: its queue"));
        check_payload(&shown, made, &format!("`show {id} --json`"))?;
    }
    let stats = json_output(ctx, &["stats", &f, "--json"])?;
    let queues: BTreeSet<&str> = stats["queues"]
        .as_array()
        .map(|q| q.iter().filter_map(|s| s["queue"].as_str()).collect())
        .unwrap_or_default();
    ensure_eq!(queues, NASTY.iter().copied().collect::<BTreeSet<&str>>(), "the queues of `stats --json`");
    Ok(())
}
