//! spec/COMMAND.md §2 and §3: the file `init` makes wherever FILE points,
//! what it prints (the published line, `FILE is ready (ukue file format
//! 1)` with FILE as given, a `should`), `init` on a
//! file that is one already (the published `open` only checks it), and
//! the message that refuses a newer format (the published one names the
//! file's version and the one it reads up to).

use crate::cases::steps::rows::only_changed;
use crate::cases::steps::setup::{insert, Put};
use crate::cases::{common, CaseResult};
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::file::{read, rows, write};
use crate::subjects::probe::now_ms;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::{run, shown, succeeded, text};

/// FILE as a user may give it: relative, through `..`, with a space and
/// non-ASCII, and absolute.
fn given_paths(ctx: &Ctx) -> Result<[String; 4], Failure> {
    std::fs::create_dir_all(ctx.path("sub"))?;
    Ok([
        "relative.ukue".to_string(),
        "./sub/../dotted.ukue".to_string(),
        "sub/with space é.ukue".to_string(),
        path_str(&ctx.path("absolute.ukue")).to_string(),
    ])
}

/// init.creates (must): `init FILE` exits 0 and leaves a ukue file of
/// format 1 at FILE, however FILE is written.
pub(super) fn init_creates(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    for file in given_paths(ctx)? {
        let on_disk = ctx.dir.join(&file);
        ctx.tracked.push(on_disk.clone());
        let args = vec!["init".to_string(), file.clone()];
        let out = run(ctx, &who, &args, None)?;
        succeeded(ctx, &who, &args, &out, "to create the file")?;
        ensure!(
            on_disk.is_file(),
            format!("{} to make the file {file}", shown(ctx, &who, &args)),
            format!("no file there; the directory holds {:?}", common::listing(&ctx.dir)?)
        );
        let version: String = read(&on_disk)?.query_row(
            "SELECT value FROM ukue_meta WHERE key = 'format_version'",
            [],
            |r| r.get(0),
        )?;
        ensure_eq!(version, "1", format!("the format_version of the file `init {file}` made"));
    }
    Ok(())
}

/// init.prints (should): the line the published command prints, FILE as
/// given.
pub(super) fn init_prints(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    for file in given_paths(ctx)? {
        ctx.tracked.push(ctx.dir.join(&file));
        let args = vec!["init".to_string(), file.clone()];
        let out = run(ctx, &who, &args, None)?;
        let stdout = succeeded(ctx, &who, &args, &out, "to create the file")?;
        let line = format!("{file} is ready (ukue file format 1)");
        ensure!(
            stdout.lines().any(|l| l == line),
            format!("{} to print the line {line:?}", shown(ctx, &who, &args)),
            format!("stdout {stdout:?}")
        );
    }
    Ok(())
}

pub(super) fn init_existing(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("existing.ukue")?;
    ctx.add(&who, &file, "q", "added by the subject", &["--priority", "3"])?;
    let now = now_ms();
    insert(
        &file,
        &[
            Put::new("q", "ready", now),
            Put::new("q", "ready", now).run_at(now + 3_600_000),
            Put::new("q", "running", now),
            Put::new("r", "dead", now).error("boom"),
            Put::new("r", "done", now),
            Put::new("r", "ready", now).blob(&[0xff, 0x00]),
        ],
    )?;
    let before = rows(&file)?;
    for given in [path_str(&file).to_string(), "existing.ukue".to_string()] {
        let args = vec!["init".to_string(), given];
        let out = run(ctx, &who, &args, None)?;
        succeeded(ctx, &who, &args, &out, "on a ukue file of format 1")?;
        only_changed(
            &format!("{} on a file with jobs in every state to change no job", shown(ctx, &who, &args)),
            &before,
            &rows(&file)?,
            &[],
            &[],
        )?;
    }
    Ok(())
}

/// Every command that opens a file, on `FILE`.
const OPENING: &[&[&str]] = &[
    &["init", "FILE"],
    &["add", "FILE", "q", "p"],
    &["stats", "FILE"],
    &["list", "FILE", "--json"],
    &["show", "FILE", "1"],
    &["retry", "FILE", "--all"],
    &["purge", "FILE", "--state", "dead"],
    &["delete", "FILE", "1"],
    &["work", "FILE", "q", "--", "true"],
];

pub(super) fn newer_version_message(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    // Not tracked: the checks after the case would refuse it too.
    let file = ctx.path("newer.ukue");
    ctx.ok(&who, &["init", path_str(&file)])?;
    write(&file)?.execute("UPDATE ukue_meta SET value = '2' WHERE key = 'format_version'", [])?;
    let mut problems = Vec::new();
    for template in OPENING {
        let args = super::fill(template, &[("FILE", path_str(&file))]);
        let out = run(ctx, &who, &args, None)?;
        // Leave the paths out: they may hold digits of their own.
        let message = text(&out.stderr).replace(path_str(&file), "FILE").replace(path_str(&ctx.dir), "DIR");
        let numbers = common::numbers(&message);
        if out.status.code() == Some(0) || !numbers.contains(&"2") || !numbers.contains(&"1") {
            problems.push(format!("{}: {}", shown(ctx, &who, &args), common::outcome(&out)));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Failure::fail(
        "each command to refuse a file of format_version 2 with a message that names version 2 (the \
         file's) and version 1 (the one it reads)",
        problems.join("\n"),
    ))
}
