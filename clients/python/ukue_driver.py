#!/usr/bin/env python3
"""A ukue step driver (spec/CONFORMANCE.md, "The step-driver protocol"):
the steps of spec/FORMAT.md (format version 1), one JSON request a line on
standard input, one JSON answer a line on standard output.

    python3 ukue_driver.py              # speak the protocol
    python3 ukue_driver.py --statements # print the SQL it runs, as JSON

It is a second implementation of the format, independent of the Rust
reference: it needs nothing but Python 3's standard library (the sqlite3
module must link SQLite 3.35 or newer), and every statement it runs is
copied exactly from FORMAT.md (a test compares them).

The first line it writes is its hello: its name, the protocol version and
its capabilities (`now_ms`: every request's `now_ms` is the clock the step
runs at). Then each request gets one answer: {"ok": true, ...} with the
step's result, or {"ok": false, "error": KIND, "message": TEXT} where KIND
is lease_lost, not_found, refused, invalid or error. It ends at the end of
its input.
"""

import json
import math
import os
import secrets
import sqlite3
import sys
import time
import urllib.parse

NAME = "ukue_driver.py"
PROTOCOL = 1
FORMAT_VERSION = 1
MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)

# The statements this driver runs, copied exactly from spec/FORMAT.md.
CREATE_META = """\
CREATE TABLE ukue_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID"""
CREATE_JOBS = """\
CREATE TABLE ukue_jobs (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  queue        TEXT    NOT NULL CHECK (length(queue) BETWEEN 1 AND 200),
  payload      BLOB    NOT NULL,
  state        TEXT    NOT NULL DEFAULT 'ready'
                       CHECK (state IN ('ready', 'running', 'done', 'dead')),
  priority     INTEGER NOT NULL DEFAULT 0 CHECK (priority BETWEEN -100 AND 100),
  attempts     INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts INTEGER NOT NULL DEFAULT 10 CHECK (max_attempts >= 1),
  run_at       INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
  created_at   INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
  updated_at   INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
  lease_until  INTEGER,
  token        TEXT,
  last_error   TEXT
)"""
CREATE_INDEX_DUE = "CREATE INDEX ukue_jobs_due ON ukue_jobs (queue, priority DESC, run_at, id) WHERE state = 'ready'"
CREATE_INDEX_NEXT = "CREATE INDEX ukue_jobs_next ON ukue_jobs (queue, run_at) WHERE state = 'ready'"
CREATE_INDEX_LEASES = "CREATE INDEX ukue_jobs_leases ON ukue_jobs (lease_until) WHERE state = 'running'"
CREATE_INDEX_STATE = "CREATE INDEX ukue_jobs_state ON ukue_jobs (state, queue, id)"
SET_WAL = "PRAGMA journal_mode = WAL"
BEGIN_IMMEDIATE = "BEGIN IMMEDIATE"
FIND_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('ukue_meta', 'ukue_jobs') ORDER BY name"
COUNT_SCHEMA = "SELECT count(*) FROM sqlite_master"
READ_APPLICATION_ID = "PRAGMA application_id"
SET_APPLICATION_ID = "PRAGMA application_id = 1969976677"
INSERT_META = "INSERT INTO ukue_meta (key, value) VALUES (:key, :value)"
COMMIT = "COMMIT"
ROLLBACK = "ROLLBACK"
SET_BUSY_TIMEOUT = "PRAGMA busy_timeout = 5000"
SET_SYNCHRONOUS = "PRAGMA synchronous = FULL"
READ_VERSION = "SELECT value FROM ukue_meta WHERE key = 'format_version'"
READ_JOURNAL_MODE = "PRAGMA journal_mode"
ADD = """\
INSERT INTO ukue_jobs (queue, payload, priority, max_attempts, run_at, created_at, updated_at)
VALUES (:queue, :payload, :priority, :max_attempts, :run_at, :now, :now)"""
REAP_DEAD = """\
UPDATE ukue_jobs INDEXED BY ukue_jobs_leases
SET state = 'dead', token = NULL, lease_until = NULL, updated_at = :now,
    last_error = 'lease expired (attempt ' || attempts || ' of ' || max_attempts || ')'
WHERE state = 'running' AND lease_until <= :now AND attempts >= max_attempts"""
REAP_READY = """\
UPDATE ukue_jobs INDEXED BY ukue_jobs_leases
SET state = 'ready', token = NULL, lease_until = NULL, updated_at = :now,
    last_error = 'lease expired (attempt ' || attempts || ' of ' || max_attempts || ')',
    run_at = :now + min(10000 << min(max(attempts - 1, 0), 20), 3600000)
                  + abs(random() % (min(10000 << min(max(attempts - 1, 0), 20), 3600000) / 10 + 1))
WHERE state = 'running' AND lease_until <= :now"""
NEXT_RUN_AT = "SELECT run_at FROM ukue_jobs WHERE queue = :queue AND state = 'ready' ORDER BY run_at LIMIT 1"
PICK = """\
WITH RECURSIVE level(priority) AS (
  SELECT max(priority) FROM ukue_jobs INDEXED BY ukue_jobs_due WHERE queue = :queue AND state = 'ready'
  UNION ALL
  SELECT (SELECT max(priority) FROM ukue_jobs INDEXED BY ukue_jobs_due
          WHERE queue = :queue AND state = 'ready' AND priority < level.priority)
  FROM level WHERE level.priority IS NOT NULL
)
SELECT id FROM (
  SELECT (SELECT id FROM ukue_jobs INDEXED BY ukue_jobs_due
          WHERE queue = :queue AND state = 'ready' AND priority = level.priority AND run_at <= :now
          ORDER BY run_at, id LIMIT 1) AS id
  FROM level
)
WHERE id IS NOT NULL
LIMIT 1"""
TAKE = """\
UPDATE ukue_jobs
SET state = 'running', attempts = attempts + 1, token = :token,
    lease_until = :now + :lease, updated_at = :now
WHERE id = :id AND state = 'ready'
RETURNING id, queue, payload, priority, attempts, max_attempts, run_at, lease_until, created_at, last_error"""
FINISH_DELETE = "DELETE FROM ukue_jobs WHERE id = :id AND state = 'running' AND token = :token"
FINISH_KEEP = """\
UPDATE ukue_jobs
SET state = 'done', token = NULL, lease_until = NULL, updated_at = :now
WHERE id = :id AND state = 'running' AND token = :token"""
FAIL = """\
UPDATE ukue_jobs
SET state = CASE WHEN :permanent OR attempts >= max_attempts THEN 'dead' ELSE 'ready' END,
    run_at = CASE WHEN :permanent OR attempts >= max_attempts THEN run_at
                  ELSE :now + coalesce(:retry_in,
                         min(10000 << min(max(attempts - 1, 0), 20), 3600000)
                         + abs(random() % (min(10000 << min(max(attempts - 1, 0), 20), 3600000) / 10 + 1)))
             END,
    token = NULL, lease_until = NULL, last_error = :error, updated_at = :now
WHERE id = :id AND state = 'running' AND token = :token
RETURNING state, run_at"""
RENEW = """\
UPDATE ukue_jobs SET lease_until = :now + :lease, updated_at = :now
WHERE id = :id AND state = 'running' AND token = :token
RETURNING lease_until"""
RELEASE = """\
UPDATE ukue_jobs
SET state = 'ready', attempts = max(attempts - 1, 0), token = NULL, lease_until = NULL, updated_at = :now
WHERE id = :id AND state = 'running' AND token = :token"""
RETRY = """\
UPDATE ukue_jobs SET state = 'ready', attempts = 0, run_at = :now, updated_at = :now
WHERE id = :id AND state = 'dead'"""
RETRY_ALL = """\
UPDATE ukue_jobs SET state = 'ready', attempts = 0, run_at = :now, updated_at = :now
WHERE state = 'dead' AND (:queue IS NULL OR queue = :queue)"""
DELETE = "DELETE FROM ukue_jobs WHERE id = :id"
PURGE = "DELETE FROM ukue_jobs WHERE state = :state AND (:queue IS NULL OR queue = :queue)"
GET = """\
SELECT id, queue, state, priority, attempts, max_attempts, run_at, lease_until,
       last_error, created_at, updated_at, payload
FROM ukue_jobs WHERE id = :id"""
STATS = """\
SELECT queue,
       sum(state = 'ready' AND run_at <= :now),
       sum(state = 'ready' AND run_at > :now),
       sum(state = 'running' AND lease_until > :now),
       sum(state = 'running' AND lease_until <= :now),
       sum(state = 'dead'),
       sum(state = 'done'),
       min(CASE WHEN state = 'ready' AND run_at <= :now THEN run_at END)
FROM ukue_jobs
GROUP BY queue
ORDER BY queue"""

