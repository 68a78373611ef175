//! steps: each step of FORMAT.md §5, seen from outside. Jobs are added
//! through the subject's `add` or written into a subject-made file with
//! plain SQL (the format is the contract), run by the subject's `work` with
//! the probe (or a small shell command), and the case reads the file, the
//! subject's output and the probe's records.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::Value as SqlValue;
use serde_json::{json, Value};

use crate::case::{Case, CaseResult, Failure, Level, Needs};
use crate::check;
use crate::ctx::{clip, path_str, Ctx};
use crate::history::{Added, Execution};
use crate::probe::now_ms;
use crate::subject::Subject;
use crate::{ensure, ensure_eq};

use super::common::{self, read, start_command_worker, start_worker, write, Worker};

#[rustfmt::skip]
pub fn cases() -> Vec<Case> {
    let case = |id, rule, summary, run| Case { id, rule, summary, needs: Needs::default(), level: Level::Must, run };
    vec![
        case("steps/add-stored", "5.3", "add stores the payload bytes, priority, attempts and the defaults", add_stored),
        case("steps/claim-order-priority", "5.4", "jobs run by priority, highest first, then oldest id", claim_order_priority),
        case("steps/claim-order-run-at", "5.4", "equal priorities run by run_at, then id; priority beats run_at", claim_order_run_at),
        case("steps/delayed-not-early", "5.4", "a job added with --delay or --at runs, and not before its run_at", delayed_not_early),
        Case { level: Level::Should, ..case("steps/fail-backoff", "5.6", "a failed attempt goes back to ready after 10 s plus up to 10%, the published command's backoff", fail_backoff) },
        case("steps/dead-after-max-attempts", "5.6", "a failure on the last attempt sends the job to dead", dead_after_max_attempts),
        case("steps/exit-65-dead", "5.6", "exit status 65 is a permanent failure: dead after one run", exit_65_dead),
        case("steps/timeout", "5.6", "a command past --timeout is stopped and its attempt fails", timeout),
        case("steps/lease-reaped-counted", "5.4", "a claim on any queue reaps an expired lease as a failed attempt", lease_reaped_counted),
        Case { level: Level::Should, ..case("steps/lease-reaped-backoff", "5.4", "an expired lease is reaped to ready after 10 s plus up to 10%, the published command's backoff", lease_reaped_backoff) },
        case("steps/lease-reaped-last-attempt-dead", "5.4", "an expired lease on the last attempt sends the job to dead", lease_reaped_dead),
        case("steps/keep-done", "5.5", "a finished job is deleted, or kept as done with --keep-done", keep_done),
        case("steps/give-back-on-stop", "5.8", "SIGTERM after --grace gives the job back without counting the attempt", give_back_on_stop),
        case("steps/retry", "5.9", "retry sends dead jobs (by id, --all, --all --queue) back to ready", retry),
        case("steps/purge", "5.9", "purge deletes exactly the dead or done jobs (of one queue)", purge),
        case("steps/delete", "5.9", "delete takes a job away in any state; a missing id is an error", delete),
        case("steps/stats-json", "5.10", "stats --json counts ready, delayed, running, expired, dead, done per queue", stats_json),
        case("steps/list-json", "5.10", "list --json shows the contract's keys and filters by state, queue, after, limit", list_json),
        case("steps/show-json", "5.10", "show --json shows one job with the contract's keys, times and payload", show_json),
        case("steps/work-environment", "5.4", "work gives the command the payload and UKUE_* variables", work_environment),
    ]
}

// ---------------------------------------------------------------------------
// Margins. The subject and the harness read the same clock, but the box is
// noisy: windows are bounded by what the harness saw before and after, with
// room for clock reading granularity and skew, never by a speed.

/// Two readings of the same clock, by two programs.
const CLOCK_TOL: i64 = 100;
/// Lower margin for skew between the probe's clock reading and the subject's.
const SKEW: i64 = 1_000;
/// Upper margin beyond the moment the harness saw a change.
const LATE: i64 = 1_500;
/// The backoff after a first attempt, as the model of the format gives it:
/// 10 s plus up to a tenth more.
const BACKOFF_MIN: i64 = crate::model::backoff_span(0, 1).lo;
const BACKOFF_MAX: i64 = crate::model::backoff_span(0, 1).hi;

const POLL: [&str; 2] = ["--poll", "20ms"];

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

// ---------------------------------------------------------------------------
// Rows: the file as any program sees it.

/// One row of `ukue_jobs`, every column.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    id: i64,
    queue: String,
    state: String,
    priority: i64,
    attempts: i64,
    max_attempts: i64,
    run_at: i64,
    lease_until: Option<i64>,
    token: Option<String>,
    last_error: Option<String>,
    created_at: i64,
    updated_at: i64,
    payload: Vec<u8>,
}

const ROW_SELECT: &str =
    "SELECT id, queue, state, priority, attempts, max_attempts, run_at, lease_until, token, \
     last_error, created_at, updated_at, CAST(payload AS BLOB) FROM ukue_jobs";

fn row_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        id: r.get(0)?,
        queue: r.get(1)?,
        state: r.get(2)?,
        priority: r.get(3)?,
        attempts: r.get(4)?,
        max_attempts: r.get(5)?,
        run_at: r.get(6)?,
        lease_until: r.get(7)?,
        token: r.get(8)?,
        last_error: r.get(9)?,
        created_at: r.get(10)?,
        updated_at: r.get(11)?,
        payload: r.get::<_, Option<Vec<u8>>>(12)?.unwrap_or_default(),
    })
}

