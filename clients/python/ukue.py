#!/usr/bin/env python3
"""ukue: a job queue in one SQLite file (format version 1), the command line
with nothing but Python 3's standard library (3.11 or newer).

    ukue.py init   FILE                         create an empty ukue file
    ukue.py add    FILE QUEUE [PAYLOAD|-]       add a job (payload from stdin if left out or -)
    ukue.py work   FILE QUEUE -- COMMAND [ARG]  run COMMAND for each job, payload on stdin
    ukue.py stats  FILE                         count jobs per queue and state
    ukue.py list   FILE                         list jobs
    ukue.py show   FILE ID                      show one job and its payload
    ukue.py retry  FILE ID... | --all           move dead jobs back to ready
    ukue.py purge  FILE --state dead|done       delete dead or finished jobs
    ukue.py delete FILE ID...                   delete jobs
    ukue.py version                             print the version

It is a second implementation of the contract in spec/COMMAND.md,
written from the published format and command (github.com/ukue-queue/ukue),
and behaves as the published command does where that and the Rust reference
differ, so that the conformance suite meets both behaviours. The steps live
in ukue_steps.py beside it. `serve` is not offered.

Exit status: 0 success, 1 an error (message on stderr, starting
`ukue COMMAND: `), 2 a usage error.
"""

import base64
import errno
import json
import os
import re
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import ukue_steps as steps  # noqa: E402

PROG = "ukue"
# The exit status a command uses to say that trying again won't help.
EXIT_PERMANENT = 65
# How long a command gets after SIGTERM before its whole group is killed.
KILL_DELAY = 10.0
# How much of the end of a failed command's stderr its last_error keeps, as
# the published command; and how long to wait for that end once the command
# has exited (a process it started may hold its stderr open).
STDERR_TAIL = 2000
STDERR_WAIT = 2.0
NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000

USAGE = f"""\
ukue {steps.VERSION} (Python): a job queue in one file

Usage:
  ukue init   FILE                         create an empty ukue file
  ukue add    FILE QUEUE [PAYLOAD|-]       add a job (payload from stdin if left out or -)
  ukue work   FILE QUEUE -- COMMAND [ARG]  run COMMAND for each job, payload on stdin
  ukue stats  FILE                         count jobs per queue and state
  ukue list   FILE                         list jobs
  ukue show   FILE ID                      show one job and its payload
  ukue retry  FILE ID... | --all           move dead jobs back to ready
  ukue purge  FILE --state dead|done       delete dead or finished jobs
  ukue delete FILE ID...                   delete jobs
  ukue version                             print the version

Run "ukue COMMAND -h" for a command's options.
"""


class CommandError(Exception):
    """Exit status 1, with the message."""


class UsageError(Exception):
    """Exit status 2, with the message."""


class FlagError(Exception):
    """Exit status 2; the message and the usage are already printed."""


class HelpShown(Exception):
    """Exit status 0: the usage was asked for and printed."""


# --- Go's spellings: durations, integers, booleans, RFC 3339 times ----------------

_UNITS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": NS_PER_MS, "s": NS_PER_S,
          "m": 60 * NS_PER_S, "h": 3600 * NS_PER_S}
_MAX_DURATION = 2**63 - 1


def parse_duration(text):
    """Go's time.ParseDuration: `500ms`, `1.5h`, `1h30m`, `-2s`, `0`; the
    result in nanoseconds."""
    bad = ValueError(f"invalid duration {json.dumps(text, ensure_ascii=False)}")
    s = text
    neg = False
    if s[:1] in ("-", "+"):
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise bad
    total = 0
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise bad
        whole_digits = re.match(r"[0-9]*", s).group(0)
        s = s[len(whole_digits):]
        whole = int(whole_digits) if whole_digits else 0
        if whole > 2**63:
            raise bad
        frac_digits = ""
        if s[:1] == ".":
            s = s[1:]
            frac_digits = re.match(r"[0-9]*", s).group(0)
            s = s[len(frac_digits):]
        if not whole_digits and not frac_digits:
            raise bad
        unit = re.match(r"[^0-9.]*", s).group(0)
        s = s[len(unit):]
        if not unit:
            raise ValueError(f"missing unit in duration {json.dumps(text, ensure_ascii=False)}")
        if unit not in _UNITS:
            raise ValueError(f"unknown unit {json.dumps(unit, ensure_ascii=False)} in duration "
                             f"{json.dumps(text, ensure_ascii=False)}")
        scale = _UNITS[unit]
        if whole > 2**63 // scale:
            raise bad
        value = whole * scale
        if frac_digits:
            # Go keeps at most as many digits as fit in 63 bits.
            kept = frac_digits[:18]
            value += int(int(kept) * (scale / 10 ** len(kept)))
            if value > 2**63:
                raise bad
        total += value
        if total > 2**63:
            raise bad
    if neg:
        return -total
    if total > _MAX_DURATION:
        raise bad
    return total