STATEMENTS = {
    name.lower(): value
    for name, value in list(globals().items())
    if name.isupper() and isinstance(value, str) and name not in ("NAME",)
}

SCHEMA = (CREATE_META, CREATE_JOBS, CREATE_INDEX_DUE, CREATE_INDEX_NEXT,
          CREATE_INDEX_LEASES, CREATE_INDEX_STATE)


class StepError(Exception):
    """A step that did not happen; `kind` is the answer's error kind."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def invalid(message):
    return StepError("invalid", message)


# --- reading requests -------------------------------------------------------

def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and MIN_INT64 <= value <= MAX_INT64


def field(request, key, kind, required=True, default=None):
    """The request's `key`, checked to be of `kind` ("int", "str", "bool")."""
    value = request.get(key)
    if value is None:
        if required:
            raise invalid(f"missing field `{key}`")
        return default
    ok = {"int": is_int, "str": lambda v: isinstance(v, str),
          "bool": lambda v: isinstance(v, bool)}[kind](value)
    if not ok:
        raise invalid(f"field `{key}`: expected {kind}, got {value!r}")
    return value


def check_queue(queue):
    if not 1 <= len(queue) <= 200:
        raise invalid(f"queue name must be 1 to 200 characters, got {len(queue)}")
    if "\0" in queue:
        raise invalid("queue name must not contain NUL")
    try:
        queue.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid("queue name must be valid UTF-8") from None


