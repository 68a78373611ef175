//! FORMAT.md §5.10 Reading: stats, list and show as JSON.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::cases::CaseResult;
use crate::shown::rfc3339;
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::observe::file::{rows, Row};
use crate::subjects::probe::now_ms;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::contract::{check_job, listed, object_keys, STATS_KEYS};
use super::rows::{brief_all, only_changed};
use super::running::expect_refused;
use super::setup::{insert, Put};

pub(super) fn stats_json(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let empty = ctx.init("empty.ukue")?;
    let seen = ctx.json(&who, &["stats", path_str(&empty), "--json"])?;
    ensure_eq!(seen, json!({"queues": []}), "`stats --json` of a file without jobs");

    let file = ctx.init("stats.ukue")?;
    let now = now_ms();
    let due = now - 5_321;
    let r_oldest = now - 7_777;
    insert(
        &file,
        &[
            Put::new("q", "ready", now).run_at(due),
            Put::new("q", "ready", now).run_at(now + 3_600_000),
            Put::new("q", "running", now).lease(now + 3_600_000, "holds"),
            Put::new("q", "running", now).lease(now - 60_000, "expired").run_at(now - 100_000),
            Put::new("q", "dead", now).run_at(now - 200_000),
            Put::new("q", "done", now),
            // r: two due jobs, the older added second; older jobs in other
            // states do not count for oldest_due.
            Put::new("r", "ready", now).run_at(now - 2_222),
            Put::new("r", "ready", now).run_at(r_oldest).priority(-5),
            Put::new("r", "dead", now).run_at(now - 300_000),
            Put::new("r", "running", now).run_at(now - 400_000),
            Put::new("r", "done", now).run_at(now - 500_000),
            // z: nothing due.
            Put::new("z", "done", now),
            Put::new("z", "ready", now).run_at(now + 60_000),
            // f: finished jobs only, a queue all the same.
            Put::new("f", "dead", now).run_at(now - 600_000),
            Put::new("f", "done", now),
        ],
    )?;
    let before = rows(&file)?;
    let seen = ctx.json(&who, &["stats", path_str(&file), "--json"])?;
    let top = object_keys(&seen, "`stats --json`")?;
    ensure_eq!(top, vec!["queues"], "`stats --json`: the top-level keys");
    let queues = seen["queues"]
        .as_array()
        .ok_or_else(|| Failure::fail("`stats --json`: `queues` to be an array", clip(&seen.to_string())))?;
    let expected = [
        json!({"queue": "f", "ready": 0, "delayed": 0, "running": 0, "expired": 0, "dead": 1, "done": 1,
               "oldest_due": null}),
        json!({"queue": "q", "ready": 1, "delayed": 1, "running": 1, "expired": 1, "dead": 1, "done": 1,
               "oldest_due": rfc3339(due)}),
        json!({"queue": "r", "ready": 2, "delayed": 0, "running": 1, "expired": 0, "dead": 1, "done": 1,
               "oldest_due": rfc3339(r_oldest)}),
        json!({"queue": "z", "ready": 0, "delayed": 1, "running": 0, "expired": 0, "dead": 0, "done": 1,
               "oldest_due": null}),
    ];
    let names: Vec<&str> = queues.iter().filter_map(|q| q["queue"].as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    ensure_eq!(sorted, vec!["f", "q", "r", "z"], "`stats --json`: the queues");
    for want in &expected {
        let name = want["queue"].as_str().unwrap_or_default();
        let got = queues.iter().find(|q| q["queue"] == want["queue"]).unwrap_or(&Value::Null);
        let mut keys = object_keys(got, &format!("`stats --json`: queue {name}"))?;
        keys.sort_unstable();
        let mut wanted = STATS_KEYS.to_vec();
        wanted.sort_unstable();
        ensure_eq!(keys, wanted, format!("`stats --json`: the keys of queue {name}"));
        ensure!(
            got == want,
            format!("`stats --json`: queue {name}: {want}"),
            format!(
                "{got}; the file: {}",
                brief_all(&before.iter().filter(|r| r.queue == name).cloned().collect::<Vec<_>>())
            )
        );
    }
    // Reading counts changes nothing (the expired lease stays for a claim).
    only_changed("`stats` to change nothing in the file", &before, &rows(&file)?, &[], &[])
}

/// The file that list-json and show-json read: every state, both payload
/// kinds, a multi-line error. Returns the file and its rows.
fn reading_file(ctx: &mut Ctx) -> Result<(PathBuf, Vec<Row>), Failure> {
    let file = ctx.init("read.ukue")?;
    let now = now_ms();
    insert(
        &file,
        &[
            Put::new("a", "ready", now).text("hello").priority(5).run_at(now - 2_345),
            Put::new("a", "ready", now).text("later").priority(-7).run_at(now + 3_600_000),
            Put::new("b", "running", now).text("busy").attempts(1, 4).lease(now + 3_600_111, "secret-token"),
            Put::new("a", "dead", now).text("gone").attempts(3, 3).error("boom: \"quoted\"\nsecond line"),
            Put::new("a", "done", now).text("fine"),
            Put::new("b", "ready", now).blob(&[0xff, 0x00]),
            Put::new("a", "ready", now).blob(b"hi\n"),
            Put::new("c", "ready", now).text("").priority(100),
        ],
    )?;
    let all = rows(&file)?;
    ensure_eq!(all.len(), 8, "jobs written");
    Ok((file, all))
}

pub(super) fn list_json(ctx: &mut Ctx) -> CaseResult {
    let (file, all) = reading_file(ctx)?;
    let who = ctx.subject().clone();
    let f = path_str(&file).to_string();
    let id = |n: usize| all[n].id;

    let seen = ctx.json(&who, &["list", &f, "--json"])?;
    let jobs = listed(&seen, "`list --json`")?;
    let ids: Vec<i64> = jobs.iter().filter_map(|j| j["id"].as_i64()).collect();
    let all_ids: Vec<i64> = all.iter().map(|r| r.id).collect();
    ensure_eq!(ids, all_ids.clone(), "`list --json`: the ids, in id order");
    for (job, r) in jobs.iter().zip(&all) {
        check_job(job, r, &format!("`list --json`: job {}", r.id))?;
    }

    let (after0, after1, after6) = (id(0).to_string(), id(1).to_string(), id(6).to_string());
    // An id below every job's, of both signs: the negative one is a job's
    // id negated, which a program that drops the sign would start after.
    let below = format!("-{}", id(1));
    let filters: Vec<(Vec<&str>, Vec<i64>)> = vec![
        (vec!["--state", "ready"], vec![id(0), id(5), id(6), id(7)]),
        (vec!["--state", "delayed"], vec![id(1)]),
        (vec!["--state", "running"], vec![id(2)]),
        (vec!["--state", "dead"], vec![id(3)]),
        (vec!["--state", "done"], vec![id(4)]),
        (vec!["--queue", "a"], vec![id(0), id(1), id(3), id(4), id(6)]),
        (vec!["--queue", "b", "--state", "ready"], vec![id(5)]),
        (vec!["--queue", "a", "--state", "delayed"], vec![id(1)]),
        (vec!["--queue", "nope"], vec![]),
        (vec!["--limit", "2"], vec![id(0), id(1)]),
        (vec!["--after", &after1, "--limit", "3"], vec![id(2), id(3), id(4)]),
        (vec!["--after", &after6], vec![id(7)]),
        (vec!["--after", "0"], all_ids.clone()),
        (vec!["--after", &below], all_ids.clone()),
        (vec!["--queue", "a", "--after", &after1, "--limit", "2"], vec![id(3), id(4)]),
        // --after with --state: the jobs in the state past the id, not
        // from the first job in it.
        (vec!["--state", "ready", "--after", &after1], vec![id(5), id(6), id(7)]),
        (vec!["--queue", "a", "--state", "ready", "--after", &after0], vec![id(6)]),
    ];
    for (options, expected) in filters {
        let mut args = vec!["list", f.as_str(), "--json"];
        args.extend(options.iter().copied());
        let what = format!("`list FILE --json {}`", options.join(" "));
        let seen = ctx.json(&who, &args)?;
        let jobs = listed(&seen, &what)?;
        let ids: Vec<i64> = jobs.iter().filter_map(|j| j["id"].as_i64()).collect();
        ensure_eq!(ids.clone(), expected, format!("{what}: the ids"));
        for (job, id) in jobs.iter().zip(&ids) {
            if let Some(r) = all.iter().find(|r| r.id == *id) {
                check_job(job, r, &format!("{what}: job {id}"))?;
            }
        }
    }
    only_changed("`list` to change nothing in the file", &all, &rows(&file)?, &[], &[])
}

pub(super) fn show_json(ctx: &mut Ctx) -> CaseResult {
    let (file, all) = reading_file(ctx)?;
    let who = ctx.subject().clone();
    let f = path_str(&file).to_string();
    for r in &all {
        let seen = ctx.json(&who, &["show", &f, &r.id.to_string(), "--json"])?;
        check_job(&seen, r, &format!("`show FILE {} --json`", r.id))?;
    }
    let b64 = &all[5];
    let seen = ctx.json(&who, &["show", &f, &b64.id.to_string(), "--json"])?;
    ensure_eq!(
        seen.get("payload_base64").cloned(),
        Some(json!("/wA=")),
        format!("`show FILE {} --json` of the payload x'ff00': payload_base64", b64.id)
    );
    let missing = all.iter().map(|r| r.id).max().unwrap_or(0) + 100;
    expect_refused(ctx, &who, &["show", &f, &missing.to_string(), "--json"])?;
    only_changed("`show` to change nothing in the file", &all, &rows(&file)?, &[], &[])
}
