//! interop: one program adds, another works, through the file alone. Jobs
//! that the reference, the subject, add_job.py or plain SQL (FORMAT.md
//! §5.3's short INSERT) added are run exactly once each, with their
//! payloads, by the other program's worker (§6.3). `--processes N` makes
//! a hand-off N producers adding at once, then N workers.

use std::path::Path;
use std::time::Duration;

use rand::Rng;
use serde_json::Value;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::ensure;
use crate::history::Added;
use crate::shown::Shown;
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::observe::file::write;
use crate::subjects::worker::drain;
use crate::subjects::Failure;
use crate::subjects::Subject;

use super::common;

/// Jobs a producer adds in a hand-off case.
const JOBS: usize = 20;

pub fn cases() -> Vec<Case> {
    let case =
        |id, rule, summary, run| Case { id, rule, summary, needs: Needs::default(), level: Level::Must, run };
    vec![
        Case {
            needs: Needs { reference: true, ..Needs::default() },
            ..case(
                "interop/reference-adds-subject-works",
                "6.3",
                "20 jobs the reference adds run exactly once each, with their payloads, in the subject's worker",
                reference_adds_subject_works,
            )
        },
        Case {
            needs: Needs { reference: true, ..Needs::default() },
            ..case(
                "interop/subject-adds-reference-works",
                "6.3",
                "20 jobs the subject adds run exactly once each, with their payloads, in the reference's worker",
                subject_adds_reference_works,
            )
        },
        Case {
            needs: Needs { python: true, ..Needs::default() },
            ..case(
                "interop/python-adds-subject-works",
                "6.3",
                "20 jobs add_job.py adds run exactly once each, with their payloads, in the subject's worker",
                python_adds_subject_works,
            )
        },
        case(
            "interop/text-payload-from-sql",
            "5.3",
            "jobs added by FORMAT.md's short INSERT (TEXT payloads) are shown and run as their UTF-8 bytes",
            text_payload_from_sql,
        ),
    ]
}

/// Who adds the jobs of a hand-off case.
pub(super) enum Producer {
    Program(Subject),
    Python,
}

/// A payload from the case's seed: a number, then words of letters,
/// accented letters and signs (never a probe step: no `:`, no `-`).
fn payload(ctx: &mut Ctx, i: usize) -> String {
    const CHARS: &[char] =
        &['a', 'b', 'k', 'q', 'x', 'z', 'é', 'ü', 'ß', '✓', '日', '.', ',', '!', '"', '\'', '$'];
    let words = ctx.rng.gen_range(1..=3);
    let mut text = format!("{i:02}");
    for _ in 0..words {
        text.push(' ');
        let len = ctx.rng.gen_range(1..=12);
        text.extend((0..len).map(|_| CHARS[ctx.rng.gen_range(0..CHARS.len())]));
    }
    text
}

/// The file is made by `maker`'s `init`; `producer` adds the jobs (one
/// process at a time, or `--processes` of them at once); `worker`'s `work`
/// must run each exactly once with its payload.
pub(super) fn hand_off(ctx: &mut Ctx, maker: &Subject, producer: Producer, worker: &Subject) -> CaseResult {
    let file = ctx.tracked_file("shared.ukue");
    ctx.ok(maker, &["init", path_str(&file)])?;
    let processes = ctx.processes.unwrap_or(1);
    let payloads: Vec<Vec<String>> =
        (0..processes).map(|p| (1..=JOBS).map(|i| payload(ctx, p * JOBS + i)).collect()).collect();
    let ctx_ref: &Ctx = ctx;
    let (file_ref, producer_ref) = (file.as_path(), &producer);
    let produced: Vec<Result<Vec<Added>, Failure>> = std::thread::scope(|scope| {
        let handles: Vec<_> = payloads
            .into_iter()
            .map(|payloads| scope.spawn(move || add_each(ctx_ref, file_ref, producer_ref, payloads)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Failure::error("a producer", "panicked"))))
            .collect()
    });
    let mut added = Vec::new();
    for batch in produced {
        added.extend(batch?);
    }
    added.sort_by_key(|a| a.job);
    check_ids(&file, &added)?;
    let limit = Duration::from_secs(60) + Duration::from_millis(200) * added.len() as u32;
    drain(ctx, worker, &file, "q", &["--poll", "20ms"], processes, limit)?;
    common::note_contention(ctx, processes, processes, added.len());
    common::ran_exactly_once(ctx, &file, added)
}

