//! Times, in and out: `add --at` and an add's `run_at` over HTTP, each
//! time of [`values::AT_TIMES`] stored to the millisecond (numeric offsets
//! of both signs, fractions, days that are and are not); and every time a
//! command or the API prints, each class of [`values::JSON_TIMES`] (a whole
//! second among them: `.000` is printed too), in the form and at the value
//! of the row.

use serde_json::{json, Value};

use crate::cases::CaseResult;
use crate::shown::printed_time;
use crate::subjects::ctx::{path_str, Ctx};
use crate::subjects::observe::file::{job_count, row, Row};
use crate::subjects::probe::now_ms;
use crate::subjects::server::{self, Client};
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::args::{added_row, refused_adding_nothing, shown};
use super::payloads::json_output;
use super::values::{At, AT_TIMES, JSON_TIMES};
use crate::subjects::observe::file::write;

/// Slack between our clock and the subject's, around an add (ms).
const CLOCK_TOL: i64 = 1_000;

/// Digits of `text`'s fraction of a second.
fn fraction_digits(text: &str) -> usize {
    text.split_once('.').map_or(0, |(_, rest)| rest.bytes().take_while(u8::is_ascii_digit).count())
}

/// Fails unless `r`, added with `time` (`how`), is due as `want` says:
/// at that instant to the millisecond (or the next one, when the time
/// has a finer fraction), or, for a time past, at once.
fn due_as_given(r: &Row, time: &str, want: At, how: &str, added_at: i64) -> CaseResult {
    match want {
        At::Exactly(ms) => {
            let finer = fraction_digits(time) > 3;
            ensure!(
                r.run_at == ms || (finer && r.run_at == ms + 1),
                format!("{how}: run_at {ms} ms ({})", crate::shown::rfc3339(ms)),
                format!("run_at {} ms ({})", r.run_at, crate::shown::rfc3339(r.run_at))
            );
        }
        At::Past => ensure!(
            r.run_at <= added_at + CLOCK_TOL,
            format!("{how}: a time past, due at once (run_at the time given, or the add's)"),
            format!(
                "run_at {}, the add at about {}",
                crate::shown::rfc3339(r.run_at),
                crate::shown::rfc3339(added_at)
            )
        ),
        At::Bad => unreachable!("a bad time adds no job"),
    }
    Ok(())
}

/// `add.at`: each time of the table through `add --at`: stored to the
/// millisecond with its offset taken off (`+02:00` two hours earlier in
/// UTC), a time past due at once, one that is not RFC 3339 a usage error.
/// Then `stats` and `list` read the times past, 1900 among them, as due,
/// and the others as delayed (`stats.counts`, `list.state`).
pub fn at(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let f = path_str(&file).to_string();
    let (mut due, mut delayed) = (Vec::new(), Vec::new());
    for (i, (time, want)) in AT_TIMES.iter().enumerate() {
        let payload = format!("at-{i}");
        let args = ["add", &f, "q", &payload, "--at", time];
        if *want == At::Bad {
            refused_adding_nothing(ctx, &file, &args, true)?;
            continue;
        }
        let added_at = now_ms();
        let r = added_row(ctx, &file, &args)?;
        due_as_given(&r, time, *want, &shown(ctx, &args), added_at)?;
        if *want == At::Past {
            due.push((r.id, r.run_at))
        } else {
            delayed.push(r.id)
        }
    }
    read_as_due(ctx, &f, &due, &delayed)
}

/// Fails unless `stats --json` and `list --json --state` of queue q read
/// the jobs `due` (id, run_at) as ready and due, the earliest the oldest
/// due, and those `delayed` as delayed.
fn read_as_due(ctx: &mut Ctx, f: &str, due: &[(i64, i64)], delayed: &[i64]) -> CaseResult {
    let who = ctx.subject().clone();
    let stats = ctx.json(&who, &["stats", f, "--json"])?;
    let q = stats["queues"].as_array().and_then(|qs| qs.iter().find(|q| q["queue"] == "q")).cloned();
    let counts = q.as_ref().map(|q| (q["ready"].as_u64(), q["delayed"].as_u64()));
    ensure_eq!(
        counts,
        Some((Some(due.len() as u64), Some(delayed.len() as u64))),
        "`stats --json` of the times of sweep/at: queue q's (ready, delayed), the times past due"
    );
    let oldest = due.iter().map(|&(_, run_at)| run_at).min();
    let shown = q.as_ref().and_then(|q| q["oldest_due"].as_str().and_then(printed_time));
    ensure_eq!(
        shown.map(crate::shown::rfc3339),
        oldest.map(crate::shown::rfc3339),
        "`stats --json` of the times of sweep/at: queue q's oldest_due, the earliest time past"
    );
    let due: Vec<i64> = due.iter().map(|&(id, _)| id).collect();
    for (state, want) in [("ready", &due[..]), ("delayed", delayed)] {
        let seen = ctx.json(&who, &["list", f, "--json", "--state", state, "--limit", "1000"])?;
        let ids: Vec<i64> = seen["jobs"]
            .as_array()
            .map(|jobs| jobs.iter().filter_map(|j| j["id"].as_i64()).collect())
            .unwrap_or_default();
        ensure_eq!(
            ids,
            want.to_vec(),
            format!("`list --json --state {state}` of the times of sweep/at: the ids")
        );
    }
    Ok(())
}

