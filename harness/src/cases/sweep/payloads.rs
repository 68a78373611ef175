//! Payloads of every size and byte value ([`values::PAYLOADS`]) on every
//! way in and out: the argument of `add`, its stdin (`-` and left out),
//! `list --json` and `show --json`, the stdin of `work`'s command, and the
//! HTTP API. What goes in one way comes out every other way byte for byte.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use base64::prelude::{Engine as _, BASE64_STANDARD};
use rand::Rng;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::cases::CaseResult;
use crate::ensure;
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::observe::file::{job_count, rows};
use crate::subjects::probe::{Record, RecordKind};
use crate::subjects::server::{self, Client};
use crate::subjects::worker::{probe_log, start_worker};
use crate::subjects::Failure;

use super::values::{Bytes, Payload, Ways, ARG, LONGEST_ARGUMENT, PAYLOADS, SHOW, STDIN, WORK};
use super::{common, expect_success, insert};

/// A payload of the table, made.
pub struct Made {
    pub name: String,
    pub bytes: Vec<u8>,
    pub ways: Ways,
}

/// Letters, digits, spaces and newlines: text that no probe script word
/// (`exit:N`) can come out of.
const TEXT: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n";

fn make(ctx: &mut Ctx, payload: &Payload) -> Made {
    let bytes = match payload.bytes {
        Bytes::Exactly(bytes) => bytes.to_vec(),
        Bytes::AllValues => (0..=255u8).collect(),
        Bytes::Text(n) => (0..n).map(|_| TEXT[ctx.rng.gen_range(0..TEXT.len())]).collect(),
        Bytes::Binary(n) => (0..n).map(|_| ctx.rng.gen()).collect(),
    };
    Made { name: payload.name.to_string(), bytes, ways: payload.ways }
}

/// The payloads' bytes.
fn refs(payloads: &[Made]) -> Vec<&[u8]> {
    payloads.iter().map(|m| m.bytes.as_slice()).collect()
}

/// Every payload of the table, made with the case's seed.
pub fn all(ctx: &mut Ctx) -> Vec<Made> {
    PAYLOADS.iter().map(|p| make(ctx, p)).collect()
}

/// The payloads of the table that go `way`.
fn going(ctx: &mut Ctx, way: Ways) -> Vec<Made> {
    all(ctx).into_iter().filter(|m| m.ways & way != 0).collect()
}

/// Each byte value alone, as a payload of its own.
fn single_bytes() -> Vec<Made> {
    (0..=255u8).map(|b| Made { name: format!("byte-{b:02x}"), bytes: vec![b], ways: 0 }).collect()
}

/// Why a payload cannot be an argument, if it cannot.
fn not_an_argument(bytes: &[u8]) -> Option<&'static str> {
    if bytes.contains(&0) {
        Some("holds NUL, which no argument can")
    } else if bytes.len() > LONGEST_ARGUMENT {
        Some("is longer than Linux lets one argument be (128 KiB)")
    } else if bytes == b"-" {
        Some("is `-`, which means stdin")
    } else {
        None
    }
}

/// A payload for a report: its name and length.
fn shown(made: &Made) -> String {
    format!("payload {} ({} bytes)", made.name, made.bytes.len())
}

/// How `seen` differs from `want`, for a report.
fn difference(want: &[u8], seen: &[u8]) -> String {
    if want == seen {
        return "the same bytes".into();
    }
    let at = want.iter().zip(seen).position(|(a, b)| a != b).unwrap_or(want.len().min(seen.len()));
    let around = |b: &[u8]| {
        let end = (at + 8).min(b.len());
        format!("{:02x?}", &b[at.saturating_sub(4).min(end)..end])
    };
    format!(
        "{} bytes where {} were due, first different at byte {at}: {} where {} was due",
        seen.len(),
        want.len(),
        around(seen),
        around(want)
    )
}