def format_duration(ns):
    """Go's Duration.String: `1h2m3.5s`, `300ms`, `0s`."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)

    def with_fraction(value, digits):
        whole, part = divmod(value, 10 ** digits)
        fraction = f"{part:0{digits}d}".rstrip("0") if digits else ""
        return f"{whole}.{fraction}" if fraction else str(whole)

    if u < NS_PER_S:
        if u < 1_000:
            return f"{sign}{u}ns"
        if u < NS_PER_MS:
            return f"{sign}{with_fraction(u, 3)}\u00b5s"
        return f"{sign}{with_fraction(u, 6)}ms"
    seconds, part = divmod(u, NS_PER_S)
    text = with_fraction(seconds % 60 * NS_PER_S + part, 9) + "s"
    minutes = seconds // 60
    if minutes:
        text = f"{minutes % 60}m" + text
        if minutes // 60:
            text = f"{minutes // 60}h" + text
    return sign + text


def parse_int(text):
    """Go's strconv.ParseInt(text, 0, 64): decimal, 0x, 0o, 0b or a leading
    0 for octal, underscores between digits."""
    bad = ValueError(f"invalid syntax: {json.dumps(text, ensure_ascii=False)}")
    s = text
    sign = 1
    if s[:1] in ("+", "-"):
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if not s:
        raise bad
    base = 10
    body = s
    if len(s) >= 2 and s[0] == "0" and s[1] in "xXoObB":
        base = {"x": 16, "o": 8, "b": 2}[s[1].lower()]
        body = s[2:]
    elif len(s) >= 2 and s[0] == "0":
        base = 8
        body = s[1:]
    if "_" in s and not _underscores_ok(s):
        raise bad
    body = body.replace("_", "")
    digits = "0123456789abcdef"[:base]
    if not body or any(c.lower() not in digits for c in body):
        raise bad
    value = sign * int(body, base)
    if not steps.MIN_INT64 <= value <= steps.MAX_INT64:
        raise ValueError(f"value out of range: {text}")
    return value


def _underscores_ok(s):
    saw = "^"
    i = 0
    hexadecimal = False
    if len(s) >= 2 and s[0] == "0" and s[1].lower() in "box":
        i, saw, hexadecimal = 2, "0", s[1].lower() == "x"
    for c in s[i:]:
        if c.isdigit() and c.isascii() or hexadecimal and c.lower() in "abcdef":
            saw = "0"
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"


def parse_bool(text):
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f"invalid syntax: {json.dumps(text, ensure_ascii=False)}")


def _days_from_civil(y, m, d):
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z):
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _month_days(y, m):
    if m == 2:
        return 29 if y % 4 == 0 and (y % 100 != 0 or y % 400 == 0) else 28
    return 30 if m in (4, 6, 9, 11) else 31


_RFC3339 = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
                      r"(?:[.,]([0-9]+))?(Z|[+-][0-9]{2}:[0-9]{2})")


def parse_rfc3339(text):
    """An RFC 3339 time (any offset, optional fraction) in milliseconds since 1970."""
    m = _RFC3339.fullmatch(text)
    if not m:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    if not (1 <= mo <= 12 and 1 <= d <= _month_days(y, mo) and h < 24 and mi < 60 and s < 60):
        raise ValueError(f"not a time: {text!r}")
    offset = 0
    zone = m.group(8)
    if zone != "Z":
        oh, om = int(zone[1:3]), int(zone[4:6])
        if oh >= 24 or om >= 60:
            raise ValueError(f"bad time zone offset in {text!r}")
        offset = (oh * 3600 + om * 60) * (-1 if zone[0] == "-" else 1)
    fraction = (m.group(7) or "") + "000"
    seconds = _days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset
    return seconds * 1000 + int(fraction[:3])


def iso_ms(ms):
    """RFC 3339 in UTC with milliseconds: 2026-10-06T09:00:00.000Z."""
    seconds, milli = divmod(ms, 1000)
    days, sod = divmod(seconds, 86400)
    y, mo, d = _civil_from_days(days)
    return f"{y:04d}-{mo:02d}-{d:02d}T{sod // 3600:02d}:{sod % 3600 // 60:02d}:{sod % 60:02d}.{milli:03d}Z"


def _utc(ms, with_t):
    seconds = ms // 1000
    days, sod = divmod(seconds, 86400)
    y, mo, d = _civil_from_days(days)
    sep = "T" if with_t else " "
    return f"{y:04d}-{mo:02d}-{d:02d}{sep}{sod // 3600:02d}:{sod % 3600 // 60:02d}:{sod % 60:02d}" + \
        ("Z" if with_t else "")


# --- flags, as Go's flag package reads them -------------------------------------

class FlagSet:
    """Flags `-name`, `--name`, `-name=value`, `-name value` (a boolean
    never takes the next word); the first word that is not a flag ends them."""

    def __init__(self, command, synopsis):
        self.command = command
        self.synopsis = synopsis
        self.flags = {}
        self.values = {}

    def add(self, name, kind, default, help_text):
        self.flags[name] = (kind, default, help_text)
        self.values[name] = default

    def usage(self):
        lines = [f"Usage: ukue {self.synopsis}"]
        if self.flags:
            lines += ["", "Options:"]
            for name, (kind, default, help_text) in self.flags.items():
                shown = {"bool": "", "int": " int", "duration": " duration", "string": " string"}[kind]
                lines.append(f"  -{name}{shown}")
                if kind == "duration" and default:
                    help_text += f" (default {format_duration(default)})"
                elif kind == "int" and default:
                    help_text += f" (default {default})"
                lines.append(f"    \t{help_text}")
        complain("\n".join(lines) + "\n")

    def fail(self, message):
        complain(f"ukue {self.command}: {message}\n")
        self.usage()
        raise FlagError(message)

    def parse(self, args):
        """Reads flags from the front of `args`; returns the rest."""
        while args:
            word = args[0]
            if len(word) < 2 or word[0] != "-":
                return args
            dashes = 2 if word[1] == "-" else 1
            if dashes == 2 and len(word) == 2:
                return args[1:]
            name = word[dashes:]
            if not name or name[0] in "-=":
                self.fail(f"bad flag syntax: {word}")
            args = args[1:]
            value = None
            if "=" in name[1:]:
                at = name.index("=", 1)
                name, value = name[:at], name[at + 1:]
            if name not in self.flags:
                if name in ("h", "help"):
                    self.usage()
                    raise HelpShown()
                self.fail(f"flag provided but not defined: -{name}")
            kind = self.flags[name][0]
            if kind == "bool":
                try:
                    self.values[name] = True if value is None else parse_bool(value)
                except ValueError as e:
                    self.fail(f"invalid boolean value {json.dumps(value)} for -{name}: parse error ({e})")
                continue
            if value is None:
                if not args:
                    self.fail(f"flag needs an argument: -{name}")
                value, args = args[0], args[1:]
            try:
                if kind == "int":
                    self.values[name] = parse_int(value)
                elif kind == "duration":
                    self.values[name] = parse_duration(value)
                else:
                    self.values[name] = value
            except ValueError as e:
                self.fail(f"invalid value {json.dumps(value, ensure_ascii=False)} for flag -{name}: {e}")
        return args

    def __getitem__(self, name):
        return self.values[name]


def parse_tail(fs, args):
    """Flags before, between and after the positional arguments; whatever
    follows the first `--` comes back apart, untouched."""
    tail = []
    if "--" in args:
        at = args.index("--")
        args, tail = args[:at], args[at + 1:]
    positional = []
    while True:
        args = fs.parse(args)
        if not args:
            return positional, tail
        positional.append(args[0])
        args = args[1:]


def parse(fs, args):
    """parse_tail for commands that run nothing: after `--` come positional
    arguments (a payload that starts with a dash)."""
    positional, tail = parse_tail(fs, args)
    return positional + tail


# --- output -------------------------------------------------------------------------

def _write(stream, text):
    # UTF-8 whatever the locale; a path's undecodable bytes go out as they came in.
    stream.buffer.write(text.encode("utf-8", "surrogateescape"))


def say(text=""):
    """A line on stdout."""
    _write(sys.stdout, text + "\n")


def complain(text):
    """Text on stderr."""
    _write(sys.stderr, text)
    sys.stderr.flush()


def arg_text(arg):
    """A word of the command line read as UTF-8 text (a queue name), whatever
    the locale decoded it as."""
    return os.fsencode(arg).decode("utf-8", "surrogateescape")


def printable(text):
    """Control characters escaped (newlines and tabs kept), so that a payload
    or an error cannot send escape sequences to a terminal."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\n\t":
            out.append(ch)
        elif code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    return "".join(out)