/// `http.add-run-at`: each time of the table as an add's `run_at` over
/// HTTP, as `add --at` takes it; one that is not RFC 3339 refused with a
/// 4xx, adding nothing. A time past is due at once: a claim of its own
/// queue takes it (`http.claim`), 1900 as much as a minute ago.
pub fn at_http(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let server = server::serve(ctx, &file, &[], &[])?;
    let client = Client::new(server.port, None);
    for (i, (time, want)) in AT_TIMES.iter().enumerate() {
        // A time past in a queue of its own, for the claim that takes it.
        let queue = if *want == At::Past { format!("past-{i}") } else { "q".to_string() };
        let body = json!({"queue": queue, "payload": format!("at-{i}"), "run_at": time});
        let how = format!("POST /v1/jobs {body}");
        if *want == At::Bad {
            let before = job_count(&file)?;
            let reply = client.post("/v1/jobs", body)?;
            ensure!(
                (400..500).contains(&reply.status) && reply.is_json_error(),
                format!("{how}: refused, a 4xx with a JSON error"),
                reply.show()
            );
            ensure_eq!(job_count(&file)?, before, format!("jobs after {how}"));
            continue;
        }
        let added_at = now_ms();
        let id = client.add(body)?;
        let r =
            row(&file, id)?.ok_or_else(|| Failure::fail(format!("{how}: job {id} in the file"), "none"))?;
        due_as_given(&r, time, *want, &how, added_at)?;
        if *want == At::Past {
            fail_dead_keeps_run_at(&client, &file, &r, &queue, &how)?;
        }
    }
    Ok(())
}

/// Claims job `r`, due at once in a queue of its own, and fails it for
/// good: it goes dead with its run_at left alone (FORMAT.md §5.6), a run_at
/// before 1970 too.
fn fail_dead_keeps_run_at(
    client: &Client,
    file: &std::path::Path,
    r: &Row,
    queue: &str,
    how: &str,
) -> CaseResult {
    let claim = json!({"queue": queue});
    let job = client.claim(claim.clone())?;
    let claimed = job.as_ref().and_then(|job| job["id"].as_i64());
    ensure_eq!(claimed, Some(r.id), format!("POST /v1/claim {claim} after {how}: the job, due at once"));
    let token = job.as_ref().map_or(Value::Null, |job| job["token"].clone());
    let fail = format!("/v1/jobs/{}/fail", r.id);
    let reply = client.post(&fail, json!({"token": token, "error": "x", "dead": true}))?;
    ensure!(reply.status == 200, format!("POST {fail} with \"dead\": true: 200"), reply.show());
    let after = row(file, r.id)?.map(|a| (a.state, a.run_at));
    ensure_eq!(
        after,
        Some(("dead".to_string(), r.run_at)),
        format!(
            "job {} (added by {how}) failed for good: (state, run_at), run_at left alone (FORMAT.md §5.6)",
            r.id
        )
    );
    Ok(())
}

/// Fails unless `value` is the time `ms` as `json.times` prints one.
fn check_time(value: &Value, ms: i64, what: &str) -> CaseResult {
    let expected = crate::shown::rfc3339(ms);
    ensure!(
        value.as_str().and_then(printed_time) == Some(ms),
        format!("{what}: {expected} (RFC 3339 in UTC with milliseconds)"),
        value.to_string()
    );
    Ok(())
}

/// One job per time class: running, with run_at, lease_until,
/// created_at and updated_at all that time; and for a time past, a ready
/// job due since then in a queue of its own, for `oldest_due`. (class,
/// time, running job's id, due queue).
struct Timed {
    class: &'static str,
    ms: i64,
    id: i64,
    due_queue: Option<String>,
}

fn timed_jobs(file: &std::path::Path) -> Result<Vec<Timed>, Failure> {
    let now = now_ms();
    let conn = write(file)?;
    let mut jobs = Vec::new();
    for (class, ms) in JSON_TIMES {
        conn.execute(
            "INSERT INTO ukue_jobs (queue, payload, state, attempts, run_at, lease_until, token, created_at, updated_at)
             VALUES (?1, ?2, 'running', 1, ?3, ?3, ?4, ?3, ?3)",
            rusqlite::params![format!("held-{class}"), *class, ms, format!("token-{class}")],
        )?;
        let id = conn.last_insert_rowid();
        let due_queue = (*ms < now).then(|| format!("due-{class}"));
        if let Some(queue) = &due_queue {
            conn.execute(
                "INSERT INTO ukue_jobs (queue, payload, run_at, created_at, updated_at) VALUES (?1, ?2, ?3, ?3, ?3)",
                rusqlite::params![queue, *class, ms],
            )?;
        }
        jobs.push(Timed { class, ms: *ms, id, due_queue });
    }
    Ok(jobs)
}

