//! `ukue-conformance`: the command line of the runner, and its `model`
//! and `replay` subcommands (the model-based property search against a
//! step driver, and running a saved script again: crate::explore).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use globset::{Glob, GlobSet, GlobSetBuilder};

use super::compare::{self, CompareArgs};
use super::coverage::{self, CoverageArgs};
use super::evolve::{self, EvolveArgs};
use super::mutation_score;
use super::shard::{self, MergeArgs, ShardArgs};
use crate::cases::{self, Case};
use crate::check::model::op::{parse_script, script_text};
use crate::check::model::Op;
use crate::explore::gen::WORKERS;
use crate::explore::run::{run_ops, search, ModelRun, SearchConfig, Target};
use crate::report::{self, Reporter};
use crate::report::{CaseReport, RunInfo};
use crate::runner::{self, Config};
use crate::spec;
use crate::subjects::ctx::{DEFAULT_CRASH_KILLS, DEFAULT_GENERATE_FOR};
use crate::subjects::driver::client::DriverCommand;
use crate::subjects::{process, python, Subject, Subjects};

/// Exit statuses, documented in spec/CONFORMANCE.md.
pub mod exit {
    /// Every case that ran passed (or failed as expected).
    pub const OK: u8 = 0;
    /// At least one case failed, errored, timed out or passed unexpectedly.
    pub const FAILURES: u8 = 1;
    /// The command line was wrong.
    pub const USAGE: u8 = 2;
    /// The runner itself could not work (a missing binary, a temp dir).
    pub const RUNNER: u8 = 3;
    /// Interrupted (Ctrl-C); every process it started was killed.
    pub const INTERRUPTED: u8 = 130;
}

/// How long one case may take, unless `--case-timeout` says.
const DEFAULT_CASE_TIMEOUT: &str = "120s";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// What `--version` prints: the suite's version and the format version its
/// cases judge, the two things a CI log needs to say which suite ran.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (ukue file format 1)");

/// Runs the ukue conformance suite against a program with the ukue command line.
#[derive(Debug, Parser)]
#[command(name = "ukue-conformance", version = VERSION)]
pub struct ConformanceArgs {
    /// With no subcommand: run the suite. `model` and `replay` are the
    /// model-based runs against a step driver; `compare` runs it against
    /// several implementations side by side.
    #[command(subcommand)]
    pub command: Option<ModelCommand>,
    /// The implementation under test (default: the `ukue` beside this
    /// binary, else the reference `ukue-reference` beside it)
    #[arg(long = "impl", value_name = "PATH")]
    pub implementation: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Also write a JUnit XML report here
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write an HTML report here: one self-contained page, with each
    /// failing case's timeline and the spec's coverage
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// List the cases (id, rule, summary) and exit
    #[arg(long)]
    pub list: bool,
    #[command(flatten)]
    pub shard: ShardArgs,
}

