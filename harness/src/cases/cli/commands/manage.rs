//! spec/COMMAND.md §10: `retry` of a job that is not dead and `delete` of
//! a missing id are errors (the published commands stop at the first such
//! ID, the reference goes on: the other named jobs may go either way), and
//! what `retry` and `purge` print (the published: `job N moved back to
//! ready`, `N dead jobs moved back to ready`, `N dead jobs deleted`).

use crate::cases::steps::rows::{brief, only_changed};
use crate::cases::steps::setup::{insert, Put};
use crate::cases::{common, CaseResult};
use crate::ensure;
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::file::{rows, Row};
use crate::subjects::probe::now_ms;
use crate::subjects::Subject;

use super::{run, shown, succeeded, text};

/// Fails unless `who args` is an error: exit status 1, a message.
fn expect_error(ctx: &Ctx, who: &Subject, args: &[String], why: &str) -> CaseResult {
    let out = run(ctx, who, args, None)?;
    ensure!(
        out.status.code() == Some(1) && !text(&out.stderr).trim().is_empty(),
        format!("{} ({why}) to be an error: exit status 1, a message on stderr", shown(ctx, who, args)),
        common::outcome(&out)
    );
    Ok(())
}

/// Fails unless `after` has `before`'s job `id` as it was, or as `sent`
/// says a retry leaves it.
fn unchanged_or_sent(
    what: &str,
    before: &[Row],
    after: &[Row],
    id: i64,
    sent: impl Fn(&Row) -> bool,
) -> CaseResult {
    let was = before.iter().find(|r| r.id == id);
    let now = after.iter().find(|r| r.id == id);
    ensure!(
        now.is_some_and(|now| was == Some(now) || sent(now)),
        format!("{what}: job {id} as it was, or sent back to ready with attempts 0"),
        now.map_or("deleted".into(), brief)
    );
    Ok(())
}

pub(super) fn bad_ids(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("bad-ids.ukue")?;
    let now = now_ms();
    let ids = insert(
        &file,
        &[
            Put::new("q", "dead", now).attempts(3, 3).error("boom"), // 0
            Put::new("q", "dead", now).attempts(2, 2).error("boom"), // 1
            Put::new("q", "ready", now).attempts(1, 3),              // 2
            Put::new("q", "ready", now).run_at(now + 3_600_000),     // 3: delayed
            Put::new("q", "running", now),                           // 4
            Put::new("q", "done", now),                              // 5
            Put::new("r", "dead", now),                              // 6: never named
            Put::new("r", "ready", now),                             // 7: never named
        ],
    )?;
    let f = path_str(&file).to_string();
    let missing = ids[7] + 100;

    for (id, state) in
        [(ids[2], "ready"), (ids[3], "delayed"), (ids[4], "running"), (ids[5], "done"), (missing, "missing")]
    {
        let args = vec!["retry".to_string(), f.clone(), id.to_string()];
        let before = rows(&file)?;
        expect_error(ctx, &who, &args, &format!("a {state} job"))?;
        only_changed(
            &format!("{} to change no job", shown(ctx, &who, &args)),
            &before,
            &rows(&file)?,
            &[],
            &[],
        )?;
    }

    // A job that is not dead between two dead ones.
    let args =
        vec!["retry".to_string(), f.clone(), ids[0].to_string(), ids[2].to_string(), ids[1].to_string()];
    let before = rows(&file)?;
    expect_error(ctx, &who, &args, "a ready job between two dead ones")?;
    let after = rows(&file)?;
    let what = shown(ctx, &who, &args);
    only_changed(
        &format!("{what} to change no job but the dead ones it names"),
        &before,
        &after,
        &[ids[0], ids[1]],
        &[],
    )?;
    let retried =
        |r: &Row| r.state == "ready" && r.attempts == 0 && r.token.is_none() && r.lease_until.is_none();
    for id in [ids[0], ids[1]] {
        unchanged_or_sent(&what, &before, &after, id, retried)?;
    }

    // A missing id between two that are there.
    let args =
        vec!["delete".to_string(), f.clone(), ids[5].to_string(), missing.to_string(), ids[4].to_string()];
    let before = rows(&file)?;
    expect_error(ctx, &who, &args, "a missing id between two jobs")?;
    let after = rows(&file)?;
    let what = shown(ctx, &who, &args);
    let named = [ids[5], ids[4]];
    let others =
        |rows: &[Row]| -> Vec<Row> { rows.iter().filter(|r| !named.contains(&r.id)).cloned().collect() };
    only_changed(
        &format!("{what} to change no job it does not name"),
        &others(&before),
        &others(&after),
        &[],
        &[],
    )?;
    for id in named {
        let was = before.iter().find(|r| r.id == id);
        let now = after.iter().find(|r| r.id == id);
        ensure!(
            now.is_none() || now == was,
            format!("{what}: job {id} deleted, or as it was"),
            now.map_or("deleted".into(), brief)
        );
    }
    Ok(())
}

