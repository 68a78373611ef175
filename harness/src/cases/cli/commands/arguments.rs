//! spec/COMMAND.md §1, the arguments: options anywhere among the
//! positional arguments (the published `parseTail` reads flags, takes one
//! positional argument, and reads flags again), `--flag=value`, `--`
//! before positional arguments that start with a dash (the published
//! `parse` adds what follows it to them), and paths as the system takes
//! them (the published `open` hands the path to SQLite as it is).

use std::path::Path;

use serde_json::Value;

use crate::cases::steps::contract::listed;
use crate::cases::steps::rows::brief;
use crate::cases::steps::setup::{insert, Put};
use crate::cases::{common, CaseResult};
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::observe::file::{row, rows};
use crate::subjects::observe::strace::printed_id;
use crate::subjects::probe::now_ms;
use crate::subjects::Failure;
use crate::subjects::Subject;
use crate::{ensure, ensure_eq};

use super::{fill, run, shown, succeeded};

/// Room for the clocks of the harness and the subject, read apart.
const CLOCK_TOL: i64 = 1_000;
const HOUR: i64 = 3_600_000;

/// When an added job is due.
#[derive(Clone, Copy, Debug)]
enum Due {
    /// At the add.
    Now,
    /// This long after the add (ms).
    In(i64),
    /// At this time (ms since 1970).
    At(i64),
}

/// An `add` (`FILE` the file) and the job it must make.
struct Add {
    args: &'static [&'static str],
    queue: &'static str,
    payload: &'static str,
    priority: i64,
    max_attempts: i64,
    due: Due,
}

const fn add(args: &'static [&'static str], queue: &'static str, payload: &'static str) -> Add {
    Add { args, queue, payload, priority: 0, max_attempts: 10, due: Due::Now }
}

impl Add {
    const fn priority(self, priority: i64) -> Add {
        Add { priority, ..self }
    }
    const fn attempts(self, max_attempts: i64) -> Add {
        Add { max_attempts, ..self }
    }
    const fn due(self, due: Due) -> Add {
        Add { due, ..self }
    }
}

/// 2030-01-01T00:00:00Z.
const IN_2030: i64 = 1_893_456_000_000;

#[rustfmt::skip]
const ANYWHERE: &[Add] = &[
    add(&["add", "--priority", "5", "FILE", "q", "p"], "q", "p").priority(5),
    add(&["add", "FILE", "--priority", "5", "q", "p"], "q", "p").priority(5),
    add(&["add", "FILE", "q", "--priority", "5", "p"], "q", "p").priority(5),
    add(&["add", "FILE", "q", "p", "--priority", "5"], "q", "p").priority(5),
    add(&["add", "--attempts", "3", "FILE", "q", "--priority", "-7", "p", "--delay", "1h"], "q", "p")
        .priority(-7).attempts(3).due(Due::In(HOUR)),
];

#[rustfmt::skip]
const EQUALS: &[Add] = &[
    add(&["add", "FILE", "q", "p", "--priority=5", "--attempts=3", "--delay=1h"], "q", "p")
        .priority(5).attempts(3).due(Due::In(HOUR)),
    add(&["add", "--at=2030-01-01T00:00:00Z", "FILE", "q", "p"], "q", "p").due(Due::At(IN_2030)),
];

#[rustfmt::skip]
const DASHES: &[Add] = &[
    add(&["add", "FILE", "q", "--", "-5"], "q", "-5"),
    add(&["add", "FILE", "q", "--", "--priority"], "q", "--priority"),
    add(&["add", "FILE", "--", "-queue", "--json"], "-queue", "--json"),
    add(&["add", "--priority", "3", "FILE", "q", "--", "-x"], "q", "-x").priority(3),
    add(&["add", "--", "FILE", "q", "p"], "q", "p"),
];