/// How the cases run, whatever they run against (the suite's flags that
/// `compare` shares).
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The reference `ukue` that cases use as a second implementation
    /// (default: `ukue-reference` beside this binary, which installing the
    /// runner installs; without one, or when it is the implementation under
    /// test, the cases that compare two implementations are skipped)
    #[arg(long, value_name = "PATH")]
    pub reference: Option<PathBuf>,
    /// The Python that runs add_job.py, the Python step driver and
    /// http_worker.py (default: python3 when it exists); resolved once, at
    /// the start, to the interpreter it runs (past a version manager's shim)
    #[arg(long, value_name = "PYTHON")]
    pub python: Option<PathBuf>,
    /// Leave out the cases that need Python
    #[arg(long, conflicts_with = "python")]
    pub no_python: bool,
    /// The probe binary (default: `ukue-probe` beside this binary)
    #[arg(long, value_name = "PATH")]
    pub probe: Option<PathBuf>,
    /// Run only the cases whose id matches (a glob; may be repeated)
    #[arg(long = "cases", value_name = "GLOB")]
    pub cases: Vec<String>,
    /// Skip the cases whose id matches (a glob; may be repeated)
    #[arg(long = "skip", value_name = "GLOB")]
    pub skip: Vec<String>,
    /// Known failures: one case id a line, then the reason; `#` comments
    #[arg(long, value_name = "FILE")]
    pub expected_failures: Option<PathBuf>,
    /// The seed of every random choice (default: a new one, printed)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Cases run at once
    #[arg(long, default_value = "2")]
    pub jobs: usize,
    /// How long one case may take
    #[arg(long, default_value = DEFAULT_CASE_TIMEOUT, value_parser = parse_duration)]
    pub case_timeout: Duration,
    /// Workers the crash cases kill, shared out among them (more kills
    /// make each case longer: raise --case-timeout with them)
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CRASH_KILLS)]
    pub crash_kills: usize,
    /// How long the generated cases (differential/*) generate runs: as
    /// many sequences as fit, at least one
    #[arg(long, value_name = "D", default_value = "3s", value_parser = parse_duration)]
    pub generate_for: Duration,
    /// Jobs in the large file of every scale case (default: each case's
    /// own, 100,000 or 1,000,000), for a release check
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(10_000..=100_000_000))]
    pub scale_rows: Option<u64>,
    /// Worker processes, and as many producers, in each concurrency,
    /// interop and crash case (default: each case's own, 3 or 4), for a
    /// release check; raise --case-timeout with it
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    pub processes: Option<u64>,
    /// Keep the work directory of each case that did not pass
    #[arg(long)]
    pub keep: bool,
    /// Fail the run when a `should` case does not pass (otherwise a warning)
    #[arg(long)]
    pub strict: bool,
    /// Also run the cases that wait 30 s or more by design (otherwise
    /// skipped, and named as such)
    #[arg(long)]
    pub slow: bool,
    /// Show passing cases too (and give them timelines in the reports)
    #[arg(long, short)]
    pub verbose: bool,
    /// What begins each case's replay command, when a command other than
    /// the runner's own runs the suite (`evolve`); `--cases ID` follows it
    #[arg(skip)]
    pub replay: Option<String>,
}

/// The reference's name beside the runner: the harness crate builds it
/// (src/bin/ukue-reference.rs), so that `cargo install` puts it there.
pub const REFERENCE: &str = "ukue-reference";

pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = text.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (text, 1.0)
    };
    let value: f64 = number.parse().map_err(|_| format!("invalid duration {text:?} (such as 90s, 2m)"))?;
    if !(value > 0.0 && value.is_finite()) {
        return Err(format!("invalid duration {text:?}"));
    }
    Ok(Duration::from_secs_f64(value * scale))
}

pub fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let args = ConformanceArgs::parse();
    match run(args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("ukue-conformance: {e:#}");
            ExitCode::from(exit::RUNNER)
        }
    }
}

/// `ukue-conformance … | head` closes the runner's stdout early: `print!`
/// then panics. That ends the command as SIGPIPE would end a C program
/// (status 141, no backtrace), once every case's processes are killed.
/// SIGPIPE itself stays ignored: a case's write to a closed socket or pipe
/// of a subject must fail that write, not kill the runner.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            process::kill_every_case();
            std::process::exit(141);
        }
        default(info);
    }));
}

/// This binary's path, to begin a command that runs it again.
pub(crate) fn me() -> String {
    std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "ukue-conformance".into())
}

pub(crate) fn beside_me(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.join(name);
    path.exists().then_some(path)
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file())
}

fn absolute(path: &Path) -> Result<PathBuf> {
    let found = if path.components().count() == 1 && !path.exists() {
        on_path(path.to_str().unwrap_or_default())
    } else {
        Some(path.to_path_buf())
    };
    let found = found.with_context(|| format!("{}: not found", path.display()))?;
    std::fs::canonicalize(&found).with_context(|| format!("{}: not found", found.display()))
}

pub(crate) fn globs(patterns: &[String]) -> Result<Option<GlobSet>> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        set.add(Glob::new(p).with_context(|| format!("bad glob {p:?}"))?);
    }
    Ok(Some(set.build()?))
}

/// `case-id reason…` lines; blank lines and `#` comments are skipped.
pub fn parse_expected_failures(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((id, reason)) => (id.to_string(), reason.trim().to_string()),
            None => (l.to_string(), "listed as an expected failure".to_string()),
        })
        .collect()
}