/// Every job of the file, in id order.
fn rows(file: &Path) -> Result<Vec<Row>, Failure> {
    let conn = read(file)?;
    let mut st = conn.prepare(&format!("{ROW_SELECT} ORDER BY id"))?;
    let rows = st.query_map([], row_of)?.collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// One job, or None when it is not in the file.
fn row(file: &Path, id: i64) -> Result<Option<Row>, Failure> {
    let conn = read(file)?;
    match conn.query_row(&format!("{ROW_SELECT} WHERE id = ?1"), [id], row_of) {
        Ok(row) => Ok(Some(row)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// One job that must be in the file.
fn row_present(file: &Path, id: i64) -> Result<Row, Failure> {
    row(file, id)?.ok_or_else(|| Failure::fail(format!("job {id} in the file"), "it is gone"))
}

fn payload_shown(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => format!("{text:?}"),
        Err(_) => format!("bytes {bytes:02x?}"),
    }
}

/// A row on one line, for reports.
fn brief(r: &Row) -> String {
    format!(
        "job {} (queue {:?}, {}, priority {}, attempts {}/{}, run_at {}, lease_until {:?}, token {:?}, \
         last_error {:?}, payload {})",
        r.id,
        r.queue,
        r.state,
        r.priority,
        r.attempts,
        r.max_attempts,
        r.run_at,
        r.lease_until,
        r.token,
        r.last_error,
        payload_shown(&r.payload)
    )
}

fn brief_all(rows: &[Row]) -> String {
    if rows.is_empty() {
        return "no jobs".into();
    }
    rows.iter().map(brief).collect::<Vec<_>>().join("; ")
}

/// The columns in which `after` differs from `before`.
fn diff(before: &Row, after: &Row) -> String {
    let mut out = Vec::new();
    macro_rules! field {
        ($name:ident) => {
            if before.$name != after.$name {
                out.push(format!("{} {:?} → {:?}", stringify!($name), before.$name, after.$name));
            }
        };
    }
    field!(queue);
    field!(state);
    field!(priority);
    field!(attempts);
    field!(max_attempts);
    field!(run_at);
    field!(lease_until);
    field!(token);
    field!(last_error);
    field!(created_at);
    field!(updated_at);
    if before.payload != after.payload {
        out.push(format!("payload {} → {}", payload_shown(&before.payload), payload_shown(&after.payload)));
    }
    out.join(", ")
}

/// Fails unless `after` is `before` but for the rows in `gone` (which must
/// be deleted) and in `changed` (which the caller checks itself).
fn only_changed(what: &str, before: &[Row], after: &[Row], changed: &[i64], gone: &[i64]) -> CaseResult {
    let mut problems = Vec::new();
    for b in before {
        match after.iter().find(|a| a.id == b.id) {
            None if gone.contains(&b.id) => {}
            None => problems.push(format!("job {} ({}) was deleted", b.id, b.state)),
            Some(a) if gone.contains(&b.id) => problems.push(format!("{} is still there", brief(a))),
            Some(_) if changed.contains(&b.id) => {}
            Some(a) if a != b => problems.push(format!("job {} ({}) changed: {}", b.id, b.state, diff(b, a))),
            Some(_) => {}
        }
    }
    for a in after.iter().filter(|a| !before.iter().any(|b| b.id == a.id)) {
        problems.push(format!("{} appeared", brief(a)));
    }
    ensure!(problems.is_empty(), what.to_string(), problems.join("; "));
    Ok(())
}

/// Fails unless `value` lies in `[low, high]`.
fn within(what: &str, value: i64, low: i64, high: i64) -> CaseResult {
    ensure!(
        (low..=high).contains(&value),
        format!("{what} in [{low}, {high}]"),
        format!("{what} {value} ({} below the low end, {} above the high end)", low - value, value - high)
    );
    Ok(())
}

fn not_running(r: &Row) -> CaseResult {
    ensure!(
        r.token.is_none() && r.lease_until.is_none(),
        format!("job {} ({}) with token and lease_until NULL", r.id, r.state),
        brief(r)
    );
    Ok(())
}

fn has_error(r: &Row) -> CaseResult {
    ensure!(
        r.last_error.as_deref().is_some_and(|e| !e.trim().is_empty()),
        format!("job {} with last_error set", r.id),
        brief(r)
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// Setting files up.

/// A subject-made, tracked, empty ukue file.
fn init(ctx: &mut Ctx, name: &str) -> Result<PathBuf, Failure> {
    let file = ctx.tracked_file(name);
    let who = ctx.subject().clone();
    ctx.ok(&who, &["init", path_str(&file)])?;
    Ok(file)
}

/// A row to write with plain SQL.
#[derive(Debug, Clone)]
struct Put {
    queue: &'static str,
    payload: SqlValue,
    state: &'static str,
    priority: i64,
    attempts: i64,
    max_attempts: i64,
    run_at: i64,
    lease_until: Option<i64>,
    token: Option<String>,
    last_error: Option<&'static str>,
    created_at: i64,
    updated_at: i64,
}

impl Put {
    /// A job of `queue` in `state`, due a second ago, made a minute ago
    /// (with odd milliseconds, so that times show them). Running jobs get
    /// a token and a lease an hour ahead.
    fn new(queue: &'static str, state: &'static str, now: i64) -> Put {
        let running = state == "running";
        Put {
            queue,
            payload: SqlValue::Text(format!("{queue}-{state}")),
            state,
            priority: 0,
            attempts: if state == "ready" { 0 } else { 1 },
            max_attempts: 10,
            run_at: now - 1_000,
            lease_until: running.then_some(now + 3_600_000),
            token: running.then(|| format!("token-{queue}-{now}")),
            last_error: (state == "dead").then_some("exit status 3"),
            created_at: now - 60_123,
            updated_at: now - 30_457,
        }
    }
    fn text(mut self, text: &str) -> Put {
        self.payload = SqlValue::Text(text.to_string());
        self
    }
    fn blob(mut self, bytes: &[u8]) -> Put {
        self.payload = SqlValue::Blob(bytes.to_vec());
        self
    }
    fn priority(mut self, priority: i64) -> Put {
        self.priority = priority;
        self
    }
    fn attempts(mut self, attempts: i64, max_attempts: i64) -> Put {
        self.attempts = attempts;
        self.max_attempts = max_attempts;
        self
    }
    fn run_at(mut self, run_at: i64) -> Put {
        self.run_at = run_at;
        self
    }
    fn lease(mut self, lease_until: i64, token: &str) -> Put {
        self.lease_until = Some(lease_until);
        self.token = Some(token.to_string());
        self
    }
    fn error(mut self, error: &'static str) -> Put {
        self.last_error = Some(error);
        self
    }
}

/// Writes the rows in one transaction; returns their ids.
fn insert(file: &Path, puts: &[Put]) -> Result<Vec<i64>, Failure> {
    let mut conn = write(file)?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut ids = Vec::new();
    for p in puts {
        tx.execute(
            "INSERT INTO ukue_jobs (queue, payload, state, priority, attempts, max_attempts, run_at, lease_until, \
             token, last_error, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            rusqlite::params![
                p.queue,
                p.payload,
                p.state,
                p.priority,
                p.attempts,
                p.max_attempts,
                p.run_at,
                p.lease_until,
                p.token,
                p.last_error,
                p.created_at,
                p.updated_at
            ],
        )?;
        ids.push(tx.last_insert_rowid());
    }
    tx.commit()?;
    Ok(ids)
}

// ---------------------------------------------------------------------------
// Running the subject.

fn probe_worker(ctx: &Ctx, file: &Path, queue: &str, extra: &[&str]) -> Result<Worker, Failure> {
    let who = ctx.subject().clone();
    let mut options: Vec<&str> = POLL.to_vec();
    options.extend_from_slice(extra);
    start_worker(ctx, &who, file, queue, &options)
}

/// Runs `who args`, which must fail (exit non-zero, not crash).
fn expect_refused(ctx: &Ctx, who: &Subject, args: &[&str]) -> CaseResult {
    let out = ctx.run(who, args)?;
    let shown = format!("`{} {}`", who.name, args.join(" "));
    match out.status.code() {
        Some(0) => Err(Failure::fail(
            format!("{shown} to exit non-zero"),
            format!("exit status 0: {}", clip(&String::from_utf8_lossy(&out.stdout))),
        )),
        Some(_) => Ok(()),
        None => Err(Failure::error(
            format!("{shown} to exit non-zero"),
            format!("it crashed ({}): {}", out.status, clip(&String::from_utf8_lossy(&out.stderr))),
        )),
    }
}

fn runs_of(runs: &[Execution], id: i64) -> Vec<&Execution> {
    runs.iter().filter(|e| e.job == id).collect()
}

/// Waits until every job of `ids` has started under the probe and no longer
/// runs in the file (finished, failed or given back); returns when the
/// harness saw that (ms), an upper bound of the subject's last step.
fn wait_settled(
    ctx: &Ctx,
    file: &Path,
    ids: &[i64],
    limit: Duration,
    workers: &mut [&mut Worker],
) -> Result<i64, Failure> {
    let mut seen_at = 0;
    let result = ctx.wait_for(&format!("jobs {ids:?} to run and leave the running state"), limit, || {
        still_working(workers)?;
        let runs = common::executions(ctx)?;
        if !ids.iter().all(|id| runs.iter().any(|e| e.job == *id)) {
            return Ok(false);
        }
        for &id in ids {
            if row(file, id)?.is_some_and(|r| r.state == "running") {
                return Ok(false);
            }
        }
        seen_at = now_ms();
        Ok(true)
    });
    match result {
        Ok(()) => Ok(seen_at),
        Err(mut f) => {
            let ran: Vec<i64> = common::executions(ctx)?.iter().map(|e| e.job).collect();
            f.seen = format!("{}; probe runs of jobs {ran:?}; file: {}", f.seen, brief_all(&rows(file)?));
            Err(f)
        }
    }
}

/// Fails when a worker ended by itself (it must run until stopped).
fn still_working(workers: &mut [&mut Worker]) -> CaseResult {
    for worker in workers.iter_mut() {
        if let Some(status) = worker.process.child.try_wait()? {
            return Err(Failure::fail(
                "the worker to keep running until stopped",
                format!("it exited by itself ({status}): {}", clip(&worker.stderr())),
            ));
        }
    }
    Ok(())
}

/// Whether a process is alive (a zombie is not).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').is_none_or(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

// ---------------------------------------------------------------------------
// Formats of the contract.

/// RFC 3339 in UTC with milliseconds, as the contract's JSON shows times.
fn rfc3339(ms: i64) -> String {
    let (secs, milli) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3_600,
        sod % 3_600 / 60,
        sod % 60
    )
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The keys of a JOB in the contract, besides `payload` / `payload_base64`.
const JOB_KEYS: [&str; 11] = [
    "id",
    "queue",
    "state",
    "priority",
    "attempts",
    "max_attempts",
    "run_at",
    "lease_until",
    "last_error",
    "created_at",
    "updated_at",
];

const STATS_KEYS: [&str; 8] =
    ["queue", "ready", "delayed", "running", "expired", "dead", "done", "oldest_due"];

/// The JOB object the contract gives for a row.
fn job_json(r: &Row) -> Value {
    let mut job = json!({
        "id": r.id,
        "queue": r.queue,
        "state": r.state,
        "priority": r.priority,
        "attempts": r.attempts,
        "max_attempts": r.max_attempts,
        "run_at": rfc3339(r.run_at),
        "lease_until": r.lease_until.map(rfc3339),
        "last_error": r.last_error,
        "created_at": rfc3339(r.created_at),
        "updated_at": rfc3339(r.updated_at),
    });
    match std::str::from_utf8(&r.payload) {
        Ok(text) => job["payload"] = json!(text),
        Err(_) => job["payload_base64"] = json!(base64(&r.payload)),
    }
    job
}

/// The keys of a JSON object, or a failure when it is none.
fn object_keys<'a>(value: &'a Value, what: &str) -> Result<Vec<&'a str>, Failure> {
    let object = value
        .as_object()
        .ok_or_else(|| Failure::fail(format!("{what} to be a JSON object"), clip(&value.to_string())))?;
    Ok(object.keys().map(String::as_str).collect())
}

/// Fails unless `seen` is the contract's JOB for `r`: exactly its keys,
/// the same values, times in RFC 3339 UTC with milliseconds, and the
/// payload as `payload` when UTF-8, else as `payload_base64` (the other of
/// the two absent or null).
fn check_job(seen: &Value, r: &Row, what: &str) -> CaseResult {
    let keys = object_keys(seen, what)?;
    let missing: Vec<&str> = JOB_KEYS.iter().copied().filter(|k| !keys.contains(k)).collect();
    let extra: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| !JOB_KEYS.contains(k) && *k != "payload" && *k != "payload_base64")
        .collect();
    ensure!(
        missing.is_empty() && extra.is_empty(),
        format!("{what}: exactly the keys {JOB_KEYS:?} and payload or payload_base64"),
        format!("missing {missing:?}, unknown {extra:?}: {}", clip(&seen.to_string()))
    );
    let expected = job_json(r);
    let mut wrong = Vec::new();
    for key in JOB_KEYS.iter().chain(["payload", "payload_base64"].iter()) {
        let want = expected.get(*key).unwrap_or(&Value::Null);
        let got = seen.get(*key).unwrap_or(&Value::Null);
        if want != got && !published_variant(key, got, r) {
            wrong.push(format!("{key} {got} (expected {want})"));
        }
    }
    ensure!(
        wrong.is_empty(),
        format!("{what}: {expected}"),
        format!("{}; in {}", wrong.join(", "), clip(&seen.to_string()))
    );
    Ok(())
}

/// What the published command prints where the reference prints otherwise
/// (shared/ukue-contract.md): `""` for a job that never failed, and
/// `delayed` as the state of a ready job whose run_at is still ahead.
fn published_variant(key: &str, got: &Value, r: &Row) -> bool {
    match key {
        "last_error" => r.last_error.is_none() && got == "",
        "state" => r.state == "ready" && r.run_at > now_ms() && got == "delayed",
        _ => false,
    }
}

/// The `jobs` array of `list --json`, with the top-level keys checked.
fn listed<'a>(value: &'a Value, what: &str) -> Result<&'a Vec<Value>, Failure> {
    let keys = object_keys(value, what)?;
    ensure_eq!(keys, vec!["jobs"], format!("{what}: the top-level keys"));
    value["jobs"]
        .as_array()
        .ok_or_else(|| Failure::fail(format!("{what}: `jobs` to be an array"), clip(&value.to_string())))
}

