//! powerloss: a power cut loses nothing that was acknowledged (FORMAT.md
//! §6.1). A workload runs under `strace -f -y -xx` on a file the subject
//! made; from its recording ([`crate::subjects::observe::recording`]),
//! [`crate::check::crash_states`] rebuilds the states of the file and its
//! `-wal` that a cut just before each sync could leave (unsynced writes
//! kept, dropped or torn at a sector boundary). Each state is opened
//! read-write on a copy (so SQLite recovers it), and must pass
//! `integrity_check` and the invariants (§7) and hold every job whose add
//! was acknowledged before the cut (an id printed), and every claim whose
//! command had started (its attempt counted), unless the job's command had
//! ended before the cut (then its finish may have removed it).
//!
//! Each case writes what it checked to `powerloss.txt` in its directory.

use std::collections::hash_map::DefaultHasher;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::check::crash_states::{self, Sampling};
use crate::check::{self, file::invariants_of};
use crate::shown::text;
use crate::subjects::ctx::{clip, expect_success, path_str, Ctx};
use crate::subjects::observe::file::job_count;
use crate::subjects::observe::recording::{self, place, Effect, FileKind, Images, Recorded};
use crate::subjects::observe::strace::{self, Invocation};
use crate::subjects::probe::{Record, RecordKind};
use crate::subjects::worker::probe_log;
use crate::subjects::Failure;
use crate::subjects::Subject;

use super::common;

/// At most 400 states a case, 4 random ones a cut.
const SAMPLING: Sampling = Sampling { random_per_cut: 4, budget: 400 };
/// Jobs added before the trace (their ids are acknowledged too).
const SETUP_ADDS: usize = 2;

pub fn cases() -> Vec<Case> {
    let strace = Needs { strace: true, ..Needs::default() };
    vec![
        Case {
            id: "powerloss/subject-adds",
            rule: "6.1",
            summary: "a power cut at any sync of 6 adds (unsynced writes kept, dropped or torn) leaves a sound file holding every acknowledged job",
            needs: strace,
            level: Level::Must,
            run: subject_adds,
        },
        Case {
            id: "powerloss/python-adds",
            rule: "6.1",
            summary: "the same for 4 adds by add_job.py to a file the subject made",
            needs: Needs { python: true, strace: true, ..Needs::default() },
            level: Level::Must,
            run: python_adds,
        },
        Case {
            id: "powerloss/python-driver-adds",
            rule: "6.1",
            summary: "the same for 4 adds by the Python step driver (clients/python/ukue_driver.py), acknowledged by its answers",
            needs: Needs { python: true, strace: true, ..Needs::default() },
            level: Level::Must,
            run: python_driver_adds,
        },
        Case {
            id: "powerloss/work-finishes",
            rule: "6.1",
            summary: "a power cut while work claims and finishes jobs (and adds go on) loses no acknowledged job or claim",
            needs: strace,
            level: Level::Must,
            run: work_finishes,
        },
    ]
}

fn subject_adds(ctx: &mut Ctx) -> CaseResult {
    let subject = ctx.subject().clone();
    adds(ctx, &subject, 6)
}

fn python_adds(ctx: &mut Ctx) -> CaseResult {
    let python =
        ctx.subjects.python.clone().ok_or_else(|| {
            Failure::error("python3 for add_job.py", "no python (the case should be skipped)")
        })?;
    adds(ctx, &python, 4)
}

/// 4 adds by one Python step-driver process, each acknowledged by the
/// driver's answer line `{"ok": true, "id": N}`.
fn python_driver_adds(ctx: &mut Ctx) -> CaseResult {
    let driver = ctx.subjects.python_driver.clone().ok_or_else(|| {
        Failure::error("python3 for ukue_driver.py", "no python (the case should be skipped)")
    })?;
    let run = prepare(ctx)?;
    let open = serde_json::json!({"op": "open", "path": path_str(&run.file), "create": false}).to_string();
    let mut requests = vec![quote(&open)];
    for i in 1..=4 {
        requests.push(quote(
            &serde_json::json!({"op": "add", "queue": "q", "payload": format!("job-{i}")}).to_string(),
        ));
    }
    let script =
        write_script(ctx, &[format!("printf '%s\\n' {} | {}", requests.join(" "), command(&driver))])?;
    let (stdout, stream) = run_script(ctx, &run, &script)?;
    let printed = strace::acknowledged_ids(&stdout);
    if printed.len() != 4 {
        return Err(Failure::error("4 ids in the driver's answers to 4 adds", text(&clip(&stdout))));
    }
    check_states(ctx, &run, &printed, &stream, None)
}