/// The subjects the command line names, and the Python that runs the
/// Python ones (they are written into the run's directory later); and why
/// the run has no reference to compare the subject with, when it has none
/// (the subject then stands in for it where a case only needs a second
/// program, and the cases that compare the two are skipped).
fn subjects(
    args: &RunArgs,
    implementation: Option<&Path>,
) -> Result<(Subjects, Option<PathBuf>, Option<String>)> {
    let implementation = match implementation {
        Some(p) => absolute(p)?,
        // Installed (from the wheel, or by `cargo install`), the runner has
        // the reference beside it but no `ukue`: a bare run checks that.
        None => beside_me("ukue")
            .or_else(|| beside_me(REFERENCE))
            .and_then(|p| std::fs::canonicalize(p).ok())
            .context("no `ukue` or `ukue-reference` beside ukue-conformance; name one with --impl")?,
    };
    let reference = match &args.reference {
        Some(p) => Some(absolute(p)?),
        None => beside_me(REFERENCE).and_then(|p| std::fs::canonicalize(p).ok()),
    };
    let no_reference = match &reference {
        None => Some(format!("no {REFERENCE} beside ukue-conformance (name one with --reference)")),
        Some(r) if *r == implementation => Some(format!("{} is the implementation under test", r.display())),
        Some(_) => None,
    };
    let reference = reference.filter(|_| no_reference.is_none()).unwrap_or_else(|| implementation.clone());
    let probe = match &args.probe {
        Some(p) => absolute(p)?,
        None => beside_me("ukue-probe")
            .context("no `ukue-probe` beside ukue-conformance; name one with --probe")?,
    };
    let python = match (&args.python, args.no_python) {
        (_, true) => None,
        (Some(p), false) => Some(absolute(p)?),
        (None, false) => on_path("python3"),
    };
    let subjects = Subjects {
        subject: Subject::binary(implementation),
        reference: Subject::binary(reference),
        python: None,
        probe,
        strace: on_path("strace"),
        python_driver: None,
        python_http_worker: None,
    };
    Ok((subjects, python, no_reference))
}

/// `UKUE_BROKEN=NAME ` when it is set: ukue-broken's (and ukue-driver's)
/// choice of bug lives in the environment, and a replay line without it
/// would replay a sound subject.
fn broken_env() -> String {
    std::env::var_os("UKUE_BROKEN")
        .map(|bug| format!("UKUE_BROKEN={} ", bug.to_string_lossy()))
        .unwrap_or_default()
}

/// The replay command for this run, without `--cases`: the subject as
/// the command line named it (not the interpreter it may run by).
fn replay_prefix(args: &RunArgs, implementation: &Path, subjects: &Subjects, seed: u64) -> String {
    let mut line = format!("{} --impl {} --seed {seed}", me(), implementation.display());
    line.insert_str(0, &broken_env());
    if let Some(r) = &args.reference {
        line.push_str(&format!(" --reference {}", r.display()));
    }
    if subjects.python.is_none() {
        line.push_str(" --no-python");
    } else if let Some(python) = &args.python {
        line.push_str(&format!(" --python {}", python.display()));
    }
    if args.keep {
        line.push_str(" --keep");
    }
    if args.strict {
        line.push_str(" --strict");
    }
    if args.generate_for != DEFAULT_GENERATE_FOR {
        line.push_str(&format!(" --generate-for {}ms", args.generate_for.as_millis()));
    }
    if args.crash_kills != DEFAULT_CRASH_KILLS {
        line.push_str(&format!(" --crash-kills {}", args.crash_kills));
    }
    if let Some(rows) = args.scale_rows {
        line.push_str(&format!(" --scale-rows {rows}"));
    }
    if let Some(n) = args.processes {
        line.push_str(&format!(" --processes {n}"));
    }
    if parse_duration(DEFAULT_CASE_TIMEOUT).is_ok_and(|default| args.case_timeout != default) {
        line.push_str(&format!(" --case-timeout {}ms", args.case_timeout.as_millis()));
    }
    line
}