// ---------------------------------------------------------------------------
// 5.3 Add

fn add_stored(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "add.ukue")?;
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
    within(&format!("job {plain}: run_at (default: now)"), r.run_at, t0 - CLOCK_TOL, t1 + CLOCK_TOL)?;
    within(&format!("job {plain}: created_at"), r.created_at, t0 - CLOCK_TOL, t1 + CLOCK_TOL)?;
    within(&format!("job {plain}: updated_at"), r.updated_at, t0 - CLOCK_TOL, t1 + CLOCK_TOL)?;

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
        crate::ctx::expect_success(&who, &full, &out)?;
        let text = String::from_utf8_lossy(&out.stdout);
        let id: i64 = text.trim().parse().map_err(|_| {
            Failure::fail(
                format!("`{}` to print the new id alone on a line", full.join(" ")),
                format!("{text:?}"),
            )
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
    ensure!(ids.windows(2).all(|w| w[0] < w[1]), "ids that grow with each add", format!("{ids:?}"));
    Ok(())
}

// ---------------------------------------------------------------------------
// 5.4 Claim

/// Adds `(payload, options)` jobs through the subject; returns them as added.
fn add_all(
    ctx: &Ctx,
    file: &Path,
    queue: &str,
    jobs: &[(String, Vec<String>)],
) -> Result<Vec<Added>, Failure> {
    let who = ctx.subject().clone();
    let mut added = Vec::new();
    for (payload, options) in jobs {
        let options: Vec<&str> = options.iter().map(String::as_str).collect();
        let job = ctx.add(&who, file, queue, payload, &options)?;
        added.push(Added { job, payload: payload.clone(), by: who.name.clone() });
    }
    Ok(added)
}

/// Runs every job of `added` with one worker running one job at a time,
/// then checks that they ran exactly once each, in `expected` order.
fn run_in_order(ctx: &Ctx, file: &Path, added: Vec<Added>, expected: &[i64]) -> CaseResult {
    // The one model of the format decides the order; the case's own list
    // says what the case means, and the two must agree.
    let model = crate::model::Model::from_rows(&crate::model::run::read_rows(&read(file)?)?, now_ms());
    let modelled = model.claim_order("q");
    if modelled.as_deref() != Some(expected) {
        return Err(Failure::error(
            format!("the case's expected order {expected:?} to be the model's"),
            format!("the model says {modelled:?}"),
        ));
    }
    let ids: Vec<i64> = added.iter().map(|a| a.job).collect();
    let mut worker = probe_worker(ctx, file, "q", &["--concurrency", "1"])?;
    wait_settled(ctx, file, &ids, secs(30), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let history = common::history(ctx, file, added)?;
    for run in &history.executions {
        let want = history.added.iter().find(|a| a.job == run.job).map(|a| a.payload.as_str());
        ensure!(
            want == Some(run.payload.as_str()),
            format!("job {}'s command to read its payload {want:?} on stdin", run.job),
            format!("attempt {} read {:?}", run.attempt, run.payload)
        );
    }
    common::no_findings(
        &format!("the jobs to run in the order {expected:?}"),
        check::order(&history, expected),
    )?;
    common::no_findings("each job to run exactly once", check::exactly_once(&history))
}

fn claim_order_priority(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "priority.ukue")?;
    let priorities = [0, 5, -3, 5, 100, -100];
    let jobs: Vec<(String, Vec<String>)> = priorities
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("job-{i}-priority-{p}"), vec!["--priority".into(), p.to_string()]))
        .collect();
    let added = add_all(ctx, &file, "q", &jobs)?;
    let stored = rows(&file)?;
    for (a, p) in added.iter().zip(priorities) {
        let r = stored.iter().find(|r| r.id == a.job);
        ensure_eq!(r.map(|r| r.priority), Some(p), format!("the stored priority of job {}", a.job));
    }
    // FORMAT.md's pick: priority DESC, run_at, id. The adds came one after
    // another, so run_at grows with id and the order is priority, then id.
    let mut order = stored.clone();
    order.sort_by_key(|r| (-r.priority, r.run_at, r.id));
    let expected: Vec<i64> = order.iter().map(|r| r.id).collect();
    run_in_order(ctx, &file, added, &expected)
}