/// Runs each add in `table` on `file`, and checks the job it made.
fn adds(ctx: &Ctx, who: &Subject, file: &Path, table: &[Add]) -> CaseResult {
    for add in table {
        let args = fill(add.args, &[("FILE", path_str(file))]);
        let t0 = now_ms();
        let out = run(ctx, who, &args, None)?;
        let t1 = now_ms();
        let stdout = succeeded(ctx, who, &args, &out, "a job to add")?;
        let id = printed_id(&stdout).ok_or_else(|| {
            Failure::fail(
                format!("{} to print the new job's id", shown(ctx, who, &args)),
                format!("{stdout:?}"),
            )
        })?;
        let r = row(file, id)?
            .ok_or_else(|| Failure::fail(format!("job {id} in the file"), "there is no such job"))?;
        let (low, high) = match add.due {
            Due::Now => (t0 - CLOCK_TOL, t1 + CLOCK_TOL),
            Due::In(ms) => (t0 + ms - CLOCK_TOL, t1 + ms + CLOCK_TOL),
            Due::At(at) => (at, at),
        };
        ensure!(
            r.queue == add.queue
                && r.payload == add.payload.as_bytes()
                && r.priority == add.priority
                && r.max_attempts == add.max_attempts
                && (low..=high).contains(&r.run_at),
            format!(
                "{}: a job in queue {:?}, payload {:?}, priority {}, max_attempts {}, run_at in [{low}, {high}]",
                shown(ctx, who, &args),
                add.queue,
                add.payload,
                add.priority,
                add.max_attempts
            ),
            brief(&r)
        );
    }
    Ok(())
}

/// What a reading command must print as JSON.
enum Printed {
    /// `list`: this many jobs.
    Jobs(usize),
    /// `show`: the job `ID`.
    Job,
    /// `stats`: the queue `q` and no other.
    QueueQ,
}

/// Runs each reading command of `table` (`FILE`, `ID` filled in), and
/// checks what it printed.
fn reads(ctx: &Ctx, who: &Subject, file: &Path, id: i64, table: &[(&[&str], Printed)]) -> CaseResult {
    let id_text = id.to_string();
    for (template, printed) in table {
        let args = fill(template, &[("FILE", path_str(file)), ("ID", &id_text)]);
        let out = run(ctx, who, &args, None)?;
        let stdout = succeeded(ctx, who, &args, &out, "to read the file")?;
        let what = shown(ctx, who, &args);
        let value: Value = serde_json::from_str(&stdout)
            .map_err(|e| Failure::fail(format!("{what} to print JSON"), format!("{e}: {}", clip(&stdout))))?;
        match printed {
            Printed::Jobs(n) => {
                ensure_eq!(listed(&value, &what)?.len(), *n, format!("{what}: the number of jobs"))
            }
            Printed::Job => {
                ensure_eq!(value.get("id").and_then(Value::as_i64), Some(id), format!("{what}: the id"))
            }
            Printed::QueueQ => {
                let queues: Vec<&str> = value["queues"]
                    .as_array()
                    .map(|qs| qs.iter().filter_map(|q| q["queue"].as_str()).collect())
                    .unwrap_or_default();
                ensure_eq!(queues, vec!["q"], format!("{what}: the queues"))
            }
        }
    }
    Ok(())
}

/// Runs `template` (`FILE` filled in) on a file where `put` was written
/// first; the job must then be `state` (or gone, for None).
fn manages(
    ctx: &Ctx,
    who: &Subject,
    file: &Path,
    put: Put,
    template: &[&str],
    state: Option<&str>,
) -> CaseResult {
    let id = insert(file, &[put])?[0];
    let args = fill(template, &[("FILE", path_str(file))]);
    let out = run(ctx, who, &args, None)?;
    succeeded(ctx, who, &args, &out, "to change the file")?;
    let now = row(file, id)?;
    ensure_eq!(
        now.as_ref().map(|r| r.state.as_str()),
        state,
        format!("{}: job {id}'s state (None: deleted)", shown(ctx, who, &args))
    );
    Ok(())
}