pub fn run(mut args: ConformanceArgs) -> Result<u8> {
    if let Some(command) = args.command.take() {
        return Ok(run_model_command(command));
    }
    if args.list {
        list(&shard::partition(&args.shard, cases::all()), args.format);
        return Ok(exit::OK);
    }
    let chosen = match selected(&args.run, &args.shard) {
        Ok(chosen) => chosen,
        Err(e) => {
            eprintln!("ukue-conformance: {e}");
            return Ok(exit::USAGE);
        }
    };
    // Before the first process is spawned (asking the subject's version
    // spawns one), so that no Ctrl-C finds a child unswept.
    interrupt_kills_everything()?;
    let mut human;
    let mut json;
    let reporter: &mut dyn Reporter = match args.format {
        Format::Human => {
            human = report::Human::new(args.run.verbose);
            &mut human
        }
        Format::Json => {
            json = report::Json::default();
            &mut json
        }
    };
    let seed = args.run.seed.unwrap_or_else(rand::random);
    let done = run_suite(&args.run, &args.shard, args.implementation.as_deref(), seed, &chosen, reporter)?;
    let files = shard::ReportFiles { junit: args.junit.clone(), html: args.html.clone() };
    files.write(&done.reports, done.elapsed, std::slice::from_ref(&done.info))?;
    Ok(if done.reports.iter().any(|r| r.status.is_bad()) { exit::FAILURES } else { exit::OK })
}

/// The cases the command line selects (`--cases`, then this shard of
/// them), or why none: a usage error.
pub fn selected(args: &RunArgs, shard: &ShardArgs) -> std::result::Result<Vec<Case>, String> {
    let only = globs(&args.cases).map_err(|e| format!("{e:#}"))?;
    let chosen: Vec<Case> =
        cases::all().into_iter().filter(|c| only.as_ref().is_none_or(|g| g.is_match(c.id))).collect();
    if chosen.is_empty() {
        return Err(format!("no case matches --cases {}", args.cases.join(" ")));
    }
    // Sharded after --cases, as nextest does, so that the shards of a
    // selection are even; a shard may be left with nothing to run.
    Ok(shard::partition(shard, chosen))
}

/// One run of the suite against one implementation: what became of each
/// case, what the run was, and how long it took.
pub struct Finished {
    pub reports: Vec<CaseReport>,
    pub info: RunInfo,
    pub elapsed: Duration,
}