def check_lease(now, lease):
    if lease < 1:
        raise invalid(f"lease must be at least 1 ms, got {lease} ms")
    check_range(now, lease)


def check_range(now, duration):
    # FORMAT.md §1.5: a time past the largest 64-bit integer would be a REAL.
    if now + duration > MAX_INT64 or now + duration < MIN_INT64:
        raise invalid(f"{duration} ms from now is past the largest time a ukue file can hold")


# --- the file ---------------------------------------------------------------

def file_uri(path, create):
    quoted = urllib.parse.quote(path)
    if quoted.startswith("/"):
        quoted = "//" + quoted
    return f"file:{quoted}?mode={'rwc' if create else 'rw'}"


def tables(con):
    return [row[0] for row in con.execute(FIND_TABLES)]


def check_version(con, path):
    # TEXT that is not UTF-8 is a bad version, not a failure to read it.
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        rows = con.execute(READ_VERSION).fetchall()
    finally:
        con.text_factory = str
    if not rows:
        raise StepError("refused", f"{path}: ukue_meta has no format_version row")
    value = rows[0][0]
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    elif not isinstance(value, str):
        value = str(value)
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise StepError("refused", f"{path}: format_version {value!r} is not a ukue file format version")
    if int(value) > FORMAT_VERSION:
        raise StepError("refused", f"{path}: ukue file format {value} is newer than this program knows"
                                   f" (format {FORMAT_VERSION})")


def open_file(path, create, now):
    """FORMAT.md §2.3, §3.3 and §4: the checks (which only read), WAL mode,
    and the tables when `create` and the path is missing or empty."""
    try:
        absent = os.path.getsize(path) == 0
    except FileNotFoundError:
        absent = True
    except OSError as e:
        raise StepError("error", f"{path}: {e}") from None
    if not os.path.exists(path) and not create:
        raise StepError("refused", f"{path}: no such file")
    if os.path.isdir(path):
        raise StepError("refused", f"{path}: is a directory")
    add_tables = create and absent
    con = sqlite3.connect(file_uri(path, add_tables), uri=True, isolation_level=None)
    try:
        try:
            con.execute(SET_BUSY_TIMEOUT).fetchall()
            con.execute(SET_SYNCHRONOUS).fetchall()
            found = tables(con)
        except sqlite3.DatabaseError as e:
            if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB or "not a database" in str(e):
                raise StepError("refused", f"{path}: not a SQLite database") from None
            raise
        if found == ["ukue_jobs", "ukue_meta"]:
            check_version(con, path)
        elif found and len(found) == 1:
            missing = "ukue_meta" if found[0] == "ukue_jobs" else "ukue_jobs"
            raise StepError("refused", f"{path}: has {found[0]} but not {missing}; a half-made ukue file")
        elif not add_tables:
            raise StepError("refused", f"{path}: no ukue tables (ukue_meta, ukue_jobs) in this SQLite database")
        # The checks have passed: only now may anything be written.
        mode = con.execute(READ_JOURNAL_MODE).fetchone()[0]
        if mode.lower() not in ("wal", "memory"):
            con.execute(SET_WAL).fetchall()
        if add_tables and tables(con) != ["ukue_jobs", "ukue_meta"]:
            write(con, lambda: make_tables(con, path, now))
        return con
    except BaseException:
        con.close()
        raise