/// `n` adds by `who`, one process after another, under strace.
fn adds(ctx: &mut Ctx, who: &Subject, n: usize) -> CaseResult {
    let run = prepare(ctx)?;
    // add_job.py's add is spelled without the word `add`.
    let add = if who.name == "add_job.py" { "" } else { "add " };
    let script = write_script(
        ctx,
        &[
            format!("i=1; while [ $i -le {n} ]; do"),
            format!("  {} {add}{} q job-$i || exit 1", command(who), quote(path_str(&run.file))),
            "  i=$((i+1))".into(),
            "done".into(),
        ],
    )?;
    let (stdout, stream) = run_script(ctx, &run, &script)?;
    let printed = strace::acknowledged_ids(&stdout);
    if printed.len() != n {
        return Err(Failure::error(format!("{n} ids printed by {n} adds"), text(&clip(&stdout))));
    }
    check_states(ctx, &run, &printed, &stream, None)
}

/// A worker runs the jobs (the setup's and 6 more added meanwhile) and
/// finishes them; the harness tells the traced script when all are gone.
fn work_finishes(ctx: &mut Ctx) -> CaseResult {
    let run = prepare(ctx)?;
    let subject = ctx.subject().clone();
    let log = probe_log(ctx);
    let file = quote(path_str(&run.file));
    let n = 6;
    let script = write_script(
        ctx,
        &[
            format!(
                "{} work {file} q --poll 20ms -- {} {} >/dev/null 2>worker.stderr &",
                command(&subject),
                quote(path_str(&ctx.subjects.probe)),
                quote(path_str(&log))
            ),
            "worker=$!".into(),
            format!("i=1; while [ $i -le {n} ]; do"),
            format!("  {} add {file} q job-$i || {{ kill $worker; exit 1; }}", command(&subject)),
            "  i=$((i+1))".into(),
            "done".into(),
            "# The harness writes a line (or closes stdin) once every job is gone.".into(),
            "read go".into(),
            "kill -TERM $worker".into(),
            "wait $worker".into(),
        ],
    )?;
    let args = Invocation::record().args(&run.trace, &["sh", path_str(&script)]);
    let stdout_path = ctx.path("script.stdout");
    let stderr_path = ctx.path("script.stderr");
    let mut cmd = Command::new(strace::program(ctx)?);
    cmd.args(&args)
        .current_dir(&ctx.dir)
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&stdout_path)?)
        .stderr(std::fs::File::create(&stderr_path)?);
    let mut traced =
        ctx.procs.spawn(&mut cmd).map_err(|e| Failure::error("strace to start", e.to_string()))?;
    let mut go = traced.child.stdin.take();
    // What the script and the worker said on stderr, for a report.
    let said = || {
        format!(
            "{}; worker: {}",
            clip(&std::fs::read_to_string(&stderr_path).unwrap_or_default()),
            clip(&std::fs::read_to_string(ctx.path("worker.stderr")).unwrap_or_default())
        )
    };
    let total = SETUP_ADDS + n;
    let finished = ctx.wait_for(
        &format!("the traced worker to run and finish all {total} jobs"),
        Duration::from_secs(60),
        || {
            if let Some(status) = traced.child.try_wait()? {
                return Err(Failure::fail(
                    "the traced script to keep running until every job is finished",
                    format!("it ended ({status}): {}", said()),
                ));
            }
            let ended = common::executions(ctx)?.iter().filter(|e| e.end_ms.is_some()).count();
            Ok(ended >= total && job_count(&run.file)? == 0)
        },
    );
    if let Some(mut pipe) = go.take() {
        let _ = pipe.write_all(b"go\n");
    }
    finished?;
    let status = traced.wait_timeout(Duration::from_secs(30))?.ok_or_else(|| {
        Failure::timeout(
            "the worker to stop within 30 s of SIGTERM, and strace with it",
            "it was still running",
        )
    })?;
    if !status.success() {
        return Err(Failure::fail(
            "the traced script (adds, then the worker stopped by SIGTERM) to exit 0",
            format!("{status}: {}", said()),
        ));
    }
    let printed = strace::acknowledged_ids(&std::fs::read_to_string(&stdout_path)?);
    if printed.len() != n {
        return Err(Failure::error(format!("{n} ids printed by {n} adds"), format!("{printed:?}")));
    }
    check_states(ctx, &run, &printed, &strace::named(&stdout_path)?, Some(&log))
}

/// A file the subject made, before the traced workload.
struct Prepared {
    file: PathBuf,
    /// The file's absolute, resolved path, as strace -y shows it.
    db: String,
    base: Images,
    /// Ids the setup's adds printed.
    base_ids: Vec<i64>,
    trace: PathBuf,
}