/// Runs `chosen` (less `--skip` and what cannot run here) against
/// `implementation` (None: the `ukue` beside this binary) with `seed`,
/// telling `reporter` as it goes.
pub fn run_suite(
    args: &RunArgs,
    shard: &ShardArgs,
    implementation: Option<&Path>,
    seed: u64,
    chosen: &[Case],
    reporter: &mut dyn Reporter,
) -> Result<Finished> {
    let skip = globs(&args.skip)?;
    let (mut subjects, python, no_reference) = subjects(args, implementation)?;
    let expected_failures = match &args.expected_failures {
        Some(path) => parse_expected_failures(
            &std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        ),
        None => BTreeMap::new(),
    };
    let root =
        tempfile::Builder::new().prefix("ukue-conformance-").tempdir().context("making a work directory")?;
    // As given, for the reports and the replay command; the subjects may
    // run by their interpreters instead.
    let (implementation, reference) = (subjects.subject.program.clone(), subjects.reference.program.clone());
    subjects.subject = python::by_interpreter(subjects.subject, root.path());
    subjects.reference = python::by_interpreter(subjects.reference, root.path());
    let python = python.map(|p| python::interpreter(&p, root.path()));
    if let Some(python) = &python {
        let installed = python::install(root.path(), python)?;
        subjects.python = Some(installed.add_job);
        subjects.python_driver = Some(installed.driver);
        subjects.python_http_worker = Some(installed.http_worker);
    }
    let no_serve = if chosen.iter().any(|c| c.needs.serve) {
        crate::subjects::server::missing_serve(root.path(), &subjects.subject, &subjects.reference)
    } else {
        None
    };
    let (mut run_cases, mut skipped) = (Vec::new(), Vec::new());
    for &case in chosen {
        if skip.as_ref().is_some_and(|g| g.is_match(case.id)) {
            skipped.push((case, "--skip".to_string()));
        } else if let (true, Some(why)) = (case.needs.reference, &no_reference) {
            skipped.push((
                case,
                format!("compares the subject with a second implementation, and there is none: {why}"),
            ));
        } else if case.needs.python && subjects.python.is_none() {
            skipped.push((case, "needs python3 (see --python)".to_string()));
        } else if case.needs.strace && subjects.strace.is_none() {
            skipped.push((case, "needs strace on PATH".to_string()));
        } else if let (true, Some(reason)) = (case.needs.serve, &no_serve) {
            skipped.push((case, reason.clone()));
        } else if case.needs.slow && !args.slow {
            skipped.push((case, "waits 30 s or more: runs with --slow".to_string()));
        } else {
            run_cases.push(case);
        }
    }
    if let Some(why) = &no_reference {
        let ids: Vec<&str> = chosen.iter().filter(|c| c.needs.reference).map(|c| c.id).collect();
        if !ids.is_empty() {
            eprintln!(
                "ukue-conformance: no reference ({why}): skipping the cases that test nothing without a second implementation: {}",
                ids.join(", ")
            );
        }
    }
    let interpreter = |subject: &Subject, given: &Path| {
        (subject.program != given).then(|| subject.program.display().to_string())
    };
    let info = RunInfo {
        implementation: implementation.display().to_string(),
        implementation_version: crate::subjects::version(&subjects.subject),
        implementation_interpreter: interpreter(&subjects.subject, &implementation),
        python: python.as_ref().map(|p| p.display().to_string()),
        reference: no_reference.is_none().then(|| reference.display().to_string()),
        reference_version: no_reference
            .is_none()
            .then(|| crate::subjects::version(&subjects.reference))
            .flatten(),
        no_reference,
        probe: Some(subjects.probe.display().to_string()),
        runner: format!("ukue-conformance {}", env!("CARGO_PKG_VERSION")),
        seed,
        machine: RunInfo::machine(),
        started_at: RunInfo::now(),
        partition: shard.partition.map(|p| p.to_string()),
    };
    let config = Config {
        replay: args.replay.clone().unwrap_or_else(|| replay_prefix(args, &implementation, &subjects, seed)),
        subjects: Arc::new(subjects),
        seed,
        jobs: args.jobs.max(1),
        case_timeout: args.case_timeout,
        keep: args.keep,
        expected_failures,
        work_root: root.path().to_path_buf(),
        crash_kills: args.crash_kills,
        generate_for: args.generate_for,
        scale_rows: args.scale_rows,
        processes: args.processes.map(|n| n as usize),
        strict: args.strict,
        fail_fast: shard.fail_fast,
        iteration: None,
        all_timelines: args.verbose,
        info,
    };
    let started = Instant::now();
    reporter.begin(run_cases.len() + skipped.len(), &config.info);
    let shared = Mutex::new(reporter);
    let reports = if shard.soak().is_on() {
        let replay = |seed| replay_prefix(args, &implementation, &config.subjects, seed);
        runner::soak::soak(&config, shard.soak(), &run_cases, &skipped, &shared, replay)
    } else {
        runner::run(&config, &run_cases, &skipped, &shared)
    };
    let reporter = shared.into_inner().unwrap_or_else(|p| p.into_inner());
    let elapsed = started.elapsed();
    reporter.end(&reports, elapsed);
    if args.keep && reports.iter().any(|r| r.work_dir.is_some()) {
        let kept = root.keep();
        eprintln!("ukue-conformance: kept the work directories under {}", kept.display());
    }
    if args.expected_failures.is_some() && !reports.iter().any(|r| r.status.is_bad()) {
        let ids: Vec<&str> = reports.iter().map(|r| r.id.as_str()).collect();
        for listed in config.expected_failures.keys().filter(|id| !ids.contains(&id.as_str())) {
            eprintln!("ukue-conformance: --expected-failures lists {listed}, which did not run");
        }
    }
    Ok(Finished { reports, info: config.info, elapsed })
}