fn claim_order_run_at(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "run-at.ukue")?;
    // A whole second in the past, so that every `--at` below is past too.
    let t = now_ms().div_euclid(1_000) * 1_000;
    // (label, priority, run_at): ids 1..=6 in this order.
    let plan: [(&str, i64, i64); 6] = [
        ("a", 0, t - 1_000),
        ("b", 0, t - 3_000),
        ("c", 0, t - 2_000),
        ("d-high", 1, t - 500),
        ("e-high", 1, t - 5_000),
        ("f", 0, t - 3_000),
    ];
    let jobs: Vec<(String, Vec<String>)> = plan
        .iter()
        .map(|(label, priority, at)| {
            let mut options = vec!["--at".to_string(), rfc3339(*at)];
            if *priority != 0 {
                options.extend(["--priority".to_string(), priority.to_string()]);
            }
            (label.to_string(), options)
        })
        .collect();
    let added = add_all(ctx, &file, "q", &jobs)?;
    for (a, (label, _, at)) in added.iter().zip(plan) {
        let r = row_present(&file, a.job)?;
        ensure_eq!(r.run_at, at, format!("job {} ({label}) added with --at {}: run_at", a.job, rfc3339(at)));
    }
    // e-high, d-high (priority first), then b and f (same run_at: id), c, a.
    let id = |n: usize| added[n].job;
    let expected = [id(4), id(3), id(1), id(5), id(2), id(0)];
    run_in_order(ctx, &file, added, &expected)
}