def utf8(data):
    """The text of `data` when it is valid UTF-8, else None."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def preview(data, width):
    text = utf8(data)
    if text is None:
        return f"({len(data)} bytes, binary)"
    text = " ".join(printable(text).split())
    if len(text) > width:
        text = text[:width - 3] + "..."
    return text or "-"


def table(header, rows):
    """Columns padded to their widest cell plus two spaces; the last column
    not padded."""
    lines = [header] + rows
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    out = []
    for line in lines:
        cells = [cell.ljust(widths[i] + 2) for i, cell in enumerate(line[:-1])]
        out.append("".join(cells) + line[-1])
    return "\n".join(out) + "\n"


def print_json(value):
    say(json.dumps(value, ensure_ascii=False, indent=2))


def job_json(job, now):
    state = job["state"]
    if state == "ready" and job["run_at"] > now:
        state = "delayed"
    out = {
        "attempts": job["attempts"],
        "created_at": iso_ms(job["created_at"]),
        "id": job["id"],
        "last_error": job["last_error"] or "",
        "lease_until": None if job["lease_until"] is None else iso_ms(job["lease_until"]),
        "max_attempts": job["max_attempts"],
        "priority": job["priority"],
        "queue": job["queue"],
        "run_at": iso_ms(job["run_at"]),
        "state": state,
        "updated_at": iso_ms(job["updated_at"]),
    }
    text = utf8(job["payload"])
    if text is None:
        out["payload_base64"] = base64.b64encode(job["payload"]).decode("ascii")
    else:
        out["payload"] = text
    return dict(sorted(out.items()))


# --- opening files ------------------------------------------------------------------

def open_file(path, create):
    """Only init and add create (or add the tables to an application's
    database); every other command needs a file with the ukue tables and
    leaves anything else as it was."""
    try:
        return steps.open_file(path, "any" if create else "never")
    except steps.UkueError as e:
        raise CommandError(str(e)) from None
    except sqlite3.Error as e:
        raise CommandError(f"{path}: {e}") from None


class Opened:
    """A connection closed at the end of a `with`, so that SQLite removes the
    -wal and -shm files it made."""

    def __init__(self, path, create=False):
        self.con = open_file(path, create)

    def __enter__(self):
        return self.con

    def __exit__(self, *exc):
        try:
            self.con.close()
        except sqlite3.Error:
            pass
        return False


def step_error(e):
    if isinstance(e, steps.UkueError):
        return CommandError(str(e))
    return CommandError(f"sqlite: {e}")


# --- the commands ------------------------------------------------------------------

def cmd_init(args):
    fs = FlagSet("init", "init FILE")
    pos = parse(fs, args)
    if len(pos) != 1:
        raise UsageError("give one FILE")
    with Opened(pos[0], create=True):
        pass
    say(f"{pos[0]} is ready (ukue file format {steps.FORMAT_VERSION})")


def read_payload():
    if sys.stdin.isatty():
        complain("Reading the payload from the keyboard; end it with Ctrl-D.\n")
    try:
        return sys.stdin.buffer.read()
    except OSError as e:
        raise CommandError(f"read payload: {e}") from None


def cmd_add(args):
    fs = FlagSet("add", "add [options] FILE QUEUE [PAYLOAD|-]")
    fs.add("delay", "duration", 0, "wait this long before the job can run, such as 30s or 2h")
    fs.add("at", "string", "", "run no earlier than this RFC 3339 time, such as 2026-10-06T09:00:00Z")
    fs.add("attempts", "int", 0, "tries before the job is dead (default 10)")
    fs.add("priority", "int", 0, "higher runs first among due jobs")
    pos = parse(fs, args)
    if not 2 <= len(pos) <= 3:
        raise UsageError("give FILE, QUEUE and an optional PAYLOAD")
    if len(pos) == 3 and pos[2] != "-":
        payload = os.fsencode(pos[2])
    else:
        payload = read_payload()
    at = None
    if fs["at"]:
        try:
            at = parse_rfc3339(fs["at"])
        except ValueError:
            raise UsageError("--at needs an RFC 3339 time such as 2026-10-06T09:00:00Z") from None
    # As the published command does: the file (and its tables) first, then
    # the job's checks, so bad input may leave a new, empty file behind.
    with Opened(pos[0], create=True) as con:
        queue = arg_text(pos[1])
        delay = fs["delay"]
        attempts = fs["attempts"] or steps.DEFAULT_MAX_ATTEMPTS
        try:
            steps.check_queue(queue)
            steps.check_max_attempts(attempts)
            if delay < 0:
                raise steps.invalid("the delay can't be negative")
            if delay > 0 and at is not None:
                raise steps.invalid("give --delay or --at, not both")
            now_ns = time.time_ns()
            now = now_ns // NS_PER_MS
            run_at = at if at is not None else (now_ns + delay) // NS_PER_MS
            # In a transaction of its own, so that a file busy with many
            # writers is waited on while they commit (steps.begin_immediate).
            job_id = steps.write(con, lambda: steps.add(con, queue, payload, now, priority=fs["priority"],
                                                        max_attempts=attempts, run_at=run_at))
        except (steps.UkueError, sqlite3.Error) as e:
            raise step_error(e) from None
        # The commit has returned: only now may the id be seen.
        say(str(job_id))
        sys.stdout.flush()


def cmd_stats(args):
    fs = FlagSet("stats", "stats [--json] FILE")
    fs.add("json", "bool", False, "print JSON")
    pos = parse(fs, args)
    if len(pos) != 1:
        raise UsageError("give one FILE")
    with Opened(pos[0]) as con:
        now = steps.now_ms()
        try:
            queues = steps.stats(con, now)
        except sqlite3.Error as e:
            raise step_error(e) from None
    if fs["json"]:
        rows = []
        for q in queues:
            row = dict(q)
            row["oldest_due"] = None if q["oldest_due"] is None else iso_ms(q["oldest_due"])
            rows.append(row)
        print_json({"queues": rows})
        return
    if not queues:
        say("no jobs")
        return
    rows = []
    for q in queues:
        wait = "-"
        if q["oldest_due"] is not None:
            waited = now - q["oldest_due"]
            seconds = (abs(waited) + 500) // 1000 * (1 if waited >= 0 else -1)
            wait = format_duration(seconds * NS_PER_S)
        rows.append([printable(q["queue"])] + [str(q[k]) for k in
                                                ("ready", "delayed", "running", "expired", "dead", "done")]
                    + [wait])
    _write(sys.stdout, table(["QUEUE", "READY", "DELAYED", "RUNNING", "EXPIRED", "DEAD", "DONE", "OLDEST WAIT"],
                           rows))


def cmd_list(args):
    fs = FlagSet("list", "list [options] FILE")
    fs.add("queue", "string", "", "only this queue")
    fs.add("state", "string", "", "only this state: ready, delayed, running, dead or done")
    fs.add("limit", "int", 50, "at most this many jobs (up to 1000)")
    fs.add("after", "int", 0, "only jobs with a larger ID, for paging")
    fs.add("json", "bool", False, "print JSON, payloads included")
    pos = parse(fs, args)
    if len(pos) != 1:
        raise UsageError("give one FILE")
    state = fs["state"]
    if state and state not in steps.LIST_STATES:
        raise CommandError(f"unknown state {json.dumps(state)} (want ready, delayed, running, done or dead)")
    with Opened(pos[0]) as con:
        now = steps.now_ms()
        try:
            jobs = steps.list_jobs(con, now, queue=arg_text(fs["queue"]), state=state, after=fs["after"],
                                   limit=fs["limit"])
        except (steps.UkueError, sqlite3.Error) as e:
            raise step_error(e) from None
    if fs["json"]:
        print_json({"jobs": [job_json(j, now) for j in jobs]})
        return
    if not jobs:
        say("no jobs")
        return
    rows = []
    for j in jobs:
        state = "delayed" if j["state"] == "ready" and j["run_at"] > now else j["state"]
        rows.append([str(j["id"]), printable(j["queue"]), state, f"{j['attempts']}/{j['max_attempts']}",
                     _utc(j["run_at"], False), preview(j["payload"], 40),
                     preview((j["last_error"] or "").encode("utf-8"), 50)])
    _write(sys.stdout, table(["ID", "QUEUE", "STATE", "TRIES", "RUN AT", "PAYLOAD", "LAST ERROR"], rows))


def _job_id(text, usage):
    """A job id as Go's strconv.ParseInt(text, 10, 64) reads it."""
    if re.fullmatch(r"[+-]?[0-9]+", text) and steps.MIN_INT64 <= int(text) <= steps.MAX_INT64:
        return int(text)
    raise UsageError(usage)


