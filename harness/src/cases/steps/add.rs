//! FORMAT.md §5.3 Add.

use crate::cases::CaseResult;
use crate::shown::{text, Shown};
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::probe::now_ms;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::rows::{brief, not_running, row_present, within_time};
use super::CLOCK_TOL;

pub(super) fn add_stored(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("add.ukue")?;
    let who = ctx.subject().clone();
    let t0 = now_ms();
    let plain = ctx.add(&who, &file, "q", "hello", &[])?;
    let t1 = now_ms();
    let r = row_present(&file, plain)?;
    ensure_eq!(
        (r.queue.as_str(), r.state.as_str(), r.priority, r.attempts, r.max_attempts),
        ("q", "ready", 0, 0, 10),
        format!("job {plain} added with no options: (queue, state, priority, attempts, max_attempts)")
    );
    ensure_eq!(r.payload.as_slice(), b"hello".as_slice(), format!("job {plain}: the payload bytes"));
    not_running(&r)?;
    ensure!(r.last_error.is_none(), format!("job {plain} with last_error NULL"), brief(&r));
    within_time(&format!("job {plain}: run_at (default: now)"), r.run_at, t0 - CLOCK_TOL, t1 + CLOCK_TOL)?;
    within_time(&format!("job {plain}: created_at"), r.created_at, t0 - CLOCK_TOL, t1 + CLOCK_TOL)?;
    within_time(&format!("job {plain}: updated_at"), r.updated_at, t0 - CLOCK_TOL, t1 + CLOCK_TOL)?;

    // The payload from stdin, with `-` and left out; bytes that are not UTF-8.
    let bytes: &[u8] = b"\x00\xff binary\n";
    let mut ids = vec![plain];
    for (queue, args, stdin) in [
        ("binary", vec!["-", "--priority", "-100", "--attempts", "3"], bytes),
        ("stdin", vec!["--priority", "100"], b"from stdin".as_slice()),
    ] {
        let mut full = vec!["add", path_str(&file), queue];
        full.extend(args.iter().copied());
        let out = ctx.run_with(&who, &full, Some(stdin))?;
        crate::subjects::ctx::expect_success(&who, &full, &out)?;
        let printed = String::from_utf8_lossy(&out.stdout);
        let id: i64 = printed.trim().parse().map_err(|_| {
            Failure::fail(format!("`{}` to print the new id alone on a line", full.join(" ")), text(&printed))
        })?;
        let r = row_present(&file, id)?;
        ensure_eq!(
            r.payload.as_slice(),
            stdin,
            format!("job {id} added with `{}`: the payload bytes", full.join(" "))
        );
        let (priority, max) = if queue == "binary" { (-100, 3) } else { (100, 10) };
        ensure_eq!(
            (r.queue.as_str(), r.priority, r.max_attempts, r.attempts, r.state.as_str()),
            (queue, priority, max, 0, "ready"),
            format!(
                "job {id} added with `{}`: (queue, priority, max_attempts, attempts, state)",
                full.join(" ")
            )
        );
        ids.push(id);
    }
    ensure!(ids.windows(2).all(|w| w[0] < w[1]), "ids that grow with each add", ids.shown());
    Ok(())
}

/// How long another writer holds the file's write lock while the subject
/// adds: FORMAT.md's busy timeout is 5 s.
const LOCK_HELD: std::time::Duration = std::time::Duration::from_secs(1);

/// FORMAT.md §4.1: with a busy timeout set, an `add` that finds another
/// writer holding the file waits for it instead of failing at once.
pub(super) fn add_waits_for_busy_file(ctx: &mut Ctx) -> CaseResult {
    use std::process::Stdio;
    let file = ctx.init("busy.ukue")?;
    let who = ctx.subject().clone();
    let lock = crate::subjects::observe::file::write(&file)?;
    lock.execute_batch("BEGIN IMMEDIATE")?;
    let mut args: Vec<&str> = who.args.iter().map(String::as_str).collect();
    args.extend(["add", path_str(&file), "q", "waited"]);
    let mut add = ctx.spawn(&who.program, &args, Stdio::piped(), Stdio::piped())?;
    // Not a wait for anything: the second another program holds the lock.
    std::thread::sleep(LOCK_HELD);
    let ended_early = add.child.try_wait()?;
    lock.execute_batch("COMMIT")?;
    let status = add.wait_timeout(std::time::Duration::from_secs(30))?;
    let (mut out, mut err) = (String::new(), String::new());
    if let Some(mut pipe) = add.child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut out);
    }
    if let Some(mut pipe) = add.child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut err);
    }
    let shown = format!("`{} add` while another connection held the write lock for 1 s", who.name);
    let what = |status: Option<std::process::ExitStatus>| match status {
        Some(s) => {
            format!("it ended ({s}) with {} on stdout, {} on stderr", text(out.trim()), text(err.trim()))
        }
        None => "it was still running 30 s after the lock was released".to_string(),
    };
    ensure!(
        ended_early.is_none(),
        format!("{shown} to wait for it (FORMAT.md §4.1: a busy timeout of 5 s)"),
        what(ended_early)
    );
    ensure!(
        status.is_some_and(|s| s.success()) && out.trim().parse::<i64>().is_ok(),
        format!("{shown} to add the job once the lock was released, and print its id"),
        what(status)
    );
    let id: i64 = out.trim().parse().unwrap_or_default();
    let row = row_present(&file, id)?;
    ensure_eq!(String::from_utf8_lossy(&row.payload).into_owned(), "waited", format!("job {id}'s payload"));
    Ok(())
}
