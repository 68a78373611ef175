//! `ukue-conformance evolve`: an edit of FORMAT.md judged by the format's
//! promise (FORMAT.md §2.4, crate::spec::evolve) from the two pages'
//! text, and by running an old and a new program on one file, both ways
//! ([`programs`]; `--base REV` builds the old one: [`base`]). Exit 0 when
//! every difference is allowed within version 1 or the version was raised
//! and the programs share their files (or refuse each other's, across a
//! new version); 1 when a difference needs a new version and the version
//! stayed, or a case of the programs fails; 2 for a usage error (a path
//! that cannot be read, a page that does not parse); 3 when the runner
//! could not work (a build of `--base` that failed).

mod base;
mod changelog;
mod programs;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

use super::suite::{beside_me, exit, interrupt_kills_everything, me, RunArgs};
use crate::cases;
use crate::report::{failure_text, Status};
use crate::spec::coverage::CaseInfo;
use crate::spec::evolve::snapshot::Snapshot;
use crate::spec::evolve::{self, contract};
use crate::spec::{Page, CONFORMANCE_MD};
use crate::subjects::ctx::DEFAULT_CRASH_KILLS;
use changelog::TextVerdict;
use programs::{Direction, Programs, ProgramsVerdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvolveFormat {
    Human,
    Json,
    /// For a pull request's comment or a GitHub job summary
    Markdown,
}

#[derive(Debug, Args)]
pub struct EvolveArgs {
    /// The FORMAT.md before the edit
    #[arg(requires = "new", conflicts_with = "base")]
    pub old: Option<PathBuf>,
    /// The FORMAT.md after it
    pub new: Option<PathBuf>,
    /// The old program: run it and the new one on one file, both ways
    /// (crate::cases::evolve)
    #[arg(long, value_name = "PATH", requires = "new_impl", conflicts_with = "base")]
    pub old_impl: Option<PathBuf>,
    /// The new program (with --base, default: the `ukue` beside this
    /// binary, the current build)
    #[arg(long, value_name = "PATH")]
    pub new_impl: Option<PathBuf>,
    /// A revision of the checkout this runs in: its FORMAT.md is the old
    /// page and its reference, built into target/evolve-base/, the old
    /// program; the checkout's spec/FORMAT.md is the new page
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// The cargo profile --base builds its reference with (default
    /// `release`; `dev` builds faster, and runs slower)
    #[arg(long, value_name = "PROFILE")]
    pub base_profile: Option<String>,
    /// Run the programs one way only
    #[arg(long, value_enum)]
    pub direction: Option<Direction>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: EvolveFormat,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Why evolve could not give a verdict.
enum Trouble {
    Usage(String),
    Runner(anyhow::Error),
}

pub fn run(args: EvolveArgs) -> u8 {
    match evolve(&args) {
        Ok(code) => code,
        Err(Trouble::Usage(e)) => {
            eprintln!("ukue-conformance evolve: {e}");
            exit::USAGE
        }
        Err(Trouble::Runner(e)) => {
            eprintln!("ukue-conformance evolve: {e:#}");
            exit::RUNNER
        }
    }
}

/// The pages and programs the command line names: with `--base`, its
/// revision's page and reference against the checkout's page and the
/// current build.
struct Sides {
    pages: Option<(PathBuf, PathBuf)>,
    programs: Option<Programs>,
    /// The command line that names the same sides again (for replay lines).
    named: String,
}

fn sides(args: &EvolveArgs) -> Result<Sides, Trouble> {
    if args.run.reference.is_some() {
        return Err(Trouble::Usage(
            "--reference has no place here: evolve runs the old and new programs".into(),
        ));
    }
    if args.base_profile.is_some() && args.base.is_none() {
        return Err(Trouble::Usage("--base-profile says how to build --base REV: name the revision".into()));
    }
    if let Some(rev) = &args.base {
        let checkout = base::checkout().map_err(|e| Trouble::Usage(format!("{e:#}")))?;
        let new_page = checkout.join("spec/FORMAT.md");
        let new = match &args.new_impl {
            Some(p) => absolute(p)?,
            None => beside_me("ukue").ok_or_else(|| {
                Trouble::Usage(
                    "no `ukue` beside ukue-conformance to be the new program; name one with --new-impl"
                        .into(),
                )
            })?,
        };
        let profile = args.base_profile.as_deref().unwrap_or("release");
        let built = base::build(&checkout, rev, profile).map_err(Trouble::Runner)?;
        let mut named = format!("--base {} --base-profile {profile}", built.commit);
        if args.new_impl.is_some() {
            named.push_str(&format!(" --new-impl {}", new.display()));
        }
        return Ok(Sides {
            pages: Some((built.page, new_page)),
            programs: Some(Programs { old: built.program, new }),
            named,
        });
    }
    let pages = args.old.clone().zip(args.new.clone());
    let programs = match (&args.old_impl, &args.new_impl) {
        (Some(old), Some(new)) => Some(Programs { old: absolute(old)?, new: absolute(new)? }),
        (None, Some(_)) => return Err(Trouble::Usage("--new-impl needs --old-impl, or --base".into())),
        _ => None,
    };
    if pages.is_none() && programs.is_none() {
        return Err(Trouble::Usage(
            "name two pages (OLD.md NEW.md), two programs (--old-impl A --new-impl B), or --base REV".into(),
        ));
    }
    let named = programs
        .as_ref()
        .map(|p| format!("--old-impl {} --new-impl {}", p.old.display(), p.new.display()))
        .unwrap_or_default();
    Ok(Sides { pages, programs, named })
}

fn absolute(path: &Path) -> Result<PathBuf, Trouble> {
    std::fs::canonicalize(path).map_err(|e| Trouble::Usage(format!("{}: {e}", path.display())))
}

fn evolve(args: &EvolveArgs) -> Result<u8, Trouble> {
    let sides = sides(args)?;
    let text = match &sides.pages {
        Some((old, new)) => Some(judge(old, new).map_err(|e| Trouble::Usage(format!("{e:#}")))?),
        None => None,
    };
    let ran = match &sides.programs {
        Some(programs) => {
            interrupt_kills_everything().map_err(Trouble::Runner)?;
            let seed = args.run.seed.unwrap_or_else(rand::random);
            let directions: Vec<Direction> = match args.direction {
                Some(d) => vec![d],
                None => Direction::BOTH.to_vec(),
            };
            let replay = replay_prefix(args, &sides.named, seed);
            Some(programs::run(programs, &args.run, &directions, seed, &replay).map_err(Trouble::Runner)?)
        }
        None => None,
    };
    let pages = sides.pages.as_ref();
    match args.format {
        EvolveFormat::Human => {
            if let (Some(t), Some((old, new))) = (&text, pages) {
                print!("{}", t.human(old, new));
            }
            if let Some(ran) = &ran {
                if text.is_some() {
                    println!();
                }
                print!("{}", programs_human(ran));
            }
        }
        EvolveFormat::Json => {
            let mut value = text.as_ref().map_or_else(|| serde_json::json!({}), TextVerdict::json);
            if let Some(ran) = &ran {
                value["programs"] = programs_json(ran);
            }
            println!("{value}");
        }
        EvolveFormat::Markdown => {
            if let (Some(t), Some((old, new))) = (&text, pages) {
                print!("{}", t.markdown(old, new));
            }
            if let Some(ran) = &ran {
                print!("{}", programs_markdown(ran));
            }
        }
    }
    let broken =
        text.as_ref().is_some_and(TextVerdict::breaks) || ran.as_ref().is_some_and(ProgramsVerdict::breaks);
    Ok(if broken { exit::FAILURES } else { exit::OK })
}

/// `ukue-conformance evolve SIDES --seed S`, with the run's flags that
/// change what a case does; `--direction D --cases ID` follow.
fn replay_prefix(args: &EvolveArgs, named: &str, seed: u64) -> String {
    let mut line = format!("{} evolve {named} --seed {seed}", me());
    if args.run.no_python {
        line.push_str(" --no-python");
    } else if let Some(python) = &args.run.python {
        line.push_str(&format!(" --python {}", python.display()));
    }
    if args.run.keep {
        line.push_str(" --keep");
    }
    if args.run.crash_kills != DEFAULT_CRASH_KILLS {
        line.push_str(&format!(" --crash-kills {}", args.run.crash_kills));
    }
    if let Some(n) = args.run.processes {
        line.push_str(&format!(" --processes {n}"));
    }
    line
}

/// Each direction's tally, every case that did not pass in full, and the
/// lines that run them again.
fn programs_human(v: &ProgramsVerdict) -> String {
    let mut out = format!("programs: {}\n", sides_line(v, ""));
    for run in &v.runs {
        out.push_str(&format!("\n{}: {}\n", run.direction.name(), run.direction.title()));
        for r in run.failed() {
            out.push_str(&format!("{}\n", failure_text(r)));
        }
        // What the new version's cases found the programs doing.
        for r in run.reports.iter().filter(|r| r.id.starts_with("evolve/") && !r.status.is_bad()) {
            for note in &r.notes {
                out.push_str(&format!("{:<16} {}: {note}\n", r.status.as_str(), r.id));
            }
        }
        out.push_str(&format!("{}: {}\n", run.direction.name(), tally(run)));
    }
    let failed: Vec<String> = v.runs.iter().flat_map(|run| run.failed().map(|r| r.replay.clone())).collect();
    if failed.is_empty() && v.new_version > v.old_version {
        out.push_str("\nverdict: a new version, kept apart: the old program refuses the new one's files\n");
    } else if failed.is_empty() && v.runs.len() == 1 {
        out.push_str(&format!(
            "\nverdict: the old and new programs share their files, one way ({})\n",
            v.runs[0].direction.name()
        ));
    } else if failed.is_empty() {
        out.push_str("\nverdict: the old and new programs share their files both ways\n");
    } else {
        let ways: Vec<&str> =
            v.runs.iter().filter(|r| r.failed().next().is_some()).map(|r| r.direction.name()).collect();
        out.push_str(&format!(
            "\nverdict: the programs do not share their files: {} fails\n",
            ways.join(" and ")
        ));
        out.push_str("to replay the cases that did not pass:\n");
        for line in failed {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

/// `old PATH (format_version N), new PATH (format_version M), seed S`,
/// each path between `quote`s.
fn sides_line(v: &ProgramsVerdict, quote: &str) -> String {
    format!(
        "old {quote}{}{quote} (format_version {}), new {quote}{}{quote} (format_version {}), seed {}",
        v.programs.old.display(),
        v.old_version,
        v.programs.new.display(),
        v.new_version,
        v.seed
    )
}

fn tally(run: &programs::DirectionRun) -> String {
    let failed = run.failed().count();
    format!(
        "{} passed, {} skipped, {failed} failed ({:.0} s)",
        run.count(Status::Pass),
        run.count(Status::Skipped),
        run.elapsed.as_secs_f64()
    )
}

fn programs_json(v: &ProgramsVerdict) -> serde_json::Value {
    let runs: Vec<serde_json::Value> = v
        .runs
        .iter()
        .map(|run| {
            serde_json::json!({
                "direction": run.direction.name(), "title": run.direction.title(),
                "subject": run.info.implementation, "reference": run.info.reference,
                "passed": run.count(Status::Pass), "skipped": run.count(Status::Skipped),
                "failed": run.failed().count(), "elapsed_ms": run.elapsed.as_millis() as u64,
                "cases": run.reports,
            })
        })
        .collect();
    serde_json::json!({
        "old": v.programs.old, "new": v.programs.new,
        "old_version": v.old_version, "new_version": v.new_version,
        "seed": v.seed, "breaks": v.breaks(), "directions": runs,
    })
}

fn programs_markdown(v: &ProgramsVerdict) -> String {
    let mark = if v.breaks() { "❌" } else { "✅" };
    let mut out = format!("\n### {mark} Old and new programs on one file\n\n{}\n\n", sides_line(v, "`"));
    out.push_str("| direction | cases | passed | failed |\n|---|---|---|---|\n");
    for run in &v.runs {
        out.push_str(&format!(
            "| `{}`: {} | {} | {} | {} |\n",
            run.direction.name(),
            run.direction.title(),
            run.reports.len(),
            run.count(Status::Pass),
            run.failed().count()
        ));
    }
    let failed: Vec<(&str, &crate::report::CaseReport)> =
        v.runs.iter().flat_map(|run| run.failed().map(move |r| (run.direction.name(), r))).collect();
    if !failed.is_empty() {
        out.push_str("\n| direction | case | seen |\n|---|---|---|\n");
        for (direction, r) in &failed {
            let seen = r.seen.as_deref().unwrap_or("").replace('|', "\\|").replace('\n', " ");
            let seen: String = seen.chars().take(300).collect();
            out.push_str(&format!("| `{direction}` | `{}` | {seen} |\n", r.id));
        }
        out.push_str("\nTo replay them:\n\n```sh\n");
        for (_, r) in &failed {
            out.push_str(&format!("{}\n", r.replay));
        }
        out.push_str("```\n");
    }
    out
}

/// The two pages' text judged: FORMAT.md by the format's promise,
/// COMMAND.md by the contract's.
fn judge(old_path: &Path, new_path: &Path) -> Result<TextVerdict> {
    let read = |path: &Path| std::fs::read_to_string(path).with_context(|| format!("{}", path.display()));
    let (old_md, new_md) = (read(old_path)?, read(new_path)?);
    let cases: Vec<CaseInfo> = cases::all().iter().map(CaseInfo::from).collect();
    match (Page::of(&old_md), Page::of(&new_md)) {
        (Page::Command, Page::Command) => {
            Ok(TextVerdict::Command(contract::compare(&old_md, &new_md, CONFORMANCE_MD, &cases)))
        }
        (Page::Format, Page::Format) => {
            let snapshot = |text: &str, path: &Path| {
                Snapshot::read(text)
                    .with_context(|| format!("{}: not a FORMAT.md evolve can read", path.display()))
            };
            let (old, new) = (snapshot(&old_md, old_path)?, snapshot(&new_md, new_path)?);
            Ok(TextVerdict::Format(evolve::compare(&old, &new, CONFORMANCE_MD, &cases)))
        }
        (o, n) => anyhow::bail!(
            "{} is a {} and {} a {}: evolve compares two versions of one page",
            old_path.display(),
            o.name(),
            new_path.display(),
            n.name()
        ),
    }
}
