//! compat: every file of fixtures/compat (version 1 files with the
//! additions FORMAT.md §2.2 allows, the published statements' layout, no
//! indexes, the reference's previous layout, a rollback journal, TEXT
//! payloads, the tables inside an application's database) is accepted:
//! counted, added to, listed and worked, and the additions and the
//! application's tables stay as they were. The cases are the manifest's
//! (fixtures/compat/manifest.json), run by one function. And `init` adds
//! the tables to an application's database, keeping its tables and
//! application id (§1.3).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::shown::Shown;
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::observe::file::{read, state_and_attempts, write};
use crate::subjects::worker::drain;
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

use super::common;
use super::fixture;
use super::manifest::{CompatCase, CompatEntry, CompatExpect};

/// One function per case of the manifest (see [`fixture::Run`]).
const RUNS: &[fixture::Run] = include!(concat!(env!("OUT_DIR"), "/compat_runs.rs"));

fn run<const I: usize>(ctx: &mut Ctx) -> CaseResult {
    fixture::run_defined(ctx, &fixture::compat()[I], manifest_case)
}

pub fn cases() -> Vec<Case> {
    let mut cases = fixture::cases(fixture::compat(), RUNS);
    cases.push(Case {
        id: "compat/page-size-and-encoding",
        rule: "1.1",
        summary: "a file with 1024-byte pages in UTF-16le, made by FORMAT.md's statements, is counted, added to, listed and worked",
        needs: Needs::default(),
        level: Level::Must,
        run: page_size_and_encoding,
    });
    cases.push(Case {
        id: "compat/tables-in-app-database",
        rule: "1.3",
        summary:
            "init on an application's database adds the ukue tables and keeps its tables and application_id",
        needs: Needs::default(),
        level: Level::Must,
        run: tables_in_app_database,
    });
    cases
}

fn manifest_case(ctx: &mut Ctx, entry: &CompatEntry, case: &CompatCase) -> CaseResult {
    match case.expect {
        CompatExpect::Accept => accept_fixture(ctx, entry),
    }
}

/// What a program must leave alone in a file: its schema (every table,
/// index and trigger, by its SQL), the meta rows, the application's
/// tables' row counts and the application id.
#[derive(Debug)]
struct Snapshot {
    schema: BTreeSet<(String, String, String)>,
    meta: BTreeMap<String, String>,
    /// None when the table is gone.
    app_rows: BTreeMap<String, Option<i64>>,
    application_id: i64,
}

fn snapshot(file: &Path, app_tables: &[String]) -> Result<Snapshot, Failure> {
    let conn = read(file)?;
    let mut st = conn.prepare("SELECT type, name, coalesce(sql, '') FROM sqlite_master")?;
    let schema = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<Result<_, _>>()?;
    let mut st = conn.prepare("SELECT key, value FROM ukue_meta")?;
    let meta = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
    let mut app_rows = BTreeMap::new();
    for table in app_tables {
        let exists: bool = conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )?;
        let rows = if exists {
            let sql = format!("SELECT count(*) FROM \"{}\"", table.replace('"', "\"\""));
            Some(conn.query_row(&sql, [], |r| r.get(0))?)
        } else {
            None
        };
        app_rows.insert(table.clone(), rows);
    }
    let application_id = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    Ok(Snapshot { schema, meta, app_rows, application_id })
}

/// The jobs of a `list --json` answer as (queue, payload text), or what
/// was wrong with one.
fn listed(list: &Value) -> Result<Vec<(String, String)>, String> {
    let jobs = list.get("jobs").and_then(Value::as_array).ok_or("no \"jobs\" array")?;
    jobs.iter()
        .map(|job| {
            let queue =
                job.get("queue").and_then(Value::as_str).ok_or(format!("a job without a queue: {job}"))?;
            let payload = job
                .get("payload")
                .and_then(Value::as_str)
                .ok_or(format!("a job whose payload is not text in \"payload\": {job}"))?;
            Ok((queue.to_string(), payload.to_string()))
        })
        .collect()
}