pub(super) fn options_anywhere(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("anywhere.ukue")?;
    adds(ctx, &who, &file, ANYWHERE)?;
    let id = rows(&file)?.first().map_or(0, |r| r.id);
    let all = ANYWHERE.len();
    let table: &[(&[&str], Printed)] = &[
        (&["list", "--json", "FILE"], Printed::Jobs(all)),
        (&["list", "FILE", "--json"], Printed::Jobs(all)),
        (&["list", "--limit", "1", "FILE", "--json"], Printed::Jobs(1)),
        (&["list", "FILE", "--json", "--limit", "2"], Printed::Jobs(2)),
        (&["list", "--queue", "nope", "FILE", "--json"], Printed::Jobs(0)),
        (&["show", "--json", "FILE", "ID"], Printed::Job),
        (&["show", "FILE", "--json", "ID"], Printed::Job),
        (&["show", "FILE", "ID", "--json"], Printed::Job),
        (&["stats", "--json", "FILE"], Printed::QueueQ),
        (&["stats", "FILE", "--json"], Printed::QueueQ),
    ];
    reads(ctx, &who, &file, id, table)?;
    let now = now_ms();
    manages(ctx, &who, &file, Put::new("q", "done", now), &["purge", "--state", "done", "FILE"], None)?;
    manages(ctx, &who, &file, Put::new("q", "done", now), &["purge", "FILE", "--state", "done"], None)?;
    manages(ctx, &who, &file, Put::new("q", "dead", now), &["retry", "--all", "FILE"], Some("ready"))?;
    manages(
        ctx,
        &who,
        &file,
        Put::new("q", "dead", now),
        &["retry", "--queue", "q", "FILE", "--all"],
        Some("ready"),
    )
}

pub(super) fn equals(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("equals.ukue")?;
    adds(ctx, &who, &file, EQUALS)?;
    let id = rows(&file)?.first().map_or(0, |r| r.id);
    let table: &[(&[&str], Printed)] = &[
        (&["list", "FILE", "--limit=1", "--json"], Printed::Jobs(1)),
        (&["list", "FILE", "--state=delayed", "--queue=q", "--json"], Printed::Jobs(2)),
        (&["list", "FILE", "--after=0", "--queue=nope", "--json"], Printed::Jobs(0)),
    ];
    reads(ctx, &who, &file, id, table)?;
    manages(ctx, &who, &file, Put::new("q", "done", now_ms()), &["purge", "FILE", "--state=done"], None)
}

/// Command lines where a flag stands after `--`: an argument too many.
const FLAG_AFTER_DASHES: &[&[&str]] = &[
    &["stats", "--", "FILE", "--json"],
    &["list", "--", "FILE", "--limit", "1"],
    &["add", "FILE", "q", "--", "p", "--priority", "5"],
];

pub(super) fn double_dash(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("dashes.ukue")?;
    adds(ctx, &who, &file, DASHES)?;
    let before = rows(&file)?;
    for template in FLAG_AFTER_DASHES {
        let args = fill(template, &[("FILE", path_str(&file))]);
        let out = run(ctx, &who, &args, None)?;
        ensure!(
            out.status.code() == Some(2),
            format!(
                "{}: a usage error (exit status 2), the flag after `--` an argument too many",
                shown(ctx, &who, &args)
            ),
            common::outcome(&out)
        );
    }
    let id = before.first().map_or(0, |r| r.id);
    ensure_eq!(rows(&file)?, before, "the jobs after the usage errors");
    manages(
        ctx,
        &who,
        &file,
        Put::new("q", "done", now_ms()),
        &["purge", "FILE", "--state", "done", "--"],
        None,
    )?;
    let shown_id = ctx.json(&who, &["show", "--json", path_str(&file), "--", &id.to_string()])?;
    ensure_eq!(shown_id.get("id").and_then(Value::as_i64), Some(id), "`show --json FILE -- ID`: the id");
    ctx.ok(&who, &["delete", path_str(&file), "--", &id.to_string()])?;
    ensure!(
        row(&file, id)?.is_none(),
        format!("`delete FILE -- {id}` to delete job {id}"),
        "it is still there"
    );

    // A file whose name starts with a dash, in the directory the subject
    // runs in.
    let dashed = "-dashed.ukue";
    ctx.tracked.push(ctx.path(dashed));
    ctx.ok(&who, &["init", "--", dashed])?;
    let id = ctx.ok(&who, &["add", "--", dashed, "q", "p"])?;
    let stats = ctx.json(&who, &["stats", "--json", "--", dashed])?;
    let jobs = rows(&ctx.path(dashed))?;
    ensure!(
        jobs.len() == 1
            && printed_id(&id) == Some(jobs[0].id)
            && stats["queues"].as_array().map(Vec::len) == Some(1),
        format!(
            "`init -- {dashed}`, `add -- {dashed} q p` and `stats --json -- {dashed}` to work on ./{dashed}"
        ),
        format!(
            "add printed {id:?}, stats printed {}, the file holds {}",
            clip(&stats.to_string()),
            jobs.len()
        )
    );
    Ok(())
}

