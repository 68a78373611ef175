//! spec/COMMAND.md §4, `add`: the payload from stdin (the published
//! `readPayload` reads all of it, and gives up when SIGINT or SIGTERM
//! comes first), and what it refuses: a negative delay, a delay with
//! `--at`, negative attempts (the published `insertArgs` refuses them with
//! an error), an `--at` that is no RFC 3339 time (a usage error, before
//! the file is opened).

use std::io::Write;
use std::os::fd::AsRawFd;
use std::process::{ChildStdin, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::cases::steps::rows::{brief_all, only_changed};
use crate::cases::{common, CaseResult};
use crate::ensure;
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::file::{job_count, row, rows};
use crate::subjects::observe::strace::printed_id;
use crate::subjects::Failure;

use super::{file_with_job, fill, run, shown, succeeded, text};

/// An add with its payload from stdin (`FILE` the file), what it gets on
/// stdin (None: /dev/null), and the payload it must store.
struct FromStdin {
    args: &'static [&'static str],
    input: Option<&'static [u8]>,
    payload: &'static [u8],
}

const fn from_stdin(
    args: &'static [&'static str],
    input: Option<&'static [u8]>,
    payload: &'static [u8],
) -> FromStdin {
    FromStdin { args, input, payload }
}

#[rustfmt::skip]
const FROM_STDIN: &[FromStdin] = &[
    from_stdin(&["add", "FILE", "q"], Some(b"hello\n"), b"hello\n"),
    from_stdin(&["add", "FILE", "q", "-"], Some(b"\x00\xff\r\n end\n\n"), b"\x00\xff\r\n end\n\n"),
    from_stdin(&["add", "FILE", "q"], Some(b""), b""),
    from_stdin(&["add", "FILE", "q", "-"], None, b""),
    from_stdin(&["add", "--priority", "2", "FILE", "q"], Some(b"after a flag\n"), b"after a flag\n"),
    from_stdin(&["add", "FILE", "q", "-", "--attempts", "2"], Some(b"-"), b"-"),
];

pub(super) fn stdin(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("stdin.ukue")?;
    for FromStdin { args: template, input, payload } in FROM_STDIN {
        let args = fill(template, &[("FILE", path_str(&file))]);
        let out = run(ctx, &who, &args, *input)?;
        let stdout = succeeded(ctx, &who, &args, &out, "a job to add")?;
        let id = printed_id(&stdout).ok_or_else(|| {
            Failure::fail(
                format!("{} to print the new job's id", shown(ctx, &who, &args)),
                format!("{stdout:?}"),
            )
        })?;
        let stored = row(&file, id)?.map(|r| r.payload);
        let fed = input.map_or("nothing (stdin is /dev/null)".to_string(), |b| {
            format!("{:?}", b.escape_ascii().to_string())
        });
        ensure!(
            stored.as_deref() == Some(*payload),
            format!(
                "{} fed {fed} on stdin: job {id} with the payload {:?}",
                shown(ctx, &who, &args),
                payload.escape_ascii().to_string()
            ),
            match stored {
                Some(bytes) => format!("the payload {:?}", bytes.escape_ascii().to_string()),
                None => "no such job".to_string(),
            }
        );
    }
    Ok(())
}

/// What the interrupted adds have read before the signal comes.
const PARTIAL: &[u8] = b"the first part of a payload, the rest to come\n";
/// How long an add may take to read its stdin, and to end after a signal.
const PATIENCE: Duration = Duration::from_secs(10);

/// The bytes written to `pipe` that its reader has not read yet.
fn unread(pipe: &ChildStdin) -> std::io::Result<i32> {
    let mut n: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, which outlives
    // the call; the descriptor is the open pipe's.
    let done = unsafe { nix::libc::ioctl(pipe.as_raw_fd(), nix::libc::FIONREAD, &mut n) };
    if done < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n)
}

