//! `ukue-conformance mutants --run-cases`: the conformance cases judged by
//! the mutants they kill. Each mutant of FORMAT.md's statements (but the
//! equivalent ones) and each step, serve and command-line bug of
//! `ukue-broken` is run against the suite, the suite in a child process of
//! this binary (`--impl ukue-broken --format json --fail-fast`, with
//! `UKUE_BROKEN=NAME`), and a mutant is killed when a `must` case fails,
//! errs or times out. A `should` case's warning alone is no kill: a
//! conforming program may fall short of a `should`.
//!
//! Results go to a JSON-lines file, a line a mutant as soon as it is
//! judged, so that a run stopped half-way goes on where it stopped. A
//! survivor is explained when [`survivors`] says why no `must` case can
//! kill it; any other is a gap in the cases, and fails the run.

mod survivors;
mod table;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::suite::{exit, globs, parse_duration};
use crate::cases::{self, Case};
use crate::subjects::process::Procs;
use crate::subjects::{broken, mutants};

/// The flags of `mutants` that run the cases against each mutant.
#[derive(Debug, Clone, Args)]
pub struct ScoreArgs {
    /// Run the conformance cases against ukue-broken under each mutant
    /// (not the equivalent ones) and each bug it lists, and report which
    /// a `must` case kills
    #[arg(long)]
    pub run_cases: bool,
    /// Append each mutant's result here (JSON lines); mutants already in
    /// it are skipped, so that a stopped run goes on where it stopped
    #[arg(long, value_name = "FILE", requires = "run_cases")]
    pub results: Option<PathBuf>,
    /// Run only the K-th of N disjoint shards of the mutants (by index)
    #[arg(long, value_name = "K/N", value_parser = parse_shard, requires = "run_cases")]
    pub shard: Option<(usize, usize)>,
    /// Run a random sample of N mutants, chosen by --seed
    #[arg(long, value_name = "N", requires = "run_cases")]
    pub sample: Option<usize>,
    /// The seed of the sample and of every run of the suite (default: a
    /// new one, printed)
    #[arg(long, requires = "run_cases")]
    pub seed: Option<u64>,
    /// Run only the mutants whose name matches (a glob; may be repeated)
    #[arg(long = "only", value_name = "GLOB", requires = "run_cases")]
    pub only: Vec<String>,
    /// Cases each run of the suite runs at once
    #[arg(long, default_value = "2", requires = "run_cases")]
    pub jobs: usize,
    /// How long one mutant's run of the suite may take; past it the run is
    /// stopped and the mutant counted as surviving, with a note
    #[arg(long, value_name = "D", default_value = "300s", value_parser = parse_duration, requires = "run_cases")]
    pub mutant_timeout: Duration,
    /// Run only these cases (a glob; may be repeated): a smaller suite, for
    /// a quick look; the score is then of those cases alone
    #[arg(long = "cases", value_name = "GLOB", requires = "run_cases")]
    pub cases: Vec<String>,
    /// Also run the cases that wait 30 s or more (as the runner's --slow)
    #[arg(long, requires = "run_cases")]
    pub slow: bool,
    /// The broken program (default: `ukue-broken` beside this binary)
    #[arg(long, value_name = "PATH", requires = "run_cases")]
    pub broken: Option<PathBuf>,
    /// Print the selected mutants (name, kind, and whether the results
    /// have it) and run nothing
    #[arg(long, requires = "run_cases")]
    pub dry_run: bool,
    /// Print the score per statement as a Markdown table, from --results
    /// and the listing (the equivalent mutants too), and run nothing
    #[arg(long, requires = "results")]
    pub table: bool,
}

fn parse_shard(text: &str) -> std::result::Result<(usize, usize), String> {
    let bad = || format!("invalid shard {text:?}: K/N, 1 <= K <= N");
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let (k, n): (usize, usize) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if k == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// One program `UKUE_BROKEN` can name, as `mutants` lists it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub name: String,
    /// `generated`, `hand-made`, `equivalent`, `unreached`, `bug`,
    /// `serve-bug`, `serve-unreached` or `cli-bug`.
    pub kind: &'static str,
    /// Why it is set aside (equivalent, unreached), if it is.
    pub why: Option<&'static str>,
    pub what: String,
}

impl Listed {
    /// Whether `ukue-driver` runs it: the statements' mutants and step bugs
    /// (not a server's or a command line's bug).
    pub fn drives(&self) -> bool {
        matches!(self.kind, "generated" | "hand-made" | "unreached" | "bug")
    }
}

