#!/usr/bin/env python3
"""A ukue step driver (spec/CONFORMANCE.md, "The step-driver protocol"):
the steps of a ukue file (format version 1), one JSON request a line on
standard input, one JSON answer a line on standard output.

    python3 ukue_driver.py              # speak the protocol
    python3 ukue_driver.py --statements # print its CREATE statements, as JSON

It is a second implementation of the format, independent of the Rust
reference: the steps are those of ukue_steps.py (beside this file), written
from the published FORMAT.md with nothing but Python 3's standard library,
and shared with ukue.py, the Python `ukue` command.

The first line it writes is its hello: its name, the protocol version and
its capabilities (`now_ms`: every request's `now_ms` is the clock the step
runs at). Then each request gets one answer: {"ok": true, ...} with the
step's result, or {"ok": false, "error": KIND, "message": TEXT} where KIND
is lease_lost, not_found, refused, invalid or error. It ends at the end of
its input.
"""

import json
import os
import sqlite3
import sys

# The steps live beside this file, wherever it was copied to.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ukue_steps as steps  # noqa: E402

NAME = "ukue_driver.py"
PROTOCOL = 1
CREATED_BY = f"{NAME} {steps.VERSION} (Python)"


class StepError(Exception):
    """A step that did not happen; `kind` is the answer's error kind."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def invalid(message):
    return StepError("invalid", message)


# --- reading requests -------------------------------------------------------

def is_int(value):
    return (isinstance(value, int) and not isinstance(value, bool)
            and steps.MIN_INT64 <= value <= steps.MAX_INT64)


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


def check_range(now, duration):
    # A time past the largest 64-bit integer would be stored as a REAL.
    if not steps.MIN_INT64 <= now + duration <= steps.MAX_INT64:
        raise invalid(f"{duration} ms from now is past the largest time a ukue file can hold")


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
            now = steps.now_ms()
        elif not is_int(now):
            raise invalid(f"field `now_ms`: expected int, got {now!r}")
        if op == "open":
            path = field(request, "path", "str")
            create = field(request, "create", "bool", required=False, default=False)
            self.close()
            self.con = steps.open_file(path, "new" if create else "never", now, CREATED_BY)
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
        max_attempts = field(request, "max_attempts", "int", required=False,
                             default=steps.DEFAULT_MAX_ATTEMPTS)
        delay = field(request, "delay_ms", "int", required=False, default=0)
        steps.check_queue(queue)
        steps.check_priority(priority)
        steps.check_max_attempts(max_attempts)
        if delay < 0:
            raise invalid(f"delay must not be negative, got {delay} ms")
        run_at = min(now + delay, steps.MAX_INT64)
        job_id = steps.add(self.con, queue, payload.encode("utf-8"), now, priority=priority,
                           max_attempts=max_attempts, run_at=run_at)
        return {"id": job_id}

    def step_claim(self, request, now):
        queue = field(request, "queue", "str")
        lease = field(request, "lease_ms", "int")
        steps.check_queue(queue)
        steps.check_lease(lease)
        check_range(now, lease)
        job, next_due = steps.claim(self.con, queue, lease, now)
        if job is None:
            return {"job": None, "next_due": next_due}
        job["payload"] = text(job["payload"])
        return {"job": job}

    def holder(self, request):
        return field(request, "id", "int"), field(request, "token", "str")

    def step_finish(self, request, now):
        job_id, token = self.holder(request)
        keep = field(request, "keep_done", "bool", required=False, default=False)
        steps.finish(self.con, job_id, token, now, keep_done=keep)
        return {}

    def step_fail(self, request, now):
        job_id, token = self.holder(request)
        error = field(request, "error", "str", required=False, default="")
        permanent = field(request, "permanent", "bool", required=False, default=False)
        retry_in = field(request, "retry_in_ms", "int", required=False)
        if retry_in is not None and not permanent:
            if retry_in < 0:
                raise invalid(f"delay must not be negative, got {retry_in} ms")
            check_range(now, retry_in)
        state, run_at = steps.fail(self.con, job_id, token, error, now, permanent=permanent,
                                   retry_in_ms=None if permanent else retry_in)
        return {"state": "dead"} if state == "dead" else {"state": "ready", "run_at": run_at}

    def step_renew(self, request, now):
        job_id, token = self.holder(request)
        lease = field(request, "lease_ms", "int")
        steps.check_lease(lease)
        check_range(now, lease)
        return {"lease_until": steps.renew(self.con, job_id, token, lease, now)}

    def step_release(self, request, now):
        job_id, token = self.holder(request)
        steps.release(self.con, job_id, token, now)
        return {}

    def step_retry(self, request, now):
        job_id = field(request, "id", "int", required=False)
        every = field(request, "all", "bool", required=False, default=False)
        queue = field(request, "queue", "str", required=False)
        if every and job_id is None:
            if queue is not None:
                steps.check_queue(queue)
            return {"count": steps.retry_all(self.con, now, queue)}
        if job_id is None or every or queue is not None:
            raise invalid("retry takes an id, or all (with a queue or not)")
        steps.retry(self.con, job_id, now)
        return {}

    def step_delete(self, request, now):
        steps.delete(self.con, field(request, "id", "int"))
        return {}

    def step_purge(self, request, now):
        state = field(request, "state", "str")
        queue = field(request, "queue", "str", required=False)
        if state not in ("dead", "done"):
            raise invalid(f"purge takes state dead or done, got {state!r}")
        if queue is not None:
            steps.check_queue(queue)
        return {"count": steps.purge(self.con, state, queue)}

    def step_stats(self, request, now):
        return {"queues": steps.stats(self.con, now)}


def answer_line(driver, line):
    try:
        request = json.loads(line)
    except ValueError as e:
        return {"ok": False, "error": "invalid", "message": f"cannot read the request: {e}"}
    try:
        result = driver.handle(request)
        return {"ok": True, **result}
    except (StepError, steps.UkueError) as e:
        return {"ok": False, "error": e.kind, "message": str(e)}
    except sqlite3.Error as e:
        return {"ok": False, "error": "error", "message": f"sqlite: {e}"}
    except (OSError, ValueError, OverflowError) as e:
        return {"ok": False, "error": "error", "message": str(e)}


def main(argv):
    if argv[1:] == ["--statements"]:
        print(json.dumps(steps.SCHEMA, indent=1))
        return 0
    if argv[1:]:
        print(f"usage: {NAME} [--statements]", file=sys.stderr)
        return 2
    out = sys.stdout
    hello = {"driver": f"{NAME} (Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version})",
             "protocol": PROTOCOL, "capabilities": ["now_ms", "published_backoff"]}
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