pub(super) fn stdin_interrupted(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("interrupted.ukue")?;
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let what =
            format!("`{} add FILE q` (payload from stdin), sent {signal} while stdin is open", who.name);
        let mut cmd = Command::new(&who.program);
        cmd.args(&who.args)
            .args(["add", path_str(&file), "q"])
            .current_dir(&ctx.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut spawned = ctx
            .procs
            .spawn(&mut cmd)
            .map_err(|e| Failure::error(format!("{what} to start"), e.to_string()))?;
        let mut pipe =
            spawned.child.stdin.take().ok_or_else(|| Failure::error("a pipe to its stdin", "none"))?;
        pipe.write_all(PARTIAL)?;
        // Once the pipe is empty, the add has read what it was given: it
        // reads its payload.
        let mut ended = None;
        ctx.wait_for(
            &format!("{what}: to read the {} bytes written so far", PARTIAL.len()),
            PATIENCE,
            || {
                ended = spawned.child.try_wait()?;
                Ok(ended.is_some() || unread(&pipe)? == 0)
            },
        )?;
        if let Some(status) = ended {
            return Err(Failure::fail(
                format!("{what}: to wait for the end of its stdin"),
                format!("it ended before its stdin did ({status})"),
            ));
        }
        // The whole group, as Ctrl-C at a terminal signals it.
        spawned.signal_group(signal);
        let mut status = spawned.wait_timeout(PATIENCE)?;
        let ran_on = status.is_none();
        if ran_on {
            // Ignoring the signal is no job added either, unless the end of
            // stdin then makes one.
            drop(pipe);
            status = spawned.wait_timeout(PATIENCE)?;
        }
        let Some(status) = status else {
            return Err(Failure::fail(
                format!("{what}: to end, or at least to end once its stdin ends"),
                format!(
                    "it ran on for {} s after the signal and {} s after stdin ended",
                    PATIENCE.as_secs(),
                    PATIENCE.as_secs()
                ),
            ));
        };
        let jobs = job_count(&file)?;
        ensure!(
            jobs == 0,
            format!("{what}: no job added"),
            format!(
                "{jobs} jobs ({}); it {}, {status}",
                brief_all(&rows(&file)?),
                if ran_on {
                    "ran on after the signal until its stdin ended"
                } else {
                    "ended after the signal"
                }
            )
        );
    }
    Ok(())
}

/// How an add must refuse its input.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// With an error or a usage error (exit status 1 or 2).
    Either,
    /// With a usage error (exit status 2).
    Usage,
}

/// `add FILE q p` with these options: the item, and how it must refuse.
#[rustfmt::skip]
const REFUSED: &[(&str, &[&str], Refusal)] = &[
    ("add.delay-negative", &["--delay", "-5s"], Refusal::Either),
    ("add.delay-negative", &["--delay=-1ms"], Refusal::Either),
    ("add.delay-negative", &["--delay", "-1h30m"], Refusal::Either),
    ("add.delay-and-at", &["--delay", "1m", "--at", "2030-01-01T00:00:00Z"], Refusal::Either),
    ("add.delay-and-at", &["--at", "2020-01-01T00:00:00Z", "--delay", "1s"], Refusal::Either),
    ("add.attempts-negative", &["--attempts", "-1"], Refusal::Either),
    ("add.attempts-negative", &["--attempts=-10"], Refusal::Either),
    ("add.at-bad", &["--at", "soon"], Refusal::Usage),
    ("add.at-bad", &["--at", "2026-10-06"], Refusal::Usage),
    ("add.at-bad", &["--at", "2026-10-06T09:00:00"], Refusal::Usage),
    ("add.at-bad", &["--at", "1791277200"], Refusal::Usage),
    ("add.at-bad", &["--at", "2026-13-06T09:00:00Z"], Refusal::Usage),
];

/// The same adds with values in range: they add a job, so the refusals
/// above were for the values.
const ACCEPTED: &[&[&str]] =
    &[&["--delay", "5s"], &["--at", "2026-10-06T11:00:00+02:00"], &["--attempts", "1"]];

pub(super) fn refused(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let (file, _) = file_with_job(ctx, "refused.ukue")?;
    let base = ["add", "FILE", "q", "p"];
    let mut problems = Vec::new();
    for (item, options, refusal) in REFUSED {
        let template: Vec<&str> = base.iter().chain(options.iter()).copied().collect();
        let args = fill(&template, &[("FILE", path_str(&file))]);
        let before = rows(&file)?;
        let out = run(ctx, &who, &args, None)?;
        let code = out.status.code();
        let refused = match refusal {
            Refusal::Either => matches!(code, Some(1 | 2)),
            Refusal::Usage => code == Some(2),
        };
        let mut wrong = Vec::new();
        if !refused || text(&out.stderr).trim().is_empty() {
            wrong.push(common::outcome(&out));
        }
        if let Err(f) = only_changed("no job added or changed", &before, &rows(&file)?, &[], &[]) {
            wrong.push(f.seen);
        }
        if !wrong.is_empty() {
            let how = match refusal {
                Refusal::Either => "refused (exit status 1 or 2)",
                Refusal::Usage => "a usage error (exit status 2)",
            };
            problems.push(format!("{item}: {} to be {how}: {}", shown(ctx, &who, &args), wrong.join("; ")));
        }
    }
    for options in ACCEPTED {
        let template: Vec<&str> = base.iter().chain(options.iter()).copied().collect();
        let args = fill(&template, &[("FILE", path_str(&file))]);
        let jobs = job_count(&file)?;
        let out = run(ctx, &who, &args, None)?;
        succeeded(ctx, &who, &args, &out, "a value in range")?;
        ensure!(
            job_count(&file)? == jobs + 1,
            format!("{} to add one job", shown(ctx, &who, &args)),
            format!("{} jobs before, {} after", jobs, job_count(&file)?)
        );
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Failure::fail(
        "each add with a value the command refuses to add no job: exit status 1 or 2 (2 for an --at that is \
         no RFC 3339 time) and a message on stderr",
        problems.join("\n"),
    ))
}