def cmd_show(args):
    fs = FlagSet("show", "show [--json] FILE ID")
    fs.add("json", "bool", False, "print JSON")
    pos = parse(fs, args)
    if len(pos) != 2:
        raise UsageError("give FILE and ID")
    job_id = _job_id(pos[1], "ID must be a whole number")
    with Opened(pos[0]) as con:
        now = steps.now_ms()
        try:
            job = steps.get(con, job_id)
        except sqlite3.Error as e:
            raise step_error(e) from None
    if job is None:
        raise CommandError(f"there is no job {job_id}")
    if fs["json"]:
        print_json(job_json(job, now))
        return
    state = "delayed" if job["state"] == "ready" and job["run_at"] > now else job["state"]
    out = [
        f"id:          {job['id']}",
        f"queue:       {printable(job['queue'])}",
        f"state:       {state}",
        f"tries:       {job['attempts']} of {job['max_attempts']}",
        f"priority:    {job['priority']}",
        f"run at:      {_utc(job['run_at'], True)}",
    ]
    if job["lease_until"] is not None:
        out.append(f"lease until: {_utc(job['lease_until'], True)}")
    out.append(f"created:     {_utc(job['created_at'], True)}")
    out.append(f"updated:     {_utc(job['updated_at'], True)}")
    if job["last_error"]:
        out.append(f"last error:  {printable(job['last_error'])}")
    out.append(f"payload:     {len(job['payload'])} bytes")
    text = utf8(job["payload"])
    out.append(printable(text) if text is not None else "(binary; use --json to get it as base64)")
    say("\n".join(out))


