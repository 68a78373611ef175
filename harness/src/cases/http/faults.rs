//! Faults around the server: it is SIGKILLed while workers hold jobs over
//! HTTP, and clients leave in the middle of a waiting claim.
//!
//! A job whose holder is gone comes back when its lease runs out: the next
//! claim reaps it (FORMAT.md §5.4), and it is due again after a backoff of
//! the subject's choosing (§5.6). The cases do not wait for that backoff:
//! once a reaped job is back in `ready`, they make it due at once, as any
//! program may write the file (crate::subjects::observe::file::write).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::parse_time;
use crate::cases::{Case, CaseResult};
use crate::shown::rfc3339;
use crate::subjects::ctx::Ctx;
use crate::subjects::observe::file::{job_count, rows, write};
use crate::subjects::probe::now_ms;
use crate::subjects::server::{self, server_sockets, Client, CLOSE_WAIT, ESTABLISHED};
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

/// How long a case waits for jobs to come back (their leases, and the
/// subject's claims, on a loaded machine).
const COME_BACK: Duration = Duration::from_secs(60);
/// The lease of the holders that the server's kill leaves behind, and of
/// the claims whose clients leave: short, so that the cases stay short.
const SHORT_LEASE_MS: i64 = 3000;
/// Slack for the server's clock reading against ours (the same clock; a
/// lease_until is rounded to the millisecond).
const SLACK_MS: i64 = 200;
/// The lease of the claims that take jobs back.
const RECLAIM_LEASE_MS: i64 = 60_000;

pub fn cases(case: impl Fn(&'static str, &'static str, fn(&mut Ctx) -> CaseResult) -> Case) -> Vec<Case> {
    let mut gives_back = case(
        "http/poll-disconnect-gives-back",
        "a waiting claim whose client left holds no job: jobs added after it left are claimed next at their first attempt",
        poll_disconnect_gives_back,
    );
    gives_back.level = crate::cases::Level::Should;
    vec![
        case(
            "http/server-killed",
            "serve SIGKILLed while clients hold jobs: after a restart a holder still acks its job, the others' jobs come back once their leases run out, none lost",
            server_killed,
        ),
        case(
            "http/poll-disconnect",
            "clients that leave waiting claims lose no job: each job added as they leave is claimed by a live client, at once or once a lease runs out",
            poll_disconnect,
        ),
        gives_back,
    ]
}

/// A job as a claim answered it.
#[derive(Debug, Clone)]
struct Held {
    id: i64,
    token: String,
    attempt: i64,
    lease_until_ms: i64,
}

impl Held {
    fn of(job: &Value) -> Result<Held, Failure> {
        let until = job["lease_until"].as_str().and_then(parse_time);
        match (job["id"].as_i64(), job["token"].as_str(), job["attempt"].as_i64(), until) {
            (Some(id), Some(token), Some(attempt), Some(lease_until_ms)) => {
                Ok(Held { id, token: token.to_string(), attempt, lease_until_ms })
            }
            _ => Err(Failure::fail(
                "a claimed job with id, token, attempt and lease_until (RFC 3339)",
                job.to_string(),
            )),
        }
    }
}

fn claim(client: &Client, lease_ms: i64) -> Result<Option<Held>, Failure> {
    let lease = lease_ms as f64 / 1000.0;
    client.claim(json!({"queue": "q", "lease": lease}))?.as_ref().map(Held::of).transpose()
}

/// A job held until `until` (by a holder who is gone) and claimed again
/// has a second holder if it was claimed before then: by our clock when we
/// asked, and by the server's own (its answer's lease_until, less the lease
/// asked). Both, so that neither a slow answer nor a rounded lease_until
/// is taken for one.
fn second_holder(job: &Held, until: i64, asked_at: i64) -> CaseResult {
    let claimed_at = job.lease_until_ms - RECLAIM_LEASE_MS;
    ensure!(
        asked_at + SLACK_MS >= until || claimed_at >= until,
        format!("job {} not claimed while its holder's lease runs (until {})", job.id, rfc3339(until)),
        format!(
            "asked for at {}, claimed at {} by the server's answer",
            rfc3339(asked_at),
            rfc3339(claimed_at)
        )
    );
    Ok(())
}

fn ack(client: &Client, job: &Held, what: &str) -> CaseResult {
    let reply = client.post(&format!("/v1/jobs/{}/ack", job.id), json!({"token": job.token}))?;
    ensure!(reply.status == 200, format!("{what}: 200"), format!("{what}: {}", reply.show()));
    Ok(())
}

/// Makes due at once the jobs of `ids` that a claim reaped back to
/// `ready` with a backoff (the subject's own, §5.6): the cases wait for
/// leases, not for backoffs.
fn due_now(file: &Path, ids: &BTreeSet<i64>) -> CaseResult {
    let now = now_ms();
    let reaped: Vec<i64> = rows(file)?
        .into_iter()
        .filter(|r| ids.contains(&r.id) && r.state == "ready" && r.run_at > now + 1000)
        .map(|r| r.id)
        .collect();
    if !reaped.is_empty() {
        let conn = write(file)?;
        for id in reaped {
            conn.execute(
                "UPDATE ukue_jobs SET run_at = ?1 WHERE id = ?2 AND state = 'ready' AND run_at > ?1",
                rusqlite::params![now, id],
            )?;
        }
    }
    Ok(())
}