def make_tables(con, path, now):
    found = tables(con)
    if found == ["ukue_jobs", "ukue_meta"]:
        check_version(con, path)
        return
    if found:
        raise StepError("refused", f"{path}: a half-made ukue file")
    objects = con.execute(COUNT_SCHEMA).fetchone()[0]
    application_id = con.execute(READ_APPLICATION_ID).fetchone()[0]
    if objects == 0 and application_id == 0:
        con.execute(SET_APPLICATION_ID).fetchall()
    for statement in SCHEMA:
        con.execute(statement)
    for key, value in (("format_version", str(FORMAT_VERSION)), ("created_at", str(now)),
                       ("created_by", f"{NAME} (Python)")):
        con.execute(INSERT_META, {"key": key, "value": value})


def write(con, body):
    """Runs `body` between begin_immediate and commit (FORMAT.md §5.2)."""
    con.execute(BEGIN_IMMEDIATE)
    try:
        result = body()
        con.execute(COMMIT)
        return result
    except BaseException:
        if con.in_transaction:
            con.execute(ROLLBACK)
        raise


# --- the steps --------------------------------------------------------------

def text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is None:
        return ""
    return str(value)


class Driver:
    def __init__(self):
        self.con = None

    def close(self):
        if self.con is not None:
            self.con.close()
            self.con = None

    def handle(self, request):
        if not isinstance(request, dict):
            raise invalid("a request is a JSON object")
        op = request.get("op")
        now = request.get("now_ms")
        if now is None:
            now = int(time.time() * 1000)
        elif not is_int(now):
            raise invalid(f"field `now_ms`: expected int, got {now!r}")
        if op == "open":
            path = field(request, "path", "str")
            create = field(request, "create", "bool", required=False, default=False)
            self.close()
            self.con = open_file(path, create, now)
            return {}
        step = getattr(self, "step_" + op, None) if isinstance(op, str) else None
        if step is None:
            raise invalid(f"unknown op {op!r}")
        if self.con is None:
            raise invalid("no file is open: send an open request first")
        return step(request, now)

    def step_add(self, request, now):
        queue = field(request, "queue", "str")
        payload = field(request, "payload", "str")
        priority = field(request, "priority", "int", required=False, default=0)
        max_attempts = field(request, "max_attempts", "int", required=False, default=10)
        delay = field(request, "delay_ms", "int", required=False, default=0)
        check_queue(queue)
        if not -100 <= priority <= 100:
            raise invalid(f"priority must be from -100 to 100, got {priority}")
        if max_attempts < 1:
            raise invalid(f"max attempts must be at least 1, got {max_attempts}")
        if delay < 0:
            raise invalid(f"delay must not be negative, got {delay} ms")
        run_at = min(now + delay, MAX_INT64)
        cur = self.con.execute(ADD, {
            "queue": queue, "payload": payload.encode("utf-8"), "priority": priority,
            "max_attempts": max_attempts, "run_at": run_at, "now": now,
        })
        return {"id": cur.lastrowid}

    def step_claim(self, request, now):
        queue = field(request, "queue", "str")
        lease = field(request, "lease_ms", "int")
        check_queue(queue)
        check_lease(now, lease)
        token = secrets.token_hex(16)

        def claim():
            self.con.execute(REAP_DEAD, {"now": now})
            self.con.execute(REAP_READY, {"now": now})
            row = self.con.execute(NEXT_RUN_AT, {"queue": queue}).fetchone()
            next_due = row[0] if row else None
            if next_due is None or next_due > now:
                return {"job": None, "next_due": next_due}
            row = self.con.execute(PICK, {"queue": queue, "now": now}).fetchone()
            if row is None:
                return {"job": None, "next_due": next_due}
            rows = self.con.execute(TAKE, {"id": row[0], "token": token, "now": now, "lease": lease}).fetchall()
            if not rows:
                raise StepError("error", f"job {row[0]} was picked but could not be taken")
            (id_, queue_, payload, priority, attempts, max_attempts, run_at, lease_until,
             created_at, last_error) = rows[0]
            return {"job": {
                "id": id_, "queue": queue_, "payload": text(payload), "priority": priority,
                "attempt": attempts, "max_attempts": max_attempts, "run_at": run_at,
                "lease_until": lease_until, "created_at": created_at, "last_error": last_error,
                "token": token,
            }}

        return write(self.con, claim)

    def holder(self, request):
        return field(request, "id", "int"), field(request, "token", "str")

    def step_finish(self, request, now):
        id_, token = self.holder(request)
        keep = field(request, "keep_done", "bool", required=False, default=False)
        if keep:
            cur = self.con.execute(FINISH_KEEP, {"id": id_, "token": token, "now": now})
        else:
            cur = self.con.execute(FINISH_DELETE, {"id": id_, "token": token})
        return held(cur.rowcount, id_)

    def step_fail(self, request, now):
        id_, token = self.holder(request)
        error = field(request, "error", "str", required=False, default="")
        permanent = field(request, "permanent", "bool", required=False, default=False)
        retry_in = field(request, "retry_in_ms", "int", required=False)
        if retry_in is not None and not permanent:
            if retry_in < 0:
                raise invalid(f"delay must not be negative, got {retry_in} ms")
            check_range(now, retry_in)
        rows = self.con.execute(FAIL, {
            "id": id_, "token": token, "now": now, "error": error,
            "permanent": 1 if permanent else 0, "retry_in": None if permanent else retry_in,
        }).fetchall()
        if not rows:
            raise lease_lost(id_)
        state, run_at = rows[0]
        return {"state": "dead"} if state == "dead" else {"state": "ready", "run_at": run_at}

    def step_renew(self, request, now):
        id_, token = self.holder(request)
        lease = field(request, "lease_ms", "int")
        check_lease(now, lease)
        rows = self.con.execute(RENEW, {"id": id_, "token": token, "now": now, "lease": lease}).fetchall()
        if not rows:
            raise lease_lost(id_)
        return {"lease_until": rows[0][0]}

    def step_release(self, request, now):
        id_, token = self.holder(request)
        cur = self.con.execute(RELEASE, {"id": id_, "token": token, "now": now})
        return held(cur.rowcount, id_)

    def step_retry(self, request, now):
        id_ = field(request, "id", "int", required=False)
        every = field(request, "all", "bool", required=False, default=False)
        queue = field(request, "queue", "str", required=False)
        if every and id_ is None:
            if queue is not None:
                check_queue(queue)
            cur = self.con.execute(RETRY_ALL, {"queue": queue, "now": now})
            return {"count": cur.rowcount}
        if id_ is None or every or queue is not None:
            raise invalid("retry takes an id, or all (with a queue or not)")
        cur = self.con.execute(RETRY, {"id": id_, "now": now})
        if cur.rowcount == 1:
            return {}
        row = self.con.execute(GET, {"id": id_}).fetchone()
        if row is None:
            raise StepError("not_found", f"job {id_}: no such job")
        raise StepError("refused", f"job {id_} is {row[2]}, not dead")

    def step_delete(self, request, now):
        id_ = field(request, "id", "int")
        cur = self.con.execute(DELETE, {"id": id_})
        if cur.rowcount != 1:
            raise StepError("not_found", f"job {id_}: no such job")
        return {}

    def step_purge(self, request, now):
        state = field(request, "state", "str")
        queue = field(request, "queue", "str", required=False)
        if state not in ("dead", "done"):
            raise invalid(f"purge takes state dead or done, got {state!r}")
        if queue is not None:
            check_queue(queue)
        cur = self.con.execute(PURGE, {"state": state, "queue": queue})
        return {"count": cur.rowcount}

    def step_stats(self, request, now):
        queues = []
        for row in self.con.execute(STATS, {"now": now}):
            queue, ready, delayed, running, expired, dead, done, oldest_due = row
            queues.append({
                "queue": queue, "ready": ready, "delayed": delayed, "running": running,
                "expired": expired, "dead": dead, "done": done, "oldest_due": oldest_due,
            })
        return {"queues": queues}