def cmd_retry(args):
    fs = FlagSet("retry", "retry FILE ID... | retry --all [--queue QUEUE] FILE")
    fs.add("all", "bool", False, "retry every dead job")
    fs.add("queue", "string", "", "with --all, only this queue")
    pos = parse(fs, args)
    every = fs["all"]
    if not pos or (every and len(pos) != 1) or (not every and len(pos) < 2):
        raise UsageError("give FILE and one or more IDs, or FILE with --all")
    with Opened(pos[0]) as con:
        if every:
            try:
                n = steps.retry_all(con, steps.now_ms(), arg_text(fs["queue"]))
            except sqlite3.Error as e:
                raise step_error(e) from None
            say(f"{n} dead jobs moved back to ready")
            return
        for word in pos[1:]:
            job_id = _job_id(word, f"{json.dumps(word)} is not a job ID")
            try:
                steps.retry(con, job_id, steps.now_ms())
            except steps.UkueError:
                raise CommandError(f"job {job_id} is not dead, or doesn't exist") from None
            except sqlite3.Error as e:
                raise step_error(e) from None
            say(f"job {job_id} moved back to ready")
            sys.stdout.flush()


def cmd_purge(args):
    fs = FlagSet("purge", "purge --state dead|done [--queue QUEUE] FILE")
    fs.add("state", "string", "", "dead or done (required)")
    fs.add("queue", "string", "", "only this queue")
    pos = parse(fs, args)
    if len(pos) != 1:
        raise UsageError("give one FILE")
    if fs["state"] not in ("dead", "done"):
        raise UsageError("--state must be dead or done")
    with Opened(pos[0]) as con:
        try:
            n = steps.purge(con, fs["state"], arg_text(fs["queue"]))
        except (steps.UkueError, sqlite3.Error) as e:
            raise step_error(e) from None
    say(f"{n} {fs['state']} jobs deleted")


def cmd_delete(args):
    fs = FlagSet("delete", "delete FILE ID...")
    pos = parse(fs, args)
    if len(pos) < 2:
        raise UsageError("give FILE and one or more IDs")
    with Opened(pos[0]) as con:
        for word in pos[1:]:
            job_id = _job_id(word, f"{json.dumps(word)} is not a job ID")
            try:
                steps.delete(con, job_id)
            except steps.UkueError:
                raise CommandError(f"there is no job {job_id}") from None
            except sqlite3.Error as e:
                raise step_error(e) from None
            say(f"job {job_id} deleted")
            sys.stdout.flush()


# --- work ---------------------------------------------------------------------------

class Log:
    """Lines like `time=15:04:05 level=INFO msg="job done" id=3` on stderr;
    one lock, so that lines of different threads never mix."""

    LEVELS = {"INFO": 0, "WARN": 1, "ERROR": 2}

    def __init__(self, quiet):
        self.least = 1 if quiet else 0
        self.lock = threading.Lock()

    @staticmethod
    def _value(value):
        text = str(value)
        if text == "" or any(c in text for c in ' ="\\') or not text.isprintable():
            return json.dumps(text, ensure_ascii=False)
        return text

    def log(self, level, message, **fields):
        if self.LEVELS[level] < self.least:
            return
        parts = [f"time={time.strftime('%H:%M:%S')}", f"level={level}", f"msg={self._value(message)}"]
        parts += [f"{key}={self._value(value)}" for key, value in fields.items()]
        line = " ".join(parts) + "\n"
        with self.lock:
            try:
                complain(line)
            except (OSError, ValueError):
                pass

    def info(self, message, **fields):
        self.log("INFO", message, **fields)

    def warn(self, message, **fields):
        self.log("WARN", message, **fields)


# Python 3.11 sets the group in the child without running Python code there.
_OWN_GROUP = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}


