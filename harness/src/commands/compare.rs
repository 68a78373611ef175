//! `ukue-conformance compare`: the suite against several implementations,
//! one after another with one seed, or the saved JSON reports of runs
//! (and of their shards), shown as one matrix (crate::report::matrix).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::suite::{exit, interrupt_kills_everything, run_suite, selected, RunArgs, ShardArgs};
use crate::report;
use crate::report::matrix::{Column, Matrix};
use crate::report::merge::merge;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MatrixFormat {
    Human,
    Json,
    Markdown,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Saved reports (`--format json` of a run, or of each of its shards)
    /// to compare instead of running: a column for each implementation
    /// they name, its shards joined
    #[arg(
        value_name = "REPORT",
        conflicts_with = "implementations",
        required_unless_present = "implementations"
    )]
    pub reports: Vec<PathBuf>,
    /// An implementation to run the cases against, a column each (repeat
    /// it); all run with one seed, one after another
    #[arg(long = "impl", value_name = "PATH")]
    pub implementations: Vec<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub shard: ShardArgs,
    /// How to print the matrix
    #[arg(long, value_enum, default_value = "human")]
    pub format: MatrixFormat,
    /// Also write the matrix as an HTML page here
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// List only the cases whose verdicts differ (the others are counted;
    /// in Markdown, the cases of a family that differ alike are one row)
    #[arg(long)]
    pub differing: bool,
}

/// Prints the matrix; exits 1 when a `must` case passes one
/// implementation and fails another.
pub fn compare(args: CompareArgs) -> u8 {
    let columns = if args.reports.is_empty() { live(&args) } else { saved(&args.reports) };
    let columns = match columns {
        Ok(columns) => columns,
        Err(Trouble::Usage(e)) => {
            eprintln!("ukue-conformance compare: {e}");
            return exit::USAGE;
        }
        Err(Trouble::Runner(e)) => {
            eprintln!("ukue-conformance compare: {e:#}");
            return exit::RUNNER;
        }
    };
    let matrix = Matrix::of(&columns);
    let text = match args.format {
        MatrixFormat::Human => matrix.human(args.differing),
        MatrixFormat::Markdown => matrix.markdown(args.differing),
        MatrixFormat::Json => serde_json::to_string(&matrix).unwrap_or_default() + "\n",
    };
    print!("{text}");
    if let Some(path) = &args.html {
        if let Err(e) = std::fs::write(path, matrix.html()) {
            eprintln!("ukue-conformance compare: writing {}: {e}", path.display());
            return exit::RUNNER;
        }
    }
    if matrix.suspect > 0 {
        exit::FAILURES
    } else {
        exit::OK
    }
}

enum Trouble {
    Usage(String),
    Runner(anyhow::Error),
}

impl From<anyhow::Error> for Trouble {
    fn from(e: anyhow::Error) -> Trouble {
        Trouble::Runner(e)
    }
}

/// Each implementation run in turn, with one seed.
fn live(args: &CompareArgs) -> Result<Vec<Column>, Trouble> {
    if args.implementations.len() < 2 {
        return Err(Trouble::Usage("name two implementations or more (--impl A --impl B)".into()));
    }
    let chosen = selected(&args.run, &args.shard).map_err(Trouble::Usage)?;
    interrupt_kills_everything()?;
    let seed = args.run.seed.unwrap_or_else(rand::random);
    eprintln!(
        "ukue-conformance compare: {} cases against {} implementations, one after another, seed {seed}",
        chosen.len(),
        args.implementations.len()
    );
    let mut columns = Vec::new();
    for implementation in &args.implementations {
        let mut progress = report::Human::quiet();
        let done = run_suite(&args.run, &args.shard, Some(implementation), seed, &chosen, &mut progress)?;
        columns.push(Column { runs: vec![done.info], reports: done.reports, elapsed: done.elapsed });
    }
    Ok(columns)
}

/// An implementation as a report names it: its path and its `version` output.
type Implementation = (String, Option<String>);

/// The saved reports, a column an implementation (the reports' run says
/// which, and what its `version` printed); the shards of one run joined as
/// `merge` joins them.
fn saved(paths: &[PathBuf]) -> Result<Vec<Column>, Trouble> {
    // (implementation, version) → its reports.
    let mut groups: Vec<(Implementation, Vec<PathBuf>)> = Vec::new();
    for path in paths {
        let one = merge(std::slice::from_ref(path)).map_err(Trouble::Usage)?;
        let Some(run) = one.runs.first() else {
            return Err(Trouble::Usage(format!(
                "{}: no summary line naming its run (it did not finish, or an older runner wrote it)",
                path.display()
            )));
        };
        let key = (run.implementation.clone(), run.implementation_version.clone());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, group)) => group.push(path.clone()),
            None => groups.push((key, vec![path.clone()])),
        }
    }
    if groups.len() < 2 {
        return Err(Trouble::Usage("the reports name one implementation: compare needs two or more".into()));
    }
    groups
        .into_iter()
        .map(|(_, group)| {
            let merged = merge(&group).map_err(Trouble::Usage)?;
            Ok(Column { runs: merged.runs, reports: merged.reports, elapsed: merged.elapsed })
        })
        .collect()
}