/// Claims and acks until every job of `ids` has been claimed, making
/// reaped ones due as they come back; returns each job's claim.
/// `held_until` has the lease of each job someone held: claimed before
/// then it has a second holder, and a claim that finds nothing after then
/// must have reaped it. A job that leaves the file unclaimed is lost.
fn claim_back(
    ctx: &Ctx,
    client: &Client,
    file: &Path,
    ids: &BTreeSet<i64>,
    held_until: &BTreeMap<i64, i64>,
) -> Result<BTreeMap<i64, Held>, Failure> {
    let mut got: BTreeMap<i64, Held> = BTreeMap::new();
    let what = format!("jobs {ids:?} to be claimed again (their holders gone, their leases run out)");
    ctx.wait_for(&what, COME_BACK, || {
        let looked_at = now_ms();
        loop {
            let asked_at = now_ms();
            let Some(job) = claim(client, RECLAIM_LEASE_MS)? else { break };
            if let Some(&until) = held_until.get(&job.id) {
                second_holder(&job, until, asked_at)?;
            }
            ensure!(
                ids.contains(&job.id) && !got.contains_key(&job.id),
                format!("only jobs {ids:?}, each once"),
                format!("job {} (attempt {})", job.id, job.attempt)
            );
            ack(client, &job, &format!("ack of job {}", job.id))?;
            got.insert(job.id, job);
        }
        let in_file: BTreeMap<i64, crate::subjects::observe::file::Row> =
            rows(file)?.into_iter().map(|r| (r.id, r)).collect();
        for id in ids.iter().filter(|id| !got.contains_key(id)) {
            let Some(row) = in_file.get(id) else {
                return Err(Failure::fail(
                    format!("job {id} claimed by a live client before it leaves the file"),
                    "it is gone from the file, never claimed by one: lost",
                ));
            };
            let unreaped = held_until
                .get(id)
                .is_some_and(|&until| looked_at > until + SLACK_MS && row.lease_until == Some(until));
            ensure!(
                !(unreaped && row.state == "running"),
                format!(
                    "the claims from {} on to reap job {id}, whose lease ran out at {} (FORMAT.md §5.4)",
                    rfc3339(looked_at),
                    rfc3339(held_until[id])
                ),
                "the job is still running under that lease"
            );
        }
        due_now(file, ids)?;
        Ok(got.len() == ids.len())
    })?;
    Ok(got)
}

/// Starts the subject's `serve` on the file, on a new port.
fn start(ctx: &Ctx, file: &Path) -> Result<(server::ServerProcess, Client), Failure> {
    let server = server::serve(ctx, file, &[], &[])?;
    let client = Client::new(server.port, None);
    Ok((server, client))
}

fn server_killed(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let (mut first, client) = start(ctx, &file)?;
    let ids: Vec<i64> = (1..=6)
        .map(|i| client.add(json!({"queue": "q", "payload": format!("job {i}")})))
        .collect::<Result<_, _>>()?;
    let missing = || Failure::fail("a job for each of the first three claims", "204");
    // One holder keeps its job across the restart; two are gone with it.
    let keeper = claim(&client, 120_000)?.ok_or_else(missing)?;
    let gone = [
        claim(&client, SHORT_LEASE_MS)?.ok_or_else(missing)?,
        claim(&client, SHORT_LEASE_MS)?.ok_or_else(missing)?,
    ];
    // A claim waits on another queue when the server dies.
    let waiting = {
        let client = client.clone();
        std::thread::spawn(move || client.claim(json!({"queue": "other", "wait": 20})))
    };
    first.kill()?;
    match waiting.join() {
        Ok(Ok(Some(job))) => {
            return Err(Failure::fail("no job from the empty queue `other`", job.to_string()));
        }
        Ok(_) => {}
        Err(_) => return Err(Failure::error("the waiting client", "it panicked")),
    }
    let (_second, client) = start(ctx, &file)?;
    let held_until: BTreeMap<i64, i64> =
        std::iter::once(&keeper).chain(&gone).map(|h| (h.id, h.lease_until_ms)).collect();
    // The jobs nobody held are there at once, and no held one with them.
    let ready: BTreeSet<i64> = ids.iter().copied().filter(|id| !held_until.contains_key(id)).collect();
    let mut seen = BTreeSet::new();
    loop {
        let asked_at = now_ms();
        let Some(job) = claim(&client, RECLAIM_LEASE_MS)? else { break };
        if let Some(&until) = held_until.get(&job.id) {
            second_holder(&job, until, asked_at)?;
        }
        ack(&client, &job, &format!("ack of job {}", job.id))?;
        seen.insert(job.id);
    }
    ensure!(
        ready.is_subset(&seen),
        format!("jobs {ready:?}, which nobody held, claimed after the restart"),
        format!("claimed {seen:?}")
    );
    // The holder's token is in the file: the new server takes its ack.
    if !seen.contains(&keeper.id) {
        ack(&client, &keeper, "the ack, after the restart, of the job held across it")?;
    }
    let back: BTreeSet<i64> = gone.iter().map(|h| h.id).filter(|id| !seen.contains(id)).collect();
    let again = claim_back(ctx, &client, &file, &back, &held_until)?;
    for job in again.values() {
        ensure_eq!(job.attempt, 2, format!("the attempt of job {} after its lease ran out", job.id));
    }
    ensure_eq!(job_count(&file)?, 0, "jobs left in the file once every job was acked");
    ctx.notes.push(format!("jobs {back:?} came back after their leases ran out"));
    Ok(())
}