fn delayed_not_early(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "delayed.ukue")?;
    let who = ctx.subject().clone();
    let t0 = now_ms();
    let delayed = ctx.add(&who, &file, "q", "delayed", &["--delay", "1500ms"])?;
    let t1 = now_ms();
    let at = now_ms() + 1_500;
    let timed = ctx.add(&who, &file, "q", "timed", &["--at", &rfc3339(at)])?;
    let delayed_at = row_present(&file, delayed)?.run_at;
    within(
        &format!("job {delayed} added with --delay 1500ms at [{t0}, {t1}]: run_at"),
        delayed_at,
        t0 + 1_500 - CLOCK_TOL,
        t1 + 1_500 + CLOCK_TOL,
    )?;
    ensure_eq!(
        row_present(&file, timed)?.run_at,
        at,
        format!("job {timed} added with --at {}: run_at", rfc3339(at))
    );
    let mut worker = probe_worker(ctx, &file, "q", &[])?;
    wait_settled(ctx, &file, &[delayed, timed], secs(15), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let runs = common::executions(ctx)?;
    for (id, run_at) in [(delayed, delayed_at), (timed, at)] {
        for run in runs_of(&runs, id) {
            // The claim's now is at least run_at, and the command starts
            // after the claim; allow a little for clock reading granularity.
            ensure!(
                run.start_ms >= run_at - 10,
                format!("job {id} to start no sooner than its run_at {run_at} ({})", rfc3339(run_at)),
                format!(
                    "attempt {} started at {} ms, {} ms early",
                    run.attempt,
                    run.start_ms,
                    run_at - run.start_ms
                )
            );
        }
    }
    let added = [delayed, timed]
        .iter()
        .map(|&job| Added { job, payload: String::new(), by: who.name.clone() })
        .collect();
    let history = common::history(ctx, &file, added)?;
    common::no_findings("each job to run exactly once", check::exactly_once(&history))
}