/// The jobs' payloads in the file, by id, must be `added`'s.
fn stored_as_added(file: &Path, added: &[(i64, &Made)], how: &str) -> CaseResult {
    let stored: BTreeMap<i64, Vec<u8>> = rows(file)?.into_iter().map(|r| (r.id, r.payload)).collect();
    for (id, made) in added {
        let seen = stored.get(id).map(Vec::as_slice);
        ensure!(
            seen == Some(made.bytes.as_slice()),
            format!("job {id} (added {how}) to hold {} byte for byte", shown(made)),
            match seen {
                Some(seen) => difference(&made.bytes, seen),
                None => "no such job in the file".into(),
            }
        );
    }
    Ok(())
}

/// Adds through `add FILE q ARGS...`, where `stdin` is fed; the new id.
fn add(ctx: &Ctx, file: &Path, tail: &[&OsStr], stdin: Option<&[u8]>, how: &str) -> Result<i64, Failure> {
    let mut args: Vec<&OsStr> = vec![OsStr::new("add"), file.as_os_str(), OsStr::new("q")];
    args.extend_from_slice(tail);
    let out = ctx.run_os_with(ctx.subject(), &args, stdin)?;
    let shown = format!("`add FILE q` with the payload {how}");
    expect_success(&out, &shown)?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().map_err(|_| Failure::fail(format!("{shown} to print the new id"), clip(&text)))
}

/// `add.payload-argument`: every payload of the argument way, as the
/// argument (after `--` when it starts with a dash), is stored byte for
/// byte; the note names the payloads of the table no argument can hold.
pub fn argument(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let payloads = all(ctx);
    let mut added = Vec::new();
    let mut skipped = Vec::new();
    for made in &payloads {
        if let Some(why) = not_an_argument(&made.bytes) {
            skipped.push(format!("{} {why}", made.name));
            continue;
        }
        if made.ways & ARG == 0 {
            continue;
        }
        let arg = OsString::from(OsStr::from_bytes(&made.bytes));
        let mut tail: Vec<&OsStr> = Vec::new();
        if made.bytes.starts_with(b"-") {
            tail.push(OsStr::new("--"));
        }
        tail.push(&arg);
        let id = add(ctx, &file, &tail, None, &format!("{} as its argument", shown(made)))?;
        added.push((id, made));
    }
    ctx.notes.push(format!("not tried as an argument: {}", skipped.join("; ")));
    stored_as_added(&file, &added, "as an argument")
}

/// `add.payload-stdin`: every payload of the stdin way, with `-` and with
/// the payload left out in turn, is stored byte for byte.
pub fn stdin(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let payloads = going(ctx, STDIN);
    let mut added = Vec::new();
    for (i, made) in payloads.iter().enumerate() {
        let (tail, form): (&[&OsStr], &str) =
            if i % 2 == 0 { (&[OsStr::new("-")], "`-`") } else { (&[], "left out") };
        let id = add(ctx, &file, tail, Some(&made.bytes), &format!("{} on stdin, {form}", shown(made)))?;
        added.push((id, made));
    }
    stored_as_added(&file, &added, "on stdin")
}

/// The JOB's payload, as `payload` (valid UTF-8) or `payload_base64`
/// (standard base64 with padding), exactly one of them.
pub fn check_payload(job: &Value, made: &Made, what: &str) -> CaseResult {
    let (key, want, other) = match std::str::from_utf8(&made.bytes) {
        Ok(text) => ("payload", text.to_string(), "payload_base64"),
        Err(_) => ("payload_base64", BASE64_STANDARD.encode(&made.bytes), "payload"),
    };
    let seen = job.get(key).and_then(Value::as_str);
    let expected = format!(
        "{what}: {} as {} ({})",
        shown(made),
        key,
        if key == "payload" { "a JSON string of its text" } else { "standard base64 with padding" }
    );
    ensure!(job.get(other).is_none(), expected.clone(), format!("it has {other} too, or instead"));
    match seen {
        Some(seen) if seen == want => Ok(()),
        Some(seen) if key == "payload" => {
            Err(Failure::fail(expected, difference(&made.bytes, seen.as_bytes())))
        }
        Some(seen) => {
            let decoded = BASE64_STANDARD.decode(seen);
            Err(Failure::fail(
                expected,
                match decoded {
                    Ok(bytes) if bytes == made.bytes => {
                        format!("the right bytes, but not in standard base64 with padding: {}", clip(seen))
                    }
                    Ok(bytes) => difference(&made.bytes, &bytes),
                    Err(e) => format!("{} is not standard base64 with padding ({e}): {}", key, clip(seen)),
                },
            ))
        }
        None => Err(Failure::fail(expected, format!("no {key}: {}", clip(&job.to_string())))),
    }
}