fn poll_disconnect(ctx: &mut Ctx) -> CaseResult {
    poll_disconnect_case(ctx, false)
}

fn poll_disconnect_gives_back(ctx: &mut Ctx) -> CaseResult {
    poll_disconnect_case(ctx, true)
}

/// Clients that leave their waiting claims.
const LEAVING: usize = 8;

/// Opens waiting claims, waits until the server has read them, and closes
/// their connections. A server that leaves some unread (it serves few
/// connections at once, say) is not wrong: after a while the case goes on,
/// and says so.
fn leave(ctx: &mut Ctx, port: u16) -> CaseResult {
    let body = json!({"queue": "q", "wait": 20, "lease": SHORT_LEASE_MS as f64 / 1000.0}).to_string();
    let request = format!(
        "POST /v1/claim HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut streams = Vec::new();
    for _ in 0..LEAVING {
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.write_all(request.as_bytes())?;
        streams.push(stream);
    }
    // The kernel shows when the server has read them: nothing unread on
    // its side of the connections (where /proc/net/tcp cannot be read, go on).
    let read = ctx.wait_for("the server to read the waiting claims", Duration::from_secs(10), || {
        Ok(server_sockets(port).is_none_or(|socks| {
            socks.iter().filter(|s| s.state == ESTABLISHED).count() >= LEAVING
                && socks.iter().all(|s| s.unread == 0)
        }))
    });
    drop(streams);
    if let Err(e) = read {
        ctx.notes.push(format!("{}: {}; the clients left anyway", e.expected, e.seen));
    }
    Ok(())
}

/// The case: clients leave waiting claims, jobs come at that moment and
/// once the server has closed their connections; a live client must get
/// every job, and (`at_once`) those of the second kind at their first
/// attempt, none held for a client that left.
fn poll_disconnect_case(ctx: &mut Ctx, at_once: bool) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let (_server, client) = start(ctx, &file)?;
    let port = client.port;
    leave(ctx, port)?;
    // As they leave: jobs through the server (which wakes its waiting claims).
    let mut racing = BTreeSet::new();
    for i in 0..4 {
        racing.insert(client.add(json!({"queue": "q", "payload": format!("as they leave {i}")}))?);
    }
    // Once the server has let their connections go (nothing left in close-wait).
    let closed =
        ctx.wait_for("the server to close the connections its clients left", Duration::from_secs(5), || {
            Ok(server_sockets(port).is_none_or(|socks| socks.iter().all(|s| s.state != CLOSE_WAIT)))
        });
    let mut after = BTreeSet::new();
    for i in 0..4 {
        after.insert(client.add(json!({"queue": "q", "payload": format!("after they left {i}")}))?);
        after.insert(ctx.add(ctx.subject(), &file, "q", &format!("after they left, by the CLI {i}"), &[])?);
    }
    let all: BTreeSet<i64> = racing.union(&after).copied().collect();
    let got = claim_back(ctx, &client, &file, &all, &BTreeMap::new())?;
    ensure_eq!(job_count(&file)?, 0, "jobs left in the file once every job was acked");
    let late: Vec<String> = got
        .values()
        .filter(|j| j.attempt != 1)
        .map(|j| format!("job {} at attempt {}", j.id, j.attempt))
        .collect();
    ctx.notes.push(if late.is_empty() {
        "every job claimed at its first attempt".to_string()
    } else {
        format!("held for a client that left, then reaped: {}", late.join(", "))
    });
    if at_once {
        // A server that cannot tell (the connections stayed in close-wait)
        // claims for clients that left: that is what this case is about.
        if let Err(e) = closed {
            ctx.notes.push(format!("{}: {}", e.expected, e.seen));
        }
        let held: Vec<String> = got
            .values()
            .filter(|j| after.contains(&j.id) && j.attempt != 1)
            .map(|j| format!("job {} at attempt {}", j.id, j.attempt))
            .collect();
        ensure!(
            held.is_empty(),
            format!(
                "jobs {after:?}, added once the clients had left, claimed next at attempt 1 (no claim held one for a client that left, as the published server stops waiting when its client goes, and gives back a job claimed for a client that left)"
            ),
            format!("held for a client that left until the lease ran out, then reaped: {}", held.join(", "))
        );
    }
    Ok(())
}