/// `--list`: one case a line (a reader that stops early is no error).
fn list(all: &[Case], format: Format) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for case in all {
        let line = match format {
            Format::Human => {
                format!(
                    "{:<44} {:<6} {:<28} {}",
                    case.id,
                    case.level.as_str(),
                    spec::label(case.rule),
                    case.summary
                )
            }
            Format::Json => serde_json::json!({
                "id": case.id, "level": case.level, "rule": case.rule, "rule_title": spec::title(case.rule),
                "summary": case.summary, "needs_python": case.needs.python, "needs_strace": case.needs.strace,
                "needs_serve": case.needs.serve, "needs_reference": case.needs.reference, "slow": case.needs.slow,
            })
            .to_string(),
        };
        if writeln!(out, "{line}").is_err() {
            return;
        }
    }
}

// ---- `model` and `replay`: model-based runs against a step driver. ----

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Model-based property search against a step driver
    /// (spec/CONFORMANCE.md, "Model-based runs")
    Model(ModelArgs),
    /// Run a saved op script (JSON lines) again against a step driver
    Replay(ReplayArgs),
    /// Join the JSON reports of a run's shards into one summary and exit status
    Merge(MergeArgs),
    /// List every rule of FORMAT.md with the cases that check it; the gaps
    Coverage(CoverageArgs),
    /// Judge an edit of FORMAT.md by the format's promise (its §2.4): each
    /// difference allowed within version 1, needing a new version, or
    /// changing a step; and run old and new programs on one file, both ways
    Evolve(Box<EvolveArgs>),
    /// Run the cases against several implementations (or read their saved
    /// reports) and show the verdicts side by side, the differences first
    Compare(Box<CompareArgs>),
    /// List the mutants of FORMAT.md's statements that `UKUE_BROKEN=NAME`
    /// runs (fuzz/time-to-bug.sh): NAME, what it is, and what it changes
    Mutants(MutantsArgs),
}

#[derive(Debug, Args)]
pub struct MutantsArgs {
    /// Also replay these ops_vs_model inputs (a folder, fixtures/fuzz/ops_vs_model)
    /// against each mutant, and print the first that kills it, or `-`
    #[arg(long, value_name = "DIR", conflicts_with = "run_cases")]
    pub corpus: Option<PathBuf>,
    /// `--run-cases` and its flags: the cases' mutation score
    /// (crate::commands::mutation_score)
    #[command(flatten)]
    pub score: mutation_score::ScoreArgs,
}

#[derive(Debug, Args)]
pub struct ModelArgs {
    /// The driver command, split on spaces; leading NAME=VALUE words set
    /// its environment (default: the reference library in this process)
    #[arg(long, value_name = "CMD")]
    pub driver: Option<String>,
    /// Sequences to try
    #[arg(long, default_value = "256")]
    pub cases: u32,
    /// The seed of every random choice (default: a new one, printed)
    #[arg(long)]
    pub seed: Option<u64>,
    /// The longest sequence
    #[arg(long, default_value = "40", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_steps: u32,
    /// Where to save a failing sequence (default: a file in the temp directory)
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Report the first failing sequence as it was found, unshrunk (a
    /// driver that hangs costs its answer's deadline on every candidate)
    #[arg(long)]
    pub no_shrink: bool,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The script: one op a JSON line, `#` comments
    pub file: PathBuf,
    /// The driver command (default: the reference library in this process)
    #[arg(long, value_name = "CMD")]
    pub driver: Option<String>,
    /// Print every step
    #[arg(long, short)]
    pub verbose: bool,
}

/// Resolves `--driver`: a bare program name that sits beside this binary
/// (`ukue-driver`) runs that one.
fn target(driver: Option<&str>) -> Result<Target, String> {
    let Some(text) = driver else { return Ok(Target::reference()) };
    let mut cmd = DriverCommand::parse(text).ok_or("--driver: an empty command")?;
    if !cmd.program.contains('/') {
        let beside = std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.join(&cmd.program)));
        if let Some(path) = beside.filter(|p| p.is_file()) {
            cmd.program = path.display().to_string();
        }
    }
    Ok(Target::Driver(cmd))
}