/// Directory and file names as a system takes them: spaces, non-ASCII,
/// `#` and `%` (which a SQLite URI would read otherwise).
const SUBDIR: &str = "sub dir é";
const NAMES: [&str; 3] = ["日本 file #1 100%41.ukue", "rel é ü.ukue", "plain name with spaces.ukue"];

pub(super) fn path(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let before = common::listing(&ctx.dir)?;
    std::fs::create_dir(ctx.path(SUBDIR))?;
    let absolute = ctx.path(SUBDIR).join(NAMES[0]);
    let paths = [path_str(&absolute).to_string(), format!("{SUBDIR}/{}", NAMES[1]), NAMES[2].to_string()];
    for given in &paths {
        let on_disk = ctx.dir.join(given);
        ctx.tracked.push(on_disk.clone());
        ctx.ok(&who, &["init", given])?;
        let added = ctx.ok(&who, &["add", given, "q", "p"])?;
        let id = printed_id(&added).ok_or_else(|| {
            Failure::fail(format!("`add {given:?} q p` to print an id"), format!("{added:?}"))
        })?;
        let stats = ctx.json(&who, &["stats", given, "--json"])?;
        let listed_jobs = ctx.json(&who, &["list", given, "--json"])?;
        let job = ctx.json(&who, &["show", given, &id.to_string(), "--json"])?;
        let jobs = rows(&on_disk)?;
        ensure!(
            jobs.len() == 1
                && jobs[0].id == id
                && stats["queues"].as_array().map(Vec::len) == Some(1)
                && listed(&listed_jobs, "`list --json`")?.len() == 1
                && job["id"].as_i64() == Some(id),
            format!("init, add, stats, list and show on {given:?} to work on that file"),
            format!(
                "the file holds {} jobs; stats {}; show {}",
                jobs.len(),
                clip(&stats.to_string()),
                clip(&job.to_string())
            )
        );
        ctx.ok(&who, &["delete", given, &id.to_string()])?;
        ensure!(
            row(&on_disk, id)?.is_none(),
            format!("`delete {given:?} {id}` to delete the job"),
            "it is still there"
        );
    }
    // No file under another name: a name cut at `#`, or `%41` decoded.
    let named = |name: &str, allowed: &[&str]| allowed.iter().any(|n| name.starts_with(n));
    let mut strays: Vec<String> =
        common::listing(&ctx.path(SUBDIR))?.into_iter().filter(|name| !named(name, &NAMES[..2])).collect();
    strays.extend(
        common::listing(&ctx.dir)?.difference(&before).filter(|n| !named(n, &[SUBDIR, NAMES[2]])).cloned(),
    );
    ensure!(
        strays.is_empty(),
        "no file but the ones named (and their -wal and -shm)",
        format!("also {strays:?}")
    );
    Ok(())
}
