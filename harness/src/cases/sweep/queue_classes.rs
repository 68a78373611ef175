//! Queue names by class ([`values::QUEUE_CLASSES`]): each name beside its
//! twin (the name a trim, a case fold, a Unicode normalization or a LIKE
//! would make of it), both queues of their own. Each is stored byte for
//! byte, listed, counted and claimed as given, on the command line and
//! over HTTP.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{json, Value};

use crate::cases::CaseResult;
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::observe::file::row;
use crate::subjects::server::{self, Client};
use crate::subjects::worker::start_worker;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::args::added_row;
use super::payloads::{json_output, starts};
use super::values::QUEUE_CLASSES;

/// Every name and twin of the table, once each, in the table's order.
fn names() -> Vec<&'static str> {
    let mut seen = BTreeSet::new();
    QUEUE_CLASSES.iter().flat_map(|c| [c.name, c.twin]).filter(|n| seen.insert(*n)).collect()
}

/// The class a name of [`names`] stands for, for a report.
fn class_of(name: &str) -> String {
    match QUEUE_CLASSES.iter().find(|c| c.name == name) {
        Some(c) => c.class.to_string(),
        None => QUEUE_CLASSES
            .iter()
            .find(|c| c.twin == name)
            .map_or(String::new(), |c| format!("twin of {}", c.class)),
    }
}

/// A name as a report shows it: quoted, each character but printable
/// ASCII written as `\u{…}`, so that twins that look alike read apart.
fn quoted(name: &str) -> String {
    let inner: String =
        name.chars()
            .map(|c| {
                if c.is_ascii_graphic() || c == ' ' {
                    c.to_string()
                } else {
                    format!("\\u{{{:x}}}", c as u32)
                }
            })
            .collect();
    format!("\"{inner}\"")
}

/// Fails unless job `id`'s row holds queue `name`, byte for byte.
fn stored_as_given(file: &std::path::Path, id: i64, name: &str, how: &str) -> CaseResult {
    let stored = row(file, id)?.map(|r| r.queue);
    ensure!(
        stored.as_deref() == Some(name),
        format!("{how}: job {id} stored with queue {} as given", quoted(name)),
        match stored {
            Some(q) => format!("queue {}", quoted(&q)),
            None => "no such job in the file".to_string(),
        }
    );
    Ok(())
}

/// Fails unless `listed` (`{"jobs": [...]}`) holds exactly job `id`.
fn lists_only(listed: &Value, id: i64, how: &str) -> CaseResult {
    let ids: Vec<i64> = listed["jobs"]
        .as_array()
        .map(|j| j.iter().filter_map(|j| j["id"].as_i64()).collect())
        .unwrap_or_default();
    ensure_eq!(ids, vec![id], format!("{how}: the ids listed"));
    Ok(())
}

/// Fails unless `stats` (`{"queues": [...]}`) names exactly `names`.
fn counts_each(stats: &Value, names: &[&str], how: &str) -> CaseResult {
    let seen: Vec<String> = stats["queues"]
        .as_array()
        .map(|q| q.iter().filter_map(|s| s["queue"].as_str().map(String::from)).collect())
        .unwrap_or_default();
    let mut expected: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    expected.sort();
    let mut sorted = seen.clone();
    sorted.sort();
    ensure!(
        sorted == expected,
        format!("{how}: one entry per queue, each named as given: {}", quoted(&expected.join("|"))),
        format!("{}", quoted(&seen.join("|")))
    );
    Ok(())
}