fn driver_flag(driver: Option<&str>) -> String {
    driver.map(|d| format!(" --driver '{d}'")).unwrap_or_default()
}

/// Prints a sequence of ops, a numbered line each.
fn print_ops(ops: &[Op]) {
    for (i, op) in ops.iter().enumerate() {
        println!("  {:>2} {}", i + 1, op.to_line());
    }
}

fn run_model_command(command: ModelCommand) -> u8 {
    let (name, driver) = match &command {
        ModelCommand::Model(args) => ("model", args.driver.as_deref()),
        ModelCommand::Replay(args) => ("replay", args.driver.as_deref()),
        ModelCommand::Merge(_) => ("merge", None),
        ModelCommand::Coverage(_) => ("coverage", None),
        ModelCommand::Evolve(_) => ("evolve", None),
        ModelCommand::Compare(_) => ("compare", None),
        ModelCommand::Mutants(_) => ("mutants", None),
    };
    let target = match target(driver) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ukue-conformance {name}: {e}");
            return exit::USAGE;
        }
    };
    match command {
        ModelCommand::Model(args) => model(args, target),
        ModelCommand::Replay(args) => replay(args, target),
        ModelCommand::Merge(args) => shard::merge(args),
        ModelCommand::Coverage(args) => coverage::run(args),
        ModelCommand::Evolve(args) => evolve::run(*args),
        ModelCommand::Compare(args) => compare::compare(*args),
        ModelCommand::Mutants(args) if args.score.run_cases => mutation_score::run(args.score),
        ModelCommand::Mutants(args) => print_mutants(args),
    }
}

/// One line a mutant, tab-separated: its name; `generated`, `hand-made`,
/// or `equivalent` or `unreached` with the reason
/// (crate::subjects::mutants); what it changes. Then the step bugs of
/// ukue-broken, as `bug`, its broken servers (`serve-bug`, or `serve-unreached`
/// for one that no request shows) and its command-line bugs (`cli-bug`):
/// the listing `mutants --run-cases` runs (mutation_score::listed). With
/// `--corpus`, a fourth column: the first input of the folder that kills
/// the mutant, or `-`.
fn print_mutants(args: MutantsArgs) -> u8 {
    use crate::explore::fuzzing::first_kill;
    use crate::subjects::{broken, mutants};
    let seeds = match &args.corpus {
        None => None,
        Some(dir) => match crate::explore::fuzzing::corpus(dir) {
            Ok(seeds) => Some(seeds),
            Err(e) => {
                eprintln!("ukue-conformance mutants: {e}");
                return exit::USAGE;
            }
        },
    };
    let killer = |spec: std::sync::Arc<ukue::Spec>| match &seeds {
        None => String::new(),
        Some(seeds) => {
            let found = first_kill(&Target::InMemory(spec), seeds);
            format!("\t{}", found.map_or("-".to_string(), |i| seeds[i].0.display().to_string()))
        }
    };
    for m in mutation_score::listed() {
        let kind = match m.why {
            Some(why) => format!("{}: {why}", m.kind),
            None => m.kind.to_string(),
        };
        let spec = match m.kind {
            "serve-bug" | "serve-unreached" | "cli-bug" => None,
            "bug" => broken::bug(&m.name).map(broken::spec),
            _ => mutants::named(&m.name).map(|mutant| Ok(mutant.spec())),
        };
        let killed = match spec {
            Some(Ok(spec)) => killer(spec),
            Some(Err(e)) => format!("\t{e}"),
            None => String::new(),
        };
        println!("{}\t{kind}\t{}{killed}", m.name, m.what);
    }
    exit::OK
}

