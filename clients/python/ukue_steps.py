"""The steps of a ukue file (job-queue file format, version 1), with nothing
but Python's standard library.

Written from the published format (FORMAT.md of github.com/ukue-queue/ukue)
and the published Go command, whose behaviour it follows where it and the
Rust reference differ (a give-back sets run_at to now; reaping goes row by
row and treats a missing lease as expired). Shared by ukue.py (the `ukue`
command line) and ukue_driver.py (the JSON-lines step driver).

Every step is one transaction. Times are whole milliseconds since 1970;
each step takes `now` from its caller, so that a driver can inject a clock.
A step that does not happen raises UkueError, whose `kind` says why:
refused (a file the format says to leave alone, a retry of a job that is
not dead), invalid (input no step accepts), lease_lost (the caller no
longer holds the job), not_found (no such job), error (anything else).
SQLite's own failures come out as sqlite3.Error.

It needs no SQLite feature newer than partial indexes (3.8): no RETURNING.
"""

import os
import random
import re
import secrets
import sqlite3
import stat
import time
import urllib.parse

VERSION = "0.1.0"
FORMAT_VERSION = 1
# "ukue" read as a big-endian number: marks a file ukue made for itself.
APPLICATION_ID = 0x756B7565
DEFAULT_MAX_ATTEMPTS = 10
MAX_QUEUE_CHARS = 200
MIN_PRIORITY = -100
MAX_PRIORITY = 100
BUSY_TIMEOUT_MS = 5000
BACKOFF_BASE_MS = 10_000
BACKOFF_MAX_MS = 3_600_000
MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)
CREATED_BY = f"ukue.py {VERSION} (Python)"
# A reaped job's last_error; it must say that the lease ran out.
LEASE_EXPIRED = "the lease ran out before the job was finished (its worker stopped or lost touch)"