/// Runs `args`, which must print one JSON value and nothing else: valid
/// UTF-8, whatever the jobs hold (`json.valid`).
pub fn json_output(ctx: &Ctx, args: &[&str]) -> Result<Value, Failure> {
    let out = ctx.run(ctx.subject(), args)?;
    let shown = format!("`{}`", common::show_args(&common::relative(ctx, args)));
    expect_success(&out, &shown)?;
    if let Err(e) = std::str::from_utf8(&out.stdout) {
        return Err(Failure::fail(format!("{shown} to print valid UTF-8"), e.to_string()));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        Failure::fail(
            format!("{shown} to print one JSON value and nothing else"),
            format!("{e}: {}", clip(&String::from_utf8_lossy(&out.stdout))),
        )
    })
}

/// `json.payload`: every payload and every byte alone, written into the
/// file, comes out of `list --json` (and those of the `show` way out of
/// `show --json` too) as its text or its base64.
pub fn json(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let payloads = all(ctx);
    let bytes = single_bytes();
    let table = insert(&file, "q", &refs(&payloads))?;
    let alone = insert(&file, "bytes", &refs(&bytes))?;
    let f = path_str(&file);
    let listed = json_output(ctx, &["list", f, "--json", "--limit", "1000"])?;
    let jobs: BTreeMap<i64, &Value> = listed["jobs"]
        .as_array()
        .map(|jobs| jobs.iter().filter_map(|j| Some((j["id"].as_i64()?, j))).collect())
        .unwrap_or_default();
    for (id, made) in table.iter().zip(&payloads).chain(alone.iter().zip(&bytes)) {
        let job = jobs.get(id).ok_or_else(|| {
            Failure::fail(
                format!("`list --json --limit 1000` to show job {id}"),
                format!("{} jobs shown", jobs.len()),
            )
        })?;
        check_payload(job, made, &format!("job {id} in `list --json`"))?;
    }
    for (id, made) in table.iter().zip(&payloads).filter(|(_, m)| m.ways & SHOW != 0) {
        let job = json_output(ctx, &["show", f, &id.to_string(), "--json"])?;
        check_payload(&job, made, &format!("`show {id} --json`"))?;
    }
    Ok(())
}

/// The probe's start records, by job.
pub(super) fn starts(ctx: &Ctx) -> Result<BTreeMap<i64, Record>, Failure> {
    let text = std::fs::read_to_string(probe_log(ctx)).unwrap_or_default();
    let mut starts = BTreeMap::new();
    for line in text.lines() {
        let record: Record = serde_json::from_str(line)
            .map_err(|e| Failure::error("a readable probe log", format!("{e}: {line}")))?;
        if record.event == RecordKind::Start {
            starts.entry(record.job).or_insert(record);
        }
    }
    Ok(starts)
}

