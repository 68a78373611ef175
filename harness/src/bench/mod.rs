//! `ukue-bench`: the reference against the disk's own ceiling.
//!
//! With `synchronous = FULL` a job queue can go no faster than the disk
//! makes a commit durable. The bench measures that ceiling (raw SQLite,
//! one INSERT a commit) and, in the same run on the same disk, what the
//! library does: adds, claims and finishes per second, and the latency of
//! a claim with many jobs delayed for later. Each figure is also given as
//! a ratio to the ceiling, so that it means something on any machine. The
//! HTTP API (`ukue serve`, `http.rs`) is measured against the same steps in
//! this process: adds and claim + ack by several clients, one round trip,
//! the server's memory holding many waiting claims, and a load run. It
//! ends with the history checkers on large synthetic histories.
//!
//! Everything runs on files in a temporary directory inside `--dir`,
//! removed at the end (and on Ctrl-C).

mod checker;
mod http;
mod latency;
mod load;
mod report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use load::{Role, TempFile};
pub use report::{Figure, Goal, Report};

/// Measures the reference ukue against the disk's own ceiling.
#[derive(Debug, Parser)]
#[command(name = "ukue-bench", version)]
pub struct BenchArgs {
    #[command(subcommand)]
    child: Option<Child>,
    /// Where the temporary files go (default: the current directory)
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Print the figures as JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// Short runs and few samples, for a smoke test: the figures are rough
    #[arg(long)]
    pub quick: bool,
    /// Seconds for each throughput figure, over all rounds [default: 5, or 0.2 with --quick]
    #[arg(long, value_name = "S")]
    pub seconds: Option<f64>,
    /// The most delayed jobs in the file: latency is measured with a
    /// thousandth, a tenth and all of this many
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub max_delayed: u64,
    /// The priority of the delayed jobs (the due ones have 0)
    #[arg(long, value_name = "P", default_value_t = 0, allow_negative_numbers = true)]
    pub delayed_priority: i64,
    /// Throughput rounds, each figure with its own ceiling [default: 10, or 1 with --quick]
    #[arg(long, value_name = "N")]
    pub rounds: Option<usize>,
    /// Samples for each latency figure [default: 1000, or 30 with --quick]
    #[arg(long, value_name = "N")]
    pub samples: Option<usize>,
    /// Processes for the parallel figures, the worker's concurrency, and
    /// the HTTP clients
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub processes: usize,
    /// Waiting claims the server holds while its memory is read
    /// [default: 1000, or 50 with --quick]
    #[arg(long, value_name = "N")]
    pub polls: Option<usize>,
    /// Seconds of the HTTP load run [default: 5, or 0.5 with --quick]
    #[arg(long, value_name = "S")]
    pub load_seconds: Option<f64>,
    /// Events in the largest synthetic history for the checkers, which are
    /// also timed with a quarter and a half of it; 0 leaves them out
    /// [default: 1000000, or 20000 with --quick]
    #[arg(long, value_name = "N")]
    pub checker_events: Option<u64>,
    /// Measure only these throughput figures (keys as in the JSON, such as
    /// work_1p_c4; the ceiling always runs), and `latency`, `checkers` or
    /// `http` (the HTTP figures and the in-process ones they are compared
    /// with) only when named; for profiling one figure
    #[arg(long, value_name = "KEY", value_delimiter = ',')]
    pub only: Vec<String>,
    /// An experiment: the connections the bench opens itself (all but the
    /// worker's) wait for a busy file by trying again every N µs, for 5 s
    /// in all, instead of with SQLite's busy timeout (waits of 1 to 100 ms)
    #[arg(long, value_name = "N")]
    pub busy_poll_us: Option<u64>,
}

#[derive(Debug, Subcommand)]
enum Child {
    /// One process of a parallel figure (run by ukue-bench itself)
    #[command(name = "__child", hide = true)]
    Run {
        role: Role,
        file: PathBuf,
        start_us: u64,
        seconds: f64,
        #[arg(long)]
        busy_poll_us: Option<u64>,
    },
    /// `ukue serve FILE --addr ADDR`, for the HTTP figures (run by ukue-bench itself)
    #[command(name = "__serve", hide = true)]
    Serve { file: PathBuf, addr: String },
}