/// A running job with an expired lease, written by SQL; the subject's
/// worker on another queue claims a sentinel job there, and that claim must
/// have reaped the expired lease first (§5.4 step 2 covers every queue).
/// Returns (before, after, the time the worker started, the time the
/// harness saw the sentinel run).
fn reap(ctx: &mut Ctx, attempts: i64, max_attempts: i64) -> Result<(Row, Row, i64, i64), Failure> {
    let file = init(ctx, "reap.ukue")?;
    let who = ctx.subject().clone();
    let now = now_ms();
    let put = Put::new("q", "running", now)
        .attempts(attempts, max_attempts)
        .lease(now - 1_000, "stale")
        .run_at(now - 5_000);
    let id = insert(&file, &[put])?[0];
    let sentinel = ctx.add(&who, &file, "other", "sentinel", &[])?;
    let before = row_present(&file, id)?;
    let started = now_ms();
    let mut worker = probe_worker(ctx, &file, "other", &[])?;
    let mut seen_at = 0;
    ctx.wait_for(&format!("the worker on queue `other` to claim and run job {sentinel}"), secs(15), || {
        still_working(&mut [&mut worker])?;
        let ran = common::executions(ctx)?.iter().any(|e| e.job == sentinel);
        seen_at = now_ms();
        Ok(ran)
    })?;
    let after = row_present(&file, id)?;
    ensure!(
        after.state != "running",
        format!(
            "the claim that took job {sentinel} (queue `other`) to have reaped job {id} (queue `q`, lease_until {} \
             in the past) first",
            before.lease_until.unwrap_or_default()
        ),
        brief(&after)
    );
    wait_settled(ctx, &file, &[sentinel], secs(15), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let after = row_present(&file, id)?;
    let ran: Vec<i64> = common::executions(ctx)?.iter().map(|e| e.job).collect();
    ensure_eq!(ran, vec![sentinel], "the jobs that ran (only the sentinel of queue `other`)");
    ensure_eq!(
        (
            after.queue.as_str(),
            after.priority,
            after.max_attempts,
            after.created_at,
            after.payload.as_slice()
        ),
        (
            before.queue.as_str(),
            before.priority,
            before.max_attempts,
            before.created_at,
            before.payload.as_slice()
        ),
        format!("job {id} reaped: (queue, priority, max_attempts, created_at, payload) unchanged")
    );
    not_running(&after)?;
    ensure!(
        after.last_error.as_deref().is_some_and(|e| !e.trim().is_empty()),
        format!("job {id} reaped with last_error noting the expired lease"),
        brief(&after)
    );
    Ok((before, after, started, seen_at))
}

fn lease_reaped_counted(ctx: &mut Ctx) -> CaseResult {
    let (_before, after, started, seen_at) = reap(ctx, 1, 3)?;
    let id = after.id;
    ensure_eq!(
        (after.state.as_str(), after.attempts),
        ("ready", 1),
        format!("job {id} reaped: (state, attempts)")
    );
    within(
        &format!("job {id} reaped: updated_at"),
        after.updated_at,
        started - CLOCK_TOL,
        seen_at + CLOCK_TOL,
    )?;
    // Any backoff (FORMAT.md §5.4, §5.6), but not a run_at before the reap.
    ensure!(
        after.run_at >= after.updated_at - CLOCK_TOL,
        format!("job {id} reaped at its updated_at: run_at no earlier"),
        brief(&after)
    );
    Ok(())
}

fn lease_reaped_backoff(ctx: &mut Ctx) -> CaseResult {
    let (_before, after, started, seen_at) = reap(ctx, 1, 3)?;
    let id = after.id;
    ensure_eq!(
        (after.state.as_str(), after.attempts),
        ("ready", 1),
        format!("job {id} reaped: (state, attempts)")
    );
    within(
        &format!("job {id} reaped after its attempt 1: run_at − updated_at (the backoff)"),
        after.run_at - after.updated_at,
        BACKOFF_MIN - CLOCK_TOL,
        BACKOFF_MAX + CLOCK_TOL,
    )?;
    within(
        &format!("job {id} reaped between {started} and {seen_at}: run_at"),
        after.run_at,
        started + BACKOFF_MIN - SKEW,
        seen_at + BACKOFF_MAX + LATE,
    )
}

fn lease_reaped_dead(ctx: &mut Ctx) -> CaseResult {
    let (before, after, started, seen_at) = reap(ctx, 3, 3)?;
    let id = after.id;
    ensure_eq!(
        (after.state.as_str(), after.attempts),
        ("dead", 3),
        format!("job {id} reaped on its last attempt: (state, attempts)")
    );
    ensure_eq!(after.run_at, before.run_at, format!("job {id} reaped to dead: run_at (unchanged)"));
    within(
        &format!("job {id} reaped: updated_at"),
        after.updated_at,
        started - CLOCK_TOL,
        seen_at + CLOCK_TOL,
    )
}

fn work_environment(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "env.ukue")?;
    let who = ctx.subject().clone();
    let first = ctx.add(&who, &file, "env-q", "hello world", &["--attempts", "4"])?;
    let now = now_ms();
    let later = insert(&file, &[Put::new("env-q", "ready", now).text("second").attempts(2, 5)])?[0];
    let out = ctx.path("env.out");
    let script = r#"printf '%s|%s|%s|%s|%s|%s\n' "$UKUE_FILE" "$UKUE_QUEUE" "$UKUE_JOB_ID" "$UKUE_ATTEMPT" "$UKUE_MAX_ATTEMPTS" "$(cat)" >> "$0""#;
    let mut options = POLL.to_vec();
    options.extend(["--concurrency", "1"]);
    let mut worker =
        start_command_worker(ctx, &who, &file, "env-q", &options, &["sh", "-c", script, path_str(&out)])?;
    let read_lines = || std::fs::read_to_string(&out).unwrap_or_default();
    ctx.wait_for("both jobs to run their command and be finished", secs(15), || {
        still_working(&mut [&mut worker])?;
        Ok(read_lines().lines().count() >= 2 && row(&file, first)?.is_none() && row(&file, later)?.is_none())
    })
    .map_err(|mut f| {
        f.seen = format!(
            "{}; the command wrote {:?}; file: {}",
            f.seen,
            read_lines(),
            brief_all(&rows(&file).unwrap_or_default())
        );
        f
    })?;
    worker.stop(secs(15))?;
    let text = read_lines();
    let same_file = |seen: &str| {
        seen == path_str(&file)
            || std::fs::canonicalize(seen)
                .ok()
                .zip(std::fs::canonicalize(&file).ok())
                .is_some_and(|(a, b)| a == b)
    };
    for (id, attempt, max, payload) in [(first, 1, 4, "hello world"), (later, 3, 5, "second")] {
        let expected = format!("{}|env-q|{id}|{attempt}|{max}|{payload}", path_str(&file));
        let lines: Vec<&str> =
            text.lines().filter(|l| l.split('|').nth(2) == Some(id.to_string().as_str())).collect();
        ensure!(
            lines.len() == 1,
            format!("one run of job {id} with UKUE_FILE|UKUE_QUEUE|UKUE_JOB_ID|UKUE_ATTEMPT|UKUE_MAX_ATTEMPTS|stdin = {expected}"),
            format!("the command wrote {text:?}")
        );
        let fields: Vec<&str> = lines[0].splitn(6, '|').collect();
        let want =
            ["env-q".to_string(), id.to_string(), attempt.to_string(), max.to_string(), payload.to_string()];
        let ok = fields.len() == 6 && same_file(fields[0]) && fields[1..] == want[..];
        ensure!(ok, format!("job {id}'s command to see {expected}"), lines[0].to_string());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// 5.5 Finish, 5.6 Fail, 5.8 Release

fn fail_backoff(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "backoff.ukue")?;
    let who = ctx.subject().clone();
    let id = ctx.add(&who, &file, "q", "exit:3", &[])?;
    let mut worker = probe_worker(ctx, &file, "q", &[])?;
    let seen_at = wait_settled(ctx, &file, &[id], secs(15), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let r = row_present(&file, id)?;
    let runs = common::executions(ctx)?;
    let first = runs_of(&runs, id).into_iter().find(|e| e.attempt == 1).cloned();
    let end = first.as_ref().and_then(|e| e.end_ms).ok_or_else(|| {
        Failure::fail(format!("a probe record of job {id} attempt 1 ending"), format!("{runs:?}"))
    })?;
    ensure_eq!(
        (r.state.as_str(), r.attempts),
        ("ready", 1),
        format!("job {id} after attempt 1 exited 3: (state, attempts)")
    );
    not_running(&r)?;
    has_error(&r)?;
    within(
        &format!("job {id} failed on attempt 1: run_at − updated_at (the backoff)"),
        r.run_at - r.updated_at,
        BACKOFF_MIN - CLOCK_TOL,
        BACKOFF_MAX + CLOCK_TOL,
    )?;
    within(
        &format!("job {id} whose command ended at {end} ms (seen failed at {seen_at} ms): run_at"),
        r.run_at,
        end + BACKOFF_MIN - SKEW,
        seen_at + BACKOFF_MAX + LATE,
    )
}

fn dead_after_max_attempts(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "dead.ukue")?;
    let who = ctx.subject().clone();
    let one = ctx.add(&who, &file, "q", "exit:3 only-attempt", &["--attempts", "1"])?;
    // A job on its second and last attempt, as a first failure leaves it
    // (without waiting 10 s for the backoff).
    let now = now_ms();
    let put = Put::new("q", "ready", now).text("exit:3 last-of-two").attempts(1, 2).error("exit status 3");
    let two = insert(&file, &[put])?[0];
    let before_two = row_present(&file, two)?;
    let mut worker = probe_worker(ctx, &file, "q", &[])?;
    wait_settled(ctx, &file, &[one, two], secs(15), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let added = vec![Added { job: one, payload: "exit:3 only-attempt".into(), by: who.name.clone() }];
    let history = common::history(ctx, &file, added)?;
    common::no_findings(
        &format!("job {one} (--attempts 1, exit 3) dead after exactly one run"),
        check::dead_after_max(&history, &[one]),
    )?;
    let r = row_present(&file, one)?;
    ensure_eq!(r.attempts, 1, format!("job {one} dead: attempts"));
    not_running(&r)?;
    has_error(&r)?;
    let runs = runs_of(&history.executions, two);
    let seen: Vec<(i64, i64)> = runs.iter().map(|e| (e.attempt, e.max_attempts)).collect();
    ensure_eq!(
        seen,
        vec![(2, 2)],
        format!("job {two} (attempts 1 of 2): the (UKUE_ATTEMPT, UKUE_MAX_ATTEMPTS) of its runs")
    );
    dead_after_failing(&file, &before_two, 2, "after its last attempt exited 3")
}

/// Job `before.id` is dead after a failed run, with `attempts` counted, its
/// max_attempts and run_at as `before`, no holder and an error; `how` says
/// what killed it.
fn dead_after_failing(file: &Path, before: &Row, attempts: i64, how: &str) -> CaseResult {
    let id = before.id;
    let r = row_present(file, id)?;
    ensure_eq!(
        (r.state.as_str(), r.attempts, r.max_attempts),
        ("dead", attempts, before.max_attempts),
        format!("job {id} {how}: (state, attempts, max_attempts)")
    );
    ensure_eq!(r.run_at, before.run_at, format!("job {id} dead: run_at (unchanged)"));
    not_running(&r)?;
    has_error(&r)
}

fn exit_65_dead(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "exit65.ukue")?;
    let who = ctx.subject().clone();
    let id = ctx.add(&who, &file, "q", "exit:65", &[])?;
    let before = row_present(&file, id)?;
    let mut worker = probe_worker(ctx, &file, "q", &[])?;
    wait_settled(ctx, &file, &[id], secs(15), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let runs = common::executions(ctx)?;
    ensure_eq!(runs_of(&runs, id).len(), 1, format!("runs of job {id}"));
    ensure_eq!(before.max_attempts, 10, format!("job {id} added without --attempts: max_attempts"));
    dead_after_failing(&file, &before, 1, "whose command exited 65 on attempt 1")
}

fn timeout(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "timeout.ukue")?;
    let who = ctx.subject().clone();
    let id = ctx.add(&who, &file, "q", "sleep:60000", &[])?;
    let mut worker = probe_worker(ctx, &file, "q", &["--timeout", "300ms"])?;
    let seen_at = wait_settled(ctx, &file, &[id], secs(20), &mut [&mut worker])?;
    worker.stop(secs(15))?;
    let runs = common::executions(ctx)?;
    let run = runs_of(&runs, id).first().copied().cloned().ok_or_else(|| Failure::fail("a run", "none"))?;
    ensure!(
        run.end_ms.is_none(),
        format!("job {id}'s command (sleep 60 s) stopped by --timeout 300ms"),
        format!("it ran to its end at {:?} ms (exit {:?})", run.end_ms, run.exit)
    );
    ctx.wait_for(&format!("job {id}'s command (pid {}) to be gone", run.pid), secs(5), || {
        Ok(!alive(run.pid))
    })?;
    let r = row_present(&file, id)?;
    ensure_eq!(
        (r.state.as_str(), r.attempts),
        ("ready", 1),
        format!("job {id} after a timeout on attempt 1: (state, attempts)")
    );
    not_running(&r)?;
    has_error(&r)?;
    // Any backoff (FORMAT.md §5.6: other programs pick their own), but not
    // a run_at before the attempt failed.
    ensure!(
        r.run_at >= run.start_ms - SKEW,
        format!("job {id} timed out after its start at {} ms: run_at no earlier", run.start_ms),
        brief(&r)
    );
    within(&format!("job {id} failed: updated_at"), r.updated_at, run.start_ms - SKEW, seen_at + CLOCK_TOL)
}

fn keep_done(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "keep.ukue")?;
    let who = ctx.subject().clone();
    let kept = ctx.add(&who, &file, "keep", "keep-me", &[])?;
    let dropped = ctx.add(&who, &file, "drop", "drop-me", &[])?;
    let mut keeper = probe_worker(ctx, &file, "keep", &["--keep-done"])?;
    let mut dropper = probe_worker(ctx, &file, "drop", &[])?;
    wait_settled(ctx, &file, &[kept, dropped], secs(15), &mut [&mut keeper, &mut dropper])?;
    keeper.stop(secs(15))?;
    dropper.stop(secs(15))?;
    let added = [(kept, "keep-me"), (dropped, "drop-me")]
        .iter()
        .map(|&(job, payload)| Added { job, payload: payload.into(), by: who.name.clone() })
        .collect();
    let history = common::history(ctx, &file, added)?;
    common::no_findings("each job to run exactly once", check::exactly_once(&history))?;
    let r = row(&file, kept)?.ok_or_else(|| {
        Failure::fail(format!("job {kept}, finished by a --keep-done worker, kept as done"), "it is gone")
    })?;
    ensure_eq!(
        (r.state.as_str(), r.attempts),
        ("done", 1),
        format!("job {kept} finished with --keep-done: (state, attempts)")
    );
    not_running(&r)?;
    ensure!(
        r.updated_at >= r.created_at,
        format!("job {kept}: updated_at at or after created_at"),
        brief(&r)
    );
    if let Some(r) = row(&file, dropped)? {
        return Err(Failure::fail(
            format!("job {dropped}, finished without --keep-done, deleted"),
            brief(&r),
        ));
    }
    Ok(())
}