/// What a mutant killed by the model run, not by a case, names as its killer.
pub const MODEL: &str = "model (the step driver)";
/// Sequences of the model run a survivor of the cases meets: some
/// thirty seconds on two cores, and enough to reach a third attempt's
/// backoff (256 were not, for fail/const-4 and reap_ready/const-4).
const MODEL_CASES: &str = "2048";

/// Every program `mutants` lists, in its order: the mutants of FORMAT.md,
/// then ukue-broken's step bugs, broken servers and command-line bugs.
pub fn listed() -> Vec<Listed> {
    let mut out: Vec<Listed> = mutants::all()
        .iter()
        .map(|m| {
            let (kind, why) = match mutants::set_aside(&m.name) {
                Some((list, why)) => (list, Some(why)),
                None if m.name.contains("/hand-") => ("hand-made", None),
                None => ("generated", None),
            };
            Listed { name: m.name.clone(), kind, why, what: m.what.replace(['\t', '\n'], " ") }
        })
        .collect();
    for name in broken::STEP_BUGS {
        if let Some(bug) = broken::bug(name) {
            out.push(Listed { name: bug.name.into(), kind: "bug", why: None, what: bug.what.into() });
        }
    }
    for bug in broken::BUGS.iter().filter(|b| b.serve != broken::ServeFlaw::None) {
        let why = bug.serve.beyond_the_api();
        let kind = if why.is_some() { "serve-unreached" } else { "serve-bug" };
        out.push(Listed { name: bug.name.into(), kind, why, what: bug.what.into() });
    }
    for bug in broken::CLI_BUGS {
        out.push(Listed { name: bug.name.into(), kind: "cli-bug", why: None, what: bug.what.into() });
    }
    out
}

/// What one mutant's run of the suite came to: a line of `--results`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub name: String,
    pub kind: String,
    pub killed: bool,
    /// The first `must` case that failed, errored or timed out.
    #[serde(default)]
    pub killed_by: Option<String>,
    /// How it went wrong (`fail`, `error`, `timeout`).
    #[serde(default)]
    pub killed_status: Option<String>,
    /// What the killing case saw, as its report says: the evidence to
    /// read when a kill looks unlikely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub killed_seen: Option<String>,
    /// The `should` cases that warned (none of them a kill).
    #[serde(default)]
    pub warned: Vec<String>,
    /// Cases that reported (passed, warned or failed) before the run ended.
    #[serde(default)]
    pub cases_run: usize,
    pub seconds: f64,
    /// Cases that failed the mutant once but passed it when run again
    /// alone with the same seed: kills by chance (a millisecond met, a race
    /// won), not counted; the rest of their batch ran without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chance_kills: Vec<String>,
    /// The run went past --mutant-timeout and was stopped.
    #[serde(default)]
    pub timed_out: bool,
    /// The runner itself could not run (exit 2 or 3): not a verdict.
    #[serde(default)]
    pub error: Option<String>,
    pub seed: u64,
    /// The killing case's own replay command, or the whole run's.
    pub replay: String,
}

impl Outcome {
    /// Takes back the kill by `case`, which did not fail the mutant again.
    fn forget_kill(&mut self, case: &str) {
        self.killed = false;
        self.killed_by = None;
        self.killed_status = None;
        self.killed_seen = None;
        self.chance_kills.push(case.to_string());
    }

    /// A mutant's outcome before its run: nothing killed, seen or timed.
    pub fn unjudged(name: &str, kind: &str, seed: u64, replay: String) -> Outcome {
        Outcome {
            name: name.into(),
            kind: kind.into(),
            killed: false,
            killed_by: None,
            killed_status: None,
            killed_seen: None,
            warned: Vec::new(),
            cases_run: 0,
            chance_kills: Vec::new(),
            seconds: 0.0,
            timed_out: false,
            error: None,
            seed,
            replay,
        }
    }
}

/// The families whose cases take well under a second each and catch most
/// step and command-line bugs: run first, so that most kills come fast.
const QUICK: &[&str] = &["steps/", "cli/", "sweep/"];
/// Then the families that see the mutants of the schema and of opening a
/// file (some forty cases in four seconds against the reference). Not in
/// the first batch: a mutant that stops claims makes their workers wait
/// out a case's deadline, where a step's case fails it at once.
const OPENING: &[&str] = &["format/", "refusal/", "bad-input/", "compat/"];