const TIME_KEYS: [&str; 4] = ["run_at", "lease_until", "created_at", "updated_at"];

/// Fails unless `job` (a JOB) shows each of its times as `t`.
fn check_job_times(job: &Value, t: &Timed, what: &str) -> CaseResult {
    for key in TIME_KEYS {
        check_time(&job[key], t.ms, &format!("{what} (time class {}): {key}", t.class))?;
    }
    Ok(())
}

/// Fails unless `stats` (`{"queues": [...]}`) shows each due queue's
/// oldest_due as its time.
fn check_oldest_due(stats: &Value, jobs: &[Timed], what: &str) -> CaseResult {
    let queues = stats["queues"].as_array().cloned().unwrap_or_default();
    for t in jobs {
        let Some(queue) = &t.due_queue else { continue };
        let entry = queues.iter().find(|q| q["queue"] == queue.as_str());
        let entry =
            entry.ok_or_else(|| Failure::fail(format!("{what}: queue {queue}"), stats.to_string()))?;
        check_time(&entry["oldest_due"], t.ms, &format!("{what}: queue {queue}'s oldest_due"))?;
    }
    Ok(())
}

/// `json.times`: each time class in every time of `list --json` and
/// `show --json`, and in `stats --json`'s oldest_due: RFC 3339 in UTC
/// with exactly three digits of milliseconds (`.000` for a whole second),
/// the row's instant.
pub fn json_times(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let jobs = timed_jobs(&file)?;
    let f = path_str(&file).to_string();
    let listed = json_output(ctx, &["list", &f, "--json", "--state", "running"])?;
    for t in &jobs {
        let job = listed["jobs"].as_array().and_then(|jobs| jobs.iter().find(|j| j["id"] == t.id));
        let job = job.ok_or_else(|| {
            Failure::fail(format!("`list --json` to list job {}", t.id), listed.to_string())
        })?;
        check_job_times(job, t, &format!("job {} in `list --json`", t.id))?;
        let shown = json_output(ctx, &["show", &f, &t.id.to_string(), "--json"])?;
        check_job_times(&shown, t, &format!("`show {} --json`", t.id))?;
    }
    check_oldest_due(&json_output(ctx, &["stats", &f, "--json"])?, &jobs, "`stats --json`")
}

/// `http.times`: the same over HTTP: `GET /v1/jobs`, `GET /v1/jobs/{id}`,
/// `GET /v1/stats`, and the `created_at` of a claimed job.
pub fn json_times_http(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let jobs = timed_jobs(&file)?;
    let server = server::serve(ctx, &file, &[], &[])?;
    let client = Client::new(server.port, None);
    let get = |path: &str| -> Result<Value, Failure> {
        let reply = client.get(path)?;
        ensure!(reply.status == 200, format!("GET {path}: 200 and JSON"), reply.show());
        reply.json().ok_or_else(|| Failure::fail(format!("GET {path}: JSON"), reply.show()))
    };
    let listed = get("/v1/jobs?state=running&limit=1000")?;
    for t in &jobs {
        let job = listed["jobs"].as_array().and_then(|jobs| jobs.iter().find(|j| j["id"] == t.id));
        let job = job
            .ok_or_else(|| Failure::fail(format!("GET /v1/jobs to list job {}", t.id), listed.to_string()))?;
        check_job_times(job, t, &format!("job {} in GET /v1/jobs", t.id))?;
        check_job_times(&get(&format!("/v1/jobs/{}", t.id))?, t, &format!("GET /v1/jobs/{}", t.id))?;
    }
    check_oldest_due(&get("/v1/stats")?, &jobs, "GET /v1/stats")?;
    for t in jobs.iter().filter(|t| t.due_queue.is_some()) {
        let queue = t.due_queue.as_deref().unwrap_or_default();
        let claimed = client.claim(json!({"queue": queue}))?;
        let job =
            claimed.ok_or_else(|| Failure::fail(format!("a claim of queue {queue}: its due job"), "204"))?;
        check_time(&job["created_at"], t.ms, &format!("the claim of queue {queue}: created_at"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_exact_at_time_is_its_instant() {
        for (text, want) in AT_TIMES {
            let parsed = ukue::cli::time::parse(text);
            match want {
                At::Exactly(ms) => assert_eq!(parsed, Ok(*ms), "{text}"),
                At::Past => assert!(parsed.is_ok_and(|ms| ms < 1_000_000_000_000), "{text}"),
                At::Bad => assert!(parsed.is_err(), "{text}"),
            }
        }
        for (class, ms) in JSON_TIMES {
            assert_eq!(printed_time(&crate::shown::rfc3339(*ms)), Some(*ms), "{class}");
        }
    }
}