/// Jobs a transaction in the batch-add figure.
const BATCH: usize = 100;

pub fn main() -> ExitCode {
    let args = BenchArgs::parse();
    load::set_busy_poll(args.busy_poll_us);
    let child = match &args.child {
        Some(Child::Run { role, file, start_us, seconds, busy_poll_us }) => {
            load::set_busy_poll(*busy_poll_us);
            Some(load::child(*role, file, *start_us, *seconds))
        }
        Some(Child::Serve { file, addr }) => Some(http::serve_child(file, addr)),
        None => None,
    };
    if let Some(result) = child {
        return match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ukue-bench child: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    match run(&args) {
        Ok(report) => {
            if args.json {
                match serde_json::to_string_pretty(&report) {
                    Ok(text) => println!("{text}"),
                    Err(e) => {
                        eprintln!("ukue-bench: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", report.table());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ukue-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The settings of one run, with the defaults filled in.
struct Plan {
    /// Seconds of each throughput figure in one round.
    window: f64,
    rounds: usize,
    sizes: Vec<u64>,
    samples: usize,
    processes: usize,
    checker_sizes: Vec<u64>,
    delayed_priority: i64,
    only: Vec<String>,
    busy_poll_us: Option<u64>,
    polls: usize,
    load_seconds: f64,
}

impl Plan {
    fn from(args: &BenchArgs) -> Plan {
        let max = args.max_delayed.max(1);
        let mut sizes = vec![(max / 1000).max(1), (max / 10).max(1), max];
        sizes.dedup();
        let checker = args.checker_events.unwrap_or(if args.quick { 20_000 } else { 1_000_000 });
        let rounds = args.rounds.unwrap_or(if args.quick { 1 } else { 10 }).max(1);
        let seconds = args.seconds.unwrap_or(if args.quick { 0.2 } else { 5.0 });
        Plan {
            window: seconds / rounds as f64,
            rounds,
            sizes,
            samples: args.samples.unwrap_or(if args.quick { 30 } else { 1000 }).max(1),
            processes: args.processes.max(1),
            checker_sizes: if checker == 0 { Vec::new() } else { vec![checker / 4, checker / 2, checker] },
            delayed_priority: args.delayed_priority,
            only: args.only.clone(),
            busy_poll_us: args.busy_poll_us.filter(|&us| us > 0),
            polls: args.polls.unwrap_or(if args.quick { 50 } else { 1000 }).max(1),
            load_seconds: args.load_seconds.unwrap_or(if args.quick { 0.5 } else { 5.0 }),
        }
    }
}

impl Plan {
    /// Whether `--only` leaves this part in.
    fn wants(&self, key: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|k| k == key)
    }
}

/// Says what is being measured, on stderr, so that a long run shows progress.
fn progress(what: &str) {
    eprintln!("ukue-bench: {what}");
}

/// What a throughput figure runs.
#[derive(Debug, Clone, Copy)]
enum Load {
    /// One role in this process.
    Here(Role),
    /// One role in `n` processes at once.
    Processes(Role, usize),
    /// `add_batch` of [`BATCH`] jobs.
    Batch,
    /// The library's worker with this concurrency.
    Worker(usize),
    /// One role in `n` threads of this process, each its own connection.
    Threads(Role, usize),
    /// One role by `n` HTTP clients of a `ukue serve`.
    Http(Role, usize),
}

impl Load {
    fn works(self) -> bool {
        matches!(
            self,
            Load::Here(Role::Work)
                | Load::Processes(Role::Work, _)
                | Load::Worker(_)
                | Load::Threads(Role::Work, _)
                | Load::Http(Role::Work, _)
        )
    }

    fn run(self, file: &Path, seconds: f64) -> Result<load::Rate> {
        match self {
            Load::Here(role) => load::in_this_process(role, file, seconds),
            Load::Processes(role, n) => load::in_processes(role, file, n, seconds),
            Load::Batch => load::batch_add(file, BATCH, seconds),
            Load::Worker(n) => load::worker(file, n, seconds),
            Load::Threads(role, n) => load::in_threads(role, file, n, seconds),
            Load::Http(role, n) => http::rate(role, file, n, seconds),
        }
    }
}

pub fn run(args: &BenchArgs) -> Result<Report> {
    let plan = Plan::from(args);
    let dir = tempfile::Builder::new()
        .prefix(".ukue-bench-")
        .tempdir_in(&args.dir)
        .with_context(|| format!("making a temporary directory in {}", args.dir.display()))?;
    remove_on_signal(dir.path().to_path_buf());
    let mut report = Report::new(&args.dir, &plan);
    throughput(dir.path(), &plan, &mut report)?;
    if plan.wants("latency") {
        latency(dir.path(), &plan, &mut report)?;
    }
    for &events in plan.checker_sizes.iter().filter(|_| plan.wants("checkers")) {
        progress(&format!("checkers on a history of {events} events"));
        report.checker(checker::time(events)?);
    }
    if plan.wants("http") {
        http_figures(dir.path(), &plan, &mut report)?;
    }
    report.finish(&plan.sizes, plan.processes);
    drop(dir);
    Ok(report)
}

/// The throughput figures, in rounds: each figure for one window, with the
/// ceiling measured for a window just before each and once at the end.
/// Each window's ratio is to the mean of the two ceilings around it, so
/// that a disk that speeds up or slows down during the run (a shared one
/// does) moves both alike; a figure is the median over the rounds.
fn throughput(dir: &Path, plan: &Plan, report: &mut Report) -> Result<()> {
    let n = plan.processes;
    let mut loads = vec![
        (
            format!("ceiling_{n}p"),
            format!("ceiling: raw SQLite, {n} processes"),
            "commits/s",
            Load::Processes(Role::Ceiling, n),
        ),
        ("add_1p".into(), "add, 1 process".into(), "jobs/s", Load::Here(Role::Add)),
        (format!("add_{n}p"), format!("add, {n} processes"), "jobs/s", Load::Processes(Role::Add, n)),
        ("add_batch".into(), format!("add_batch, {BATCH} jobs a transaction"), "jobs/s", Load::Batch),
        ("work_1p".into(), "claim + finish, 1 process".into(), "jobs/s", Load::Here(Role::Work)),
        (
            format!("work_1p_c{n}"),
            format!("claim + finish, 1 process, worker concurrency {n}"),
            "jobs/s",
            Load::Worker(n),
        ),
        (
            format!("work_1p_t{n}"),
            format!("claim + finish, 1 process, {n} threads"),
            "jobs/s",
            Load::Threads(Role::Work, n),
        ),
        (
            format!("work_{n}p"),
            format!("claim + finish, {n} processes"),
            "jobs/s",
            Load::Processes(Role::Work, n),
        ),
        (
            format!("add_1p_t{n}"),
            format!("add, 1 process, {n} threads"),
            "jobs/s",
            Load::Threads(Role::Add, n),
        ),
        (format!("http_add_{n}c"), format!("HTTP add, {n} clients"), "jobs/s", Load::Http(Role::Add, n)),
        (
            format!("http_work_{n}c"),
            format!("HTTP claim + ack, {n} clients"),
            "jobs/s",
            Load::Http(Role::Work, n),
        ),
    ];
    if n == 1 {
        loads.retain(|(_, _, _, load)| !matches!(load, Load::Processes(..) | Load::Worker(_)));
    }
    // The HTTP figures, and the in-process ones they are compared with.
    let http_pair = |key: &str| {
        key.starts_with("http_") || [format!("add_1p_t{n}"), format!("work_1p_t{n}")].iter().any(|k| k == key)
    };
    loads.retain(|(key, ..)| plan.wants(key) || (plan.wants("http") && http_pair(key)));
    let ceiling_file = fresh(dir, "ceiling.ukue")?;
    let files =
        loads.iter().map(|(key, ..)| fresh(dir, &format!("{key}.ukue"))).collect::<Result<Vec<_>>>()?;
    let mut ceilings: Vec<load::Rate> = Vec::new();
    // Each figure's rates, with the index of the ceiling measured just before.
    let mut rates: Vec<Vec<(load::Rate, usize)>> = vec![Vec::new(); loads.len()];
    let mut fastest = 0.0f64;
    for round in 0..plan.rounds {
        progress(&format!("throughput, round {} of {}", round + 1, plan.rounds));
        for ((_, name, _, load), (file, rates)) in loads.iter().zip(files.iter().zip(&mut rates)) {
            if load.works() {
                // Enough due jobs that the window does not run out: a claim
                // and a finish are two commits, so half the ceiling's, and more.
                let jobs = (fastest.max(1000.0) * plan.window * 0.75) as u64 + 1000;
                load::prefill(file.as_ref(), jobs, 10_000)?;
            }
            let ceiling = load::in_this_process(Role::Ceiling, ceiling_file.as_ref(), plan.window)?;
            fastest = fastest.max(ceiling.per_s);
            ceilings.push(ceiling);
            progress(&format!("  {name}"));
            rates.push((load.run(file.as_ref(), plan.window)?, ceilings.len() - 1));
        }
    }
    ceilings.push(load::in_this_process(Role::Ceiling, ceiling_file.as_ref(), plan.window)?);
    report.ceiling(&ceilings);
    for ((key, name, unit, _), rates) in loads.iter().zip(rates) {
        let around: Vec<(load::Rate, f64)> = rates
            .into_iter()
            .map(|(rate, before)| (rate, (ceilings[before].per_s + ceilings[before + 1].per_s) / 2.0))
            .collect();
        report.rate(key, name, unit, &around);
    }
    Ok(())
}

/// The latency figures: a file for each number of delayed jobs, measured
/// in turn.
fn latency(dir: &Path, plan: &Plan, report: &mut Report) -> Result<()> {
    let mut files = Vec::new();
    for &size in &plan.sizes {
        progress(&format!("latency: adding {size} delayed jobs"));
        let file = fresh(dir, &format!("delayed-{size}.ukue"))?;
        latency::fill(file.as_ref(), size, plan.delayed_priority)?;
        files.push((size, file));
    }
    progress(&format!("latency: {} samples of each figure", plan.samples));
    let paths: Vec<(u64, &Path)> = files.iter().map(|(n, f)| (*n, f.as_ref())).collect();
    let rounds = plan.samples.clamp(1, 5);
    for at in latency::measure(&paths, plan.samples, rounds)? {
        report.latency("empty_claim", "empty claim", at.delayed, at.empty_claim);
        report.latency("add_claim_finish", "add + claim + finish", at.delayed, at.add_claim_finish);
    }
    Ok(())
}

/// The HTTP figures beyond throughput: a round trip against the same in
/// this process, the server's memory and CPU holding waiting claims, and
/// a load run.
fn http_figures(dir: &Path, plan: &Plan, report: &mut Report) -> Result<()> {
    progress(&format!("http: {} round trips of claim + ack, and in this process", plan.samples));
    let file = fresh(dir, "http-round-trip.ukue")?;
    let round_trip = http::round_trip(file.as_ref(), plan.samples)?;
    progress(&format!("http: the server holding {} waiting claims", plan.polls));
    let file = fresh(dir, "http-polls.ukue")?;
    let polls = http::polls(file.as_ref(), plan.polls, Duration::from_secs(2))?;
    let n = plan.processes;
    progress(&format!("http: a load run, {n} producers and {n} workers for {} s", plan.load_seconds));
    let file = fresh(dir, "http-load.ukue")?;
    let load = http::load_run(file.as_ref(), n, n, plan.load_seconds)?;
    report.http(round_trip, polls, load);
    Ok(())
}

fn fresh(dir: &Path, name: &str) -> Result<TempFile> {
    let file = TempFile::new(dir, name);
    load::create_file(file.as_ref())?;
    Ok(file)
}

/// Ctrl-C or SIGTERM: remove the temporary files and stop.
fn remove_on_signal(dir: PathBuf) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else { return };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let _ = std::fs::remove_dir_all(&dir);
            std::process::exit(128 + signal);
        }
    });
}