/// The cases, in the batches each mutant's run goes through, each batch a
/// run of the suite with --fail-fast: the quick families, the opening's,
/// then the rest but the slow ones, then the slow ones
/// (crate::runner::SLOW_FIRST). Within a batch the runner keeps its own
/// order.
fn batches(only: &[String]) -> Result<Vec<Vec<&'static str>>> {
    let only = globs(only)?;
    let chosen: Vec<Case> =
        cases::all().into_iter().filter(|c| only.as_ref().is_none_or(|g| g.is_match(c.id))).collect();
    if chosen.is_empty() {
        bail!("no case matches --cases {}", only.map(|_| "the globs given").unwrap_or_default());
    }
    let slow = |id: &str| crate::runner::SLOW_FIRST.iter().flat_map(|t| t.iter()).any(|p| id.starts_with(p));
    let of = |families: &[&str], id: &str| families.iter().any(|p| id.starts_with(p));
    let mut out = vec![Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for case in chosen {
        let batch = if of(QUICK, case.id) {
            0
        } else if of(OPENING, case.id) {
            1
        } else if slow(case.id) {
            3
        } else {
            2
        };
        out[batch].push(case.id);
    }
    out.retain(|b| !b.is_empty());
    Ok(out)
}

/// The mutants this run is about, in the listing's order: not equivalent,
/// matching --only, the --sample of them, this --shard of those.
fn selection(args: &ScoreArgs, seed: u64) -> Result<Vec<Listed>> {
    let only = globs(&args.only)?;
    let mut chosen: Vec<Listed> = listed()
        .into_iter()
        .filter(|m| m.kind != "equivalent")
        .filter(|m| only.as_ref().is_none_or(|g| g.is_match(&m.name)))
        .collect();
    if let Some(n) = args.sample {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut picked: Vec<usize> =
            (0..chosen.len()).collect::<Vec<_>>().choose_multiple(&mut rng, n).copied().collect();
        picked.sort_unstable();
        let keep: BTreeSet<usize> = picked.into_iter().collect();
        chosen = chosen.into_iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, m)| m).collect();
    }
    if let Some((k, n)) = args.shard {
        chosen = chosen.into_iter().enumerate().filter(|(i, _)| i % n == k - 1).map(|(_, m)| m).collect();
    }
    Ok(chosen)
}

/// The results already in `path` (none when it does not exist yet).
fn read_results(path: &Path) -> Result<Vec<Outcome>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    // A line cut short by a run stopped mid-write is no result: that
    // mutant runs again.
    Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