fn model(args: ModelArgs, target: Target) -> u8 {
    // A driver that cannot start or open a file is the runner's trouble,
    // not a failing sequence.
    if let Err(f) = ModelRun::start(&target, WORKERS as usize) {
        eprintln!("ukue-conformance model: {}", f.message);
        return exit::RUNNER;
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let again = format!(
        "{}{} model{} --seed {seed} --cases {} --max-steps {}{}",
        broken_env(),
        me(),
        driver_flag(args.driver.as_deref()),
        args.cases,
        args.max_steps,
        if args.no_shrink { " --no-shrink" } else { "" }
    );
    println!(
        "model-based run: {}, seed {seed}, {} cases of up to {} steps",
        target.describe(),
        args.cases,
        args.max_steps
    );
    let mut config = SearchConfig::new(target, args.cases, seed);
    config.max_steps = args.max_steps as usize;
    config.shrink = !args.no_shrink;
    let report = search(&config);
    let secs = report.elapsed.as_secs_f64();
    let Some(found) = report.found else {
        println!(
            "passed: {} cases in {secs:.1} s ({:.0} cases a minute)",
            report.cases,
            f64::from(report.cases) * 60.0 / secs.max(1e-9)
        );
        return exit::OK;
    };
    if config.shrink {
        println!("FAILED: a sequence of {} steps, shrunk to {}:", found.original_len, found.ops.len());
    } else {
        println!(
            "FAILED: a sequence of {} steps, cut after its failing step (--no-shrink):",
            found.ops.len()
        );
    }
    println!("{}", found.failure);
    println!("the sequence:");
    print_ops(&found.ops);
    let path =
        args.save.unwrap_or_else(|| std::env::temp_dir().join(format!("ukue-model-failure-{seed}.jsonl")));
    let comments = vec![
        format!("found by: {again}"),
        format!("against: {}", config.target.describe()),
        found.failure.to_string(),
    ];
    match std::fs::write(&path, script_text(&comments, &found.ops)) {
        Ok(()) => println!("saved to {}", path.display()),
        Err(e) => eprintln!("ukue-conformance model: cannot save {}: {e}", path.display()),
    }
    println!(
        "replay: {}{} replay {}{}",
        broken_env(),
        me(),
        path.display(),
        driver_flag(args.driver.as_deref())
    );
    println!("search again: {again}");
    exit::FAILURES
}

fn replay(args: ReplayArgs, target: Target) -> u8 {
    let ops =
        match std::fs::read_to_string(&args.file).map_err(|e| e.to_string()).and_then(|t| parse_script(&t)) {
            Ok(ops) => ops,
            Err(e) => {
                eprintln!("ukue-conformance replay: {}: {e}", args.file.display());
                return exit::USAGE;
            }
        };
    if args.verbose {
        print_ops(&ops);
    }
    match run_ops(&target, &ops).map_err(|f| f.to_string()) {
        Ok(()) => {
            println!("passed: {} steps of {} against {}", ops.len(), args.file.display(), target.describe());
            exit::OK
        }
        Err(message) => {
            println!("FAILED: {} against {}\n{message}", args.file.display(), target.describe());
            if message.starts_with("before the first step") {
                exit::RUNNER
            } else {
                exit::FAILURES
            }
        }
    }
}

/// On SIGINT or SIGTERM: kill every case's processes, then exit 130.
pub fn interrupt_kills_everything() -> Result<()> {
    let mut signals =
        signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM])?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            // Not eprintln!, which panics when stderr is gone (a test
            // harness that ran the runner, killed on its timeout): the
            // thread would die here, and the run go on with no one to read it.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                b"\nukue-conformance: interrupted; stopping every case's processes\n",
            );
            process::kill_every_case();
            std::process::exit(i32::from(exit::INTERRUPTED));
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_failures_file() {
        let parsed = parse_expected_failures("# known\nrefusal/empty-file  we create it\n\nsteps/x\n");
        assert_eq!(parsed.get("refusal/empty-file").map(String::as_str), Some("we create it"));
        assert!(parsed.contains_key("steps/x"));
        assert_eq!(parsed.len(), 2);
    }

    /// VERSION spells the format version out (concat! takes no constant):
    /// a new format version in the library has to change it too.
    #[test]
    fn the_version_names_the_format_the_library_implements() {
        assert!(VERSION.starts_with(env!("CARGO_PKG_VERSION")), "{VERSION}");
        assert!(VERSION.ends_with(&format!(" (ukue file format {})", ukue::FORMAT_VERSION)), "{VERSION}");
    }
}
