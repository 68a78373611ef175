//! The verdict from running old and new programs on one file: the cases of
//! crate::cases::evolve, once in each direction, as two runs of the suite
//! (the subject makes each file, and its reference is the other program).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;

use super::super::suite::ShardArgs;
use super::super::suite::{globs, run_suite, RunArgs};
use crate::cases::evolve::{mixed, NEW_MEETS_OLD_FILE, OLD_REFUSES_NEW_FILE};
use crate::cases::Case;
use crate::report::{self, CaseReport, RunInfo, Status};

/// Whose files a run's cases make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Direction {
    /// The old program makes each file; the new one adds and works beside it
    OldFiles,
    /// The new program makes each file; the old one adds and works beside it
    NewFiles,
}

impl Direction {
    pub const BOTH: [Direction; 2] = [Direction::OldFiles, Direction::NewFiles];

    pub fn name(self) -> &'static str {
        match self {
            Direction::OldFiles => "old-files",
            Direction::NewFiles => "new-files",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Direction::OldFiles => "the old program's files, the new program beside it",
            Direction::NewFiles => "the new program's files, the old program beside it",
        }
    }
}

/// The two programs, as the command line named them.
#[derive(Debug, Clone)]
pub struct Programs {
    pub old: PathBuf,
    pub new: PathBuf,
}

/// What one direction's run did.
pub struct DirectionRun {
    pub direction: Direction,
    pub reports: Vec<CaseReport>,
    pub info: RunInfo,
    pub elapsed: Duration,
}

impl DirectionRun {
    pub fn failed(&self) -> impl Iterator<Item = &CaseReport> {
        self.reports.iter().filter(|r| r.status.is_bad())
    }

    pub fn count(&self, status: Status) -> usize {
        self.reports.iter().filter(|r| r.status == status).count()
    }
}

/// Both programs' runs, and the versions their files carry.
pub struct ProgramsVerdict {
    pub programs: Programs,
    pub old_version: i64,
    pub new_version: i64,
    pub seed: u64,
    pub runs: Vec<DirectionRun>,
}

impl ProgramsVerdict {
    pub fn breaks(&self) -> bool {
        self.runs.iter().any(|r| r.failed().next().is_some())
    }
}

/// Runs the cases in `directions` (both, unless the command line chose
/// one), each with `seed`; `replay` begins the command that runs one of
/// them again (`--direction D --cases ID` follow).
pub fn run(
    programs: &Programs,
    args: &RunArgs,
    directions: &[Direction],
    seed: u64,
    replay: &str,
) -> Result<ProgramsVerdict> {
    let old_version = format_version(&programs.old).context("the old program")?;
    let new_version = format_version(&programs.new).context("the new program")?;
    eprintln!(
        "ukue-conformance evolve: old {} (format_version {old_version}), new {} (format_version {new_version}), seed {seed}",
        programs.old.display(),
        programs.new.display()
    );
    let only = globs(&args.cases)?;
    let mut runs = Vec::new();
    for &direction in directions {
        let chosen: Vec<Case> = cases(direction, new_version > old_version)
            .into_iter()
            .filter(|c| only.as_ref().is_none_or(|g| g.is_match(c.id)))
            .collect();
        if chosen.is_empty() {
            continue;
        }
        let (subject, other) = match direction {
            Direction::OldFiles => (&programs.old, &programs.new),
            Direction::NewFiles => (&programs.new, &programs.old),
        };
        let mut run_args = args.clone();
        run_args.reference = Some(other.clone());
        run_args.replay = Some(format!("{replay} --direction {}", direction.name()));
        eprintln!("ukue-conformance evolve: {}: {}", direction.name(), direction.title());
        let mut progress = report::Human::quiet();
        let done = run_suite(&run_args, &no_shard(), Some(subject), seed, &chosen, &mut progress)?;
        runs.push(DirectionRun { direction, reports: done.reports, info: done.info, elapsed: done.elapsed });
    }
    if runs.is_empty() {
        bail!("no case of evolve matches --cases {}", args.cases.join(" "));
    }
    Ok(ProgramsVerdict { programs: programs.clone(), old_version, new_version, seed, runs })
}

/// The cases of one direction: the mixed families within one version;
/// after a raise, the old program's refusal of the new files and the new
/// program's way with the old ones.
pub fn cases(direction: Direction, raised: bool) -> Vec<Case> {
    match (raised, direction) {
        (false, _) => mixed(),
        (true, Direction::OldFiles) => vec![NEW_MEETS_OLD_FILE],
        (true, Direction::NewFiles) => vec![OLD_REFUSES_NEW_FILE],
    }
}

fn no_shard() -> ShardArgs {
    ShardArgs { partition: None, repeat: None, duration: None, fail_fast: false }
}

/// The `format_version` that `program init` writes, read back with SQLite.
fn format_version(program: &Path) -> Result<i64> {
    let dir = tempfile::Builder::new().prefix("ukue-evolve-").tempdir().context("making a directory")?;
    let file = dir.path().join("version.ukue");
    let out = Command::new(program)
        .arg("init")
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {} init", program.display()))?;
    if !out.status.success() {
        bail!(
            "`{} init` failed ({}): {}",
            program.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let conn = rusqlite::Connection::open_with_flags(&file, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let value: String = conn
        .query_row("SELECT value FROM ukue_meta WHERE key = 'format_version'", [], |r| r.get(0))
        .with_context(|| format!("the file `{} init` made has no format_version", program.display()))?;
    value
        .trim()
        .parse()
        .with_context(|| format!("`{} init` wrote format_version {value:?}", program.display()))
}