class Child:
    """A job's command, in a process group of its own, with the payload on
    its standard input; its stderr passed on to the worker's (under
    `out_lock`, so that lines never mix) and its end kept."""

    def __init__(self, argv, env, payload, out_lock):
        read_end, write_end = os.pipe()
        try:
            # Its own group: it and whatever it starts can be stopped
            # together, and a Ctrl-C in the terminal reaches only the worker.
            self.proc = subprocess.Popen(argv, stdin=read_end, stderr=subprocess.PIPE, env=env, close_fds=True,
                                         **_OWN_GROUP)
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        self.pid = self.proc.pid
        self._tail = bytearray()
        self._forwarder = threading.Thread(target=self._forward, args=(self.proc.stderr, out_lock), daemon=True)
        self._forwarder.start()
        self._feed(write_end, payload)
        try:
            self.pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            self.pidfd = None

    def _forward(self, pipe, out_lock):
        try:
            while True:
                chunk = os.read(pipe.fileno(), 65536)
                if not chunk:
                    break
                with out_lock:
                    try:
                        sys.stderr.buffer.write(chunk)
                        sys.stderr.buffer.flush()
                    except (OSError, ValueError):
                        pass
                self._tail += chunk
                del self._tail[:-STDERR_TAIL]
        except OSError:
            pass
        finally:
            pipe.close()

    def stderr_tail(self):
        """The end of what the command wrote on stderr, once it is closed or
        STDERR_WAIT has passed."""
        self._forwarder.join(STDERR_WAIT)
        return bytes(self._tail).decode("utf-8", "replace").strip()

    @staticmethod
    def _feed(fd, payload):
        # Whatever fits in the pipe goes now; a larger payload that the
        # command may never read is written by a thread of its own.
        os.set_blocking(fd, False)
        written = 0
        try:
            while written < len(payload):
                written += os.write(fd, payload[written:])
        except BlockingIOError:
            pass
        except OSError:
            written = len(payload)
        if written >= len(payload):
            os.close(fd)
            return

        def rest():
            try:
                os.set_blocking(fd, True)
                view = memoryview(payload)[written:]
                while view:
                    view = view[os.write(fd, view):]
            except OSError:
                pass
            finally:
                os.close(fd)

        threading.Thread(target=rest, daemon=True).start()

    def wait(self, timeout, wake_fd=None):
        """Waits up to `timeout` seconds for the command to end, or for
        `wake_fd` to be readable; returns its status once it has ended."""
        if self.proc.returncode is not None:
            return self.proc.returncode
        if self.pidfd is not None:
            poller = select.poll()
            poller.register(self.pidfd, select.POLLIN)
            if wake_fd is not None:
                poller.register(wake_fd, select.POLLIN)
            poller.poll(max(0, int(timeout * 1000 + 0.999)))
            return self.proc.poll()
        deadline = time.monotonic() + timeout
        while True:
            status = self.proc.poll()
            if status is not None:
                return status
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if wake_fd is not None and select.select([wake_fd], [], [], 0)[0]:
                return None
            time.sleep(min(left, 0.01))

    def signal_group(self, sig):
        try:
            os.killpg(self.pid, sig)
        except OSError:
            if self.proc.returncode is None:
                try:
                    self.proc.send_signal(sig)
                except OSError:
                    pass

    def close(self):
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


class Stopper:
    """The request to stop (SIGINT or SIGTERM): an event for threads that
    sleep, and a pipe, readable from then on, for those that poll."""

    def __init__(self):
        self.event = threading.Event()
        self.at = None
        self.read_fd, self._write_fd = os.pipe()

    def request(self):
        if not self.event.is_set():
            self.at = time.monotonic()
            self.event.set()
            try:
                os.write(self._write_fd, b"x")
            except OSError:
                pass

    def install(self):
        def on_signal(signum, frame):
            # The first Ctrl-C or SIGTERM stops the worker cleanly; a second
            # one ends it at once.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            self.request()

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)