fn append(path: &Path, outcome: &Outcome) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    writeln!(file, "{}", serde_json::to_string(outcome)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// `mutants --run-cases`.
pub fn run(args: ScoreArgs) -> u8 {
    match score(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ukue-conformance mutants: {e:#}");
            exit::RUNNER
        }
    }
}

fn score(args: ScoreArgs) -> Result<u8> {
    if args.table {
        let results = args.results.as_deref().context("--table reads --results")?;
        print!("{}", table::markdown(&listed(), &read_results(results)?));
        return Ok(exit::OK);
    }
    let me = std::env::current_exe().context("finding this binary")?;
    let broken = match &args.broken {
        Some(p) => std::fs::canonicalize(p).with_context(|| format!("{}: not found", p.display()))?,
        None => me.with_file_name("ukue-broken"),
    };
    if !broken.is_file() {
        bail!("no {} (name one with --broken)", broken.display());
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    println!("mutation score of the cases: seed {seed}");
    let chosen = selection(&args, seed)?;
    let batches = batches(&args.cases)?;
    let earlier = match &args.results {
        Some(path) => read_results(path)?,
        None => Vec::new(),
    };
    let done: BTreeSet<&str> = earlier.iter().map(|o| o.name.as_str()).collect();
    let todo: Vec<&Listed> = chosen.iter().filter(|m| !done.contains(m.name.as_str())).collect();
    if args.dry_run {
        for m in &chosen {
            let state = if done.contains(m.name.as_str()) { "done" } else { "to run" };
            println!("{}\t{}\t{state}", m.name, m.kind);
        }
        return Ok(exit::OK);
    }
    stop_with_the_suite()?;
    println!(
        "{} mutants selected, {} already in the results, {} to run; {} cases in {} batches",
        chosen.len(),
        chosen.len() - todo.len(),
        todo.len(),
        batches.iter().map(Vec::len).sum::<usize>(),
        batches.len()
    );
    let run = Run { me: &me, broken: &broken, seed, args: &args, batches: &batches };
    let mut killers = Killers::default();
    earlier.iter().for_each(|o| killers.learn(o));
    let mut outcomes: Vec<Outcome> =
        earlier.into_iter().filter(|o| chosen.iter().any(|m| m.name == o.name)).collect();
    let mut errors = 0;
    for (i, mutant) in todo.iter().enumerate() {
        let outcome = run.one(mutant, &killers)?;
        killers.learn(&outcome);
        let verdict = match (&outcome.error, outcome.killed, outcome.timed_out) {
            (Some(e), _, _) => format!("RUNNER ERROR: {e}"),
            (None, true, _) => format!(
                "killed by {} ({})",
                outcome.killed_by.as_deref().unwrap_or("?"),
                outcome.killed_status.as_deref().unwrap_or("?")
            ),
            (None, false, true) => "SURVIVED (stopped at --mutant-timeout)".into(),
            (None, false, false) => "SURVIVED".into(),
        };
        let chance = if outcome.chance_kills.is_empty() {
            String::new()
        } else {
            format!(" (failed once by chance, then passed: {})", outcome.chance_kills.join(", "))
        };
        println!(
            "[{}/{}] {} ({}): {verdict}{chance} in {:.1} s",
            i + 1,
            todo.len(),
            mutant.name,
            mutant.kind,
            outcome.seconds
        );
        if outcome.error.is_some() {
            // Not a verdict: left out of the results, so that a later run tries it again.
            errors += 1;
            continue;
        }
        if let Some(path) = &args.results {
            append(path, &outcome)?;
        }
        outcomes.push(outcome);
    }
    let gaps = summary(&chosen, &outcomes);
    Ok(if errors > 0 {
        exit::RUNNER
    } else if gaps > 0 {
        exit::FAILURES
    } else {
        exit::OK
    })
}

/// The cases that have killed mutants of each statement (the results
/// file's and this run's). A mutant mostly dies by a case that killed a
/// sibling (the same statement, another operator or place): each mutant's
/// run tries those cases first, a batch of their own, before the families'
/// batches. Which case kills decides no verdict, only how soon it comes: a
/// mutant of the schema that the opening's cases kill no longer waits out
/// the steps' batch first (two minutes, where a sibling's killer takes
/// seconds).
#[derive(Debug, Default)]
struct Killers(BTreeMap<String, Vec<String>>);

impl Killers {
    fn statement(name: &str) -> &str {
        name.split_once('/').map_or(name, |(statement, _)| statement)
    }

    fn learn(&mut self, outcome: &Outcome) {
        if let (true, Some(case)) = (outcome.killed, &outcome.killed_by) {
            let known = self.0.entry(Self::statement(&outcome.name).to_string()).or_default();
            if !known.contains(case) {
                known.push(case.clone());
            }
        }
    }

    /// `batches`, with the cases that killed `name`'s siblings taken out
    /// of them and run first.
    fn order(&self, name: &str, batches: &[Vec<&'static str>]) -> Vec<Vec<&'static str>> {
        let known = self.0.get(Self::statement(name)).map(Vec::as_slice).unwrap_or_default();
        let first: Vec<&'static str> =
            batches.iter().flatten().copied().filter(|case| known.iter().any(|k| k == case)).collect();
        let rest: Vec<Vec<&'static str>> = batches
            .iter()
            .map(|batch| batch.iter().copied().filter(|c| !first.contains(c)).collect())
            .collect();
        std::iter::once(first).chain(rest).filter(|batch| !batch.is_empty()).collect()
    }
}

/// What every mutant's run shares.
struct Run<'a> {
    me: &'a Path,
    broken: &'a Path,
    seed: u64,
    args: &'a ScoreArgs,
    batches: &'a [Vec<&'static str>],
}

impl Run<'_> {
    /// The suite's command line, without the cases.
    fn command_line(&self, name: &str) -> String {
        let mut line = format!(
            "UKUE_BROKEN={name} {} --impl {} --seed {} --fail-fast --jobs {}",
            self.me.display(),
            self.broken.display(),
            self.seed,
            self.args.jobs
        );
        for glob in &self.args.cases {
            line.push_str(&format!(" --cases '{glob}'"));
        }
        if self.args.slow {
            line.push_str(" --slow");
        }
        line
    }

    /// Runs the suite's batches against `mutant` (its siblings' killers
    /// first) until a `must` case kills it, the batches run out, or its
    /// time does.
    fn one(&self, mutant: &Listed, killers: &Killers) -> Result<Outcome> {
        let started = Instant::now();
        let deadline = started + self.args.mutant_timeout;
        let mut outcome =
            Outcome::unjudged(&mutant.name, mutant.kind, self.seed, self.command_line(&mutant.name));
        'batches: for batch in &killers.order(&mutant.name, self.batches) {
            let mut cases = batch.clone();
            loop {
                let mut child = self.spawn(Some(&mutant.name), &cases)?;
                let (ended, stderr) = watch(&mut child, deadline, &mut outcome)?;
                if let Some(case) = outcome.killed_by.clone() {
                    if self.fails_again(&mutant.name, &case, deadline)? {
                        break 'batches;
                    }
                    outcome.forget_kill(&case);
                    outcome.replay = self.command_line(&mutant.name);
                    cases.retain(|c| *c != case);
                    if cases.is_empty() {
                        break;
                    }
                    continue;
                }
                match ended {
                    Ended::Exited(code) if code == exit::OK || code == exit::FAILURES => break,
                    Ended::Exited(code) => {
                        outcome.error = Some(format!("the suite exited {code}: {stderr}"));
                        break 'batches;
                    }
                    Ended::TimedOut => {
                        outcome.timed_out = true;
                        break 'batches;
                    }
                }
            }
        }
        if let Some(case) = outcome.killed_by.clone() {
            self.confirm(&case, deadline, &mut outcome)?;
        } else if outcome.error.is_none() && !outcome.timed_out && mutant.drives() {
            self.model(&mutant.name, deadline, &mut outcome)?;
        }
        outcome.seconds = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
        Ok(outcome)
    }

    /// A survivor of the cases meets the model-based run through the step
    /// driver: `ukue-driver` runs the mutant's statements on the clock the
    /// model sets, so that a boundary of one millisecond, out of reach
    /// where a program reads its own clock, is in the model's. Its seed
    /// decides every sequence, whatever the machine's load.
    fn model(&self, name: &str, deadline: Instant, outcome: &mut Outcome) -> Result<()> {
        let driver = self.broken.with_file_name("ukue-driver");
        // Unshrunk: the first failing sequence is the verdict, and a hang
        // would cost the driver's deadline on every shrink candidate.
        let args = ["--cases", MODEL_CASES, "--seed", &self.seed.to_string(), "--no-shrink"];
        // Marked, as a case's processes are: the drivers it starts lead
        // groups of their own, and a model run stopped at the deadline (or
        // by Ctrl-C) must not leave them behind, spinning in a mutant's
        // endless claim.
        let procs = Procs::new(format!("mutants-model-{}", std::process::id()));
        let mut cmd = Command::new(self.me);
        cmd.arg("model")
            .arg("--driver")
            .arg(&driver)
            .args(args)
            .env("UKUE_BROKEN", name)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut model =
            procs.spawn(&mut cmd).with_context(|| format!("running {} model", self.me.display()))?;
        let deadline = deadline.max(Instant::now() + Duration::from_secs(120));
        let status = loop {
            if let Some(status) = model.child.try_wait()? {
                break Some(status);
            }
            if Instant::now() >= deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        procs.kill_all();
        match status.and_then(|s| s.code()) {
            Some(code) if code == i32::from(exit::FAILURES) => {
                outcome.killed = true;
                outcome.killed_by = Some(MODEL.into());
                outcome.killed_status = Some("fail".into());
                outcome.killed_seen = None;
                outcome.replay = format!(
                    "UKUE_BROKEN={name} {} model --driver {} {}",
                    self.me.display(),
                    driver.display(),
                    args.join(" ")
                );
            }
            Some(code) if code == i32::from(exit::OK) => {}
            other => outcome.error = Some(format!("the model run against the step driver ended {other:?}")),
        }
        Ok(())
    }

    /// Whether `case`, which just failed the mutant `name`, fails it again
    /// run alone with the same seed. A case whose every choice comes from
    /// the seed fails a mutant it can see every time; one that passes the
    /// second time met the mutant's difference by chance (a write in the
    /// very millisecond of a job's run_at, a race won on a loaded machine),
    /// and a score that counted it would credit the cases with a kill that
    /// a third party's program would not meet again.
    fn fails_again(&self, name: &str, case: &str, deadline: Instant) -> Result<bool> {
        let mut again = Outcome::unjudged(name, "", self.seed, String::new());
        self.alone(Some(name), case, deadline, &mut again)?;
        Ok(again.killed)
    }

    /// Runs `case` alone against the mutant `name` (the reference when
    /// None), its reports read into `outcome`. Past the mutant's deadline
    /// a check still gets a case's time.
    fn alone(
        &self,
        name: Option<&str>,
        case: &str,
        deadline: Instant,
        outcome: &mut Outcome,
    ) -> Result<(Ended, String)> {
        let mut child = self.spawn(name, &[case])?;
        watch(&mut child, deadline.max(Instant::now() + Duration::from_secs(180)), outcome)
    }

    /// A kill counts when the killing case passes the reference with the
    /// same seed: one that fails there too failed for the machine (a
    /// loaded one can make a crash case miss its deadlines), not for the
    /// mutant. Such a mutant is left unjudged, to be run again.
    fn confirm(&self, case: &str, deadline: Instant, outcome: &mut Outcome) -> Result<()> {
        let mut again = Outcome {
            killed: false,
            killed_by: None,
            killed_seen: None,
            warned: Vec::new(),
            ..outcome.clone()
        };
        let (ended, stderr) = self.alone(None, case, deadline, &mut again)?;
        if again.killed {
            outcome.killed = false;
            outcome.error =
                Some(format!("its killer {case} failed on the reference too (a flaky case): not judged"));
        } else if !matches!(ended, Ended::Exited(code) if code == exit::OK) {
            outcome.error = Some(format!("{case} could not be run against the reference: {stderr}"));
        }
        Ok(())
    }

    /// A run of the suite on `batch` against the mutant `name`, or against
    /// the reference (beside ukue-broken) when `name` is None.
    fn spawn(&self, name: Option<&str>, batch: &[&str]) -> Result<Child> {
        // A signal between the spawn and the store finds no child to pass
        // on to: held off by the lock the signal's thread takes too.
        let mut current = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
        let mut cmd = Command::new(self.me);
        match name {
            Some(name) => cmd.arg("--impl").arg(self.broken).env("UKUE_BROKEN", name),
            None => cmd
                .arg("--impl")
                .arg(self.broken.with_file_name(super::suite::REFERENCE))
                .env_remove("UKUE_BROKEN"),
        };
        cmd.args(["--format", "json", "--fail-fast", "--seed"])
            .arg(self.seed.to_string())
            .args(["--jobs", &self.args.jobs.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if self.args.slow {
            cmd.arg("--slow");
        }
        // The cases by id: a batch is a set the runner's globs cannot
        // say (the quick families less those --cases leaves out).
        for id in batch {
            cmd.args(["--cases", id]);
        }
        let child = cmd.spawn().with_context(|| format!("running {}", self.me.display()))?;
        *current = Some(child.id());
        Ok(child)
    }
}

/// The run of the suite going on now, if one is: the one to stop on a signal.
static RUNNING: std::sync::Mutex<Option<u32>> = std::sync::Mutex::new(None);

/// On SIGINT or SIGTERM: pass it on to the run going on (which kills every
/// process its cases started: suite::interrupt_kills_everything),
/// then exit 130. Its results so far are in --results already.
fn stop_with_the_suite() -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            let running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(pid) = *running {
                let pid = nix::unistd::Pid::from_raw(pid as i32);
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            }
            // A model run going on, and the drivers it started.
            crate::subjects::process::kill_every_case();
            eprintln!(
                "\nukue-conformance mutants: interrupted; the run of the suite going on was told to stop"
            );
            std::process::exit(i32::from(exit::INTERRUPTED));
        }
    });
    Ok(())
}

