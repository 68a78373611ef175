#!/usr/bin/env python3
"""Writes the fuzz targets' starting seeds into fixtures/fuzz/<target>/, from
the repository's fixtures and a fixed random seed (standard library only).

    python3 fuzz/make_seeds.py && fuzz/cmin.sh

The corpora there are these seeds and what fuzzing found, minimised
(fuzz/cmin.sh: the fewest inputs that reach every edge, named by their
SHA-1 unless they are seeds of this script that cmin kept). `cargo test`
replays every file there (harness/tests/fuzz_corpus.rs); fuzz/run.sh starts
the fuzzers from them, and .clusterfuzzlite/build.sh ships them.
"""

import json
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "fuzz")


def target(name):
    # Rewrites this script's seeds and leaves other files (crash inputs
    # kept as regressions) alone.
    path = os.path.join(OUT, name)
    os.makedirs(path, exist_ok=True)
    return path


def write(folder, name, data):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def open_bytes():
    out = target("open_bytes")
    for sub in ("compat", "refusal"):
        for name in sorted(os.listdir(os.path.join(ROOT, "fixtures", sub))):
            if name.endswith((".ukue", ".db")):
                with open(os.path.join(ROOT, "fixtures", sub, name), "rb") as f:
                    write(out, f"{sub}-{name}", f.read())
    with open(os.path.join(ROOT, "fixtures", "compat", "extra-meta-key.ukue"), "rb") as f:
        good = f.read()

    def mutated(name, edit):
        data = bytearray(good)
        edit(data)
        write(out, f"mutated-{name}", bytes(data))

    write(out, "mutated-truncated-100", good[:100])
    write(out, "mutated-first-page", good[:4096])
    write(out, "mutated-half", good[: len(good) // 2])
    write(out, "mutated-header-only-magic", b"SQLite format 3\x00" + b"\xff" * 84)

    def set_bytes(offset, values):
        def edit(data):
            data[offset:offset + len(values)] = bytes(values)
        return edit

    mutated("rollback-journal", set_bytes(18, [1, 1]))
    mutated("page-size-512", set_bytes(16, [2, 0]))
    mutated("schema-format-9", set_bytes(44, [0, 0, 0, 9]))
    mutated("application-id", set_bytes(68, [1, 2, 3, 4]))
    mutated("page-count-huge", set_bytes(28, [0x7F, 0xFF, 0xFF, 0xFF]))
    mutated("schema-page-flipped", set_bytes(100 + 8 + 50, [0xFF] * 16))
    mutated("second-page-zeroed", set_bytes(4096, [0] * 4096))
    rng = random.Random(7)

    def scatter(data):
        for _ in range(64):
            data[rng.randrange(len(data))] = rng.randrange(256)
    mutated("scattered", scatter)
    look_alikes(out, good)


def look_alikes(out, good):
    """Files whose objects look like the ukue tables and indexes but are not
    them: a view or an index named ukue_jobs, a table named like an index,
    files that lack one of the indexes the statements name (INDEXED BY), an
    application's database with a table of its own, and a trigger that
    makes a claim fail after it began.
    Opening reads them with find_tables and find_index, whose mutants
    (fuzz/time-to-bug.sh open_bytes) only such files show; no mutation of
    bytes makes one in a fuzzer's minute."""
    import sqlite3
    import tempfile
    edits = {
        "look-alike-view-ukue_jobs": "DROP TABLE ukue_jobs; CREATE VIEW ukue_jobs AS SELECT 1 AS id;",
        "look-alike-index-ukue_jobs": "DROP TABLE ukue_jobs; CREATE INDEX ukue_jobs ON ukue_meta (value);",
        # With a job due in the queue open_bytes claims from: the pick names
        # ukue_jobs_due, and runs only when a job is due.
        "look-alike-table-ukue_jobs_due": "DROP INDEX ukue_jobs_due; CREATE TABLE ukue_jobs_due (x); "
        "INSERT INTO ukue_jobs (queue, payload, run_at) VALUES ('q', x'00', 0);",
        "look-alike-no-due-index": "DROP INDEX ukue_jobs_due;",
        "look-alike-no-leases-index": "DROP INDEX ukue_jobs_leases;",
        # An application's own database, without an application id: adding
        # the tables leaves the id alone (count_schema sees its table).
        "look-alike-app-database": "CREATE TABLE app (x); INSERT INTO app VALUES (1);",
        # A trigger that refuses updates: a claim of its due job fails after
        # the claim began, and must be rolled back.
        "look-alike-trigger-refuses-updates": "INSERT INTO ukue_jobs (queue, payload, run_at) VALUES ('q', x'00', 0); "
        "CREATE TRIGGER no_updates BEFORE UPDATE ON ukue_jobs BEGIN SELECT RAISE(ABORT, 'no updates'); END;",
    }
    for name, sql in edits.items():
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "f.ukue")
            with open(path, "wb") as f:
                f.write(b"" if name == "look-alike-app-database" else good)
            conn = sqlite3.connect(path)
            conn.executescript(sql)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.close()
            with open(path, "rb") as f:
                write(out, name, f.read())


def ops_vs_model():
    out = target("ops_vs_model")
    rng = random.Random(1969976677)
    for n, size in enumerate([16, 48, 96, 160, 256, 384, 512, 768]):
        write(out, f"random-{n}-{size}", bytes(rng.randrange(256) for _ in range(size)))


def cli_args():
    out = target("cli_args")
    seeds = {
        "add": ["add", "f.ukue", "emails", "hello", "--priority", "5", "--attempts", "3"],
        "add-priority-101": ["add", "f.ukue", "q", "x", "--priority", "101"],
        "add-bad-delay": ["add", "f.ukue", "q", "x", "--delay", "soon"],
        "add-bad-at": ["add", "f.ukue", "q", "x", "--at", "2024-13-01T00:00:00Z"],
        "add-delay-and-at": ["add", "f.ukue", "q", "x", "--delay", "5m", "--at", "2024-01-01T00:00:00Z"],
        "add-empty-queue": ["add", "f.ukue", "", "x"],
        "work": ["work", "f.ukue", "q", "--concurrency", "4", "--lease", "30s", "--", "true"],
        "work-no-command": ["work", "f.ukue", "q"],
        "work-zero-lease": ["work", "f.ukue", "q", "--lease", "0s", "--", "true"],
        "list": ["list", "f.ukue", "--state", "delayed", "--limit", "1000", "--after", "-5", "--json"],
        "list-bad-state": ["list", "f.ukue", "--state", "bogus"],
        "retry-all-queue": ["retry", "f.ukue", "--all", "--queue", "q"],
        "retry-ids-and-all": ["retry", "f.ukue", "1", "--all"],
        "purge-ready": ["purge", "f.ukue", "--state", "ready"],
        "delete-none": ["delete", "f.ukue"],
        "show-negative": ["show", "f.ukue", "-1", "--json"],
        "help": ["--help"],
        "version": ["version"],
        "nothing": [],
        "unknown": ["frobnicate", "--now"],
    }
    for name, args in seeds.items():
        write(out, name, b"\x00".join(a.encode() for a in args))
    write(out, "not-utf8", b"add\x00f.ukue\x00\xff\xfe\x00x")


def driver_lines():
    out = target("driver_lines")
    now = 1700000000000
    open_ = {"op": "open", "path": "f.ukue", "create": True, "now_ms": now}
    session = [
        open_,
        {"op": "add", "queue": "a", "payload": "x", "priority": 5, "max_attempts": 2, "now_ms": now},
        {"op": "add", "queue": "a", "payload": "y", "delay_ms": 1000, "now_ms": now},
        {"op": "claim", "queue": "a", "lease_ms": 1000, "now_ms": now},
        {"op": "renew", "id": 1, "token": "not-the-token", "lease_ms": 1000, "now_ms": now + 1},
        {"op": "fail", "id": 1, "token": "x", "error": "boom", "retry_in_ms": 5, "now_ms": now + 2},
        {"op": "release", "id": 1, "token": "x", "now_ms": now + 3},
        {"op": "finish", "id": 1, "token": "x", "keep_done": True, "now_ms": now + 4},
        {"op": "claim", "queue": "a", "lease_ms": 1, "now_ms": now + 2000},
        {"op": "claim", "queue": "b", "lease_ms": 1000, "now_ms": now + 10 ** 7},
        {"op": "retry", "id": 1, "now_ms": now},
        {"op": "retry", "all": True, "queue": "a", "now_ms": now},
        {"op": "delete", "id": 2},
        {"op": "purge", "state": "dead"},
        {"op": "stats", "now_ms": now},
    ]
    lines = lambda reqs: "\n".join(json.dumps(r) for r in reqs).encode()
    write(out, "session", lines(session))
    write(out, "before-open", lines(session[1:4]))
    write(out, "escape-attempts", lines([
        {"op": "open", "path": "../f.ukue", "create": True},
        {"op": "open", "path": "/tmp/f.ukue", "create": True},
        {"op": "open", "path": "..", "create": False},
        {"op": "open", "path": "missing.ukue", "create": False},
    ]))
    write(out, "extremes", lines([
        open_,
        {"op": "add", "queue": "a" * 201, "payload": "", "now_ms": now},
        {"op": "add", "queue": "a", "payload": "", "priority": 101, "now_ms": now},
        {"op": "add", "queue": "a", "payload": "", "max_attempts": 0, "now_ms": now},
        {"op": "add", "queue": "a", "payload": "", "delay_ms": -1, "now_ms": now},
        {"op": "add", "queue": "a", "payload": "", "delay_ms": 2 ** 63 - 1, "now_ms": 2 ** 63 - 1},
        {"op": "claim", "queue": "a", "lease_ms": 2 ** 63 - 1, "now_ms": 2 ** 63 - 1},
        {"op": "claim", "queue": "a", "lease_ms": 1, "now_ms": -(2 ** 63)},
        {"op": "claim", "queue": "a", "lease_ms": 0},
        {"op": "renew", "id": -1, "token": "", "lease_ms": -5},
        {"op": "purge", "state": "ready"},
        {"op": "retry", "id": 1, "all": True},
        {"op": "stats", "now_ms": 2 ** 63 - 1},
    ]))
    write(out, "not-requests", b'\n'.join([
        b"", b"{", b"null", b"[]", b'{"op": 5}', b'{"op": "shutdown"}', b'{"op": "add"}',
        b'{"op": "claim", "queue": "a", "lease_ms": 1e3}', b'{"op": "claim", "queue": "a", "lease_ms": 99999999999999999999}',
        b'{"op": "add", "queue": "a", "payload": "\\u0000", "now_ms": true}', b"\xff\xfe\xfd",
    ]))


if __name__ == "__main__":
    open_bytes()
    ops_vs_model()
    cli_args()
    driver_lines()
    for name in sorted(os.listdir(OUT)):
        print(name, len(os.listdir(os.path.join(OUT, name))), "seeds")
