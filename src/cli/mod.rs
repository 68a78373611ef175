//! The `ukue` command line (spec/COMMAND.md): one function per
//! command. It lives in the library so that test doubles (the harness's
//! deliberately broken subjects) and the argument fuzzer can run it.

pub mod args;
pub mod duration;
pub mod output;
pub mod serve;
pub mod time;
pub mod work;

use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::ExitCode;

use crate::worker::Worker;
use crate::{Access, ListFilter, NewJob, OpenOptions, State, Ukue, FORMAT_VERSION};
use anyhow::{bail, Context, Result};
use clap::Parser;

use args::{AddArgs, Cmd, ListArgs, WorkArgs};
use output::{escape, table, JobJson, ListJson, StatsJson};

impl Cmd {
    pub fn name(&self) -> &'static str {
        match self {
            Cmd::Init { .. } => "init",
            Cmd::Add(_) => "add",
            Cmd::Work(_) => "work",
            Cmd::Serve(_) => "serve",
            Cmd::Stats { .. } => "stats",
            Cmd::List(_) => "list",
            Cmd::Show { .. } => "show",
            Cmd::Retry { .. } => "retry",
            Cmd::Purge { .. } => "purge",
            Cmd::Delete { .. } => "delete",
            Cmd::Version => "version",
        }
    }
}

/// Parses the process's arguments and runs the command with the builtin
/// FORMAT.md. Exit status: 0 success, 1 an error (message on stderr,
/// starting `ukue COMMAND: `), 2 a usage error.
pub fn main() -> ExitCode {
    main_with(OpenOptions::default())
}

/// Like [`main`], opening files with `options` (another spec, say).
pub fn main_with(options: OpenOptions) -> ExitCode {
    let args = args::Cli::parse();
    let name = args.command.name();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // Returning (rather than exiting) drops every connection first, so
    // SQLite removes the -wal and -shm files it made for a refused file.
    match run(args.command, &options, &mut out).and_then(|()| Ok(out.flush()?)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ukue {name}: {}", escape(&format!("{e:#}")));
            ExitCode::from(exit_status(&e))
        }
    }
}

/// A command line that parses but cannot run (`work`'s command cannot be
/// found): a usage error, exit status 2, as clap's own.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The exit status of a command that failed with `e`: 2 for a
/// [`UsageError`], 1 for any other.
pub fn exit_status(e: &anyhow::Error) -> u8 {
    if e.is::<UsageError>() {
        2
    } else {
        1
    }
}

/// Runs one command; what it prints goes to `out`.
pub fn run(cmd: Cmd, options: &OpenOptions, out: &mut dyn Write) -> Result<()> {
    let files = Files(options);
    match cmd {
        Cmd::Init { file } => init(files, &file, out),
        Cmd::Add(args) => add(files, args, out),
        Cmd::Work(args) => {
            let handler = work::CommandHandler::of(&args);
            work_with(options, args, &handler)
        }
        Cmd::Serve(args) => serve::serve(options.clone(), args),
        Cmd::Stats { file, json } => stats(files, &file, json, out),
        Cmd::List(args) => list(files, args, out),
        Cmd::Show { file, id, json } => show(files, &file, id, json, out),
        Cmd::Retry { file, ids, all, queue } => retry(files, &file, &ids, all, queue.as_deref(), out),
        Cmd::Purge { file, state, queue } => purge(files, &file, &state, queue.as_deref(), out),
        Cmd::Delete { file, ids } => delete(files, &file, &ids, out),
        Cmd::Version => {
            writeln!(out, "ukue {} (file format {FORMAT_VERSION})", env!("CARGO_PKG_VERSION"))?;
            Ok(())
        }
    }
}

/// How the commands open files.
#[derive(Clone, Copy)]
struct Files<'a>(&'a OpenOptions);

impl Files<'_> {
    fn open(self, file: &Path) -> Result<Ukue> {
        self.open_with(file, Access::Existing)
    }
    fn open_with(self, file: &Path, access: Access) -> Result<Ukue> {
        Ok(self.0.clone().access(access).open(file)?)
    }
}

fn init(files: Files, file: &Path, out: &mut dyn Write) -> Result<()> {
    files.open_with(file, Access::AddTables)?;
    writeln!(out, "{} is ready (ukue file format {FORMAT_VERSION})", file.display())?;
    Ok(())
}

fn add(files: Files, args: AddArgs, out: &mut dyn Write) -> Result<()> {
    let payload = match args.payload.as_deref() {
        Some(p) if p != "-" => p.as_bytes().to_vec(),
        _ => {
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes).context("reading the payload from stdin")?;
            bytes
        }
    };
    // `--delay 0` is no delay, so it goes with `--at` as the published
    // command takes it; any other delay with `--at` is refused.
    if args.at.is_some() && args.delay.is_some_and(|d| !d.is_zero()) {
        bail!("give --delay or --at, not both");
    }
    let mut job = NewJob::new(args.queue, payload);
    if let Some(p) = args.priority {
        job = job.priority(p);
    }
    if let Some(n) = args.attempts {
        job = job.max_attempts(n);
    }
    if let Some(delay) = args.delay.filter(|d| !d.is_zero()) {
        job = job.delay(delay);
    }
    if let Some(at) = args.at {
        job = job.run_at(at);
    }
    // Validate before the file is created, so bad input writes nothing.
    job.validate()?;
    let mut file = files.open_with(&args.file, Access::AddTables)?;
    let id = file.add(&job)?;
    writeln!(out, "{id}")?;
    Ok(())
}