/// How a run of the suite ended.
enum Ended {
    Exited(u8),
    /// Past the mutant's deadline: stopped.
    TimedOut,
}

/// Reads the run's reports as they come, into `outcome`; stops the run at
/// `deadline`. Returns how it ended and the last lines of its stderr.
fn watch(child: &mut Child, deadline: Instant, outcome: &mut Outcome) -> Result<(Ended, String)> {
    let stdout = child.stdout.take().context("the suite's stdout")?;
    let stderr = child.stderr.take().context("the suite's stderr")?;
    // Read all along, so that a run that says much on stderr never blocks on a full pipe.
    let stderr = std::thread::spawn(move || tail(stderr));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
        // Dropping tx tells the reader the run's output has ended.
    });
    let mut timed_out = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(if timed_out { Duration::from_secs(30) } else { left }) {
            Ok(line) => read_report(&line, outcome),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) if !timed_out => {
                // SIGTERM: the runner kills every process its cases
                // started, then exits (suite::interrupt_kills_everything).
                timed_out = true;
                let pid = nix::unistd::Pid::from_raw(child.id() as i32);
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // It did not stop on SIGTERM within 30 s.
                let _ = child.kill();
                break;
            }
        }
    }
    let status = child.wait().context("waiting for the suite")?;
    // Reaped, its pid may come round to another process: no signal may go
    // to it after this.
    RUNNING.lock().unwrap_or_else(|p| p.into_inner()).take_if(|pid| *pid == child.id());
    let stderr = stderr.join().unwrap_or_default();
    if timed_out && !outcome.killed {
        return Ok((Ended::TimedOut, stderr));
    }
    Ok((Ended::Exited(status.code().map_or(exit::RUNNER, |c| c as u8)), stderr))
}

