//! `ukue-conformance model` and `ukue-conformance replay`: the model-based
//! property search against a step driver, and running a saved script again.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::op::{parse_script, script_text};
use super::run::{run_ops, search, Run, SearchConfig, Target};
use crate::conformance::exit;
use crate::driver::client::DriverCommand;

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Model-based property search against a step driver
    /// (spec/CONFORMANCE.md, "Model-based runs")
    Model(ModelArgs),
    /// Run a saved op script (JSON lines) again against a step driver
    Replay(ReplayArgs),
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

fn me() -> String {
    std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "ukue-conformance".into())
}

fn driver_flag(driver: Option<&str>) -> String {
    driver.map(|d| format!(" --driver '{d}'")).unwrap_or_default()
}

pub fn run(command: ModelCommand) -> u8 {
    match command {
        ModelCommand::Model(args) => model(args),
        ModelCommand::Replay(args) => replay(args),
    }
}

fn model(args: ModelArgs) -> u8 {
    let target = match target(args.driver.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ukue-conformance model: {e}");
            return exit::USAGE;
        }
    };
    // A driver that cannot start or open a file is the runner's trouble,
    // not a failing sequence.
    if let Err(f) = Run::start(&target, super::gen::WORKERS as usize) {
        eprintln!("ukue-conformance model: {}", f.message);
        return exit::RUNNER;
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let again = format!(
        "{} model{} --seed {seed} --cases {} --max-steps {}",
        me(),
        driver_flag(args.driver.as_deref()),
        args.cases,
        args.max_steps
    );
    println!(
        "model-based run: {}, seed {seed}, {} cases of up to {} steps",
        target.describe(),
        args.cases,
        args.max_steps
    );
    let mut config = SearchConfig::new(target, args.cases, seed);
    config.max_steps = args.max_steps as usize;
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
    println!("FAILED: a sequence of {} steps, shrunk to {}:", found.original_len, found.ops.len());
    println!("{}", found.failure);
    println!("the sequence:");
    for (i, op) in found.ops.iter().enumerate() {
        println!("  {:>2} {}", i + 1, op.to_line());
    }
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
    println!("replay: {} replay {}{}", me(), path.display(), driver_flag(args.driver.as_deref()));
    println!("search again: {again}");
    exit::FAILURES
}

fn replay(args: ReplayArgs) -> u8 {
    let target = match target(args.driver.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ukue-conformance replay: {e}");
            return exit::USAGE;
        }
    };
    let ops =
        match std::fs::read_to_string(&args.file).map_err(|e| e.to_string()).and_then(|t| parse_script(&t)) {
            Ok(ops) => ops,
            Err(e) => {
                eprintln!("ukue-conformance replay: {}: {e}", args.file.display());
                return exit::USAGE;
            }
        };
    if args.verbose {
        for (i, op) in ops.iter().enumerate() {
            println!("  {:>2} {}", i + 1, op.to_line());
        }
    }
    match replay_ops(&target, &ops) {
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

/// Runs a script; the failure as text.
pub fn replay_ops(target: &Target, ops: &[super::Op]) -> Result<(), String> {
    run_ops(target, ops).map_err(|f| f.to_string())
}

/// Reads and runs the script at `path`.
pub fn replay_file(target: &Target, path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let ops = parse_script(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    replay_ops(target, &ops)
}
