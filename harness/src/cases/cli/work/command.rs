//! The command line of `work` and the command it runs: its arguments, a
//! command that cannot run, options out of range, the command's
//! environment and its output.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use nix::sys::signal::Signal;
use rand::Rng;

use crate::cases::steps::rows::brief_all;
use crate::cases::steps::running::still_working;
use crate::cases::CaseResult;
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::file::{job_count, rows};
use crate::subjects::process::MARKER;
use crate::subjects::worker::probe_log;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::support::{expect_refused, probe_worker, secs, wait_started, Refusal, POLL};

/// Arguments a careless parser would take for its own, drop or split.
const TRICKY_ARGS: &[&str] =
    &["-v", "--concurrency", "2", "--", "", "two words", "ünïcødé ✓", "--quiet", "-", "a=--b", " "];

pub(in crate::cases::cli) fn untouched(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("args.ukue")?;
    let who = ctx.subject().clone();
    let job = ctx.add(&who, &file, "q", "args", &[])?;
    let (mut worker, log) = probe_worker(ctx, &file, "q", &POLL, "args.log", TRICKY_ARGS)?;
    let started = wait_started(ctx, &log, &[job], secs(15), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let seen: Vec<&str> = started[0].args.iter().map(String::as_str).collect();
    ensure_eq!(seen, TRICKY_ARGS.to_vec(), "the arguments after `-- ukue-probe LOG` that the command got");
    Ok(())
}

/// A file the case makes that `work` must refuse to run.
enum Unrunnable {
    NotOnPath,
    Missing,
    NotExecutable,
    Directory,
}

pub(in crate::cases::cli) fn not_found(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("not-found.ukue")?;
    let who = ctx.subject().clone();
    ctx.add(&who, &file, "q", "never-run", &[])?;
    let tag: u32 = ctx.rng.gen_range(100_000..1_000_000);
    let mut lines = Vec::new();
    for kind in [Unrunnable::NotOnPath, Unrunnable::Missing, Unrunnable::NotExecutable, Unrunnable::Directory]
    {
        let name = match kind {
            Unrunnable::NotOnPath => format!("ukue-no-such-command-{tag}"),
            Unrunnable::Missing => format!("./missing-command-{tag}"),
            Unrunnable::NotExecutable => {
                let path = ctx.path("not-executable");
                std::fs::write(&path, "#!/bin/sh\nexit 0\n")?;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
                "./not-executable".to_string()
            }
            Unrunnable::Directory => {
                std::fs::create_dir(ctx.path("a-directory"))?;
                "./a-directory".to_string()
            }
        };
        lines.push(Refusal {
            item: "work.command-not-found",
            options: POLL.iter().map(|s| s.to_string()).collect(),
            command: vec![name.clone(), "arg".into()],
            statuses: &[2],
            names: Some(name),
        });
    }
    expect_refused(ctx, &file, &probe_log(ctx), &lines)
}

/// (item, options, accepted exit statuses): the published command refuses
/// the first ones with exit status 1 once the file is open, the reference
/// with 2 as it parses them; a negative timeout is a usage error in both.
const BAD_OPTIONS: &[(&str, &[&str], &[i32])] = &[
    ("work.concurrency-bad", &["--concurrency", "0"], &[1, 2]),
    ("work.concurrency-bad", &["--concurrency", "-1"], &[1, 2]),
    ("work.lease-bad", &["--lease", "0"], &[1, 2]),
    ("work.lease-bad", &["--lease", "2ms"], &[1, 2]),
    ("work.lease-bad", &["--lease", "-1s"], &[1, 2]),
    ("work.poll-bad", &["--poll", "0"], &[1, 2]),
    ("work.poll-bad", &["--poll", "-1s"], &[1, 2]),
    ("work.grace-bad", &["--grace", "-1s"], &[1, 2]),
    ("work.timeout-negative", &["--timeout", "-1s"], &[2]),
];

pub(in crate::cases::cli) fn bad_options(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("bad-options.ukue")?;
    let who = ctx.subject().clone();
    ctx.add(&who, &file, "q", "never-run", &[])?;
    let log = probe_log(ctx);
    let probe = path_str(&ctx.subjects.probe).to_string();
    let lines: Vec<Refusal> = BAD_OPTIONS
        .iter()
        .map(|&(item, options, statuses)| Refusal {
            item,
            options: options.iter().map(|s| s.to_string()).collect(),
            command: vec![probe.clone(), path_str(&log).to_string()],
            statuses,
            names: None,
        })
        .collect();
    expect_refused(ctx, &file, &log, &lines)
}

/// The variables the command must share with its worker (one the harness
/// sets on every process it starts, as a caller would).
const INHERITED: [&str; 3] = ["PATH", "HOME", MARKER];

/// The variable `name` in the environment process `pid` started with.
fn initial_env(pid: u32, name: &str) -> Result<Option<String>, Failure> {
    let environ = std::fs::read(format!("/proc/{pid}/environ"))
        .map_err(|e| Failure::error(format!("the environment of the worker (pid {pid})"), e.to_string()))?;
    let prefix = format!("{name}=");
    Ok(environ
        .split(|b| *b == 0)
        .find_map(|var| var.strip_prefix(prefix.as_bytes()))
        .map(|value| String::from_utf8_lossy(value).into_owned()))
}

pub(in crate::cases::cli) fn env_inherited(ctx: &mut Ctx) -> CaseResult {
    let name = "env.ukue";
    let file = ctx.init(name)?;
    let who = ctx.subject().clone();
    let words: Vec<String> =
        INHERITED.iter().chain(["UKUE_FILE"].iter()).map(|v| format!("env:{v}")).collect();
    let job = ctx.add(&who, &file, "q", &words.join(" "), &[])?;
    // FILE as a path relative to the worker's directory (the case's).
    let (mut worker, log) = probe_worker(ctx, Path::new(name), "q", &POLL, "env.log", &[])?;
    let started = wait_started(ctx, &log, &[job], secs(15), &mut [&mut worker])?;
    let record = &started[0];
    // The worker is still running: its environment is there to read. The
    // probe's parent is the worker itself, even behind a wrapper.
    let mut differ = Vec::new();
    for var in INHERITED {
        let own = initial_env(record.worker_pid, var)?;
        if var == MARKER && own.as_deref() != Some(ctx.procs.marker()) {
            return Err(Failure::error(
                format!("the worker (pid {}) to carry the harness's {MARKER}", record.worker_pid),
                format!("{own:?}"),
            ));
        }
        let given = record.env.get(var).cloned().flatten();
        if given != own {
            differ.push(format!("{var}: the worker's {own:?}, the command's {given:?}"));
        }
    }
    worker.stop(secs(15))?;
    ensure!(
        differ.is_empty(),
        format!("the command's {} as its worker's (pid {})", INHERITED.join(", "), record.worker_pid),
        differ.join("; ")
    );
    let file_var = record.env.get("UKUE_FILE").cloned().flatten();
    ensure_eq!(
        file_var.as_deref(),
        Some(name),
        format!("UKUE_FILE of a worker started in the file's directory as `work {name} q`")
    );
    Ok(())
}

pub(in crate::cases::cli) fn output(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("output.ukue")?;
    let who = ctx.subject().clone();
    let tag: String = (0..8).map(|_| ctx.rng.gen_range(b'a'..=b'z') as char).collect();
    let (out, err) = (format!("OUT-{tag}"), format!("ERR-{tag}"));
    ctx.add(&who, &file, "q", &format!("stdout:{out} stderr:{err}"), &[])?;
    ctx.add(&who, &file, "q", "silent exit:0", &[])?;
    let mut options = vec!["--quiet"];
    options.extend(POLL);
    let (mut worker, _) = probe_worker(ctx, &file, "q", &options, "output.log", &[])?;
    ctx.wait_for("both jobs to run and finish", secs(15), || {
        still_working(&mut [&mut worker])?;
        Ok(job_count(&file)? == 0)
    })
    .map_err(|mut f| {
        f.seen = format!("{}; file: {}", f.seen, brief_all(&rows(&file).unwrap_or_default()));
        f
    })?;
    let (stdout_path, stderr_path) = (worker.stdout_path.clone(), worker.stderr_path.clone());
    worker.stop_by(Signal::SIGINT, secs(15))?;
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    let (stdout, stderr) = (read(&stdout_path), read(&stderr_path));
    ensure!(
        stdout.lines().any(|l| l == out) && stderr.lines().any(|l| l == err),
        format!("the command's `{out}` line on the worker's stdout and `{err}` on its stderr"),
        format!("stdout {stdout:?}, stderr {stderr:?}")
    );
    ensure!(
        stdout == format!("{out}\n") && stderr == format!("{err}\n"),
        format!(
            "`work --quiet`, whose jobs all finished and which SIGINT stopped, to print nothing of its own: \
             stdout {:?}, stderr {:?} (the command's)",
            format!("{out}\n"),
            format!("{err}\n")
        ),
        format!("stdout {stdout:?}, stderr {stderr:?}")
    );
    Ok(())
}
