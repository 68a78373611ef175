"""Tests of ukue_steps.py (the steps) and ukue.py (the command line).

    python3 -m unittest discover -s clients/python/tests -v

Standard library only. Waits are on conditions with deadlines, never bare
sleeps.
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(HERE)
sys.path.insert(0, CLIENT)

import ukue  # noqa: E402
import ukue_steps as steps  # noqa: E402

UKUE = os.path.join(CLIENT, "ukue.py")
NOW = 1_700_000_000_000


def wait_until(what, predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


def run(*args, stdin=b"", cwd=None):
    return subprocess.run([sys.executable, UKUE, *args], input=stdin, capture_output=True, cwd=cwd,
                          timeout=60)


class TempDir(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.dir = self._dir.name

    def tearDown(self):
        self._dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def new_file(self, name="jobs.ukue"):
        con = steps.open_file(self.path(name), "any", NOW)
        self.addCleanup(con.close)
        return con

    def row(self, con, job_id):
        row = con.execute("SELECT state, attempts, run_at, lease_until, token, last_error, updated_at"
                          " FROM ukue_jobs WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else dict(zip(
            ("state", "attempts", "run_at", "lease_until", "token", "last_error", "updated_at"), row))


class GoSpellings(unittest.TestCase):
    def test_durations(self):
        ms, s = 1_000_000, 1_000_000_000
        for text, ns in [("500ms", 500 * ms), ("30s", 30 * s), ("2m", 120 * s), ("1h30m", 5400 * s),
                         ("1.5h", 5400 * s), ("0", 0), ("-2s", -2 * s), ("+1s", s), (".5s", s // 2),
                         ("1.s", s), ("250us", 250_000), ("1\u00b5s", 1000), ("3ns", 3)]:
            self.assertEqual(ukue.parse_duration(text), ns, text)
        for bad in ["", "5", "soon", "1x", "ms", ".s", "-", "1..5s", "9999999999h"]:
            with self.assertRaises(ValueError, msg=bad):
                ukue.parse_duration(bad)

    def test_duration_strings(self):
        for ns, text in [(0, "0s"), (300_000_000, "300ms"), (1_500_000_000, "1.5s"), (3_723_000_000_000, "1h2m3s"),
                         (60_000_000_000, "1m0s"), (2_000, "2\u00b5s"), (-5_000_000_000, "-5s")]:
            self.assertEqual(ukue.format_duration(ns), text)

    def test_integers(self):
        for text, value in [("12", 12), ("-101", -101), ("+3", 3), ("0x10", 16), ("010", 8), ("1_000", 1000)]:
            self.assertEqual(ukue.parse_int(text), value, text)
        for bad in ["", "abc", "1e3", "_1", "1_", "9223372036854775808", "0x"]:
            with self.assertRaises(ValueError, msg=bad):
                ukue.parse_int(bad)

    def test_times(self):
        self.assertEqual(ukue.iso_ms(0), "1970-01-01T00:00:00.000Z")
        self.assertEqual(ukue.iso_ms(1_791_277_200_000), "2026-10-06T09:00:00.000Z")
        self.assertEqual(ukue.iso_ms(-1), "1969-12-31T23:59:59.999Z")
        self.assertEqual(ukue.parse_rfc3339("2026-10-06T09:00:00Z"), 1_791_277_200_000)
        self.assertEqual(ukue.parse_rfc3339("2026-10-06T11:00:00.25+02:00"), 1_791_277_200_250)
        for bad in ["yesterday", "2026-02-30T00:00:00Z", "2026-10-06 09:00:00Z", "2026-10-06T09:00:00"]:
            with self.assertRaises(ValueError, msg=bad):
                ukue.parse_rfc3339(bad)

    def test_flags_anywhere(self):
        fs = ukue.FlagSet("list", "list FILE")
        fs.add("json", "bool", False, "")
        fs.add("limit", "int", 50, "")
        pos = ukue.parse(fs, ["--limit", "3", "a.ukue", "-json=false", "b", "--", "-c"])
        self.assertEqual(pos, ["a.ukue", "b", "-c"])
        self.assertEqual((fs["limit"], fs["json"]), (3, False))
        fs = ukue.FlagSet("work", "work")
        fs.add("quiet", "bool", False, "")
        pos, tail = ukue.parse_tail(fs, ["f", "--quiet", "q", "--", "cmd", "--quiet"])
        self.assertEqual((pos, tail, fs["quiet"]), (["f", "q"], ["cmd", "--quiet"], True))


class Opening(TempDir):
    def refused(self, name, contains, create="never"):
        path = self.path(name)
        before = open(path, "rb").read() if os.path.exists(path) else None
        listing = sorted(os.listdir(self.dir))
        with self.assertRaises(steps.UkueError) as caught:
            steps.open_file(path, create, NOW)
        self.assertEqual(caught.exception.kind, "refused")
        self.assertIn(contains, str(caught.exception))
        if before is not None:
            self.assertEqual(open(path, "rb").read(), before, "the file changed")
        self.assertEqual(sorted(os.listdir(self.dir)), listing, "files came or went")

    def test_refusals_leave_the_file_alone(self):
        self.refused("missing.ukue", "doesn't exist")
        with open(self.path("text.ukue"), "w") as f:
            f.write("not a database " * 300)
        self.refused("text.ukue", "not a SQLite database")
        self.refused("text.ukue", "not a SQLite database", "any")
        open(self.path("empty.ukue"), "w").close()
        self.refused("empty.ukue", "no ukue tables")
        for name, version, contains in [("v2", "2", "format 2"), ("abc", "abc", "'abc'"), ("v0", "0", "'0'")]:
            con = self.new_file(name)
            con.execute("UPDATE ukue_meta SET value = ? WHERE key = 'format_version'", (version,))
            con.close()
            for create in ("never", "any"):
                self.refused(name, contains, create)
        con = self.new_file("noversion")
        con.execute("DELETE FROM ukue_meta WHERE key = 'format_version'")
        con.close()
        self.refused("noversion", "no format_version", "any")
        con = self.new_file("half")
        con.execute("DROP TABLE ukue_meta")
        con.close()
        self.refused("half", "no ukue_meta", "any")

    def test_half_made_file_in_rollback_mode(self):
        path = self.path("half.db")
        con = sqlite3.connect(path)
        con.execute(steps.CREATE_JOBS)
        con.commit()
        con.close()
        self.refused("half.db", "no ukue_meta", "never")
        # The published init and add set WAL mode before they find the file
        # half-made; this command does as they do.
        with self.assertRaises(steps.UkueError):
            steps.open_file(path, "any", NOW)
        with open(path, "rb") as f:
            self.assertEqual(f.read(20)[18:20], b"\x02\x02")

    def test_new_file(self):
        con = self.new_file()
        self.assertEqual(con.execute("PRAGMA application_id").fetchone()[0], steps.APPLICATION_ID)
        self.assertEqual(con.execute("PRAGMA journal_mode").fetchone()[0], "wal")
        meta = dict(con.execute("SELECT key, value FROM ukue_meta"))
        self.assertEqual(meta, {"format_version": "1", "created_at": str(NOW), "created_by": steps.CREATED_BY})
        sql = {name: s for name, s in con.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL")}
        self.assertEqual(sql["ukue_jobs_due"], steps.CREATE_INDEX_DUE)
        self.assertEqual(sql["ukue_jobs"], steps.CREATE_JOBS)

    def test_tables_added_to_an_application_database(self):
        path = self.path("app.db")
        app = sqlite3.connect(path)
        app.execute("PRAGMA application_id = 42")
        app.execute("CREATE TABLE notes (x)")
        app.execute("INSERT INTO notes VALUES (1)")
        app.commit()
        app.close()
        self.refused("app.db", "no ukue tables", "new")
        con = steps.open_file(path, "any", NOW)
        self.addCleanup(con.close)
        self.assertEqual(con.execute("PRAGMA application_id").fetchone()[0], 42)
        self.assertEqual(con.execute("SELECT count(*) FROM notes").fetchone()[0], 1)
        self.assertEqual(con.execute("SELECT value FROM ukue_meta WHERE key = 'format_version'").fetchone()[0], "1")


class Steps(TempDir):
    def test_claim_order_and_lease(self):
        con = self.new_file()
        low = steps.add(con, "q", b"low", NOW, priority=-1)
        late = steps.add(con, "q", b"late", NOW, priority=5, run_at=NOW - 10)
        early = steps.add(con, "q", b"early", NOW, priority=5, run_at=NOW - 20)
        steps.add(con, "q", b"not yet", NOW, priority=100, run_at=NOW + 1)
        taken = [steps.claim(con, "q", 1000, NOW)[0]["id"] for _ in range(3)]
        self.assertEqual(taken, [early, late, low])
        job, next_due = steps.claim(con, "q", 1000, NOW)
        self.assertEqual((job, next_due), (None, NOW + 1))

    def test_release_is_due_now_and_uncounted(self):
        con = self.new_file()
        job_id = steps.add(con, "q", b"x", NOW, run_at=NOW - 5000)
        job, _ = steps.claim(con, "q", 1000, NOW)
        steps.release(con, job_id, job["token"], NOW + 7)
        row = self.row(con, job_id)
        self.assertEqual((row["state"], row["attempts"], row["run_at"], row["token"], row["lease_until"]),
                         ("ready", 0, NOW + 7, None, None))
        with self.assertRaises(steps.UkueError) as caught:
            steps.release(con, job_id, job["token"], NOW + 8)
        self.assertEqual(caught.exception.kind, "lease_lost")

    def test_reaping(self):
        con = self.new_file()
        ids = [steps.add(con, "other", b"x", NOW, max_attempts=m) for m in (3, 1)]
        for job_id in ids:
            steps.claim(con, "other", 1000, NOW)
        # A running job without a lease is as good as expired.
        con.execute("UPDATE ukue_jobs SET lease_until = NULL WHERE id = ?", (ids[1],))
        steps.claim(con, "q", 1000, NOW + 1000)
        again, dead = self.row(con, ids[0]), self.row(con, ids[1])
        self.assertEqual((again["state"], again["attempts"], again["token"]), ("ready", 1, None))
        self.assertTrue(NOW + 1000 + 10_000 <= again["run_at"] <= NOW + 1000 + 11_000, again)
        self.assertIn("lease", again["last_error"])
        self.assertEqual((dead["state"], dead["run_at"]), ("dead", NOW))

    def test_fail_and_retry(self):
        con = self.new_file()
        job_id = steps.add(con, "q", b"x", NOW, max_attempts=2)
        job, _ = steps.claim(con, "q", 1000, NOW)
        state, run_at = steps.fail(con, job_id, job["token"], "boom", NOW + 1)
        self.assertEqual(state, "ready")
        self.assertTrue(NOW + 1 + 10_000 <= run_at <= NOW + 1 + 11_000)
        job, _ = steps.claim(con, "q", 1000, run_at)
        self.assertEqual((job["attempt"], job["last_error"]), (2, "boom"))
        self.assertEqual(steps.fail(con, job_id, job["token"], "again", run_at + 1), ("dead", None))
        self.assertEqual(self.row(con, job_id)["run_at"], run_at)
        with self.assertRaises(steps.UkueError):
            steps.retry(con, job_id + 1, NOW)
        steps.retry(con, job_id, NOW + 50)
        self.assertEqual(self.row(con, job_id)["attempts"], 0)
        self.assertTrue(3_600_000 <= steps.backoff_ms(100) <= 3_960_000)

    def test_stats_and_list(self):
        con = self.new_file()
        steps.add(con, "a", b"due", NOW, run_at=NOW - 5)
        steps.add(con, "a", b"later", NOW, run_at=NOW + 50)
        steps.add(con, "b", b"x", NOW)
        job, _ = steps.claim(con, "b", 10, NOW)
        stats = steps.stats(con, NOW + 10)
        self.assertEqual(stats[0], {"queue": "a", "ready": 1, "delayed": 1, "running": 0, "expired": 0,
                                    "dead": 0, "done": 0, "oldest_due": NOW - 5})
        self.assertEqual((stats[1]["running"], stats[1]["expired"]), (0, 1))
        self.assertEqual([j["payload"] for j in steps.list_jobs(con, NOW, state="delayed")], [b"later"])
        self.assertEqual([j["id"] for j in steps.list_jobs(con, NOW, after=1, limit=1)], [2])


class BusyWait(TempDir):
    """until_free's two bounds, with a busy timeout of 0.2 s: another
    connection holds the write lock throughout."""

    def setUp(self):
        super().setUp()
        saved = steps.BUSY_TIMEOUT_MS
        steps.BUSY_TIMEOUT_MS = 200
        self.addCleanup(setattr, steps, "BUSY_TIMEOUT_MS", saved)
        self.con = self.new_file()
        holder = sqlite3.connect(self.path("jobs.ukue"), isolation_level=None)
        self.addCleanup(holder.close)
        holder.execute("BEGIN IMMEDIATE")

    def test_a_stuck_file_is_given_up_after_one_timeout(self):
        started = time.monotonic()
        with self.assertRaises(sqlite3.OperationalError) as caught:
            steps.begin_immediate(self.con)
        self.assertIn("database is locked (no other program wrote to the file for 0.2 s)", str(caught.exception))
        self.assertLess(time.monotonic() - started, 0.2 * steps.BUSY_CAP)

    def test_a_file_others_keep_writing_is_waited_on_up_to_the_cap(self):
        # What the wait sees of others' commits: the file's time changing.
        done = threading.Event()
        self.addCleanup(done.set)

        def touch():
            n = 0
            while not done.wait(0.05):
                n += 1
                os.utime(self.path("jobs.ukue"), ns=(n * 1_000_000, n * 1_000_000))

        threading.Thread(target=touch, daemon=True).start()
        started = time.monotonic()
        with self.assertRaises(sqlite3.OperationalError) as caught:
            steps.begin_immediate(self.con)
        waited = time.monotonic() - started
        self.assertIn("database is locked (others kept writing for", str(caught.exception))
        self.assertGreaterEqual(waited, 0.2 * steps.BUSY_CAP)


class CommandLine(TempDir):
    def test_add_list_show(self):
        f = self.path("jobs.ukue")
        self.assertEqual(run("init", f).stdout.decode(), f"{f} is ready (ukue file format 1)\n")
        out = run("add", f, "q", "--attempts", "0", "--delay", "1h", "hello")
        self.assertEqual((out.returncode, out.stdout), (0, b"1\n"), out.stderr)
        out = run("add", f, "q", stdin=b"\xff\x00")
        self.assertEqual(out.stdout, b"2\n")
        jobs = json.loads(run("list", f, "--json").stdout)["jobs"]
        self.assertEqual([(j["state"], j["max_attempts"], j["last_error"]) for j in jobs],
                         [("delayed", 10, ""), ("ready", 10, "")])
        self.assertEqual(jobs[1]["payload_base64"], "/wA=")
        shown = json.loads(run("show", "--json", f, "1").stdout)
        self.assertEqual(shown, jobs[0])
        self.assertEqual(run("show", f, "99").returncode, 1)
        self.assertEqual(run("purge", f, "--state", "ready").returncode, 2)

    def test_bad_input(self):
        f = self.path("new.ukue")
        out = run("add", f, "", "x")
        self.assertEqual(out.returncode, 1)
        self.assertTrue(out.stderr.startswith(b"ukue add: "), out.stderr)
        # As the published command: the file is made before the job is checked.
        self.assertTrue(os.path.exists(f))
        self.assertEqual(run("list", f).stdout, b"no jobs\n")
        for args, status in [(["q", "x", "--priority", "101"], 1), (["q" * 201, "x"], 1),
                             (["q", "x", "--nope"], 2), (["q", "x", "--delay", "soon"], 2),
                             (["q", "x", "--delay", "-1s"], 1), (["q", "x", "--at", "soon"], 2)]:
            out = run("add", f, *args)
            self.assertEqual(out.returncode, status, (args, out.stderr))
        self.assertEqual(run("work", f, "q").returncode, 2)
        self.assertEqual(run("stats", self.path("missing")).returncode, 1)
        self.assertFalse(os.path.exists(self.path("missing")))


class Work(TempDir):
    SCRIPT = r"""
