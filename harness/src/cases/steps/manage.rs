//! FORMAT.md §5.9: retry, delete and purge.

use crate::cases::CaseResult;
use crate::shown::{rfc3339, Shown, Time};
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::file::{rows, Row};
use crate::subjects::probe::now_ms;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::rows::{not_running, only_changed, within_time};
use super::running::expect_refused;
use super::setup::{insert, Put};
use super::CLOCK_TOL;

/// Checks a job that `retry` sent back to ready between t0 and t1.
fn check_retried(before: &Row, after: &[Row], t0: i64, t1: i64) -> CaseResult {
    let id = before.id;
    let r = after
        .iter()
        .find(|r| r.id == id)
        .ok_or_else(|| Failure::fail(format!("job {id} retried"), "it is gone"))?;
    ensure_eq!((r.state.as_str(), r.attempts), ("ready", 0), format!("job {id} retried: (state, attempts)"));
    not_running(r)?;
    within_time(
        &format!("job {id} retried between {} and {}: run_at (due now)", rfc3339(t0), rfc3339(t1)),
        r.run_at,
        t0 - CLOCK_TOL,
        t1 + CLOCK_TOL,
    )?;
    within_time(&format!("job {id} retried: updated_at"), r.updated_at, t0 - CLOCK_TOL, t1 + CLOCK_TOL)?;
    ensure_eq!(
        (r.queue.as_str(), r.priority, r.max_attempts, Time(r.created_at), r.payload.as_slice()),
        (
            before.queue.as_str(),
            before.priority,
            before.max_attempts,
            Time(before.created_at),
            before.payload.as_slice()
        ),
        format!("job {id} retried: (queue, priority, max_attempts, created_at, payload) unchanged")
    );
    Ok(())
}

pub(super) fn retry(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("retry.ukue")?;
    let who = ctx.subject().clone();
    let now = now_ms();
    let ids = insert(
        &file,
        &[
            Put::new("a", "dead", now).attempts(1, 3).run_at(now - 60_000).error("boom"), // 0
            Put::new("a", "dead", now).attempts(3, 3),                                    // 1
            Put::new("b", "dead", now).attempts(2, 2),                                    // 2
            Put::new("a", "ready", now).attempts(1, 3).run_at(now + 3_600_000),           // 3: delayed
            Put::new("a", "running", now).attempts(1, 3),                                 // 4
            Put::new("b", "done", now),                                                   // 5
            Put::new("c", "dead", now).attempts(1, 1),                                    // 6
            Put::new("a", "ready", now),                                                  // 7: due
        ],
    )?;
    let f = path_str(&file).to_string();

    // One dead job by id.
    let before = rows(&file)?;
    let t0 = now_ms();
    ctx.ok(&who, &["retry", &f, &ids[0].to_string()])?;
    let t1 = now_ms();
    let after = rows(&file)?;
    check_retried(&before[0], &after, t0, t1)?;
    only_changed(
        &format!("`retry FILE {}` to change only that job", ids[0]),
        &before,
        &after,
        &[ids[0]],
        &[],
    )?;

    // Jobs that are not dead, and a missing id: refused, nothing changed.
    let missing = ids.iter().max().copied().unwrap_or(0) + 100;
    for id in [ids[3], ids[4], ids[5], ids[7], missing] {
        let before = rows(&file)?;
        expect_refused(ctx, &who, &["retry", &f, &id.to_string()])?;
        let state = before.iter().find(|r| r.id == id).map_or("missing", |r| r.state.as_str());
        only_changed(
            &format!("`retry FILE {id}` (a {state} job) to change nothing"),
            &before,
            &rows(&file)?,
            &[],
            &[],
        )?;
    }

    // --all --queue b: the dead jobs of b only.
    let before = rows(&file)?;
    let t0 = now_ms();
    ctx.ok(&who, &["retry", &f, "--all", "--queue", "b"])?;
    let t1 = now_ms();
    let after = rows(&file)?;
    check_retried(&before[2], &after, t0, t1)?;
    only_changed(
        "`retry FILE --all --queue b` to change only the dead jobs of queue b",
        &before,
        &after,
        &[ids[2]],
        &[],
    )?;

    // --all: every dead job left (of a and c).
    let before = rows(&file)?;
    let t0 = now_ms();
    ctx.ok(&who, &["retry", &f, "--all"])?;
    let t1 = now_ms();
    let after = rows(&file)?;
    check_retried(&before[1], &after, t0, t1)?;
    check_retried(&before[6], &after, t0, t1)?;
    only_changed("`retry FILE --all` to change only the dead jobs", &before, &after, &[ids[1], ids[6]], &[])
}