/// `add.queue`: `add` stores each name of the table and its twin as given;
/// `list --queue NAME` lists that queue's job alone, `stats --json` names
/// each queue as given, and `work` on a name runs its job and no twin's.
pub fn cli(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let f = path_str(&file).to_string();
    let mut ids = BTreeMap::new();
    for (i, name) in names().into_iter().enumerate() {
        let args = ["add", &f, name, &format!("job-{i}")];
        let r = added_row(ctx, &file, &args)?;
        let how = format!("`add FILE {} job-{i}` ({})", quoted(name), class_of(name));
        stored_as_given(&file, r.id, name, &how)?;
        ids.insert(name, r.id);
    }
    for (name, id) in &ids {
        let listed = json_output(ctx, &["list", &f, "--json", "--queue", name])?;
        lists_only(&listed, *id, &format!("`list --json --queue {}`", quoted(name)))?;
    }
    counts_each(&json_output(ctx, &["stats", &f, "--json"])?, &names(), "`stats --json`")?;
    let subject = ctx.subject().clone();
    let worked: Vec<&str> = QUEUE_CLASSES.iter().filter(|c| c.worked).map(|c| c.name).collect();
    let mut workers = Vec::new();
    for name in &worked {
        workers.push((name, start_worker(ctx, &subject, &file, name, &["--poll", "20ms", "--quiet"])?));
    }
    let what = format!("`work` on each of {} to run its queue's job", quoted(&worked.join("|")));
    let ran = ctx.wait_for(&what, Duration::from_secs(20), || {
        for (name, worker) in workers.iter_mut() {
            worker.still_running(&format!("`work` on {} to keep running until stopped", quoted(name)))?;
        }
        Ok(worked.iter().all(|name| row(&file, ids[name]).is_ok_and(|r| r.is_none())))
    });
    for (_, worker) in workers {
        worker.stop(Duration::from_secs(15))?;
    }
    let started = starts(ctx)?;
    let by_id: BTreeMap<i64, &str> = ids.iter().map(|(name, id)| (*id, *name)).collect();
    for (id, start) in &started {
        let name = by_id.get(id).copied().unwrap_or("?");
        ensure!(
            worked.contains(&name) && start.queue == name,
            format!(
                "`work` on {} to run only the jobs of those queues, each with UKUE_QUEUE as given",
                quoted(&worked.join("|"))
            ),
            format!("job {id} of queue {} ran with UKUE_QUEUE {}", quoted(name), quoted(&clip(&start.queue)))
        );
    }
    ran
}

/// A query's value, percent-encoded (every byte but RFC 3986's unreserved).
fn query_value(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `http.add-queue` and `http.claim`: over HTTP, each name and its twin
/// are stored as given, `GET /v1/jobs?queue=NAME` lists that queue's job
/// alone, `GET /v1/stats` names each as given, and a claim of a name takes
/// its own job.
pub fn http(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let server = server::serve(ctx, &file, &[], &[])?;
    let client = Client::new(server.port, None);
    let mut ids = BTreeMap::new();
    for (i, name) in names().into_iter().enumerate() {
        let id = client.add(json!({"queue": name, "payload": format!("job-{i}")}))?;
        let how = format!("POST /v1/jobs with queue {} ({})", quoted(name), class_of(name));
        stored_as_given(&file, id, name, &how)?;
        ids.insert(name, id);
    }
    let get = |path: &str| -> Result<Value, Failure> {
        let reply = client.get(path)?;
        ensure!(reply.status == 200, format!("GET {path}: 200 and JSON"), reply.show());
        reply.json().ok_or_else(|| Failure::fail(format!("GET {path}: JSON"), reply.show()))
    };
    for (name, id) in &ids {
        let path = format!("/v1/jobs?queue={}", query_value(name));
        lists_only(&get(&path)?, *id, &format!("GET {path}"))?;
    }
    counts_each(&get("/v1/stats")?, &names(), "GET /v1/stats")?;
    for (name, id) in &ids {
        let claimed = client.claim(json!({"queue": name, "lease": 600}))?;
        ensure_eq!(
            claimed.as_ref().and_then(|job| job["id"].as_i64()),
            Some(*id),
            format!("POST /v1/claim with queue {}: the id of the job claimed", quoted(name))
        );
    }
    Ok(())
}