/// Fails unless what `who args` printed names each of `numbers`.
fn prints_numbers(ctx: &Ctx, who: &Subject, args: &[String], numbers: &[i64], what: &str) -> CaseResult {
    let out = run(ctx, who, args, None)?;
    let stdout = succeeded(ctx, who, args, &out, what)?;
    let printed = common::numbers(&stdout);
    let missing: Vec<i64> =
        numbers.iter().copied().filter(|n| !printed.contains(&n.to_string().as_str())).collect();
    ensure!(
        missing.is_empty(),
        format!("{} ({what}) to say so on stdout, naming {numbers:?}", shown(ctx, who, args)),
        format!("stdout {stdout:?}")
    );
    Ok(())
}

/// `retry.ids-named`: `retry FILE ID...` names each job it sends back.
pub(super) fn names_ids(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("names.ukue")?;
    let f = path_str(&file).to_string();
    let now = now_ms();
    // Ids past the counts a command may print, so that a count is no name.
    insert(&file, &vec![Put::new("a", "done", now); 4])?;
    let dead =
        insert(&file, &[Put::new("a", "dead", now), Put::new("a", "dead", now), Put::new("b", "dead", now)])?;
    let words =
        |more: &[&str]| -> Vec<String> { ["retry", &f].iter().chain(more).map(|w| w.to_string()).collect() };
    prints_numbers(ctx, &who, &words(&[&dead[0].to_string()]), &[dead[0]], "one dead job back to ready")?;
    prints_numbers(
        ctx,
        &who,
        &words(&[&dead[1].to_string(), &dead[2].to_string()]),
        &[dead[1], dead[2]],
        "two dead jobs back",
    )
}

pub(super) fn prints(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let file = ctx.init("prints.ukue")?;
    let f = path_str(&file).to_string();
    let now = now_ms();
    let dead =
        insert(&file, &[Put::new("a", "dead", now), Put::new("a", "dead", now), Put::new("b", "dead", now)])?;
    let words =
        |more: &[&str]| -> Vec<String> { ["retry", &f].iter().chain(more).map(|w| w.to_string()).collect() };
    // `retry.ids`: it says so on stdout; how (the ids, a count, words) is
    // the program's own (`retry.ids-named`, a should).
    for ids in [&dead[..1], &dead[1..]] {
        let named: Vec<String> = ids.iter().map(i64::to_string).collect();
        let args = words(&named.iter().map(String::as_str).collect::<Vec<_>>());
        let what = format!("{} dead job(s) back to ready", ids.len());
        let out = run(ctx, &who, &args, None)?;
        let stdout = succeeded(ctx, &who, &args, &out, &what)?;
        ensure!(
            !stdout.trim().is_empty(),
            format!("{} ({what}) to say so on stdout", shown(ctx, &who, &args)),
            "nothing on stdout"
        );
    }

    let mut puts = vec![Put::new("a", "dead", now); 3];
    puts.extend(vec![Put::new("b", "dead", now); 4]);
    puts.extend(vec![Put::new("a", "done", now); 2]);
    puts.extend(vec![Put::new("b", "done", now); 5]);
    insert(&file, &puts)?;
    prints_numbers(ctx, &who, &words(&["--all", "--queue", "b"]), &[4], "the 4 dead jobs of queue b back")?;
    prints_numbers(ctx, &who, &words(&["--all"]), &[3], "the 3 dead jobs left back")?;
    let purge =
        |more: &[&str]| -> Vec<String> { ["purge", &f].iter().chain(more).map(|w| w.to_string()).collect() };
    prints_numbers(
        ctx,
        &who,
        &purge(&["--state", "done", "--queue", "a"]),
        &[2],
        "the 2 done jobs of queue a deleted",
    )?;
    prints_numbers(ctx, &who, &purge(&["--state", "done"]), &[5], "the 5 done jobs left deleted")?;
    Ok(())
}