import os, sys, time
log = os.environ["LOG"]
payload = sys.stdin.read()
with open(log, "a") as f:
    f.write(" ".join([os.environ["UKUE_JOB_ID"], os.environ["UKUE_ATTEMPT"], os.environ["UKUE_MAX_ATTEMPTS"],
                      os.environ["UKUE_QUEUE"], payload, "start"]) + "\n")
if payload.startswith("wait:"):
    while not os.path.exists(payload[5:]):
        time.sleep(0.01)
if payload == "sleep":
    time.sleep(60)
code = int(payload[5:]) if payload.startswith("exit:") else 0
with open(log, "a") as f:
    f.write(f"{os.environ['UKUE_JOB_ID']} end {code}\n")
sys.exit(code)
"""

    def setUp(self):
        super().setUp()
        self.file = self.path("jobs.ukue")
        self.log = self.path("log")
        self.script = self.path("job.py")
        with open(self.script, "w") as f:
            f.write(self.SCRIPT)
        self.assertEqual(run("init", self.file).returncode, 0)

    def add(self, payload, *options):
        out = run("add", self.file, "q", payload, *options)
        self.assertEqual(out.returncode, 0, out.stderr)
        return int(out.stdout)

    def start(self, *options):
        stderr = open(self.path("worker.stderr"), "wb")
        self.addCleanup(stderr.close)
        worker = subprocess.Popen([sys.executable, UKUE, "work", self.file, "q", "--poll", "20ms", *options, "--",
                                   sys.executable, self.script], stderr=stderr, env=dict(os.environ, LOG=self.log))
        self.addCleanup(lambda: worker.poll() is None and worker.kill())
        return worker

    def stderr(self):
        with open(self.path("worker.stderr"), "rb") as f:
            return f.read().decode()

    def lines(self):
        try:
            with open(self.log) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def rows(self):
        con = sqlite3.connect(self.file)
        try:
            return {r[0]: r[1:] for r in con.execute("SELECT id, state, attempts, run_at, last_error FROM ukue_jobs")}
        finally:
            con.close()

    def stop(self, worker):
        worker.send_signal(signal.SIGTERM)
        self.assertEqual(worker.wait(30), 0, self.stderr())

    def test_runs_fails_and_kills(self):
        ok = self.add("fine")
        dead = self.add("exit:65")
        once = self.add("exit:3", "--attempts", "1")
        retried = self.add("exit:4")
        worker = self.start("--keep-done")
        wait_until("every job to run once", lambda: len([l for l in self.lines() if " end " in l]) >= 4)
        wait_until("the last result recorded", lambda: self.rows()[retried][0] == "ready"
                   and self.rows()[ok][0] == "done")
        self.stop(worker)
        self.assertIn(f"{ok} 1 10 q fine start", self.lines())
        rows = self.rows()
        self.assertEqual(rows[ok][:2], ("done", 1))
        self.assertEqual(rows[dead][:2], ("dead", 1))
        self.assertEqual(rows[once][:2], ("dead", 1))
        self.assertEqual(rows[retried][:2], ("ready", 1))
        self.assertIn("status 4", rows[retried][3])

    def test_give_back_on_stop(self):
        job_id = self.add("sleep")
        worker = self.start("--grace", "100ms")
        wait_until("the job to start", lambda: any(l.endswith("start") for l in self.lines()))
        stopped_at = time.time() * 1000
        self.stop(worker)
        state, attempts, run_at, _ = self.rows()[job_id]
        self.assertEqual((state, attempts), ("ready", 0))
        self.assertGreaterEqual(run_at, stopped_at - 50)

    def test_timeout_fails_the_attempt(self):
        job_id = self.add("sleep")
        worker = self.start("--timeout", "200ms")
        wait_until("the attempt to fail", lambda: self.rows()[job_id][0] == "ready" and self.rows()[job_id][1] == 1)
        self.stop(worker)
        self.assertIn("timeout", self.rows()[job_id][3])

    def test_a_busy_file_delays_the_finish_but_loses_nothing(self):
        go = self.path("go")
        job_id = self.add(f"wait:{go}")
        worker = self.start()
        wait_until("the job to start", lambda: any(l.endswith("start") for l in self.lines()))
        blocker = sqlite3.connect(self.file, isolation_level=None)
        try:
            blocker.execute("BEGIN IMMEDIATE")
            open(go, "w").close()
            wait_until("a finish that found the file busy", lambda: "trying again" in self.stderr(), timeout=30)
            self.assertEqual(self.rows_via(blocker)[job_id], "running")
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        wait_until("the job to be finished", lambda: job_id not in self.rows(), timeout=30)
        self.stop(worker)

    @staticmethod
    def rows_via(con):
        return dict(con.execute("SELECT id, state FROM ukue_jobs"))


if __name__ == "__main__":
    unittest.main()