pub(super) fn purge(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("purge.ukue")?;
    let who = ctx.subject().clone();
    let now = now_ms();
    let ids = insert(
        &file,
        &[
            Put::new("a", "dead", now),                                   // 0
            Put::new("a", "done", now),                                   // 1
            Put::new("b", "dead", now),                                   // 2
            Put::new("b", "done", now),                                   // 3
            Put::new("a", "ready", now),                                  // 4
            Put::new("a", "ready", now).run_at(now + 3_600_000),          // 5: delayed
            Put::new("a", "running", now),                                // 6
            Put::new("b", "dead", now).attempts(10, 10),                  // 7
            Put::new("c", "done", now),                                   // 8
            Put::new("b", "running", now).lease(now - 60_000, "expired"), // 9
        ],
    )?;
    let f = path_str(&file).to_string();
    for state in ["ready", "running", "delayed"] {
        let before = rows(&file)?;
        expect_refused(ctx, &who, &["purge", &f, "--state", state])?;
        only_changed(
            &format!("`purge FILE --state {state}` to delete nothing"),
            &before,
            &rows(&file)?,
            &[],
            &[],
        )?;
    }
    let steps: [(&[&str], Vec<i64>); 4] = [
        (&["--state", "dead", "--queue", "a"], vec![ids[0]]),
        (&["--state", "done", "--queue", "b"], vec![ids[3]]),
        (&["--state", "dead"], vec![ids[2], ids[7]]),
        (&["--state", "done"], vec![ids[1], ids[8]]),
    ];
    for (options, gone) in steps {
        let before = rows(&file)?;
        let mut args = vec!["purge", f.as_str()];
        args.extend_from_slice(options);
        ctx.ok(&who, &args)?;
        only_changed(
            &format!("`purge FILE {}` to delete exactly jobs {}", options.join(" "), gone.shown()),
            &before,
            &rows(&file)?,
            &[],
            &gone,
        )?;
    }
    let left: Vec<i64> = rows(&file)?.iter().map(|r| r.id).collect();
    ensure_eq!(left, vec![ids[4], ids[5], ids[6], ids[9]], "the jobs left after every purge");
    Ok(())
}

pub(super) fn delete(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("delete.ukue")?;
    let who = ctx.subject().clone();
    let now = now_ms();
    let ids = insert(
        &file,
        &[
            Put::new("a", "ready", now),                         // 0
            Put::new("a", "ready", now).run_at(now + 3_600_000), // 1: delayed
            Put::new("a", "running", now),                       // 2
            Put::new("a", "dead", now),                          // 3
            Put::new("b", "done", now),                          // 4
            Put::new("b", "ready", now),                         // 5
        ],
    )?;
    let f = path_str(&file).to_string();
    let missing = ids[5] + 100;
    let before = rows(&file)?;
    expect_refused(ctx, &who, &["delete", &f, &missing.to_string()])?;
    only_changed(
        &format!("`delete FILE {missing}` (no such job) to change nothing"),
        &before,
        &rows(&file)?,
        &[],
        &[],
    )?;
    for gone in [vec![ids[2]], vec![ids[0], ids[3]], vec![ids[1]], vec![ids[4]], vec![ids[5]]] {
        let before = rows(&file)?;
        let words: Vec<String> = gone.iter().map(i64::to_string).collect();
        let mut args = vec!["delete", f.as_str()];
        args.extend(words.iter().map(String::as_str));
        ctx.ok(&who, &args)?;
        let states: Vec<&str> = gone
            .iter()
            .filter_map(|id| before.iter().find(|r| r.id == *id))
            .map(|r| r.state.as_str())
            .collect();
        only_changed(
            &format!(
                "`delete FILE {}` to delete exactly those jobs ({})",
                words.join(" "),
                states.join(", ")
            ),
            &before,
            &rows(&file)?,
            &[],
            &gone,
        )?;
    }
    // Ids are never reused (AUTOINCREMENT), even once every job is gone.
    let next = ctx.add(&who, &file, "a", "after-delete", &[])?;
    ensure!(
        next > ids[5],
        format!("a new job's id above {} (the largest id ever used)", ids[5]),
        format!("id {next}")
    );
    Ok(())
}
