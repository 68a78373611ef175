//! spec/FORMAT.md is executable: the reference runs exactly the SQL the
//! page shows, the page's schema is the one the reference makes (and the
//! one pinned below), and the page's examples work on a reference file.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::Mutex;

use common::{assert_invariants, ms, query_i64, query_string, TempPath, T0};
use rusqlite::types::Value;
use rusqlite::{ffi, Connection};
use ukue::spec::markdown::{self, Block};
use ukue::{
    Access, Claim, Error, Failed, ListFilter, ListState, ManualClock, NewJob, Retry, Spec, State, Stmt, Ukue,
};

// ---------------------------------------------------------------- (a) tracing

/// Every SQL text that a traced connection started running, unexpanded.
static TRACE: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_trace(
    kind: c_uint,
    _ctx: *mut c_void,
    _stmt: *mut c_void,
    sql: *mut c_void,
) -> c_int {
    if kind == ffi::SQLITE_TRACE_STMT as c_uint && !sql.is_null() {
        // SAFETY: for SQLITE_TRACE_STMT, X is a NUL-terminated string that
        // SQLite keeps alive for the duration of the callback.
        let text = unsafe { CStr::from_ptr(sql as *const c_char) }.to_string_lossy().into_owned();
        if let Ok(mut trace) = TRACE.lock() {
            trace.push(text);
        }
    }
    0
}

