//! `ukue-conformance`: the command line of the runner.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::case::Case;
use crate::report::{self, Reporter};
use crate::runner::{self, Config};
use crate::subject::{Subject, Subjects};
use crate::{cases, embedded, process};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// Runs the ukue conformance suite against a program with the ukue command line.
#[derive(Debug, Parser)]
#[command(name = "ukue-conformance", version)]
pub struct Args {
    /// With no subcommand: run the suite. `model` and `replay` are the
    /// model-based runs against a step driver (crate::model::cli).
    #[command(subcommand)]
    pub command: Option<crate::model::cli::ModelCommand>,
    /// The implementation under test (default: the `ukue` beside this binary)
    #[arg(long = "impl", value_name = "PATH")]
    pub implementation: Option<PathBuf>,
    /// The reference `ukue` that cases use as a second implementation
    /// (default: the `ukue` beside this binary, else the one under test)
    #[arg(long, value_name = "PATH")]
    pub reference: Option<PathBuf>,
    /// The Python that runs add_job.py (default: python3 when it exists)
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
    #[arg(long, default_value = "120s", value_parser = parse_duration)]
    pub case_timeout: Duration,
    /// Workers the crash cases kill, shared out among them (more kills
    /// make each case longer: raise --case-timeout with them)
    #[arg(long, value_name = "N", default_value_t = crate::ctx::DEFAULT_CRASH_KILLS)]
    pub crash_kills: usize,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Also write a JUnit XML report here
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Keep the work directory of each case that did not pass
    #[arg(long)]
    pub keep: bool,
    /// Fail the run when a `should` case does not pass (otherwise a warning)
    #[arg(long)]
    pub strict: bool,
    /// List the cases (id, rule, summary) and exit
    #[arg(long)]
    pub list: bool,
    /// Show passing cases too
    #[arg(long, short)]
    pub verbose: bool,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
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
    let args = Args::parse();
    match run(args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("ukue-conformance: {e:#}");
            ExitCode::from(exit::RUNNER)
        }
    }
}