/// `producer` adds a job of each payload, one after another.
fn add_each(
    ctx: &Ctx,
    file: &Path,
    producer: &Producer,
    payloads: Vec<String>,
) -> Result<Vec<Added>, Failure> {
    payloads
        .into_iter()
        .map(|payload| {
            let (job, by) = match producer {
                Producer::Program(who) => {
                    (ctx.past_busy(|| ctx.add(who, file, "q", &payload, &[]))?, who.name.clone())
                }
                Producer::Python => {
                    (ctx.past_busy(|| ctx.python_add(file, "q", &payload, &[]))?, "add_job.py".to_string())
                }
            };
            Ok(Added { job, payload, by })
        })
        .collect()
}

/// The ids the producer printed are the file's, and hold the payloads it
/// was given.
fn check_ids(file: &Path, added: &[Added]) -> CaseResult {
    let in_file = common::jobs_as_added(file, "")?;
    let seen: Vec<(i64, &str)> = in_file.iter().map(|a| (a.job, a.payload.as_str())).collect();
    let printed: Vec<(i64, &str)> = added.iter().map(|a| (a.job, a.payload.as_str())).collect();
    ensure!(
        seen == printed,
        "the file to hold the added jobs under the ids printed, with their payloads",
        format!("printed {}\nin the file {}", printed.shown(), seen.shown())
    );
    Ok(())
}

fn reference_adds_subject_works(ctx: &mut Ctx) -> CaseResult {
    let (reference, subject) = (ctx.reference().clone(), ctx.subject().clone());
    hand_off(ctx, &reference, Producer::Program(reference.clone()), &subject)
}

fn subject_adds_reference_works(ctx: &mut Ctx) -> CaseResult {
    let (reference, subject) = (ctx.reference().clone(), ctx.subject().clone());
    hand_off(ctx, &subject, Producer::Program(subject.clone()), &reference)
}

fn python_adds_subject_works(ctx: &mut Ctx) -> CaseResult {
    let subject = ctx.subject().clone();
    hand_off(ctx, &subject, Producer::Python, &subject)
}

fn text_payload_from_sql(ctx: &mut Ctx) -> CaseResult {
    let subject = ctx.subject().clone();
    let file = ctx.init("sql.ukue")?;
    let texts = ["hello", "grüße ✓"];
    {
        let conn = write(&file)?;
        // FORMAT.md §5.3's short form: every other column from the schema.
        conn.execute("INSERT INTO ukue_jobs (queue, payload) VALUES ('q', 'hello')", [])?;
        conn.execute("INSERT INTO ukue_jobs (queue, payload) VALUES ('q', ?1)", [texts[1]])?;
    }
    let added = common::jobs_as_added(&file, "SQL")?;
    ensure!(
        added.iter().map(|a| a.payload.as_str()).eq(texts),
        "two jobs inserted by SQL",
        added.iter().map(|a| (a.job, a.payload.as_str())).collect::<Vec<_>>().shown()
    );
    for a in &added {
        let id = a.job.to_string();
        let job = ctx.json(&subject, &["show", path_str(&file), &id, "--json"])?;
        ensure!(
            job.get("payload").and_then(Value::as_str) == Some(a.payload.as_str()),
            format!(
                "`show {id} --json` to give \"payload\": {} (the TEXT payload as its UTF-8 bytes)",
                a.payload.shown()
            ),
            clip(&job.to_string())
        );
    }
    drain(ctx, &subject, &file, "q", &["--poll", "20ms"], 1, Duration::from_secs(30))?;
    common::ran_exactly_once(ctx, &file, added)
}