/// One line of the runner's JSON report: a case's, or the summary.
fn read_report(line: &str, outcome: &mut Outcome) {
    #[derive(Deserialize)]
    struct Line {
        id: String,
        level: String,
        status: String,
    }
    let Ok(report) = serde_json::from_str::<Line>(line) else { return };
    if report.status == "skipped" {
        return;
    }
    outcome.cases_run += 1;
    let bad = ["fail", "error", "timeout"].contains(&report.status.as_str());
    if report.level == "must" && bad && !outcome.killed {
        outcome.killed = true;
        outcome.killed_by = Some(report.id.clone());
        outcome.killed_status = Some(report.status.clone());
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            if let Some(replay) = v["replay"].as_str() {
                outcome.replay = replay.to_string();
            }
            outcome.killed_seen = v["seen"].as_str().or(v["reason"].as_str()).map(str::to_string);
        }
    } else if report.level == "should" && report.status == "warn" {
        outcome.warned.push(report.id);
    }
}

/// The last lines of a run's stderr, for a message.
fn tail(stderr: impl Read) -> String {
    let mut last = std::collections::VecDeque::new();
    for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
        if last.len() == 5 {
            last.pop_front();
        }
        last.push_back(line);
    }
    Vec::from(last).join(" | ")
}

/// Killed and survived by kind and by statement, the median time, and each
/// survivor with its replay: first those that [`survivors`] explains, then
/// the gaps in the cases, whose count it returns.
fn summary(chosen: &[Listed], outcomes: &[Outcome]) -> usize {
    let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut by_stmt: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for o in outcomes {
        let k = by_kind.entry(o.kind.as_str()).or_default();
        let s = by_stmt.entry(table::statement(&o.name, &o.kind)).or_default();
        if o.killed {
            k.0 += 1;
            s.0 += 1;
        } else {
            k.1 += 1;
            s.1 += 1;
        }
    }
    let killed = outcomes.iter().filter(|o| o.killed).count();
    let mut secs: Vec<f64> = outcomes.iter().map(|o| o.seconds).collect();
    secs.sort_by(f64::total_cmp);
    let median = secs.get(secs.len() / 2).copied().unwrap_or(0.0);
    println!();
    println!(
        "{} of {} selected mutants judged: {killed} killed, {} survived ({} stopped at the time bound); median {median:.1} s a mutant",
        outcomes.len(),
        chosen.len(),
        outcomes.len() - killed,
        outcomes.iter().filter(|o| o.timed_out && !o.killed).count()
    );
    println!("by kind (killed/survived):");
    for (kind, (k, s)) in &by_kind {
        println!("  {kind:<16} {k:>4} {s:>4}");
    }
    println!("by statement (killed/survived):");
    for (stmt, (k, s)) in &by_stmt {
        println!("  {stmt:<28} {k:>4} {s:>4}");
    }
    let (explained, gaps): (Vec<&Outcome>, Vec<&Outcome>) =
        outcomes.iter().filter(|o| !o.killed).partition(|o| survivors::why(&o.name).is_some());
    if !explained.is_empty() {
        println!("survivors beyond the cases, each with why ({}):", explained.len());
    }
    for o in &explained {
        println!("  {}: {}", o.name, survivors::why(&o.name).unwrap_or_default());
    }
    if !gaps.is_empty() {
        println!("survivors that a `must` case should kill ({}):", gaps.len());
    }
    for o in &gaps {
        let what = chosen.iter().find(|m| m.name == o.name).map_or("", |m| m.what.as_str());
        let note = if o.timed_out { " [stopped at the time bound]" } else { "" };
        println!("  {} ({}){note}: {what}", o.name, o.kind);
        if !o.warned.is_empty() {
            println!("    warned: {}", o.warned.join(", "));
        }
        println!("    replay: {}", o.replay);
    }
    for o in outcomes.iter().filter(|o| !o.chance_kills.is_empty()) {
        println!(
            "note: {} failed {} once, then passed it run again with the same seed: a kill by chance, not counted",
            o.chance_kills.join(", "),
            o.name
        );
    }
    for o in outcomes.iter().filter(|o| o.killed && survivors::why(&o.name).is_some()) {
        println!(
            "note: {} is listed as beyond the cases, and was killed this time (by {}): take it off the list if it is killed every time",
            o.name,
            o.killed_by.as_deref().unwrap_or("?")
        );
    }
    gaps.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_parsed() {
        assert_eq!(parse_shard("2/3"), Ok((2, 3)));
        assert!(parse_shard("0/3").is_err());
        assert!(parse_shard("4/3").is_err());
        assert!(parse_shard("x").is_err());
    }

    #[test]
    fn must_failures_kill_and_should_warnings_do_not() {
        let mut o = Outcome::unjudged("x", "generated", 1, String::new());
        read_report(r#"{"id":"a/b","level":"should","status":"warn","replay":"r1"}"#, &mut o);
        read_report(r#"{"id":"a/c","level":"must","status":"pass","replay":"r2"}"#, &mut o);
        assert!(!o.killed);
        assert_eq!(o.warned, ["a/b"]);
        read_report(r#"{"id":"a/d","level":"must","status":"timeout","replay":"r3"}"#, &mut o);
        read_report(r#"{"id":"a/e","level":"must","status":"fail","replay":"r4"}"#, &mut o);
        assert!(o.killed);
        assert_eq!(o.killed_by.as_deref(), Some("a/d"));
        assert_eq!(o.replay, "r3");
        assert_eq!(o.cases_run, 4);
    }

    #[test]
    fn a_siblings_killer_runs_first_and_only_once() {
        let batches = vec![vec!["steps/a", "steps/b"], vec!["compat/x", "compat/y"], vec!["crash/z"]];
        let mut killers = Killers::default();
        assert_eq!(killers.order("look/ror-1", &batches), batches, "nothing known: the families' order");
        let mut killed = Outcome::unjudged("look/ror-2", "ror", 1, String::new());
        killed.killed = true;
        killed.killed_by = Some("compat/y".into());
        killers.learn(&killed);
        let mut survived = Outcome::unjudged("look/off-1", "off", 1, String::new());
        survived.killed_by = Some("crash/z".into());
        killers.learn(&survived);
        let mut by_model = Outcome::unjudged("look/off-2", "off", 1, String::new());
        by_model.killed = true;
        by_model.killed_by = Some(MODEL.into());
        killers.learn(&by_model);
        assert_eq!(
            killers.order("look/uoi-3", &batches),
            [vec!["compat/y"], vec!["steps/a", "steps/b"], vec!["compat/x"], vec!["crash/z"]]
        );
        assert_eq!(killers.order("pick/ror-1", &batches), batches, "another statement's killers are not its");
    }

    #[test]
    fn shards_of_a_sample_are_disjoint_and_whole() {
        let args = |shard| ScoreArgs {
            run_cases: true,
            results: None,
            shard,
            sample: Some(20),
            seed: Some(7),
            only: Vec::new(),
            jobs: 2,
            mutant_timeout: Duration::from_secs(1),
            cases: Vec::new(),
            slow: false,
            broken: None,
            dry_run: false,
            table: false,
        };
        let whole: Vec<String> = selection(&args(None), 7).unwrap().into_iter().map(|m| m.name).collect();
        assert_eq!(whole.len(), 20);
        let mut joined: Vec<String> = (1..=3)
            .flat_map(|k| selection(&args(Some((k, 3))), 7).unwrap().into_iter().map(|m| m.name))
            .collect();
        joined.sort();
        let mut sorted = whole.clone();
        sorted.sort();
        assert_eq!(joined, sorted);
        assert!(whole.iter().all(|n| mutants::set_aside(n).is_none_or(|(list, _)| list != "equivalent")));
    }

    #[test]
    fn every_case_is_in_one_batch_the_quick_first() {
        let batches = batches(&[]).unwrap();
        assert_eq!(batches.iter().map(Vec::len).sum::<usize>(), cases::all().len());
        assert!(batches[0].iter().all(|id| QUICK.iter().any(|p| id.starts_with(p))));
        assert!(batches[1].iter().all(|id| OPENING.iter().any(|p| id.starts_with(p))));
    }
}