def lease_lost(id_):
    return StepError("lease_lost", f"job {id_}: lease lost (the job was reaped, claimed again,"
                                   " finished or deleted)")


def held(changed, id_):
    if changed != 1:
        raise lease_lost(id_)
    return {}


def answer_line(driver, line):
    try:
        request = json.loads(line)
    except ValueError as e:
        return {"ok": False, "error": "invalid", "message": f"cannot read the request: {e}"}
    try:
        result = driver.handle(request)
        return {"ok": True, **result}
    except StepError as e:
        return {"ok": False, "error": e.kind, "message": str(e)}
    except sqlite3.Error as e:
        return {"ok": False, "error": "error", "message": f"sqlite: {e}"}
    except (OSError, ValueError, OverflowError) as e:
        return {"ok": False, "error": "error", "message": str(e)}


def main(argv):
    if argv[1:] == ["--statements"]:
        print(json.dumps(STATEMENTS, indent=1, sort_keys=True))
        return 0
    if argv[1:]:
        print(f"usage: {NAME} [--statements]", file=sys.stderr)
        return 2
    out = sys.stdout
    hello = {"driver": f"{NAME} (Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version})",
             "protocol": PROTOCOL, "capabilities": ["now_ms"]}
    out.write(json.dumps(hello) + "\n")
    out.flush()
    driver = Driver()
    try:
        for raw in sys.stdin.buffer:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            out.write(json.dumps(answer_line(driver, line)) + "\n")
            out.flush()
    finally:
        driver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