fn accept_fixture(ctx: &mut Ctx, entry: &CompatEntry) -> CaseResult {
    let name = entry.file.as_str();
    // Look at a copy of its own: a read-only connection leaves -wal and
    // -shm behind, and the subject should get the fixture as it is.
    let pristine = fixture::place(ctx, "compat", entry, &format!("pristine-{name}"))?.file;
    let before = snapshot(&pristine, &entry.app_tables)?;
    fixture::place(ctx, "compat", entry, name)?;
    let file = ctx.tracked_file(name);
    let about = format!("{name}: {}", entry.why);
    worked(ctx, &file, entry.jobs, &about)?;

    let after = snapshot(&file, &entry.app_tables)?;
    ensure_eq!(after.application_id, entry.application_id, "PRAGMA application_id after the run");
    let missing: Vec<String> = before
        .schema
        .difference(&after.schema)
        .map(|(kind, name, sql)| {
            format!("{kind} {name}: {}", sql.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .collect();
    ensure!(
        missing.is_empty(),
        format!("every table and index of {name} kept as it was (FORMAT.md §2.2; {about})"),
        format!("missing or changed after the run:\n{}", missing.join("\n"))
    );
    let lost: Vec<String> = before
        .meta
        .iter()
        .filter(|(key, value)| after.meta.get(*key) != Some(*value))
        .map(|(key, value)| format!("{key} = {} is now {}", value.shown(), after.meta.get(key).shown()))
        .collect();
    ensure!(lost.is_empty(), format!("every ukue_meta row of {name} kept"), lost.join("\n"));
    ensure_eq!(
        after.app_rows,
        before.app_rows,
        "rows in each of the application's tables (null: the table is gone)"
    );
    Ok(())
}

/// The subject counts the `jobs` ready jobs (`job-1`…) of queue `work` in
/// `file`, adds one, lists them all (queue and payload), and works each
/// exactly once.
fn worked(ctx: &mut Ctx, file: &Path, jobs: i64, about: &str) -> CaseResult {
    let subject = ctx.subject().clone();
    let f = path_str(file);
    let stats = ctx.json(&subject, &["stats", f, "--json"])?;
    let ready = stats
        .get("queues")
        .and_then(Value::as_array)
        .and_then(|queues| queues.iter().find(|q| q.get("queue").and_then(Value::as_str) == Some("work")))
        .and_then(|q| q.get("ready"))
        .and_then(Value::as_i64);
    ensure!(
        ready == Some(jobs),
        format!("`stats --json` to count {jobs} ready jobs in queue work ({about})"),
        clip(&stats.to_string())
    );

    let payload = format!("job-{}", jobs + 1);
    ctx.add(&subject, file, "work", &payload, &[])?;
    let list = ctx.json(&subject, &["list", f, "--json"])?;
    let expected: Vec<(String, String)> =
        (1..=jobs + 1).map(|i| ("work".to_string(), format!("job-{i}"))).collect();
    match listed(&list) {
        Ok(seen) if seen == expected => {}
        Ok(seen) => {
            return Err(Failure::fail(
                format!("`list --json` to show the jobs (queue, payload) {} ({about})", expected.shown()),
                seen.shown(),
            ));
        }
        Err(problem) => {
            return Err(Failure::fail(
                format!("`list --json` to show each job's queue, and its payload as text in \"payload\" ({about})"),
                format!("{problem}\nin {}", clip(&list.to_string())),
            ));
        }
    }

    let added = common::jobs_as_added(file, "the file's jobs and the subject's add")?;
    drain(ctx, &subject, file, "work", &["--poll", "20ms"], 1, Duration::from_secs(30))?;
    common::ran_exactly_once(ctx, file, added)
}

/// FORMAT.md §1.1: "Any page size and encoding". The file is made here by
/// FORMAT.md's own statements, on a database set to 1024-byte pages and
/// UTF-16le before anything was written to it.
fn page_size_and_encoding(ctx: &mut Ctx) -> CaseResult {
    use ukue::{Spec, Stmt};
    let file = ctx.tracked_file("layout.ukue");
    {
        let conn = write(&file)?;
        conn.execute_batch(
            "PRAGMA page_size = 1024; PRAGMA encoding = 'UTF-16le'; PRAGMA journal_mode = WAL;",
        )?;
        let spec = Spec::builtin();
        conn.execute_batch(spec.sql(Stmt::SetApplicationId))?;
        for stmt in Stmt::SCHEMA {
            conn.execute_batch(spec.sql(*stmt))?;
        }
        for (key, value) in [("format_version", "1"), ("created_at", "0"), ("created_by", "ukue-conformance")]
        {
            conn.execute(
                spec.sql(Stmt::InsertMeta),
                rusqlite::named_params! { ":key": key, ":value": value },
            )?;
        }
        for i in 1..=3 {
            let payload = format!("job-{i}").into_bytes();
            conn.execute("INSERT INTO ukue_jobs (queue, payload) VALUES ('work', ?1)", [payload])?;
        }
    }
    let layout = |file: &Path| -> Result<(i64, String), Failure> {
        let conn = read(file)?;
        let page: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        let encoding: String = conn.query_row("PRAGMA encoding", [], |r| r.get(0))?;
        Ok((page, encoding))
    };
    let made = layout(&file)?;
    if made != (1024, "UTF-16le".to_string()) {
        return Err(Failure::error(
            "the harness to make a file of 1024-byte pages in UTF-16le",
            made.shown(),
        ));
    }
    worked(ctx, &file, 3, "a file of 1024-byte pages in UTF-16le")?;
    ensure_eq!(layout(&file)?, made, "the page size and encoding after the run");
    Ok(())
}

fn tables_in_app_database(ctx: &mut Ctx) -> CaseResult {
    const APP_ID: i64 = 0x1234_5678;
    let subject = ctx.subject().clone();
    let file = ctx.tracked_file("app.db");
    {
        let conn = write(&file)?;
        conn.execute_batch(
            "PRAGMA application_id = 305419896;
             CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL);
             INSERT INTO orders (item) VALUES ('apples'), ('pears'), ('plums');",
        )?;
    }
    let orders = |file: &Path| -> Result<Vec<(i64, String)>, Failure> {
        let conn = read(file)?;
        let rows = conn
            .prepare("SELECT id, item FROM orders ORDER BY id")
            .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>());
        rows.map_err(|e| Failure::fail("the application's orders table, with its rows, kept", e.to_string()))
    };
    let before = orders(&file)?;
    ctx.ok(&subject, &["init", path_str(&file)])?;

    let conn = read(&file)?;
    let app: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    ensure_eq!(app, APP_ID, "PRAGMA application_id after init (the application's own, FORMAT.md §1.3)");
    let mut st = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ukue%' ORDER BY name")?;
    let tables: Vec<String> = st.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    ensure_eq!(tables, vec!["ukue_jobs".to_string(), "ukue_meta".to_string()], "the ukue tables after init");
    let version: String =
        conn.query_row("SELECT value FROM ukue_meta WHERE key = 'format_version'", [], |r| r.get(0))?;
    ensure_eq!(version.as_str(), "1", "format_version after init");
    drop(st);
    drop(conn);
    ensure_eq!(orders(&file)?, before.clone(), "the application's orders after init");

    // The file is a ukue file now: add to it.
    let id = ctx.add(&subject, &file, "q", "x", &[])?;
    ensure_eq!(
        state_and_attempts(&read(&file)?, id)?.map(|(state, _)| state),
        Some("ready".to_string()),
        "the added job's state"
    );
    ensure_eq!(orders(&file)?, before, "the application's orders after add");
    Ok(())
}