fn give_back_on_stop(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "release.ukue")?;
    let who = ctx.subject().clone();
    let id = ctx.add(&who, &file, "q", "sleep:30000 long", &[])?;
    let before = row_present(&file, id)?;
    let mut worker = probe_worker(ctx, &file, "q", &["--grace", "200ms"])?;
    ctx.wait_for(&format!("job {id}'s command to start"), secs(15), || {
        still_working(&mut [&mut worker])?;
        Ok(common::executions(ctx)?.iter().any(|e| e.job == id)
            && row(&file, id)?.is_some_and(|r| r.state == "running"))
    })?;
    let stopping = now_ms();
    worker.stop(secs(15))?;
    let stopped = now_ms();
    let runs = common::executions(ctx)?;
    let run = runs_of(&runs, id).first().copied().cloned().ok_or_else(|| Failure::fail("a run", "none"))?;
    ensure_eq!(runs_of(&runs, id).len(), 1, format!("runs of job {id}"));
    ensure!(
        run.end_ms.is_none(),
        format!("job {id}'s command (sleep 30 s) stopped at the end of --grace 200ms"),
        format!("it ran to its end at {:?} ms (exit {:?})", run.end_ms, run.exit)
    );
    ctx.wait_for(&format!("job {id}'s command (pid {}) to be gone", run.pid), secs(5), || {
        Ok(!alive(run.pid))
    })?;
    let r = row_present(&file, id)?;
    ensure_eq!(
        (r.state.as_str(), r.attempts),
        ("ready", 0),
        format!("job {id} given back by a stopping worker: (state, attempts; the attempt not counted)")
    );
    // The published command sets run_at to now, the reference keeps it
    // (FORMAT.md §5.8): due at once either way.
    ensure!(
        r.run_at == before.run_at || (stopping - CLOCK_TOL..=stopped + CLOCK_TOL).contains(&r.run_at),
        format!(
            "job {id} given back: run_at unchanged ({}), or the moment it was given back \
             (between {stopping} and {stopped})",
            before.run_at
        ),
        brief(&r)
    );
    not_running(&r)
}