class Worker:
    def __init__(self, file, queue, command, concurrency, lease_ns, timeout_ns, poll_ns, grace_ns, keep_done, log,
                 stopper):
        self.file = file
        self.queue = queue
        self.command = command
        self.concurrency = concurrency
        self.lease_ms = max(lease_ns // NS_PER_MS, 1)
        self.lease_s = lease_ns / NS_PER_S
        self.timeout_ns = timeout_ns
        self.timeout_s = timeout_ns / NS_PER_S
        self.poll_s = poll_ns / NS_PER_S
        self.grace_s = grace_ns / NS_PER_S
        self.keep_done = keep_done
        self.log = log
        self.stopper = stopper
        self.stopping = stopper.event

    def run(self):
        threads = [threading.Thread(target=self.slot, name=f"slot-{n}", daemon=True)
                   for n in range(self.concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(1.0)

    def slot(self):
        con = None
        failures = 0
        while not self.stopping.is_set():
            try:
                if con is None:
                    con = steps.open_file(self.file, "never")
                job, _ = steps.claim(con, self.queue, self.lease_ms)
            except (steps.UkueError, sqlite3.Error, OSError) as e:
                failures += 1
                wait = min(self.poll_s * failures, 30.0)
                self.log.warn("claim failed", queue=self.queue, err=str(e),
                              retry_in=format_duration(int(wait * NS_PER_S)))
                self.stopping.wait(wait)
                continue
            failures = 0
            if job is None:
                wait = self.poll_s
                try:
                    at = steps.next_change(con, self.queue)
                except sqlite3.Error:
                    at = None
                if at is not None:
                    wait = min(wait, max((at - steps.now_ms()) / 1000, 0.001))
                self.stopping.wait(wait)
                continue
            self.log.info("job started", queue=self.queue, id=job["id"], attempt=job["attempt"])
            try:
                self.run_job(con, job)
            except Exception as e:  # a bug must not cost the worker a slot: the lease brings the job back
                self.log.log("ERROR", "running the job failed", queue=self.queue, id=job["id"], err=repr(e))
        if con is not None:
            con.close()

    def run_job(self, con, job):
        env = dict(os.environ)
        env.update(UKUE_FILE=self.file, UKUE_QUEUE=job["queue"], UKUE_JOB_ID=str(job["id"]),
                   UKUE_ATTEMPT=str(job["attempt"]), UKUE_MAX_ATTEMPTS=str(job["max_attempts"]))
        lease = {"until": job["lease_until"], "lost": False}
        try:
            child = Child(self.command, env, job["payload"], self.log.lock)
        except OSError as e:
            self.record_failure(con, job, lease, f"could not run the command: {e}", False)
            return
        try:
            status, stopped, cancelled = self.supervise(con, job, child, lease)
        finally:
            child.close()
        if lease["lost"]:
            self.log.warn("job lease lost; another worker may run it again", queue=job["queue"], id=job["id"])
            return
        if status == 0:
            try:
                self.settle(con, job, lease, lambda: steps.finish(con, job["id"], job["token"], steps.now_ms(),
                                                                  keep_done=self.keep_done))
            except Exception as e:
                self.log.warn("job finished but could not be marked done; it may run again",
                              queue=job["queue"], id=job["id"], err=str(e))
                return
            self.log.info("job done", queue=job["queue"], id=job["id"], attempt=job["attempt"])
            return
        if cancelled == "shutdown":
            try:
                self.settle(con, job, lease, lambda: steps.release(con, job["id"], job["token"], steps.now_ms()))
            except Exception as e:
                self.log.warn("could not put the job back during shutdown", queue=job["queue"], id=job["id"],
                              err=str(e))
                return
            self.log.info("job put back for shutdown", queue=job["queue"], id=job["id"])
            return
        if stopped == "timeout":
            error, permanent = f"stopped after the {format_duration(self.timeout_ns)} timeout", False
        elif status < 0:
            error, permanent = f"the command was killed by signal {-status}", False
        else:
            error, permanent = f"the command exited with status {status}", status == EXIT_PERMANENT
        detail = child.stderr_tail()
        if detail:
            error = f"{error}: {detail}"
        self.record_failure(con, job, lease, error, permanent)

    def record_failure(self, con, job, lease, error, permanent):
        try:
            state, run_at = self.settle(con, job, lease, lambda: steps.fail(
                con, job["id"], job["token"], error, steps.now_ms(), permanent=permanent))
        except Exception as e:
            self.log.warn("job failed but that could not be recorded", queue=job["queue"], id=job["id"],
                          err=str(e), cause=error)
            return
        if state == "dead":
            self.log.warn("job dead", queue=job["queue"], id=job["id"], attempt=job["attempt"], err=error)
        else:
            self.log.info("job failed, will retry", queue=job["queue"], id=job["id"], attempt=job["attempt"],
                          retry_at=iso_ms(run_at), err=error)

    def renew(self, con, job, lease):
        """Renews the lease; marks it lost when the file says another holds
        the job, or when it has run out while renewals failed."""
        try:
            lease["until"] = steps.renew(con, job["id"], job["token"], self.lease_ms)
        except steps.UkueError as e:
            if e.kind == "lease_lost":
                lease["lost"] = True
            else:
                self.log.warn("lease renewal failed; trying again", queue=job["queue"], id=job["id"], err=str(e))
        except sqlite3.Error as e:
            if steps.now_ms() >= lease["until"]:
                lease["lost"] = True
            else:
                self.log.warn("lease renewal failed; trying again", queue=job["queue"], id=job["id"], err=str(e))

    def supervise(self, con, job, child, lease):
        """Waits for the command, renewing the lease every third of it, and
        stops it (SIGTERM to its group, SIGKILL 10 s later) on a timeout, a
        lost lease or the end of the grace after a stop request.

        Returns (status, what stopped it first, whether the end of grace cancelled it)."""
        start = time.monotonic()
        renew_every = self.lease_s / 3
        next_renew = start + renew_every
        timeout_at = start + self.timeout_s if self.timeout_ns > 0 else None
        term_at = None
        killed = False
        stopped = None
        cancelled = None
        while True:
            now = time.monotonic()
            stopping = self.stopping.is_set()
            grace_at = self.stopper.at + self.grace_s if stopping else None
            deadlines = [] if lease["lost"] else [next_renew]
            if term_at is None and timeout_at is not None:
                deadlines.append(timeout_at)
            if cancelled is None and grace_at is not None:
                deadlines.append(grace_at)
            if term_at is not None and not killed:
                deadlines.append(term_at + KILL_DELAY)
            wait = max(0.0, min(deadlines) - now) if deadlines else 1.0
            status = child.wait(wait, None if stopping else self.stopper.read_fd)
            if status is not None:
                break
            now = time.monotonic()
            if not lease["lost"] and now >= next_renew:
                next_renew = max(next_renew + renew_every, now + renew_every / 2)
                self.renew(con, job, lease)
                if lease["lost"] and term_at is None:
                    stopped, term_at = "lease", now
                    child.signal_group(signal.SIGTERM)
            if term_at is None and timeout_at is not None and now >= timeout_at:
                stopped, term_at = "timeout", now
                child.signal_group(signal.SIGTERM)
            if cancelled is None and grace_at is not None and now >= grace_at:
                cancelled = "shutdown"
                if term_at is None:
                    stopped, term_at = "shutdown", now
                    child.signal_group(signal.SIGTERM)
            if term_at is not None and not killed and now >= term_at + KILL_DELAY:
                killed = True
                child.signal_group(signal.SIGKILL)
        if term_at is not None:
            # Leave nothing behind that the command started.
            child.signal_group(signal.SIGKILL)
        return status, stopped, cancelled

    def settle(self, con, job, lease, step):
        """Records a job's result, trying again after passing errors (a file
        locked past the busy timeout) while renewing the lease, and giving up
        when the job is no longer held or its lease would run out first."""
        wait = 0.05
        renew_every = self.lease_s / 3
        next_renew = time.monotonic() + renew_every
        while True:
            try:
                return step()
            except steps.UkueError as e:
                if e.kind in ("lease_lost", "invalid"):
                    raise
                error = e
            except (sqlite3.Error, OSError) as e:
                error = e
            if lease["lost"] or steps.now_ms() + wait * 1000 >= lease["until"]:
                raise error
            self.log.warn("could not record the job's result; trying again", queue=job["queue"], id=job["id"],
                          err=str(error))
            time.sleep(wait)
            wait = min(2 * wait, 2.0)
            if time.monotonic() >= next_renew:
                next_renew = time.monotonic() + renew_every
                self.renew(con, job, lease)


def cmd_work(args):
    fs = FlagSet("work", "work [options] FILE QUEUE -- COMMAND [ARG...]")
    fs.add("concurrency", "int", 1, "jobs to run at once")
    fs.add("lease", "duration", 60 * NS_PER_S,
           "how long a job is held if this worker stops answering; renewed while the command runs")
    fs.add("timeout", "duration", 0, "stop a command that runs longer than this and fail the attempt (0 means no limit)")
    fs.add("poll", "duration", NS_PER_S, "longest wait between looks when the queue is empty")
    fs.add("grace", "duration", 30 * NS_PER_S,
           "after Ctrl-C or SIGTERM, how long running commands may finish before they are stopped")
    fs.add("keep-done", "bool", False, "keep finished jobs in the file instead of deleting them")
    fs.add("quiet", "bool", False, "print only warnings and errors")
    # From the start, so that a stop requested while the file is checked
    # ends the worker cleanly before it claims anything.
    stopper = Stopper()
    stopper.install()
    pos, command = parse_tail(fs, args)
    if len(pos) != 2:
        raise UsageError("give FILE and QUEUE, then -- and the command to run")
    if not command:
        raise UsageError("give the command to run after --, for example: ukue work jobs.ukue email -- ./send-email.sh")
    if fs["timeout"] < 0:
        raise UsageError("--timeout can't be negative")
    if shutil.which(command[0]) is None:
        raise UsageError(f"can't run {json.dumps(command[0])}: not found, or not executable")
    file, queue = pos[0], arg_text(pos[1])
    # Refuse a bad file before anything starts.
    with Opened(file):
        pass
    try:
        steps.check_queue(queue)
    except steps.UkueError as e:
        raise CommandError(str(e)) from None
    if fs["concurrency"] < 1:
        raise CommandError("concurrency must be at least 1")
    if fs["poll"] <= 0:
        raise CommandError("the poll interval must be positive")
    if fs["lease"] < 3 * NS_PER_MS:
        raise CommandError("the lease is too short (at least 3ms)")
    if fs["grace"] < 0:
        raise CommandError("the grace period can't be negative")
    log = Log(fs["quiet"])
    worker = Worker(file, queue, command, fs["concurrency"], fs["lease"], fs["timeout"], fs["poll"], fs["grace"],
                    fs["keep-done"], log, stopper)
    log.info("ukue worker started", file=file, queue=queue, command=" ".join(command),
             concurrency=fs["concurrency"])
    worker.run()
    log.info("ukue worker stopped", queue=queue)


COMMANDS = {
    "init": cmd_init,
    "add": cmd_add,
    "work": cmd_work,
    "stats": cmd_stats,
    "list": cmd_list,
    "show": cmd_show,
    "retry": cmd_retry,
    "purge": cmd_purge,
    "delete": cmd_delete,
}


def main(argv):
    if not argv:
        complain(USAGE)
        return 2
    name, rest = argv[0], argv[1:]
    if name in ("version", "--version", "-v"):
        say(f"ukue {steps.VERSION} (file format {steps.FORMAT_VERSION})")
        return 0
    if name in ("help", "-h", "--help"):
        _write(sys.stdout, USAGE)
        return 0
    command = COMMANDS.get(name)
    if command is None:
        complain(f"ukue: unknown command {json.dumps(name, ensure_ascii=False)}\n\n{USAGE}")
        return 2
    try:
        command(rest)
    except HelpShown:
        return 0
    except FlagError:
        return 2
    except UsageError as e:
        complain(f"ukue {name}: {printable(str(e))}\n")
        return 2
    except CommandError as e:
        complain(f"ukue {name}: {printable(str(e))}\n")
        return 1
    except BrokenPipeError:
        return 1
    except (sqlite3.Error, UnicodeError) as e:
        complain(f"ukue {name}: {printable(str(e))}\n")
        return 1
    try:
        sys.stdout.flush()
    except OSError as e:
        if e.errno != errno.EPIPE:
            complain(f"ukue {name}: writing the output: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
