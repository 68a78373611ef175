//! The flags of a run of the suite, as every command that runs it takes
//! them: what runs and how ([`RunArgs`]), and which share of it
//! ([`ShardArgs`]: one partition, soak passes).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::runner::partition::Partition;
use crate::runner::soak::Soak;
use crate::subjects::ctx::DEFAULT_CRASH_KILLS;

/// How long one case may take, unless `--case-timeout` says.
pub(super) const DEFAULT_CASE_TIMEOUT: &str = "120s";

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

/// `90s`, `2m`, `500ms`, `1.5h`: the runner's durations.
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

#[derive(Debug, Clone, Args)]
pub struct ShardArgs {
    /// Run one shard: `count:K/N` (every N-th case from the K-th) or
    /// `hash:K/N` (by a hash of the case id); the N shards are disjoint
    /// and together make the whole run
    #[arg(long, value_name = "KIND:K/N")]
    pub partition: Option<Partition>,
    /// Run the selected cases N times, each pass with a seed derived from the run's
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,
    /// Run the selected cases again and again for this long (`30m`), each pass with a derived seed
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Stop at the first case that fails (start no other)
    #[arg(long)]
    pub fail_fast: bool,
}

impl ShardArgs {
    pub fn soak(&self) -> Soak {
        Soak { repeat: self.repeat, duration: self.duration }
    }
}