fn beside_me(name: &str) -> Option<PathBuf> {
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

fn globs(patterns: &[String]) -> Result<Option<GlobSet>> {
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

fn subjects(args: &Args) -> Result<Subjects> {
    let implementation = match &args.implementation {
        Some(p) => absolute(p)?,
        None => beside_me("ukue").context("no `ukue` beside ukue-conformance; name one with --impl")?,
    };
    let reference = match &args.reference {
        Some(p) => absolute(p)?,
        None => beside_me("ukue").unwrap_or_else(|| implementation.clone()),
    };
    let probe = match &args.probe {
        Some(p) => absolute(p)?,
        None => beside_me("ukue-probe")
            .context("no `ukue-probe` beside ukue-conformance; name one with --probe")?,
    };
    let python = if args.no_python {
        None
    } else {
        let python = match &args.python {
            Some(p) => Some(absolute(p)?),
            None => on_path("python3"),
        };
        python.map(|program| Subject { name: "add_job.py".into(), program, args: Vec::new() })
    };
    Ok(Subjects {
        subject: Subject::binary(implementation),
        reference: Subject::binary(reference),
        python,
        probe,
        strace: on_path("strace"),
        python_driver: None,
    })
}

/// The replay command for this run, without `--cases`.
fn replay_prefix(args: &Args, subjects: &Subjects, seed: u64) -> String {
    let me = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "ukue-conformance".into());
    let mut line = format!("{me} --impl {} --seed {seed}", subjects.subject.program.display());
    if let Some(r) = &args.reference {
        line.push_str(&format!(" --reference {}", r.display()));
    }
    if subjects.python.is_none() {
        line.push_str(" --no-python");
    }
    if args.keep {
        line.push_str(" --keep");
    }
    if args.strict {
        line.push_str(" --strict");
    }
    if args.crash_kills != crate::ctx::DEFAULT_CRASH_KILLS {
        line.push_str(&format!(" --crash-kills {}", args.crash_kills));
    }
    line
}

pub fn run(mut args: Args) -> Result<u8> {
    if let Some(command) = args.command.take() {
        return Ok(crate::model::cli::run(command));
    }
    let all = cases::all();
    if args.list {
        list(&all, args.format);
        return Ok(exit::OK);
    }
    let only = globs(&args.cases)?;
    let skip = globs(&args.skip)?;
    let chosen: Vec<Case> =
        all.into_iter().filter(|c| only.as_ref().is_none_or(|g| g.is_match(c.id))).collect();
    if chosen.is_empty() {
        eprintln!("ukue-conformance: no case matches --cases {}", args.cases.join(" "));
        return Ok(exit::USAGE);
    }
    let mut subjects = subjects(&args)?;
    let expected_failures = match &args.expected_failures {
        Some(path) => parse_expected_failures(
            &std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        ),
        None => BTreeMap::new(),
    };
    let seed = args.seed.unwrap_or_else(rand::random);
    let root =
        tempfile::Builder::new().prefix("ukue-conformance-").tempdir().context("making a work directory")?;
    if let Some(python) = &mut subjects.python {
        let script = root.path().join("add_job.py");
        std::fs::write(&script, embedded::ADD_JOB_PY)?;
        let driver = root.path().join("ukue_driver.py");
        std::fs::write(&driver, embedded::UKUE_DRIVER_PY)?;
        std::fs::write(root.path().join("ukue_steps.py"), embedded::UKUE_STEPS_PY)?;
        subjects.python_driver = Some(Subject {
            name: "ukue_driver.py".into(),
            program: python.program.clone(),
            args: vec![driver.display().to_string()],
        });
        python.args = vec![script.display().to_string()];
    }
    let (mut run_cases, mut skipped) = (Vec::new(), Vec::new());
    for case in chosen {
        if skip.as_ref().is_some_and(|g| g.is_match(case.id)) {
            skipped.push((case, "--skip".to_string()));
        } else if case.needs.python && subjects.python.is_none() {
            skipped.push((case, "needs python3 (see --python)".to_string()));
        } else if case.needs.strace && subjects.strace.is_none() {
            skipped.push((case, "needs strace on PATH".to_string()));
        } else {
            run_cases.push(case);
        }
    }
    let config = Config {
        replay: replay_prefix(&args, &subjects, seed),
        subjects: Arc::new(subjects),
        seed,
        jobs: args.jobs.max(1),
        case_timeout: args.case_timeout,
        keep: args.keep,
        expected_failures,
        work_root: root.path().to_path_buf(),
        crash_kills: args.crash_kills,
        strict: args.strict,
    };
    interrupt_kills_everything()?;
    let mut human;
    let mut json;
    let reporter: &mut dyn Reporter = match args.format {
        Format::Human => {
            human = report::Human::new(args.verbose);
            &mut human
        }
        Format::Json => {
            json = report::Json;
            &mut json
        }
    };
    let started = Instant::now();
    reporter.begin(
        run_cases.len() + skipped.len(),
        seed,
        &config.subjects.subject.program.display().to_string(),
    );
    let shared = Mutex::new(reporter);
    let reports = runner::run(&config, &run_cases, &skipped, &shared);
    let reporter = shared.into_inner().unwrap_or_else(|p| p.into_inner());
    reporter.end(&reports, started.elapsed());
    if let Some(path) = &args.junit {
        report::write_junit(path, &reports, started.elapsed())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.keep && reports.iter().any(|r| r.work_dir.is_some()) {
        let kept = root.keep();
        eprintln!("ukue-conformance: kept the work directories under {}", kept.display());
    }
    if reports.iter().any(|r| r.status.is_bad()) {
        return Ok(exit::FAILURES);
    }
    if args.expected_failures.is_some() {
        let ids: Vec<&str> = reports.iter().map(|r| r.id.as_str()).collect();
        for listed in config.expected_failures.keys().filter(|id| !ids.contains(&id.as_str())) {
            eprintln!("ukue-conformance: --expected-failures lists {listed}, which did not run");
        }
    }
    Ok(exit::OK)
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
                    crate::rules::label(case.rule),
                    case.summary
                )
            }
            Format::Json => serde_json::json!({
                "id": case.id, "level": case.level, "rule": case.rule, "rule_title": crate::rules::title(case.rule),
                "summary": case.summary, "needs_python": case.needs.python, "needs_strace": case.needs.strace,
            })
            .to_string(),
        };
        if writeln!(out, "{line}").is_err() {
            return;
        }
    }
}

/// On SIGINT or SIGTERM: kill every case's processes, then exit 130.
fn interrupt_kills_everything() -> Result<()> {
    let mut signals =
        signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM])?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            eprintln!("\nukue-conformance: interrupted; stopping every case's processes");
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
}
