//! `ukue-conformance`: the command line of the runner, and its `model`
//! and `replay` subcommands (the model-based property search against a
//! step driver, and running a saved script again: crate::explore).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use super::compare::{self, CompareArgs};
use super::coverage::{self, CoverageArgs};
use super::evolve::{self, EvolveArgs};
use super::merge::{self, MergeArgs};
use super::mutation_score;
use super::suite::{
    self, broken_env, exit, interrupt_kills_everything, me, run_suite, selected, Format, ReportFiles,
    RunArgs, ShardArgs,
};
use crate::cases::{self, Case};
use crate::check::model::op::{parse_script, script_text};
use crate::check::model::Op;
use crate::explore::gen::WORKERS;
use crate::explore::run::{run_ops, search, ModelRun, SearchConfig, Target};
use crate::report::{self, Reporter};
use crate::spec;
use crate::subjects::driver::client::DriverCommand;
use crate::subjects::process;

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

pub fn run(mut args: ConformanceArgs) -> Result<u8> {
    if let Some(command) = args.command.take() {
        return Ok(run_model_command(command));
    }
    if args.list {
        list(&suite::partition(&args.shard, cases::all()), args.format);
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
    let files = ReportFiles { junit: args.junit.clone(), html: args.html.clone() };
    files.write(&done.reports, done.elapsed, std::slice::from_ref(&done.info))?;
    Ok(if done.reports.iter().any(|r| r.status.is_bad()) { exit::FAILURES } else { exit::OK })
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
        ModelCommand::Merge(args) => merge::merge(args),
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
    let result = run_ops(&target, &ops).map_err(|f| f.to_string());
    crate::explore::run::release_drivers();
    match result {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// VERSION spells the format version out (concat! takes no constant):
    /// a new format version in the library has to change it too.
    #[test]
    fn the_version_names_the_format_the_library_implements() {
        assert!(VERSION.starts_with(env!("CARGO_PKG_VERSION")), "{VERSION}");
        assert!(VERSION.ends_with(&format!(" (ukue file format {})", ukue::FORMAT_VERSION)), "{VERSION}");
    }
}
