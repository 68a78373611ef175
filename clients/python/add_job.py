#!/usr/bin/env python3
"""Add one job to a ukue file (spec/FORMAT.md, format version 1).

    python3 add_job.py FILE QUEUE [PAYLOAD] [--delay SECONDS] [--attempts N]
                       [--priority N]

The payload is PAYLOAD's bytes, or standard input's bytes when PAYLOAD is
left out or is `-`. On success the new job's id is printed alone on a line,
and only after the commit that stored the job has returned (with
`synchronous = FULL`, FORMAT.md §6.1).

The script never creates a file: FILE must already hold the ukue tables
(made by `ukue init`, or by any program that follows FORMAT.md §3.3). It
refuses, before writing anything and leaving the file byte-for-byte
unchanged, every file that FORMAT.md §2.3 says to refuse.

Exit status: 0 on success; 1 when the file is refused or the add fails;
2 for bad arguments.

It needs nothing but Python 3's standard library (the sqlite3 module must
link SQLite 3.35 or newer).
"""

import argparse
import math
import os
import random
import sqlite3
import sys
import time
import urllib.parse

PROG = "add_job.py"

# The one format version this program knows (FORMAT.md §2.1).
FORMAT_VERSION = 1

# The statements this script runs, copied exactly from spec/FORMAT.md.
SET_BUSY_TIMEOUT = "PRAGMA busy_timeout = 5000"
SET_SYNCHRONOUS = "PRAGMA synchronous = FULL"
FIND_TABLES = (
    "SELECT name FROM sqlite_master WHERE type = 'table' "
    "AND name IN ('ukue_meta', 'ukue_jobs') ORDER BY name"
)
READ_VERSION = "SELECT value FROM ukue_meta WHERE key = 'format_version'"
READ_JOURNAL_MODE = "PRAGMA journal_mode"
SET_WAL = "PRAGMA journal_mode = WAL"
BEGIN_IMMEDIATE = "BEGIN IMMEDIATE"
ADD = """\
INSERT INTO ukue_jobs (queue, payload, priority, max_attempts, run_at, created_at, updated_at)
VALUES (:queue, :payload, :priority, :max_attempts, :run_at, :now, :now)"""
COMMIT = "COMMIT"
ROLLBACK = "ROLLBACK"

MAX_QUEUE_CHARS = 200
MAX_INT64 = 2**63 - 1


class Refused(Exception):
    """The file is one that FORMAT.md §2.3 says to refuse; nothing was written."""


def fail(message, status=1):
    print(f"{PROG}: {message}", file=sys.stderr)
    sys.exit(status)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Add one job to a ukue file and print its id.",
    )
    parser.add_argument("file", metavar="FILE", help="an existing ukue file")
    parser.add_argument("queue", metavar="QUEUE", help="queue name, 1 to 200 characters")
    parser.add_argument(
        "payload", metavar="PAYLOAD", nargs="?", default="-",
        help="the job's payload; read from standard input when left out or `-`",
    )
    parser.add_argument(
        "--delay", metavar="SECONDS", type=float, default=0.0,
        help="run the job no sooner than SECONDS from now (default 0)",
    )
    parser.add_argument(
        "--attempts", metavar="N", type=int, default=10,
        help="how many claims the job may have (default 10)",
    )
    parser.add_argument(
        "--priority", metavar="N", type=int, default=0,
        help="-100 to 100, higher runs first (default 0)",
    )
    # Intermixed, so that options may come before, between or after the
    # positionals (plain parse_args() would take `FILE QUEUE --delay 1 X`
    # as a missing PAYLOAD followed by an unrecognised X).
    args = parser.parse_intermixed_args(argv)

    queue = args.queue
    if not 1 <= len(queue) <= MAX_QUEUE_CHARS:
        parser.error(f"queue name must be 1 to {MAX_QUEUE_CHARS} characters, got {len(queue)}")
    if "\0" in queue:
        parser.error("queue name must not contain NUL")
    try:
        queue.encode("utf-8")
    except UnicodeEncodeError:
        parser.error("queue name must be valid UTF-8")
    if not -100 <= args.priority <= 100:
        parser.error(f"priority must be from -100 to 100, got {args.priority}")
    if args.attempts < 1:
        parser.error(f"attempts must be at least 1, got {args.attempts}")
    if args.attempts > MAX_INT64:
        parser.error(f"attempts must be at most {MAX_INT64}, got {args.attempts}")
    if not math.isfinite(args.delay) or args.delay < 0:
        parser.error(f"delay must be a number of seconds, at least 0, got {args.delay}")
    args.delay_ms = round(args.delay * 1000)
    if args.delay_ms > MAX_INT64 // 2:
        parser.error(f"delay is too long: {args.delay} seconds")
    return args


def file_uri(path):
    """A read-write, never-create SQLite URI for path."""
    quoted = urllib.parse.quote(path)  # escapes '?', '#', '%', ':' and the like
    if quoted.startswith("/"):
        quoted = "//" + quoted  # empty authority: file:///abs/path
    return f"file:{quoted}?mode=rw"


def stamps(path):
    """The file's and its -wal's size and time, which another program's
    commit changes."""
    out = []
    for name in (path, path + "-wal"):
        try:
            st = os.stat(name)
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return out


def is_busy(e):
    # sqlite_errorcode is there from Python 3.11; before, only the message.
    return getattr(e, "sqlite_errorcode", None) == 5 or "database is locked" in str(e)


