//! spec/COMMAND.md §7–9: `list`'s limit (the published default is 50, and
//! its `List` takes a limit over 1000 as 1000) and the states it knows
//! (the published `ParseState`: ready, delayed, running, done, dead, as
//! written), `show` of an id no job has (the published `Get`'s not-found
//! error, exit status 1), and the order of `stats --json` (the published
//! `Stats`: `ORDER BY queue`).

use rand::seq::SliceRandom;
use serde_json::Value;

use crate::cases::steps::contract::listed;
use crate::cases::steps::rows::only_changed;
use crate::cases::steps::setup::{insert, Put};
use crate::cases::{common, CaseResult};
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::observe::file::rows;
use crate::subjects::probe::now_ms;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::{file_with_job, fill, run, shown, text, Untouched};

/// Jobs in the file `list-limit` reads: more than the most a list shows.
const JOBS: usize = 1_002;
const MOST: usize = 1_000;

/// How many of the ids (in order, from the first after `--after`) a list
/// must show; None for a limit over the most, which may be refused.
#[rustfmt::skip]
const LIMITS: &[(&[&str], Option<usize>)] = &[
    (&[], Some(50)),
    (&["--limit", "1"], Some(1)),
    (&["--limit", "7", "--after", "AFTER"], Some(7)),
    (&["--limit", "1000"], Some(MOST)),
    (&["--limit", "1000", "--after", "AFTER"], Some(MOST)),
    (&["--limit", "1001"], None),
    (&["--limit", "100000"], None),
];

pub(super) fn list_limit(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("limit.ukue")?;
    let now = now_ms();
    let ids = insert(&file, &vec![Put::new("q", "ready", now); JOBS])?;
    let after = ids[0].to_string();
    for (options, shows) in LIMITS {
        let template: Vec<&str> = ["list", "FILE", "--json"].iter().chain(options.iter()).copied().collect();
        let args = fill(&template, &[("FILE", path_str(&file)), ("AFTER", &after)]);
        let what = shown(ctx, &who, &args);
        let out = run(ctx, &who, &args, None)?;
        if shows.is_none() && matches!(out.status.code(), Some(1 | 2)) && !text(&out.stderr).trim().is_empty()
        {
            continue; // refused: allowed for a limit over the most
        }
        let stdout = text(&out.stdout);
        ensure!(
            out.status.code() == Some(0),
            format!(
                "{what} to list jobs{}",
                if shows.is_none() { ", or to refuse the limit (exit status 1 or 2)" } else { "" }
            ),
            common::outcome(&out)
        );
        let value: Value = serde_json::from_str(&stdout)
            .map_err(|e| Failure::fail(format!("{what} to print JSON"), format!("{e}: {}", clip(&stdout))))?;
        let seen: Vec<i64> = listed(&value, &what)?.iter().filter_map(|j| j["id"].as_i64()).collect();
        let first = usize::from(options.contains(&"AFTER"));
        let n = shows.unwrap_or(MOST).min(JOBS - first);
        let expected = &ids[first..first + n];
        ensure!(
            seen == expected,
            format!(
                "{what} of {JOBS} jobs to list the {n} ids {}..={} in order",
                expected[0],
                expected[n - 1]
            ),
            format!(
                "{} ids{}",
                seen.len(),
                match (seen.first(), seen.last()) {
                    (Some(a), Some(b)) => format!(", {a}..={b}"),
                    _ => String::new(),
                }
            )
        );
    }
    Ok(())
}

/// States `list` does not know: none of the five, as written.
const STATES: &[&str] =
    &["bogus", "Ready", "DEAD", "expired", "queued", "failed", "all", "ready,dead", " ready"];

pub(super) fn list_state_bad(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let (file, _) = file_with_job(ctx, "states.ukue")?;
    let untouched = Untouched::take(ctx, &[&file])?;
    let mut problems = Vec::new();
    for (n, state) in STATES.iter().enumerate() {
        let mut args =
            vec!["list".to_string(), path_str(&file).to_string(), "--state".to_string(), state.to_string()];
        if n % 2 == 1 {
            args.push("--json".to_string());
        }
        let out = run(ctx, &who, &args, None)?;
        let mut wrong = untouched.changes(ctx)?;
        if !matches!(out.status.code(), Some(1 | 2)) || text(&out.stderr).trim().is_empty() {
            wrong.push(format!("{}; stdout {:?}", common::outcome(&out), clip(&text(&out.stdout))));
        }
        if !wrong.is_empty() {
            problems.push(format!("{}: {}", shown(ctx, &who, &args), wrong.join("; ")));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Failure::fail(
        "list --state with a state it does not know (the five: ready, delayed, running, dead, done) to be \
         refused: exit status 1 or 2, a message on stderr",
        problems.join("\n"),
    ))
}

pub(super) fn show_missing(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let (file, first) = file_with_job(ctx, "missing-id.ukue")?;
    let gone = ctx.add(&who, &file, "q", "to be deleted", &[])?;
    ctx.ok(&who, &["delete", path_str(&file), &gone.to_string()])?;
    let before = rows(&file)?;
    let ids = [gone.to_string(), (gone + 1).to_string(), "0".to_string(), i64::MAX.to_string()];
    let mut problems = Vec::new();
    for id in &ids {
        for json in [false, true] {
            let mut args = vec!["show".to_string(), path_str(&file).to_string(), id.clone()];
            if json {
                args.push("--json".to_string());
            }
            let out = run(ctx, &who, &args, None)?;
            if out.status.code() != Some(1) || text(&out.stderr).trim().is_empty() {
                problems.push(format!(
                    "{}: {}; stdout {:?}",
                    shown(ctx, &who, &args),
                    common::outcome(&out),
                    clip(&text(&out.stdout))
                ));
            }
        }
    }
    only_changed("`show` to change nothing", &before, &rows(&file)?, &[], &[])?;
    if problems.is_empty() {
        return Ok(());
    }
    Err(Failure::fail(
        format!(
            "show of an id no job has (a deleted one, the next, 0, 2^63 − 1; job {first} is the only one) to \
             be an error: exit status 1 and a message on stderr"
        ),
        problems.join("\n"),
    ))
}

/// Queue names whose order as bytes (code points) differs from the order
/// of the letters, of ASCII case, and of the order they come in.
const QUEUES: [&str; 12] = ["b", "a", "B", "a b", "é", "z", "Z9", "aa", "a-", "~", "ä", "日本"];

pub(super) fn stats_queue_order(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("order.ukue")?;
    let mut arrival = QUEUES.to_vec();
    let mut sorted = QUEUES.to_vec();
    sorted.sort_unstable();
    arrival.shuffle(&mut ctx.rng);
    if arrival == sorted {
        arrival.reverse();
    }
    let now = now_ms();
    let puts: Vec<Put> = arrival.iter().map(|q| Put::new(q, "ready", now)).collect();
    insert(&file, &puts)?;
    let seen = ctx.json(&who, &["stats", path_str(&file), "--json"])?;
    let names: Vec<&str> = seen["queues"]
        .as_array()
        .map(|qs| qs.iter().filter_map(|q| q["queue"].as_str()).collect())
        .unwrap_or_default();
    ensure_eq!(
        names,
        sorted,
        format!("`stats --json`: the queues in queue order (by code point; their jobs came in the order {arrival:?})")
    );
    Ok(())
}