# The schema of format version 1, statement for statement as the published
# FORMAT.md gives it (a test compares them with spec/FORMAT.md's blocks).
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
  state        TEXT    NOT NULL DEFAULT 'ready' CHECK (state IN ('ready', 'running', 'done', 'dead')),
  priority     INTEGER NOT NULL DEFAULT 0 CHECK (priority BETWEEN -100 AND 100),
  attempts     INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts INTEGER NOT NULL DEFAULT 10 CHECK (max_attempts >= 1),
  run_at       INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
  lease_until  INTEGER,
  token        TEXT,
  last_error   TEXT,
  created_at   INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
  updated_at   INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
)"""
CREATE_INDEX_DUE = "CREATE INDEX ukue_jobs_due ON ukue_jobs (queue, priority, run_at, id) WHERE state = 'ready'"
CREATE_INDEX_NEXT = "CREATE INDEX ukue_jobs_next ON ukue_jobs (queue, run_at) WHERE state = 'ready'"
CREATE_INDEX_LEASES = "CREATE INDEX ukue_jobs_leases ON ukue_jobs (lease_until) WHERE state = 'running'"
CREATE_INDEX_STATE = "CREATE INDEX ukue_jobs_state ON ukue_jobs (state, queue, id)"

# In the order they are run; the names are spec/FORMAT.md's block names.
SCHEMA = {
    "create_meta": CREATE_META,
    "create_jobs": CREATE_JOBS,
    "create_index_due": CREATE_INDEX_DUE,
    "create_index_next": CREATE_INDEX_NEXT,
    "create_index_leases": CREATE_INDEX_LEASES,
    "create_index_state": CREATE_INDEX_STATE,
}

# The payload is read as bytes whatever its SQLite type (TEXT is its UTF-8).
JOB_COLUMNS = ("id, queue, state, CAST(payload AS BLOB), priority, attempts, max_attempts, run_at, "
               "lease_until, last_error, created_at, updated_at")
JOB_KEYS = ("id", "queue", "state", "payload", "priority", "attempts", "max_attempts", "run_at",
            "lease_until", "last_error", "created_at", "updated_at")


class UkueError(Exception):
    """A step that did not happen; `kind` says why (see the module's doc)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def invalid(message):
    return UkueError("invalid", message)


def lease_lost(job_id):
    return UkueError("lease_lost", f"job {job_id}: lease lost: the job is no longer held with this token"
                                   " (its lease ran out and it was reaped, or it was finished or deleted)")


def now_ms():
    return time.time_ns() // 1_000_000


# --- checks of input ----------------------------------------------------------

def check_queue(queue):
    if not isinstance(queue, str):
        raise invalid("the queue name must be text")
    try:
        queue.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid("the queue name is not valid UTF-8") from None
    if "\0" in queue:
        raise invalid("the queue name contains a NUL character")
    if not queue:
        raise invalid("empty queue name")
    if len(queue) > MAX_QUEUE_CHARS:
        raise invalid(f"the queue name is {len(queue)} characters long, longer than {MAX_QUEUE_CHARS}")


def check_priority(priority):
    if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
        raise invalid(f"priority must be from {MIN_PRIORITY} to {MAX_PRIORITY}, not {priority}")


def check_max_attempts(max_attempts):
    if max_attempts < 1:
        raise invalid(f"max attempts must be at least 1, not {max_attempts}")
    if max_attempts > MAX_INT64:
        raise invalid(f"max attempts {max_attempts} is larger than a ukue file can hold")


def check_time(what, ms):
    # A time beyond 64 bits would be stored as a REAL and break every comparison.
    if not MIN_INT64 <= ms <= MAX_INT64:
        raise invalid(f"{what} is out of the range of times a ukue file can hold")


def check_lease(lease_ms):
    if lease_ms < 1:
        raise invalid(f"the lease must be at least 1 ms, not {lease_ms} ms")


def backoff_ms(attempt):
    """The wait after failed attempt `attempt` (from 1): 10 s × 2^(attempt−1),
    at most an hour, plus up to a tenth more at random so that jobs that
    failed together do not all come back at once."""
    attempt = max(attempt, 1)
    # Past 2^19 × 10 s the hour is the cap anyway; this keeps the power small.
    base = BACKOFF_MAX_MS if attempt > 20 else min(BACKOFF_BASE_MS << (attempt - 1), BACKOFF_MAX_MS)
    return base + random.randint(0, base // 10)


# --- the file -----------------------------------------------------------------

def _text(raw):
    # TEXT that is not UTF-8 (written by some other program) must not make a
    # whole listing fail.
    return raw.decode("utf-8", "replace")


def _uri(path, create):
    quoted = urllib.parse.quote(os.fsencode(path))
    return f"file:{quoted}?mode={'rwc' if create else 'rw'}"


def _not_a_database(error):
    code = getattr(error, "sqlite_errorcode", None)
    return code == 26 or "not a database" in str(error)  # 26: SQLITE_NOTADB


def _tables(con):
    rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                       "AND name IN ('ukue_meta', 'ukue_jobs')").fetchall()
    return {row[0] for row in rows}


def _whole_number(text):
    """Go's strconv.Atoi: an optional sign, decimal digits, within 64 bits."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if MIN_INT64 <= value <= MAX_INT64 else None


def check_version(con, path):
    """Refuses a ukue_meta whose format_version is missing, not a whole
    number, below 1 or newer than this program knows; reads only."""
    row = con.execute("SELECT value FROM ukue_meta WHERE key = 'format_version'").fetchone()
    if row is None:
        raise UkueError("refused", f"{path} is not a ukue file: its ukue_meta table has no format_version")
    value = row[0]
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    value = str(value)
    number = _whole_number(value)
    if number is None or number < 1:
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise UkueError("refused", f"{path} is not a ukue file: its format_version is {shown!r},"
                                   " not a whole number of at least 1")
    if number > FORMAT_VERSION:
        raise UkueError("refused", f"{path} uses ukue file format {number}, and this program reads up to"
                                   f" format {FORMAT_VERSION}; use a newer ukue")


def _check_tables(con, path, found):
    """Whether the ukue tables are there (their version checked); refuses a
    file that has only one of them."""
    if found == {"ukue_meta", "ukue_jobs"}:
        check_version(con, path)
        return True
    if found:
        (has,) = found
        missing = ({"ukue_meta", "ukue_jobs"} - found).pop()
        raise UkueError("refused", f"{path} is not a ukue file: it has a {has} table but no {missing}")
    return False


def open_file(path, create="never", now=None, created_by=CREATED_BY):
    """Opens the ukue file at `path` and returns its connection.

    `create` says what may be made: "never" (the file must hold the ukue
    tables: what every command but init and add needs), "new" (a missing or
    empty path becomes a new file), or "any" (also adds the tables to an
    existing SQLite database that has none, keeping its tables and its
    application_id: init and add). Every refusal is decided by reading
    alone, before anything can write, so a refused file keeps every byte;
    but for one, as in the published command: init and add look for
    ukue_meta only, so a file with ukue_jobs and no ukue_meta is switched
    to WAL mode before adding the tables finds it half-made.
    """
    if create not in ("never", "new", "any"):
        raise ValueError(f"create must be never, new or any, not {create!r}")
    if not isinstance(path, str) or not path:
        raise invalid("empty file path")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise UkueError("error", f"{path}: {e.strerror or e}") from None
    if st is None and create == "never":
        raise UkueError("refused", f'{path} doesn\'t exist (create it with "ukue init {path}")')
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UkueError("refused", f"{path} is a directory, not a ukue file")
    empty = st is None or st.st_size == 0
    try:
        con = sqlite3.connect(_uri(path, st is None), uri=True, isolation_level=None,
                              timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error as e:
        raise UkueError("error", f"{path}: cannot open it: {e}") from None
    try:
        con.text_factory = _text
        try:
            con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}").fetchall()
            # synchronous = FULL makes each commit durable before it returns.
            con.execute("PRAGMA synchronous = FULL").fetchall()
            # A read waits too: with a hundred programs opening and closing
            # the file, one that closes last takes it whole to checkpoint.
            found = until_free(con, lambda: _tables(con))
        except sqlite3.DatabaseError as e:
            if _not_a_database(e):
                raise UkueError("refused", f"{path} is not a SQLite database ({e})") from None
            raise
        # As the published command does, init and add look for ukue_meta
        # alone: a file with ukue_jobs but no ukue_meta goes on to adding the
        # tables (its journal mode set to WAL first), which then fails.
        if create == "any" and "ukue_meta" not in found:
            _add_tables(con, path, now_ms() if now is None else now, created_by)
            return con
        if _check_tables(con, path, found):
            return con
        if create == "never" or (create == "new" and not empty):
            raise UkueError("refused", f"{path} is not a ukue file: it has no ukue tables (ukue_meta, ukue_jobs);"
                                       f' add them with "ukue init {path}"')
        _add_tables(con, path, now_ms() if now is None else now, created_by)
        return con
    except BaseException:
        con.close()
        raise


def _add_tables(con, path, now, created_by):
    # WAL lets readers go on while a writer commits; the mode is stored in
    # the file, so it is set once, here, and never changed again.
    mode = con.execute("PRAGMA journal_mode").fetchone()[0]
    if str(mode).lower() not in ("wal", "memory"):
        con.execute("PRAGMA journal_mode = WAL").fetchall()

    def make():
        # Another program may have added them since the first look.
        if _check_tables(con, path, _tables(con)):
            return
        objects = con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        application_id = con.execute("PRAGMA application_id").fetchone()[0]
        # Only a brand-new database is marked as ukue's; an application's keeps its mark.
        if objects == 0 and application_id == 0:
            con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        for statement in SCHEMA.values():
            try:
                con.execute(statement)
            except sqlite3.OperationalError as e:
                raise UkueError("error", f"{path}: cannot add the ukue tables: {e}") from None
        for key, value in (("format_version", str(FORMAT_VERSION)), ("created_at", str(now)),
                           ("created_by", created_by)):
            con.execute("INSERT INTO ukue_meta (key, value) VALUES (?, ?)", (key, value))

    write(con, make)


# The longest wait for the write lock, in busy timeouts, however busy the file.
BUSY_CAP = 12


def _stamps(files):
    """The size and time of each of `files`, which a commit changes."""
    stamps = []
    for name in files:
        try:
            st = os.stat(name)
            stamps.append((st.st_size, st.st_mtime_ns))
        except OSError:
            stamps.append(None)
    return stamps


def _is_busy(e):
    # sqlite_errorcode is there from Python 3.11; before, only the message.
    return getattr(e, "sqlite_errorcode", None) == 5 or "database is locked" in str(e)


def gave_up(error, waited, unchanged):
    """`error` (SQLite's "database is locked"), saying which bound of the
    wait ran out: a file that no other program wrote for a busy timeout is
    stuck; one that others kept writing is busy past BUSY_CAP timeouts."""
    why = (f"no other program wrote to the file for {BUSY_TIMEOUT_MS / 1000:g} s" if unchanged
           else f"others kept writing for {waited:.1f} s")
    return sqlite3.OperationalError(f"{error} ({why})")


def _pause(tries):
    """The sleep before try `tries + 1`: a millisecond at first, then a
    random 1 to 8 ms. A try costs Python tens of microseconds, so a hundred
    waiters that each tried every millisecond kept two cores busy (a load
    of 84 at --processes 32), and the holder of the lock, given no CPU for
    seconds, looked stuck to them all. Random, so that waiters do not wake
    in step."""
    return 0.001 if tries < 16 else random.uniform(0.001, 0.008)


def _claim_pause(tries):
    """The sleep before a claim looks again and tries the lock: a random
    2 to 20 ms. A claim that finds the lock taken is in no hurry (the
    holder may be taking the very job it saw), and a hundred claims that
    looked and tried every few milliseconds took the CPU from the holders."""
    return random.uniform(0.002, 0.02)


def begin_immediate(con):
    """BEGIN IMMEDIATE, waiting as `until_free` does."""
    until_free(con, lambda: con.execute("BEGIN IMMEDIATE"))


def until_free(con, attempt, pause=None):
    """Returns `attempt()`, trying again every few milliseconds while the
    file is busy and other programs commit. SQLite's own wait sleeps up
    to 100 ms between tries, and its lock is not fair: with dozens of
    writers on a few cores, a program that waits so finds the lock taken
    at every try (seen with 32 workers and 32 producers on 2 cores). And the busy timeout is there for a writer that
    holds the file and does not let go: a file that many programs take
    turns to write is busy, not stuck. So this gives up only after the
    timeout has passed with the file and its -wal unchanged, or after
    BUSY_CAP timeouts in all, as the reference does (FORMAT.md §4.1)."""
    con.execute("PRAGMA busy_timeout = 0")
    try:
        files = seen = started = changed_at = None
        tries = 0
        while True:
            try:
                return attempt()
            except sqlite3.OperationalError as e:
                if not _is_busy(e):
                    raise
                now = time.monotonic()
                if files is None:
                    path = next((row[2] for row in con.execute("PRAGMA database_list") if row[1] == "main"), "")
                    files = (path, path + "-wal") if path else ()
                    seen, started, changed_at = _stamps(files), now, now
                timeout = BUSY_TIMEOUT_MS / 1000
                tries += 1
                if tries % 16 == 0:
                    stamps = _stamps(files)
                    if stamps != seen:
                        seen, changed_at = stamps, now
                if now - changed_at >= timeout or now - started >= BUSY_CAP * timeout:
                    raise gave_up(e, now - started, now - changed_at >= timeout) from None
                time.sleep((pause or _pause)(tries))
    finally:
        con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}").fetchall()


def write(con, body):
    """Runs `body()` in one transaction that takes the write lock first
    (BEGIN IMMEDIATE), so that what it reads no other writer can change."""
    begin_immediate(con)
    return _in_transaction(con, body)


def _in_transaction(con, body):
    """Runs `body()` in the transaction begun on `con`, and commits it, or
    rolls it back when anything fails."""
    try:
        result = body()
        con.execute("COMMIT")
        return result
    except BaseException:
        # SQLite rolls some failed commits back by itself.
        if con.in_transaction:
            try:
                con.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        raise


def _changed(cur):
    return cur.rowcount


def _write_one(con, sql, args):
    """Runs one writing statement as its own transaction, taking the write
    lock as `begin_immediate` does: a statement left to autocommit waits as
    SQLite's busy timeout does, which many writers on a few cores outlast
    (`database is locked` from a finish or renew that did nothing wrong).
    Returns the rows it changed."""
    return write(con, lambda: _changed(con.execute(sql, args)))


# --- the steps ----------------------------------------------------------------

def add(con, queue, payload, now, priority=0, max_attempts=DEFAULT_MAX_ATTEMPTS, run_at=None):
    """Adds a job; returns its id. `payload` is bytes, stored as a BLOB."""
    check_queue(queue)
    check_max_attempts(max_attempts)
    check_priority(priority)
    run_at = now if run_at is None else run_at
    check_time("run_at", run_at)
    cur = con.execute(
        "INSERT INTO ukue_jobs (queue, payload, priority, max_attempts, run_at, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (queue, bytes(payload), priority, max_attempts, run_at, now, now))
    return cur.lastrowid


def _reap(con, now):
    # Row by row, so that each job's backoff has a jitter of its own.
    expired = con.execute(
        "SELECT id, attempts, max_attempts FROM ukue_jobs"
        " WHERE state = 'running' AND (lease_until IS NULL OR lease_until <= ?)", (now,)).fetchall()
    for job_id, attempts, max_attempts in expired:
        if attempts >= max_attempts:
            con.execute(
                "UPDATE ukue_jobs SET state = 'dead', lease_until = NULL, token = NULL, last_error = ?,"
                " updated_at = ? WHERE id = ? AND state = 'running'", (LEASE_EXPIRED, now, job_id))
        else:
            con.execute(
                "UPDATE ukue_jobs SET state = 'ready', run_at = ?, lease_until = NULL, token = NULL,"
                " last_error = ?, updated_at = ? WHERE id = ? AND state = 'running'",
                (now + backoff_ms(attempts), LEASE_EXPIRED, now, job_id))


def _pick(con, queue, now):
    """The job a claim takes: among the queue's due jobs the highest
    priority, then the smallest run_at, then the smallest id. It steps down
    the queue's priorities (at most 201) with one index lookup each, so jobs
    waiting for later do not slow it down."""
    priority = con.execute("SELECT max(priority) FROM ukue_jobs WHERE queue = ? AND state = 'ready'",
                           (queue,)).fetchone()[0]
    while priority is not None:
        row = con.execute(
            "SELECT id FROM ukue_jobs WHERE queue = ? AND state = 'ready' AND priority = ? AND run_at <= ?"
            " ORDER BY run_at, id LIMIT 1", (queue, priority, now)).fetchone()
        if row is not None:
            return row[0]
        priority = con.execute(
            "SELECT max(priority) FROM ukue_jobs WHERE queue = ? AND state = 'ready' AND priority < ?",
            (queue, priority)).fetchone()[0]
    return None


def _next_run_at(con, queue):
    return con.execute("SELECT min(run_at) FROM ukue_jobs WHERE queue = ? AND state = 'ready'",
                       (queue,)).fetchone()[0]


def claim(con, queue, lease_ms, now=None, token=None):
    """Takes the next due job of `queue` under a lease of `lease_ms`, after
    putting back every job (of any queue) whose lease ran out. `now` None
    is the clock's time at each look and once the write lock is taken: a
    claim that waited seconds for the lock then neither gives a lease that
    has partly run out nor misses the leases that ran out meanwhile.

    Returns (job, None) with job a dict (id, queue, payload, priority,
    attempt, max_attempts, run_at, lease_until, created_at, last_error,
    token), or (None, next_due): the queue's earliest run_at, or None."""
    check_queue(queue)
    check_lease(lease_ms)
    check_time("the lease's end", (now_ms() if now is None else now) + lease_ms)
    token = token or secrets.token_hex(16)
    clock = (lambda: now) if now is not None else now_ms

    def look_then_lock():
        # A look without the write lock first, so that idle workers polling
        # an empty queue do not hold up the programs adding jobs; and again
        # before each try of the lock while it is busy: a new job makes
        # every idle worker's look find it due at once, and a worker that
        # only waited for the lock would take it in turn with all the
        # others, after the first took the job, to find nothing.
        at = clock()
        due, expired, next_due = con.execute(
            "SELECT EXISTS (SELECT 1 FROM ukue_jobs WHERE queue = ? AND state = 'ready' AND run_at <= ?),"
            " EXISTS (SELECT 1 FROM ukue_jobs WHERE state = 'running' AND (lease_until IS NULL OR lease_until <= ?)),"
            " (SELECT min(run_at) FROM ukue_jobs WHERE queue = ? AND state = 'ready')",
            (queue, at, at, queue)).fetchone()
        if not due and not expired:
            return False, next_due
        con.execute("BEGIN IMMEDIATE")
        return True, None

    def take():
        now = clock()
        check_time("the lease's end", now + lease_ms)
        _reap(con, now)
        job_id = _pick(con, queue, now)
        if job_id is None:
            return None, _next_run_at(con, queue)
        (payload, attempts, max_attempts, priority, run_at, created_at, last_error) = con.execute(
            "SELECT CAST(payload AS BLOB), attempts, max_attempts, priority, run_at, created_at, last_error"
            " FROM ukue_jobs WHERE id = ?", (job_id,)).fetchone()
        lease_until = now + lease_ms
        con.execute(
            "UPDATE ukue_jobs SET state = 'running', attempts = attempts + 1, lease_until = ?, token = ?,"
            " updated_at = ? WHERE id = ?", (lease_until, token, now, job_id))
        return {
            "id": job_id, "queue": queue, "payload": payload if payload is not None else b"",
            "priority": priority, "attempt": attempts + 1, "max_attempts": max_attempts,
            "run_at": run_at, "lease_until": lease_until, "created_at": created_at,
            "last_error": last_error, "token": token,
        }, None

    locked, next_due = until_free(con, look_then_lock, pause=_claim_pause)
    if not locked:
        return None, next_due
    return _in_transaction(con, take)


def finish(con, job_id, token, now, keep_done=False):
    """The holder's job is done: deleted, or kept as done."""
    if keep_done:
        changed = _write_one(
            con,
            "UPDATE ukue_jobs SET state = 'done', lease_until = NULL, token = NULL, updated_at = ?"
            " WHERE id = ? AND state = 'running' AND token = ?", (now, job_id, token))
    else:
        changed = _write_one(con, "DELETE FROM ukue_jobs WHERE id = ? AND state = 'running' AND token = ?",
                             (job_id, token))
    if changed != 1:
        raise lease_lost(job_id)


def fail(con, job_id, token, error, now, permanent=False, retry_in_ms=None):
    """The holder's attempt failed. The job is dead when the failure is
    permanent or the attempt was its last (run_at left alone); otherwise
    ready again at now plus `retry_in_ms`, or the backoff.

    Returns ("dead", None) or ("ready", run_at)."""
    if retry_in_ms is not None and not permanent:
        if retry_in_ms < 0:
            raise invalid(f"the delay before the next attempt must not be negative, not {retry_in_ms} ms")
        check_time("the next attempt's run_at", now + retry_in_ms)

    def record():
        row = con.execute("SELECT attempts, max_attempts FROM ukue_jobs"
                          " WHERE id = ? AND state = 'running' AND token = ?", (job_id, token)).fetchone()
        if row is None:
            raise lease_lost(job_id)
        attempts, max_attempts = row
        if permanent or attempts >= max_attempts:
            con.execute(
                "UPDATE ukue_jobs SET state = 'dead', lease_until = NULL, token = NULL, last_error = ?,"
                " updated_at = ? WHERE id = ? AND state = 'running' AND token = ?",
                (error, now, job_id, token))
            return "dead", None
        run_at = now + (backoff_ms(attempts) if retry_in_ms is None else retry_in_ms)
        con.execute(
            "UPDATE ukue_jobs SET state = 'ready', run_at = ?, lease_until = NULL, token = NULL,"
            " last_error = ?, updated_at = ? WHERE id = ? AND state = 'running' AND token = ?",
            (run_at, error, now, job_id, token))
        return "ready", run_at

    return write(con, record)


def renew(con, job_id, token, lease_ms, now=None):
    """Extends the holder's lease to now + lease_ms; returns the new
    lease_until. `now` None is the clock's time once the write lock is
    taken, so that a renewal that waited for it gives a whole lease."""
    check_lease(lease_ms)
    check_time("the lease's end", (now_ms() if now is None else now) + lease_ms)

    def extend():
        at = now_ms() if now is None else now
        lease_until = at + lease_ms
        check_time("the lease's end", lease_until)
        return _changed(con.execute("UPDATE ukue_jobs SET lease_until = ?, updated_at = ?"
                                    " WHERE id = ? AND state = 'running' AND token = ?",
                                    (lease_until, at, job_id, token))), lease_until

    changed, lease_until = write(con, extend)
    if changed != 1:
        raise lease_lost(job_id)
    return lease_until


def release(con, job_id, token, now):
    """Gives the holder's job back without counting the attempt, due now."""
    changed = _write_one(
        con,
        "UPDATE ukue_jobs SET state = 'ready', attempts = max(attempts - 1, 0), run_at = ?,"
        " lease_until = NULL, token = NULL, updated_at = ?"
        " WHERE id = ? AND state = 'running' AND token = ?", (now, now, job_id, token))
    if changed != 1:
        raise lease_lost(job_id)


def retry(con, job_id, now):
    """Sends a dead job back to ready, due now, its attempts reset."""
    changed = _write_one(con, "UPDATE ukue_jobs SET state = 'ready', attempts = 0, run_at = ?, updated_at = ?"
                         " WHERE id = ? AND state = 'dead'", (now, now, job_id))
    if changed == 1:
        return
    row = con.execute("SELECT state FROM ukue_jobs WHERE id = ?", (job_id,)).fetchone()
    if row is None:
        raise UkueError("not_found", f"there is no job {job_id}")
    raise UkueError("refused", f"job {job_id} is {row[0]}, not dead")


def retry_all(con, now, queue=None):
    """Sends every dead job (of `queue`, or of all) back to ready; returns how many."""
    sql = "UPDATE ukue_jobs SET state = 'ready', attempts = 0, run_at = ?, updated_at = ? WHERE state = 'dead'"
    args = [now, now]
    if queue:
        sql += " AND queue = ?"
        args.append(queue)
    return _write_one(con, sql, args)


def delete(con, job_id):
    """Deletes one job, in any state."""
    if _write_one(con, "DELETE FROM ukue_jobs WHERE id = ?", (job_id,)) != 1:
        raise UkueError("not_found", f"there is no job {job_id}")


def purge(con, state, queue=None):
    """Deletes the dead or done jobs (of `queue`, or of all); returns how many."""
    if state not in ("dead", "done"):
        raise invalid(f"purge deletes dead or done jobs, not {state!r} ones")
    sql = "DELETE FROM ukue_jobs WHERE state = ?"
    args = [state]
    if queue:
        sql += " AND queue = ?"
        args.append(queue)
    return _write_one(con, sql, args)


def _job(row):
    job = dict(zip(JOB_KEYS, row))
    if job["payload"] is None:
        job["payload"] = b""
    return job


def get(con, job_id):
    """One job as a dict of its columns (payload as bytes), or None."""
    row = con.execute(f"SELECT {JOB_COLUMNS} FROM ukue_jobs WHERE id = ?", (job_id,)).fetchone()
    return None if row is None else _job(row)


LIST_STATES = ("ready", "delayed", "running", "done", "dead")


def list_jobs(con, now, queue=None, state=None, after=0, limit=100):
    """Jobs in id order: of one queue, in one state (`delayed` is a ready
    job whose run_at lies ahead, and `ready` one that is due), with ids above
    `after`; at most `limit` (100 when not positive, never more than 1000)."""
    where = ["id > ?"]
    args = [after]
    if queue:
        where.append("queue = ?")
        args.append(queue)
    if state in (None, ""):
        pass
    elif state == "ready":
        where.append("state = 'ready' AND run_at <= ?")
        args.append(now)
    elif state == "delayed":
        where.append("state = 'ready' AND run_at > ?")
        args.append(now)
    elif state in ("running", "done", "dead"):
        where.append("state = ?")
        args.append(state)
    else:
        raise invalid(f"unknown state {state!r} (want ready, delayed, running, done or dead)")
    limit = 100 if limit <= 0 else min(limit, 1000)
    args.append(limit)
    rows = con.execute(f"SELECT {JOB_COLUMNS} FROM ukue_jobs WHERE {' AND '.join(where)} ORDER BY id LIMIT ?",
                       args).fetchall()
    return [_job(row) for row in rows]


def stats(con, now):
    """Per queue: ready (due), delayed, running, expired (running, lease
    run out), dead, done, and oldest_due (the smallest run_at of a due job,
    or None)."""
    rows = con.execute(
        "SELECT queue, sum(state = 'ready' AND run_at <= ?), sum(state = 'ready' AND run_at > ?),"
        " sum(state = 'running' AND lease_until > ?),"
        " sum(state = 'running' AND (lease_until IS NULL OR lease_until <= ?)),"
        " sum(state = 'dead'), sum(state = 'done'),"
        " min(CASE WHEN state = 'ready' AND run_at <= ? THEN run_at END)"
        " FROM ukue_jobs GROUP BY queue ORDER BY queue", (now, now, now, now, now)).fetchall()
    keys = ("queue", "ready", "delayed", "running", "expired", "dead", "done", "oldest_due")
    out = []
    for row in rows:
        entry = dict(zip(keys, row))
        for key in keys[1:-1]:
            entry[key] = entry[key] or 0
        out.append(entry)
    return out


def next_change(con, queue):
    """When something may next change for a worker of `queue`: its earliest
    run_at, or the earliest lease_until of any running job; or None."""
    due, lease = con.execute(
        "SELECT (SELECT min(run_at) FROM ukue_jobs WHERE queue = ? AND state = 'ready'),"
        " (SELECT min(lease_until) FROM ukue_jobs WHERE state = 'running')", (queue,)).fetchone()
    times = [t for t in (due, lease) if t is not None]
    return min(times) if times else None