def begin_immediate(con, path):
    """BEGIN IMMEDIATE, trying again every few milliseconds while other programs
    commit: SQLite's own wait sleeps up to 100 ms between tries, and its
    lock is not fair, so among dozens of writers such a wait finds it taken
    at every try; and the busy timeout is for a writer that holds the file
    and does not let go, not for a file that is busy. This gives up after
    5 s with the file and its -wal unchanged, or 60 s in all, as the
    reference does (FORMAT.md §4.1)."""
    started = changed_at = time.monotonic()
    seen = stamps(path)
    tries = 0
    con.execute("PRAGMA busy_timeout = 0")
    try:
        while True:
            try:
                con.execute(BEGIN_IMMEDIATE)
                return
            except sqlite3.OperationalError as e:
                if not is_busy(e):
                    raise
                now = time.monotonic()
                tries += 1
                if tries % 16 == 0 and stamps(path) != seen:
                    seen, changed_at = stamps(path), now
                if now - changed_at >= 5 or now - started >= 60:
                    why = ("no other program wrote to the file for 5 s" if now - changed_at >= 5
                           else f"others kept writing for {now - started:.1f} s")
                    raise sqlite3.OperationalError(f"{e} ({why})") from None
                # A millisecond at first, then a random 1 to 8 ms: a try
                # costs Python tens of microseconds, and a hundred waiters
                # trying every millisecond starve the lock's holder of CPU.
                time.sleep(0.001 if tries < 16 else random.uniform(0.001, 0.008))
    finally:
        con.execute(SET_BUSY_TIMEOUT)


def check(con, path):
    """The checks of FORMAT.md §2.3 on an open connection; they only read."""
    try:
        con.execute(SET_BUSY_TIMEOUT)
        con.execute(SET_SYNCHRONOUS)
        tables = [row[0] for row in con.execute(FIND_TABLES)]
    except sqlite3.DatabaseError as e:
        if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
            raise Refused(f"{path}: not a SQLite database ({e})") from None
        raise
    if not tables:
        raise Refused(
            f"{path}: no ukue tables (ukue_meta, ukue_jobs) in this SQLite database;"
            " `ukue init` adds them"
        )
    if tables != ["ukue_jobs", "ukue_meta"]:
        present = tables[0]
        missing = "ukue_meta" if present == "ukue_jobs" else "ukue_jobs"
        raise Refused(f"{path}: has {present} but not {missing}; a half-made ukue file")

    rows = con.execute(READ_VERSION).fetchall()
    if not rows:
        raise Refused(f"{path}: ukue_meta has no format_version row")
    value = rows[0][0]
    # "The decimal text of a whole number": ASCII digits only, so no sign,
    # spaces, underscores or other scripts' digits (all of which int() takes).
    if not (isinstance(value, str) and value.isascii() and value.isdigit()):
        raise Refused(
            f"{path}: format_version {value!r} is not a ukue file format version"
            " (a whole number from 1)"
        )
    version = int(value)
    if version < 1:
        raise Refused(
            f"{path}: format_version {value!r} is not a ukue file format version"
            " (a whole number from 1)"
        )
    if version > FORMAT_VERSION:
        raise Refused(
            f"{path} has ukue file format {version}, but this program knows only"
            f" format {FORMAT_VERSION}"
        )


def read_payload(arg):
    if arg == "-":
        return sys.stdin.buffer.read()
    # The argument's own bytes, even when they are not valid UTF-8.
    return os.fsencode(arg)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    path = args.file

    # This script never creates a file (mode=rw below does not either, but
    # this gives the clearer message).
    if not os.path.exists(path):
        fail(f"{path}: no such file")
    if os.path.isdir(path):
        fail(f"{path}: is a directory, not a ukue file")

    try:
        con = sqlite3.connect(file_uri(path), uri=True, isolation_level=None)
    except sqlite3.Error as e:
        fail(f"{path}: cannot open: {e}")
    try:
        try:
            check(con, path)
        except Refused as e:
            fail(str(e))
        except sqlite3.Error as e:
            fail(f"{path}: cannot read: {e}")

        # Opening (FORMAT.md §4.2): only now that the checks have passed may
        # the journal mode be set, when the file was switched out of WAL.
        try:
            mode = con.execute(READ_JOURNAL_MODE).fetchone()[0]
            if mode.lower() != "wal":
                con.execute(SET_WAL).fetchall()
        except sqlite3.Error as e:
            fail(f"{path}: cannot set WAL mode: {e}")

        payload = read_payload(args.payload)
        now = int(time.time() * 1000)
        params = {
            "queue": args.queue,
            "payload": payload,  # bytes, so stored as a BLOB
            "priority": args.priority,
            "max_attempts": args.attempts,
            "run_at": now + args.delay_ms,
            "now": now,
        }
        try:
            begin_immediate(con, path)
            try:
                cur = con.execute(ADD, params)
                job_id = cur.lastrowid
                con.execute(COMMIT)
            except BaseException:
                if con.in_transaction:
                    con.execute(ROLLBACK)
                raise
        except sqlite3.Error as e:
            fail(f"{path}: cannot add the job: {e}")
    finally:
        # Close before exiting, so that SQLite removes the -wal and -shm
        # files it made for a WAL-mode file (also a refused one).
        con.close()

    # Acknowledge only now that the commit has returned (FORMAT.md §6.1).
    print(job_id, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