/// A connection to `path` that records every statement it runs in [`TRACE`].
fn traced(path: &std::path::Path) -> Connection {
    let conn = Connection::open(path).expect("open");
    // SAFETY: the handle is valid while `conn` lives; the callback only
    // reads its arguments and touches a static.
    let rc = unsafe {
        ffi::sqlite3_trace_v2(
            conn.handle(),
            ffi::SQLITE_TRACE_STMT as c_uint,
            Some(on_trace),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, ffi::SQLITE_OK, "sqlite3_trace_v2");
    conn
}

fn normalise(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs every step of the library on traced connections.
fn exercise_every_step(path: &std::path::Path) {
    let clock = ManualClock::new(T0);
    let options = || Ukue::options().access(Access::AddTables).clock(clock.clone());

    // Adding the tables to an empty database: set_wal, count_schema, set_application_id, ...
    let mut file = options().attach(traced(path)).expect("attach a new database");
    // The test's own queries go through an untraced connection.
    let peek = Connection::open(path).expect("untraced connection");
    assert_eq!(query_i64(&peek, "PRAGMA application_id"), 1_969_976_677);

    let a = file.add(&NewJob::new("q", b"a".to_vec()).max_attempts(1)).expect("add");
    let ids = file
        .add_batch(&[NewJob::new("q", b"b".to_vec()), NewJob::new("q", b"c".to_vec()).delay(ms(10))])
        .expect("add_batch");
    let (b, c) = (ids[0], ids[1]);

    // A batch that fails inside its transaction rolls back. The trigger is
    // made on another connection, so that only the reference's SQL is traced.
    Connection::open(path)
        .expect("untraced connection")
        .execute_batch(
            "CREATE TRIGGER test_boom BEFORE INSERT ON ukue_jobs WHEN NEW.queue = 'boom'
             BEGIN SELECT RAISE(ABORT, 'boom'); END",
        )
        .expect("trigger");
    assert!(matches!(
        file.add_batch(&[NewJob::new("q", b"x".to_vec()), NewJob::new("boom", b"y".to_vec())]),
        Err(Error::Sqlite(_))
    ));
    Connection::open(path)
        .expect("untraced connection")
        .execute_batch("DROP TRIGGER test_boom")
        .expect("drop");

    // claims, one of them reaping both ways
    let ca = file.claim("q", ms(100)).expect("claim").expect("a");
    let cb = file.claim("q", ms(100)).expect("claim").expect("b");
    assert_eq!((ca.id, cb.id), (a, b));
    clock.set(T0 + 100);
    assert_eq!(file.claim_next("other", ms(100)).expect("empty claim"), Claim::Empty { next_due: None });
    assert_eq!(file.get(a).expect("get").map(|j| j.state), Some(State::Dead), "reap_dead");
    assert_eq!(file.get(b).expect("get").map(|j| j.state), Some(State::Ready), "reap_ready");
    let cc = file.claim("q", ms(1_000)).expect("claim").expect("c");
    assert_eq!(cc.id, c);
    assert_eq!(file.renew(c, &cc.token, ms(2_000)).expect("renew"), T0 + 2_100);
    file.release(c, &cc.token).expect("release");
    let cc = file.claim("q", ms(1_000)).expect("claim").expect("c again");
    assert!(matches!(
        file.fail(c, &cc.token, "oops", Retry::After(ms(0))).expect("fail"),
        Failed::Ready { .. }
    ));
    let cc = file.claim("q", ms(1_000)).expect("claim").expect("c again");
    file.finish(c, &cc.token, true).expect("finish_keep");
    clock.set(T0 + 100_000);
    let cb = file.claim("q", ms(1_000)).expect("claim").expect("b again");
    assert_eq!(cb.id, b);
    file.finish(b, &cb.token, false).expect("finish_delete");
    let d = file.add(&NewJob::new("q", b"d".to_vec())).expect("add");

    file.retry(a).expect("retry");
    assert_eq!(file.retry_all(Some("q")).expect("retry_all"), 0);
    assert_eq!(file.purge(State::Done, None).expect("purge"), 1);
    file.delete(d).expect("delete");
    assert!(file.get(a).expect("get").is_some());
    let filter = ListFilter { state: Some(ListState::Ready), ..ListFilter::default() };
    assert_eq!(file.list(&filter).expect("list").len(), 1);
    assert_eq!(file.stats().expect("stats").len(), 1);
    assert_invariants(&peek);
    drop(file);
    drop(peek);

    // Opening an existing file that was switched out of WAL mode leaves
    // the mode alone (FORMAT.md §1.2, §4.2).
    let plain = Connection::open(path).expect("untraced connection");
    assert_eq!(query_string(&plain, "PRAGMA journal_mode = DELETE"), "delete");
    drop(plain);
    let file =
        Ukue::options().access(Access::Existing).clock(clock.clone()).attach(traced(path)).expect("open");
    assert_eq!(query_string(&Connection::open(path).expect("untraced"), "PRAGMA journal_mode"), "delete");
    assert_eq!(file.get(a).expect("get").map(|j| j.state), Some(State::Ready));
}

/// Other programs need not create the indexes (FORMAT.md §3.2): on a file
/// without them the reference runs its statements without `INDEXED BY`,
/// and every step still works.
#[test]
fn a_file_without_the_indexes_is_worked() {
    let tmp = TempPath::new("no-index.ukue");
    drop(Ukue::create(&tmp.path).expect("create"));
    let plain = Connection::open(&tmp.path).expect("plain connection");
    for index in ["ukue_jobs_due", "ukue_jobs_next", "ukue_jobs_leases", "ukue_jobs_state"] {
        plain.execute_batch(&format!("DROP INDEX {index}")).expect("drop index");
    }
    drop(plain);
    let clock = ManualClock::new(T0);
    let mut file =
        Ukue::options().access(Access::Existing).clock(clock.clone()).open(&tmp.path).expect("open");
    let low = file.add(&NewJob::new("q", b"low".to_vec())).expect("add");
    let high = file.add(&NewJob::new("q", b"high".to_vec()).priority(5).max_attempts(1)).expect("add");
    let claimed = file.claim("q", ms(100)).expect("claim").expect("a job");
    assert_eq!(claimed.id, high, "the highest priority first");
    clock.set(T0 + 100);
    let next = file.claim("q", ms(100)).expect("claim after the lease ran out").expect("a job");
    assert_eq!(next.id, low);
    assert_eq!(
        file.get(high).expect("get").map(|j| j.state),
        Some(State::Dead),
        "reaped on its last attempt"
    );
    file.finish(low, &next.token, false).expect("finish");
    assert_eq!(file.stats().expect("stats").len(), 1);
}

#[test]
fn the_reference_runs_exactly_the_statements_of_format_md() {
    let tmp = TempPath::new("traced.db");
    exercise_every_step(&tmp.path);
    let executed: Vec<String> = std::mem::take(&mut *TRACE.lock().expect("trace"));
    assert!(!executed.is_empty(), "the trace hook recorded nothing");

    let spec = Spec::builtin();
    let known: BTreeMap<String, Stmt> = spec.statements().map(|(stmt, sql)| (normalise(sql), stmt)).collect();
    assert_eq!(known.len(), Stmt::ALL.len(), "two statements of FORMAT.md have the same text");
    let mut used = BTreeSet::new();
    let mut unknown = BTreeSet::new();
    for sql in &executed {
        // SQLite reports the start of a trigger program as a comment.
        if sql.starts_with("--") {
            continue;
        }
        match known.get(&normalise(sql)) {
            Some(stmt) => {
                used.insert(*stmt);
            }
            None => {
                unknown.insert(sql.clone());
            }
        }
    }
    let missing: Vec<&str> = Stmt::ALL.iter().filter(|s| !used.contains(*s)).map(|s| s.name()).collect();
    assert!(
        unknown.is_empty() && missing.is_empty(),
        "the reference ran SQL that FORMAT.md does not show:\n{}\n\nFORMAT.md statements the reference never ran: {missing:?}",
        unknown.iter().map(|s| format!("  {s}")).collect::<Vec<_>>().join("\n"),
    );
    assert!(
        executed.iter().any(|s| s.starts_with("-- TRIGGER")),
        "the failing batch did not reach the trigger"
    );
}

/// add_job.py keeps its statements as module constants named after
/// FORMAT.md's (`SET_WAL` for `set_wal`), copied by hand since it must stay
/// one file with nothing but the standard library: each must be the page's
/// text exactly, so that an edit of FORMAT.md that add_job.py misses fails.
#[test]
fn add_job_py_runs_format_md_statements() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/python");
    let dump = "import json, add_job; print(json.dumps({k.lower(): v for k, v in vars(add_job).items() \
                if k.isupper() and isinstance(v, str)}))";
    let out = std::process::Command::new("python3")
        .args(["-c", dump])
        .current_dir(dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs (CI installs it)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let constants: BTreeMap<String, String> = serde_json::from_slice(&out.stdout).expect("JSON");
    let spec = Spec::builtin();
    let mut checked = Vec::new();
    for (name, sql) in &constants {
        if let Some(stmt) = Stmt::from_name(name) {
            assert_eq!(
                sql,
                spec.sql(stmt),
                "add_job.py's {} differs from FORMAT.md's {name}",
                name.to_uppercase()
            );
            checked.push(name.as_str());
        }
    }
    // What add_job.py runs: the connection's settings, the version check,
    // WAL, and the add in its own transaction.
    let runs = [
        "add",
        "begin_immediate",
        "commit",
        "find_tables",
        "read_journal_mode",
        "read_version",
        "rollback",
        "set_busy_timeout",
        "set_synchronous",
        "set_wal",
    ];
    assert_eq!(checked, runs, "the FORMAT.md statements that add_job.py holds");
}

// ---------------------------------------------------------------- (b) schema

fn format_md_blocks() -> Vec<Block> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/FORMAT.md");
    let text = std::fs::read_to_string(&path).expect("spec/FORMAT.md");
    markdown::sql_blocks(&text).expect("FORMAT.md parses")
}

type Rows = Vec<Vec<Value>>;

fn rows(conn: &Connection, sql: &str) -> Rows {
    let mut st = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let n = st.column_count();
    let rows = st
        .query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect::<rusqlite::Result<Vec<_>>>())
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.collect::<rusqlite::Result<_>>().unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Everything SQLite tells about the ukue schema, by query.
fn schema(conn: &Connection) -> BTreeMap<String, Rows> {
    let mut out = BTreeMap::new();
    let master = "SELECT type, name, tbl_name, sql FROM sqlite_master
                  WHERE tbl_name IN ('ukue_meta', 'ukue_jobs', 'sqlite_sequence') ORDER BY type, name";
    out.insert("sqlite_master".to_string(), rows(conn, master));
    for table in ["ukue_meta", "ukue_jobs"] {
        for pragma in ["table_info", "table_xinfo", "index_list"] {
            let sql = format!("SELECT * FROM pragma_{pragma}('{table}') ORDER BY 2");
            out.insert(format!("{pragma}({table})"), rows(conn, &sql));
        }
        let indexes = rows(conn, &format!("SELECT name FROM pragma_index_list('{table}') ORDER BY name"));
        for index in indexes {
            let Value::Text(index) = &index[0] else { panic!("index name {index:?}") };
            for pragma in ["index_info", "index_xinfo"] {
                let sql = format!("SELECT * FROM pragma_{pragma}('{index}') ORDER BY seqno");
                out.insert(format!("{pragma}({index})"), rows(conn, &sql));
            }
        }
    }
    out
}

#[test]
fn the_schema_blocks_build_the_schema_the_reference_makes() {
    let blocks = format_md_blocks();
    let create: Vec<&Block> = blocks.iter().filter(|b| b.name.starts_with("create_")).collect();
    assert_eq!(create.len(), Stmt::SCHEMA.len(), "create_* blocks of FORMAT.md");
    let builtin = Spec::builtin();
    for block in &create {
        let stmt = Stmt::from_name(&block.name).expect("a known statement");
        assert!(Stmt::SCHEMA.contains(&stmt), "{} is not a schema statement", block.name);
        assert_eq!(builtin.sql(stmt), block.sql, "the library was built from another FORMAT.md");
    }
    let from_page = Connection::open_in_memory().expect("memory");
    for block in &create {
        from_page.execute_batch(&block.sql).unwrap_or_else(|e| panic!("{}: {e}", block.name));
    }

    let tmp = TempPath::new("schema.ukue");
    let file = Ukue::create(&tmp.path).expect("create");
    let made = schema(file.connection());
    let page = schema(&from_page);
    assert_eq!(made.keys().collect::<Vec<_>>(), page.keys().collect::<Vec<_>>());
    for (what, rows) in &made {
        assert_eq!(rows, &page[what], "{what} differs between FORMAT.md and the reference's file");
    }
    golden_schema(file.connection());
}

fn text(v: &str) -> Value {
    Value::Text(v.to_string())
}

fn int(v: i64) -> Value {
    Value::Integer(v)
}

/// The compatibility facts of FORMAT.md §3, written out by hand: a schema
/// edit in FORMAT.md fails here even when the reference follows it.
fn golden_schema(conn: &Connection) {
    const NOW_MS: &str = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";
    let columns = |table: &str| -> Vec<(String, String, i64, Option<String>, i64, i64)> {
        conn.prepare(&format!("SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo('{table}') ORDER BY cid"))
            .and_then(|mut s| {
                s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))?
                    .collect()
            })
            .expect("table_xinfo")
    };
    let col = |name: &str, ty: &str, notnull: i64, default: Option<&str>, pk: i64| {
        (name.to_string(), ty.to_string(), notnull, default.map(String::from), pk, 0)
    };
    assert_eq!(
        columns("ukue_jobs"),
        vec![
            col("id", "INTEGER", 0, None, 1),
            col("queue", "TEXT", 1, None, 0),
            col("payload", "BLOB", 1, None, 0),
            col("state", "TEXT", 1, Some("'ready'"), 0),
            col("priority", "INTEGER", 1, Some("0"), 0),
            col("attempts", "INTEGER", 1, Some("0"), 0),
            col("max_attempts", "INTEGER", 1, Some("10"), 0),
            col("run_at", "INTEGER", 1, Some(NOW_MS), 0),
            col("lease_until", "INTEGER", 0, None, 0),
            col("token", "TEXT", 0, None, 0),
            col("last_error", "TEXT", 0, None, 0),
            col("created_at", "INTEGER", 1, Some(NOW_MS), 0),
            col("updated_at", "INTEGER", 1, Some(NOW_MS), 0),
        ]
    );
    // WITHOUT ROWID makes the primary key NOT NULL
    assert_eq!(columns("ukue_meta"), vec![col("key", "TEXT", 1, None, 1), col("value", "TEXT", 1, None, 0)]);

    // The four indexes: name, partial, and (column, descending) keys.
    let index_list = rows(
        conn,
        "SELECT name, \"unique\", origin, partial FROM pragma_index_list('ukue_jobs') ORDER BY name",
    );
    assert_eq!(
        index_list,
        vec![
            vec![text("ukue_jobs_due"), int(0), text("c"), int(1)],
            vec![text("ukue_jobs_leases"), int(0), text("c"), int(1)],
            vec![text("ukue_jobs_next"), int(0), text("c"), int(1)],
            vec![text("ukue_jobs_state"), int(0), text("c"), int(0)],
        ]
    );
    let keys = |index: &str| -> Vec<(String, i64)> {
        conn.prepare(&format!(
            "SELECT name, \"desc\" FROM pragma_index_xinfo('{index}') WHERE key ORDER BY seqno"
        ))
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .expect("index_xinfo")
    };
    let k = |cols: &[(&str, i64)]| cols.iter().map(|(n, d)| (n.to_string(), *d)).collect::<Vec<_>>();
    assert_eq!(keys("ukue_jobs_due"), k(&[("queue", 0), ("priority", 0), ("run_at", 0), ("id", 0)]));
    assert_eq!(keys("ukue_jobs_next"), k(&[("queue", 0), ("run_at", 0)]));
    assert_eq!(keys("ukue_jobs_leases"), k(&[("lease_until", 0)]));
    assert_eq!(keys("ukue_jobs_state"), k(&[("state", 0), ("queue", 0), ("id", 0)]));
    let index_where = |index: &str| {
        let sql = query_string(conn, &format!("SELECT sql FROM sqlite_master WHERE name = '{index}'"));
        sql.split_once(" WHERE ").map(|(_, w)| normalise(w))
    };
    assert_eq!(index_where("ukue_jobs_due").as_deref(), Some("state = 'ready'"));
    assert_eq!(index_where("ukue_jobs_next").as_deref(), Some("state = 'ready'"));
    assert_eq!(index_where("ukue_jobs_leases").as_deref(), Some("state = 'running'"));
    assert_eq!(index_where("ukue_jobs_state"), None);
    // ukue_meta has only its primary key
    assert_eq!(
        rows(conn, "SELECT origin, \"unique\", partial FROM pragma_index_list('ukue_meta')"),
        vec![vec![text("pk"), int(1), int(0)]]
    );

    // AUTOINCREMENT: the table is in sqlite_sequence's care
    let jobs_sql = normalise(&query_string(conn, "SELECT sql FROM sqlite_master WHERE name = 'ukue_jobs'"));
    assert!(jobs_sql.contains("id INTEGER PRIMARY KEY AUTOINCREMENT"), "{jobs_sql}");
    assert_eq!(query_i64(conn, "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'"), 1);
    // WITHOUT ROWID: ukue_meta has no rowid
    let meta_sql = normalise(&query_string(conn, "SELECT sql FROM sqlite_master WHERE name = 'ukue_meta'"));
    assert!(meta_sql.ends_with(") WITHOUT ROWID"), "{meta_sql}");
    assert!(conn.prepare("SELECT rowid FROM ukue_meta").is_err(), "ukue_meta has a rowid");
    // exactly these objects
    let names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE name LIKE 'ukue%' ORDER BY name")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("names");
    assert_eq!(
        names,
        ["ukue_jobs", "ukue_jobs_due", "ukue_jobs_leases", "ukue_jobs_next", "ukue_jobs_state", "ukue_meta"]
    );

    // The CHECK constraints of §3.2, each refusing a bad row.
    for (bad, why) in [
        ("INSERT INTO ukue_jobs (queue, payload) VALUES ('', x'')", "empty queue"),
        ("INSERT INTO ukue_jobs (queue, payload) VALUES (printf('%.201c', 'q'), x'')", "201-character queue"),
        ("INSERT INTO ukue_jobs (queue, payload) VALUES ('q', NULL)", "NULL payload"),
        ("INSERT INTO ukue_jobs (queue, payload, state) VALUES ('q', x'', 'delayed')", "unknown state"),
        ("INSERT INTO ukue_jobs (queue, payload, priority) VALUES ('q', x'', 101)", "priority 101"),
        ("INSERT INTO ukue_jobs (queue, payload, priority) VALUES ('q', x'', -101)", "priority -101"),
        ("INSERT INTO ukue_jobs (queue, payload, attempts) VALUES ('q', x'', -1)", "negative attempts"),
        ("INSERT INTO ukue_jobs (queue, payload, max_attempts) VALUES ('q', x'', 0)", "max_attempts 0"),
        ("INSERT INTO ukue_meta (key, value) VALUES ('k', NULL)", "NULL meta value"),
        ("INSERT INTO ukue_meta (key, value) VALUES ('format_version', '2')", "a second format_version"),
    ] {
        assert!(conn.execute(bad, []).is_err(), "the schema accepts a row with {why}");
    }
    for good in [
        "INSERT INTO ukue_jobs (queue, payload, priority) VALUES (printf('%.200c', 'q'), x'', 100)",
        "INSERT INTO ukue_jobs (queue, payload, priority, max_attempts) VALUES ('q', 'text', -100, 1)",
    ] {
        conn.execute(good, []).unwrap_or_else(|e| panic!("{good}: {e}"));
    }
    conn.execute("DELETE FROM ukue_jobs", []).expect("clean up");
}