/// `work.stdin`: every payload of the work way, written into the file, reaches `work`'s
/// command on its stdin, every byte of it, then its end (the probe
/// records the SHA-256 of what it read).
pub fn work_stdin(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let payloads = going(ctx, WORK);
    let ids = insert(&file, "q", &refs(&payloads))?;
    let subject = ctx.subject().clone();
    let mut worker = start_worker(ctx, &subject, &file, "q", &["--poll", "50ms", "--quiet"])?;
    let what = format!("`work` to run the {} jobs", ids.len());
    ctx.wait_for(&what, Duration::from_secs(60), || {
        worker.still_running(&format!("{what} and keep running until stopped"))?;
        Ok(job_count(&file)? == 0)
    })?;
    worker.stop(Duration::from_secs(30))?;
    let starts = starts(ctx)?;
    for (id, made) in ids.iter().zip(&payloads) {
        let want = format!("{:x}", Sha256::digest(&made.bytes));
        let expected = format!("the command of job {id} to read {} on stdin", shown(made));
        let record = starts.get(id).ok_or_else(|| Failure::fail(expected.clone(), "it never ran"))?;
        ensure!(
            record.payload_sha256 == want,
            expected,
            format!(
                "other bytes (SHA-256 {}; they begin {:?})",
                record.payload_sha256,
                clip(&record.payload)
            )
        );
    }
    Ok(())
}

/// JSON values other than strings, as a request sends them and as the
/// file must hold them: compact JSON text, keys in the order sent.
const JSON_VALUES: &[(&str, &str)] = &[
    (r#"{"z": 1, "a": [1, 2, "x y"]}"#, r#"{"z":1,"a":[1,2,"x y"]}"#),
    ("[ true , false ]", "[true,false]"),
    ("42", "42"),
];

/// Over HTTP: every payload that goes any other way but `list --json`,
/// sent as `payload_base64`, and as `payload`
/// (a JSON string) when it is text, is stored byte for byte, and comes
/// out of `GET /v1/jobs/{id}` and of a claim as its text or base64; other
/// JSON values are stored as compact JSON text.
pub fn http(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    // Room for a mebibyte in base64, and the request around it.
    let server = server::serve(ctx, &file, &["--max-body", "8388608"], &[])?;
    let client = Client::new(server.port, None);
    let mut payloads = going(ctx, ARG | STDIN | WORK | SHOW);
    for (sent, stored) in JSON_VALUES {
        payloads.push(Made { name: format!("JSON {sent}"), bytes: stored.as_bytes().to_vec(), ways: 0 });
    }
    let mut added: Vec<(i64, &Made)> = Vec::new();
    for made in &payloads {
        if let Some(sent) = made.name.strip_prefix("JSON ") {
            let body = format!(r#"{{"queue": "q", "payload": {sent}}}"#);
            let reply = client.send("POST", "/v1/jobs", Some(body.as_bytes()), &[])?;
            let id = reply.json().and_then(|v| v["id"].as_i64());
            let id = id.ok_or_else(|| {
                Failure::fail(format!("POST /v1/jobs {body}: 201 {{\"id\": N}}"), reply.show())
            })?;
            added.push((id, made));
            continue;
        }
        if let Ok(text) = std::str::from_utf8(&made.bytes) {
            added.push((client.add(json!({"queue": "q", "payload": text}))?, made));
        }
        let encoded = BASE64_STANDARD.encode(&made.bytes);
        added.push((client.add(json!({"queue": "q", "payload_base64": encoded}))?, made));
    }
    stored_as_added(&file, &added, "over HTTP")?;
    let by_id: BTreeMap<i64, &Made> = added.iter().copied().collect();
    for (id, made) in &added {
        let reply = client.get(&format!("/v1/jobs/{id}"))?;
        let job = reply
            .json()
            .ok_or_else(|| Failure::fail(format!("GET /v1/jobs/{id}: a JSON job"), reply.show()))?;
        check_payload(&job, made, &format!("GET /v1/jobs/{id}"))?;
    }
    for _ in 0..added.len() {
        let job = client
            .claim(json!({"queue": "q", "lease": 600}))?
            .ok_or_else(|| Failure::fail("POST /v1/claim: a job while any is due", "204"))?;
        let id = job["id"].as_i64().unwrap_or_default();
        let made = by_id
            .get(&id)
            .ok_or_else(|| Failure::fail("a claim to take a job that was added", job.to_string()))?;
        check_payload(&job, made, &format!("the claim of job {id}"))?;
    }
    Ok(())
}
