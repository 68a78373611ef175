//! A run of the suite, as every command that runs one shares it: the
//! runner's flags ([`args`]), its exit statuses and output formats, the
//! cases a command line selects, the run itself ([`run_suite`]) with its
//! replay line, the report files, and the interrupt that kills every
//! case's processes. The commands (`ukue-conformance` itself, `compare`,
//! `evolve`, `mutants --run-cases`, `merge`, `coverage`) use this module,
//! and none of them another command.

pub mod args;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::ValueEnum;
use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::cases::{self, Case};
use crate::report::{self, CaseReport, Reporter, RunInfo};
use crate::runner::{self, Config};
use crate::subjects::ctx::{DEFAULT_CRASH_KILLS, DEFAULT_GENERATE_FOR};
use crate::subjects::{process, python, Subject, Subjects};
use args::DEFAULT_CASE_TIMEOUT;
pub use args::{parse_duration, RunArgs, ShardArgs};

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

/// The reference's name beside the runner: the harness crate builds it
/// (src/bin/ukue-reference.rs), so that `cargo install` puts it there.
pub const REFERENCE: &str = "ukue-reference";

/// This binary's path, to begin a command that runs it again.
pub fn me() -> String {
    std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "ukue-conformance".into())
}

pub fn beside_me(name: &str) -> Option<PathBuf> {
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

pub fn globs(patterns: &[String]) -> Result<Option<GlobSet>> {
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
        strace: on_path("strace").filter(|s| crate::subjects::observe::strace::usable(s)),
        python_driver: None,
        python_http_worker: None,
    };
    Ok((subjects, python, no_reference))
}

/// `UKUE_BROKEN=NAME ` when it is set: ukue-broken's (and ukue-driver's)
/// choice of bug lives in the environment, and a replay line without it
/// would replay a sound subject.
pub fn broken_env() -> String {
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
    Ok(partition(shard, chosen))
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
            skipped.push((case, "needs strace 5.3 or newer on PATH, allowed to trace".to_string()));
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

/// The cases of this shard (all of them without `--partition`).
pub fn partition(args: &ShardArgs, cases: Vec<Case>) -> Vec<Case> {
    match args.partition {
        Some(partition) => partition.select(cases, |c| c.id),
        None => cases,
    }
}

/// The report files of a run (`--junit`, `--html`), written the same way
/// for one run and for merged shards.
#[derive(Debug, Clone, Default)]
pub struct ReportFiles {
    pub junit: Option<PathBuf>,
    pub html: Option<PathBuf>,
}

impl ReportFiles {
    /// Writes them; `runs` is what the run (or each shard) was.
    pub fn write(&self, reports: &[CaseReport], elapsed: Duration, runs: &[RunInfo]) -> Result<()> {
        if let Some(path) = &self.junit {
            report::write_junit(path, reports, elapsed, runs)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        if let Some(path) = &self.html {
            let page = report::html::page(reports, elapsed, runs);
            std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
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
}