/// `ukue work` with `handler` running each job: the reference's is
/// [`work::CommandHandler`]; a test double may wrap it.
pub fn work_with(open: &OpenOptions, args: WorkArgs, handler: &dyn crate::worker::Handler) -> Result<()> {
    let files = Files(open);
    // As the published command: a command that cannot run is a usage
    // error, before the file is opened or any job claimed.
    work::find_command(&args.command[0]).map_err(UsageError)?;
    // Refuse a bad file before anything starts.
    drop(files.open(&args.file)?);
    let worker =
        Worker::new(&args.file, &args.queue, work::worker_options(&args)).open_options(files.0.clone());
    let quiet = args.quiet;
    let result = work::run_until_signalled(&worker, handler, &|event| work::report(event, quiet))
        .context("installing signal handlers")?;
    Ok(result?)
}

fn stats(files: Files, file: &Path, json: bool, out: &mut dyn Write) -> Result<()> {
    let stats = files.open(file)?.stats()?;
    if json {
        serde_json::to_writer(&mut *out, &StatsJson::new(&stats))?;
        writeln!(out)?;
        return Ok(());
    }
    if stats.is_empty() {
        writeln!(out, "no jobs")?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = stats
        .iter()
        .map(|s| {
            vec![
                escape(&s.queue),
                s.ready.to_string(),
                s.delayed.to_string(),
                s.running.to_string(),
                s.expired.to_string(),
                s.dead.to_string(),
                s.done.to_string(),
                s.oldest_due.map(time::format).unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let header = ["QUEUE", "READY", "DELAYED", "RUNNING", "EXPIRED", "DEAD", "DONE", "OLDEST DUE"];
    out.write_all(table(&header, &rows).as_bytes())?;
    Ok(())
}

fn list(files: Files, args: ListArgs, out: &mut dyn Write) -> Result<()> {
    let file = files.open(&args.file)?;
    let filter = ListFilter { queue: args.queue, state: args.state, after: args.after, limit: args.limit };
    let jobs = file.list(&filter)?;
    if args.json {
        serde_json::to_writer(&mut *out, &ListJson { jobs: jobs.iter().map(JobJson::from).collect() })?;
        writeln!(out)?;
        return Ok(());
    }
    if jobs.is_empty() {
        writeln!(out, "no jobs")?;
        return Ok(());
    }
    let now = file.now();
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .map(|j| {
            let state = if j.state == State::Ready && j.run_at > now { "delayed" } else { j.state.as_str() };
            vec![
                j.id.to_string(),
                escape(&j.queue),
                state.to_string(),
                j.priority.to_string(),
                format!("{}/{}", j.attempts, j.max_attempts),
                time::format(j.run_at),
                j.last_error.as_deref().map(escape).unwrap_or_default(),
            ]
        })
        .collect();
    let header = ["ID", "QUEUE", "STATE", "PRIORITY", "ATTEMPTS", "RUN AT", "LAST ERROR"];
    out.write_all(table(&header, &rows).as_bytes())?;
    Ok(())
}

fn show(files: Files, file: &Path, id: i64, json: bool, out: &mut dyn Write) -> Result<()> {
    let Some(job) = files.open(file)?.get(id)? else {
        bail!("job {id}: no such job");
    };
    if json {
        serde_json::to_writer(&mut *out, &JobJson::from(&job))?;
        writeln!(out)?;
        return Ok(());
    }
    let opt_time = |t: Option<i64>| t.map(time::format).unwrap_or_else(|| "-".into());
    let lines = [
        ("id", job.id.to_string()),
        ("queue", escape(&job.queue)),
        ("state", job.state.to_string()),
        ("priority", job.priority.to_string()),
        ("attempts", format!("{} of {}", job.attempts, job.max_attempts)),
        ("run at", time::format(job.run_at)),
        ("lease until", opt_time(job.lease_until)),
        ("created at", time::format(job.created_at)),
        ("updated at", time::format(job.updated_at)),
        ("last error", job.last_error.as_deref().map(escape).unwrap_or_else(|| "-".into())),
        ("payload", output::payload_text(&job.payload)),
    ];
    for (key, value) in lines {
        writeln!(out, "{:<12} {value}", format!("{key}:"))?;
    }
    Ok(())
}

fn retry(
    files: Files,
    file: &Path,
    ids: &[i64],
    all: bool,
    queue: Option<&str>,
    out: &mut dyn Write,
) -> Result<()> {
    let mut file = files.open(file)?;
    if all {
        let n = file.retry_all(queue)?;
        writeln!(out, "{n} dead job(s) ready again")?;
        return Ok(());
    }
    each_id(ids, out, |id| file.retry(id).map(|()| format!("job {id} is ready again")))
}

fn purge(files: Files, file: &Path, state: &str, queue: Option<&str>, out: &mut dyn Write) -> Result<()> {
    let state: State = state.parse().map_err(anyhow::Error::msg)?;
    let n = files.open(file)?.purge(state, queue)?;
    writeln!(out, "deleted {n} {state} job(s)")?;
    Ok(())
}

fn delete(files: Files, file: &Path, ids: &[i64], out: &mut dyn Write) -> Result<()> {
    let mut file = files.open(file)?;
    each_id(ids, out, |id| file.delete(id).map(|()| format!("deleted job {id}")))
}

/// Applies `step` to every id; reports each, and fails at the end when any did.
fn each_id(
    ids: &[i64],
    out: &mut dyn Write,
    mut step: impl FnMut(i64) -> crate::Result<String>,
) -> Result<()> {
    let mut failures = Vec::new();
    for &id in ids {
        match step(id) {
            Ok(line) => writeln!(out, "{line}")?,
            Err(e) => failures.push(e.to_string()),
        }
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(())
}