// ---------------------------------------------------------------------------
// 5.9 Retry, delete and purge

/// Checks a job that `retry` sent back to ready between t0 and t1.
fn check_retried(before: &Row, after: &[Row], t0: i64, t1: i64) -> CaseResult {
    let id = before.id;
    let r = after
        .iter()
        .find(|r| r.id == id)
        .ok_or_else(|| Failure::fail(format!("job {id} retried"), "it is gone"))?;
    ensure_eq!((r.state.as_str(), r.attempts), ("ready", 0), format!("job {id} retried: (state, attempts)"));
    not_running(r)?;
    within(
        &format!("job {id} retried between {t0} and {t1}: run_at (due now)"),
        r.run_at,
        t0 - CLOCK_TOL,
        t1 + CLOCK_TOL,
    )?;
    within(&format!("job {id} retried: updated_at"), r.updated_at, t0 - CLOCK_TOL, t1 + CLOCK_TOL)?;
    ensure_eq!(
        (r.queue.as_str(), r.priority, r.max_attempts, r.created_at, r.payload.as_slice()),
        (
            before.queue.as_str(),
            before.priority,
            before.max_attempts,
            before.created_at,
            before.payload.as_slice()
        ),
        format!("job {id} retried: (queue, priority, max_attempts, created_at, payload) unchanged")
    );
    Ok(())
}

fn retry(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "retry.ukue")?;
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

fn purge(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "purge.ukue")?;
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
            &format!("`purge FILE {}` to delete exactly jobs {gone:?}", options.join(" ")),
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

fn delete(ctx: &mut Ctx) -> CaseResult {
    let file = init(ctx, "delete.ukue")?;
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

// ---------------------------------------------------------------------------
// 5.10 Reading

fn stats_json(ctx: &mut Ctx) -> CaseResult {
    let who = ctx.subject().clone();
    let empty = init(ctx, "empty.ukue")?;
    let seen = ctx.json(&who, &["stats", path_str(&empty), "--json"])?;
    ensure_eq!(seen, json!({"queues": []}), "`stats --json` of a file without jobs");

    let file = init(ctx, "stats.ukue")?;
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
    ensure_eq!(sorted, vec!["q", "r", "z"], "`stats --json`: the queues");
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
    let file = init(ctx, "read.ukue")?;
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

fn list_json(ctx: &mut Ctx) -> CaseResult {
    let (file, all) = reading_file(ctx)?;
    let who = ctx.subject().clone();
    let f = path_str(&file).to_string();
    let id = |n: usize| all[n].id;

    let seen = ctx.json(&who, &["list", &f, "--json"])?;
    let jobs = listed(&seen, "`list --json`")?;
    let ids: Vec<i64> = jobs.iter().filter_map(|j| j["id"].as_i64()).collect();
    let all_ids: Vec<i64> = all.iter().map(|r| r.id).collect();
    ensure_eq!(ids, all_ids, "`list --json`: the ids, in id order");
    for (job, r) in jobs.iter().zip(&all) {
        check_job(job, r, &format!("`list --json`: job {}", r.id))?;
    }

    let (after1, after6) = (id(1).to_string(), id(6).to_string());
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
        (vec!["--queue", "a", "--after", &after1, "--limit", "2"], vec![id(3), id(4)]),
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

fn show_json(ctx: &mut Ctx) -> CaseResult {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_791_277_200_000), "2026-10-06T09:00:00.000Z");
        assert_eq!(rfc3339(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(951_782_400_007), "2000-02-29T00:00:00.007Z");
    }

    #[test]
    fn base64_encodes() {
        assert_eq!(base64(&[0xff, 0x00]), "/wA=");
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"hi\n"), "aGkK");
    }

    #[test]
    fn every_case_names_a_rule_of_format_md() {
        for case in cases() {
            assert!(case.id.starts_with("steps/"), "{}", case.id);
            assert!(crate::rules::title(case.rule).is_some(), "{}: rule {}", case.id, case.rule);
        }
    }
}