// ---------------------------------------------------------------- (c) examples

#[test]
fn the_examples_work_on_a_reference_file() {
    let examples: Vec<Block> =
        format_md_blocks().into_iter().filter(|b| b.name == markdown::EXAMPLE).collect();
    assert!(!examples.is_empty(), "FORMAT.md has no example blocks");
    assert_eq!(
        examples.iter().map(|b| b.sql.as_str()).collect::<Vec<_>>(),
        Spec::builtin().examples().iter().map(String::as_str).collect::<Vec<_>>()
    );
    let tmp = TempPath::new("examples.ukue");
    let mut file = Ukue::create(&tmp.path).expect("create");
    for example in &examples {
        file.connection()
            .execute_batch(&example.sql)
            .unwrap_or_else(|e| panic!("example at line {}: {e}", example.line));
    }
    let jobs = file.list(&ListFilter { limit: 1000, ..ListFilter::default() }).expect("list");
    assert!(!jobs.is_empty(), "no example added a job");
    let short = "INSERT INTO ukue_jobs (queue, payload) VALUES ('emails', 'hello')";
    assert!(examples.iter().any(|b| normalise(&b.sql) == short), "the short INSERT of §5.3 is gone");
    for job in &jobs {
        let now = file.now();
        assert_eq!(job.state, State::Ready);
        assert_eq!((job.priority, job.attempts, job.max_attempts), (0, 0, 10));
        assert!((now - 5_000..=now).contains(&job.run_at), "run_at {} is not about now ({now})", job.run_at);
        assert_eq!((job.created_at, job.updated_at), (job.run_at, job.run_at));
        assert_eq!((job.lease_until, job.last_error.as_deref()), (None, None));
        let c = file.claim(&job.queue, ms(60_000)).expect("claim").expect("the example's job is due");
        assert_eq!((c.id, c.attempt, c.payload.as_slice()), (job.id, 1, job.payload.as_slice()));
        file.finish(c.id, &c.token, false).expect("finish");
    }
    let emails = jobs.iter().find(|j| j.queue == "emails").expect("the short INSERT's job");
    assert_eq!(emails.payload, b"hello");
    assert_invariants(file.connection());
}