/// `init` and a few adds by the subject; the files as they are then.
fn prepare(ctx: &mut Ctx) -> Result<Prepared, Failure> {
    let file = ctx.init("jobs.ukue")?;
    let subject = ctx.subject().clone();
    let mut base_ids = Vec::new();
    for i in 1..=SETUP_ADDS {
        base_ids.push(ctx.add(&subject, &file, "q", &format!("setup-{i}"), &[])?);
    }
    let db = std::fs::canonicalize(&file)?.display().to_string();
    let mut base = Images::new();
    for kind in FileKind::ALL {
        let path = PathBuf::from(format!("{db}{}", kind.suffix()));
        if path.exists() {
            base.insert(kind, std::fs::read(&path)?);
        }
    }
    Ok(Prepared { file, db, base, base_ids, trace: ctx.path("workload.strace") })
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `who`'s program and leading arguments, quoted for sh.
fn command(who: &Subject) -> String {
    std::iter::once(path_str(&who.program))
        .chain(who.args.iter().map(String::as_str))
        .map(quote)
        .collect::<Vec<_>>()
        .join(" ")
}

fn write_script(ctx: &Ctx, lines: &[String]) -> Result<PathBuf, Failure> {
    let path = ctx.path("script.sh");
    std::fs::write(&path, format!("{}\n", lines.join("\n")))?;
    Ok(path)
}

/// Runs `sh SCRIPT` under strace to its end; it must exit 0. Returns what
/// it printed, and its stdout as the trace names it.
fn run_script(ctx: &Ctx, run: &Prepared, script: &Path) -> Result<(String, String), Failure> {
    let traced = Invocation::record().run(ctx, &run.trace, &["sh", path_str(script)])?;
    let strace = Subject { name: "strace".into(), program: strace::program(ctx)?, args: Vec::new() };
    expect_success(&strace, &["--", "sh", "script.sh"], &traced.out)?;
    Ok((String::from_utf8_lossy(&traced.out.stdout).into_owned(), traced.stdout))
}

/// What a state must show, from what was acknowledged before its cut.
#[derive(Default)]
struct Promises {
    /// Acknowledged adds: id → where.
    added: BTreeMap<i64, String>,
    /// Started commands: job → (attempt, where).
    claimed: BTreeMap<i64, (i64, String)>,
    /// Jobs whose command had ended: their finish may have removed them.
    ended: BTreeSet<i64>,
}

impl Promises {
    fn learn(&mut self, recorded: &Recorded) {
        match &recorded.effect {
            Effect::Printed { id } => {
                self.added.entry(*id).or_insert_with(|| format!("{} (printed)", place(recorded)));
            }
            Effect::Logged { text } => {
                let Ok(record) = serde_json::from_str::<Record>(text) else { return };
                match record.event {
                    RecordKind::Start => {
                        let at = format!("{} (the probe's start record)", place(recorded));
                        self.claimed.insert(record.job, (record.attempt, at));
                    }
                    RecordKind::End => {
                        self.ended.insert(record.job);
                    }
                }
            }
            _ => {}
        }
    }

    /// What the state's jobs (id → state, attempts) break.
    fn broken(&self, jobs: &BTreeMap<i64, (String, i64)>) -> Vec<String> {
        let mut problems = Vec::new();
        for (id, at) in &self.added {
            if !jobs.contains_key(id) && !self.ended.contains(id) {
                problems.push(format!("job {id}, acknowledged at {at}, is missing"));
            }
        }
        for (id, (attempt, at)) in &self.claimed {
            match jobs.get(id) {
                Some((state, attempts)) if attempts < attempt => problems.push(format!(
                    "job {id}, whose attempt {attempt} started at {at}, is {state} with {attempts} attempts: its claim was lost"
                )),
                None if !self.ended.contains(id) => {
                    problems.push(format!("job {id}, whose attempt {attempt} started at {at}, is missing"))
                }
                _ => {}
            }
        }
        problems
    }
}

/// Builds the crash states of the trace and checks each; writes
/// `powerloss.txt`. `stdout` is the stream the harness read the ids from.
fn check_states(
    ctx: &mut Ctx,
    run: &Prepared,
    printed: &[i64],
    stdout: &str,
    log: Option<&Path>,
) -> CaseResult {
    let started = Instant::now();
    let text =
        std::fs::read_to_string(&run.trace).map_err(|e| Failure::error("an strace log", e.to_string()))?;
    let log = match log {
        Some(log) => Some(std::fs::canonicalize(log)?.display().to_string()),
        None => None,
    };
    let recording = recording::record(&text, &run.db, stdout, log.as_deref(), &run.base);
    if !recording.problems.is_empty() {
        return Err(Failure::error(
            "a trace that the power-loss model can follow",
            recording.problems.iter().take(5).cloned().collect::<Vec<_>>().join("; "),
        ));
    }
    let traced: Vec<i64> = recording
        .recorded
        .iter()
        .filter_map(|r| match r.effect {
            Effect::Printed { id } => Some(id),
            _ => None,
        })
        .collect();
    if traced != printed {
        return Err(Failure::error(
            "the trace to show each id the adds printed, written to stdout",
            format!("printed {printed:?}, traced {traced:?}"),
        ));
    }
    let writes = recording.count(|e| matches!(e, Effect::Change { .. }));
    if writes == 0 {
        return Err(Failure::error(format!("writes to {} in the trace", run.db), "none"));
    }
    let states = crash_states::states(&recording.recorded, &mut ctx.rng, SAMPLING);
    let name = Path::new(&run.db).file_name().and_then(|n| n.to_str()).unwrap_or("jobs.ukue").to_string();
    let mut promises = Promises::default();
    for id in &run.base_ids {
        promises.added.insert(*id, "before the trace (the setup's add)".into());
    }
    let mut learned = 0;
    let mut opened: HashMap<u64, Opened> = HashMap::new();
    let scratch = ctx.path("state");
    let mut outcome = Ok(());
    let mut checked = 0;
    for (k, state) in states.iter().enumerate() {
        checked += 1;
        for recorded in &recording.recorded[learned..state.at] {
            promises.learn(recorded);
        }
        learned = state.at;
        let images = crash_states::image(&run.base, &recording.recorded, state);
        let key = hash(&images);
        let seen = match opened.entry(key) {
            Entry::Occupied(seen) => seen.into_mut(),
            Entry::Vacant(slot) => slot.insert(open_state(&scratch, &name, &images)?),
        };
        let problems = match seen {
            Ok(jobs) => promises.broken(jobs),
            Err(problem) => vec![problem.clone()],
        };
        if !problems.is_empty() {
            let kept = ctx.path("failed-state");
            write_images(&kept, &name, &images)?;
            let cut =
                crash_states::describe(&recording.recorded, state, |kind| format!("{name}{}", kind.suffix()));
            outcome = Err(Failure::fail(
                "every state a power cut could leave to open, pass integrity_check and the invariants (FORMAT.md §7), and hold every job acknowledged before the cut (§6.1)",
                format!(
                    "{cut}: {} (crash state {} of {}; its files are in failed-state/)",
                    problems.join("; "),
                    k + 1,
                    states.len()
                ),
            ));
            break;
        }
    }
    let summary = format!(
        "{} cuts, {checked} of {} crash states checked ({} distinct file images opened), {} writes and {} syncs traced, {} ids acknowledged, {} ms\n",
        crash_states::cuts(&recording.recorded).len(),
        states.len(),
        opened.len(),
        writes,
        recording.count(|e| matches!(e, Effect::Sync { .. })),
        run.base_ids.len() + printed.len(),
        started.elapsed().as_millis()
    );
    std::fs::write(ctx.path("powerloss.txt"), summary)?;
    let _ = std::fs::remove_dir_all(&scratch);
    outcome
}

fn hash(images: &Images) -> u64 {
    let mut h = DefaultHasher::new();
    images.hash(&mut h);
    h.finish()
}

fn write_images(dir: &Path, name: &str, images: &Images) -> Result<(), Failure> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    for (kind, bytes) in images {
        std::fs::write(dir.join(format!("{name}{}", kind.suffix())), bytes)?;
    }
    Ok(())
}

/// A state's jobs (id → state, attempts), or what is wrong with it.
type Opened = Result<BTreeMap<i64, (String, i64)>, String>;

/// Writes a state into `dir` and opens it read-write (SQLite recovers it
/// from the `-wal`).
fn open_state(dir: &Path, name: &str, images: &Images) -> Result<Opened, Failure> {
    write_images(dir, name, images)?;
    let conn = match Connection::open(dir.join(name)) {
        Ok(conn) => conn,
        Err(e) => return Ok(Err(format!("it does not open: {e}"))),
    };
    // A scratch copy: its checkpoint at close need not reach the disk.
    let _ = conn.pragma_update(None, "synchronous", "OFF");
    let findings = invariants_of(&conn);
    if !findings.is_empty() {
        return Ok(Err(check::describe(&findings)));
    }
    let jobs = conn.prepare("SELECT id, state, attempts FROM ukue_jobs").and_then(|mut st| {
        st.query_map([], |r| Ok((r.get::<_, i64>(0)?, (r.get::<_, String>(1)?, r.get::<_, i64>(2)?))))?
            .collect::<Result<BTreeMap<_, _>, _>>()
    });
    Ok(jobs.map_err(|e| format!("its jobs cannot be read: {e}")))
}
