//! The second implementation, clients/python/ukue.py: the whole suite
//! passes it (its `should` warnings are the published command's own, and
//! listed), and a copy with one statement edited fails the case meant to
//! catch that edit.

mod support;

use std::path::{Path, PathBuf};

use support::*;

fn python_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients/python")
}

/// Runs the suite against `ukue` with `args`, strict, with the Python
/// command's known warnings as expected failures.
fn run_python(ukue: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, Vec<serde_json::Value>, String) {
    let known = python_dir().join("known-warnings.txt");
    let mut all = vec!["--impl", ukue.to_str().unwrap()];
    all.extend(args);
    all.extend(["--strict", "--expected-failures", known.to_str().unwrap()]);
    run_suite(&all, env)
}

/// Half the suite against the Python command: `--partition count:K/2`.
/// The two halves are two tests, which nextest runs side by side: the
/// whole suite in one test was the gate's longest (10 minutes on a loaded
/// 2-core machine), and the gate waited for it alone at its end. Together
/// the halves are the whole run, each case in one of them.
fn half_of_the_suite_passes_the_python_command(k: u8) {
    if !have("python3") {
        return;
    }
    // Each case may take ten minutes, not two: beside the rest of the gate
    // on a 2-core machine (a load of 16), the ioerror cases, which run the
    // Python command under strace, took over two minutes where alone they
    // take 14 to 23 s. A hang still ends the case.
    let partition = format!("count:{k}/2");
    let (code, reports, stderr) = run_python(
        &python_dir().join("ukue.py"),
        &["--jobs", "2", "--case-timeout", "600s", "--partition", &partition],
        &[],
    );
    assert!(reports.len() > 100, "half the suite ran: {} reports\n{stderr}", reports.len());
    let bad: Vec<String> = reports
        .iter()
        .filter(|r| {
            r.get("status")
                .is_some_and(|s| !["pass", "skipped", "expected_failure"].contains(&s.as_str().unwrap_or("")))
        })
        .map(|r| r.to_string())
        .collect();
    assert!(bad.is_empty(), "cases that did not pass the Python command:\n{}\n{stderr}", bad.join("\n"));
    assert_eq!(code, 0, "{stderr}");
    let expected: Vec<&str> = reports
        .iter()
        .filter(|r| r["status"] == "expected_failure")
        .map(|r| r["level"].as_str().unwrap())
        .collect();
    assert!(expected.iter().all(|l| *l == "should"), "a known failure is a `should` case only: {expected:?}");
}

#[test]
fn heavy_the_whole_suite_passes_the_python_command_first_half() {
    half_of_the_suite_passes_the_python_command(1);
}

#[test]
fn heavy_the_whole_suite_passes_the_python_command_second_half() {
    half_of_the_suite_passes_the_python_command(2);
}

/// (what the edit breaks, file, text, replacement, the case meant to catch it)
const EDITS: &[(&str, &str, &str, &str, &str)] = &[
    (
        "the pick takes the lowest priority first",
        "ukue_steps.py",
        "SELECT max(priority) FROM ukue_jobs WHERE queue = ? AND state = 'ready'\",",
        "SELECT min(priority) FROM ukue_jobs WHERE queue = ? AND state = 'ready'\",",
        "steps/claim-order-priority",
    ),
    (
        "finish does not check the token",
        "ukue_steps.py",
        "\"DELETE FROM ukue_jobs WHERE id = ? AND state = 'running' AND token = ?\"",
        "\"DELETE FROM ukue_jobs WHERE id = ? AND state = 'running' AND (token = ? OR 1)\"",
        "leases/stopped-worker-loses-job",
    ),
    (
        "a claim does not count the attempt",
        "ukue_steps.py",
        "SET state = 'running', attempts = attempts + 1,",
        "SET state = 'running', attempts = attempts,",
        "steps/dead-after-max-attempts",
    ),
    (
        "a claim never reaps an expired lease",
        "ukue_steps.py",
        "WHERE state = 'running' AND (lease_until IS NULL OR lease_until <= ?)\", (now,)",
        "WHERE 0 AND state = 'running' AND (lease_until IS NULL OR lease_until <= ?)\", (now,)",
        "steps/lease-reaped-counted",
    ),    (
        "options stop at the first positional argument (Go's flag.Parse)",
        "ukue.py",
        "        positional.append(args[0])\n        args = args[1:]\n",
        "        return positional + args, tail\n",
        "cli/options-anywhere",
    ),
    (
        "--flag=value is not read",
        "ukue.py",
        "            if \"=\" in name[1:]:",
        "            if False:",
        "cli/equals",
    ),
    (
        "the path goes into a SQLite URI unquoted",
        "ukue_steps.py",
        "    quoted = urllib.parse.quote(os.fsencode(path))",
        "    quoted = path",
        "cli/path",
    ),
    (
        "init prints the absolute path",
        "ukue.py",
        "    say(f\"{pos[0]} is ready (ukue file format {steps.FORMAT_VERSION})\")",
        "    say(f\"{os.path.abspath(pos[0])} is ready (ukue file format {steps.FORMAT_VERSION})\")",
        "cli/init-prints",
    ),
    (
        "init makes the file in the working directory, under FILE's last name",
        "ukue.py",
        "    with Opened(pos[0], create=True):\n        pass\n",
        "    with Opened(os.path.basename(pos[0]), create=True):\n        pass\n",
        "cli/init-creates",
    ),
    (
        "init makes an existing file anew",
        "ukue.py",
        "    with Opened(pos[0], create=True):\n        pass\n",
        "    if os.path.exists(pos[0]):\n        os.remove(pos[0])\n    with Opened(pos[0], create=True):\n        pass\n",
        "cli/init-existing",
    ),
    (
        "a payload from stdin loses its last newlines",
        "ukue.py",
        "        return sys.stdin.buffer.read()\n",
        "        return sys.stdin.buffer.read().rstrip(b\"\\n\")\n",
        "cli/add-stdin",
    ),
    (
        "a negative delay is taken",
        "ukue.py",
        "            if delay < 0:\n",
        "            if delay < 0 and False:\n",
        "cli/add-refused",
    ),
    (
        "a delay with --at is taken (--at wins)",
        "ukue.py",
        "            if delay > 0 and at is not None:\n",
        "            if False:\n",
        "cli/add-refused",
    ),
    (
        "a negative --attempts is the default",
        "ukue.py",
        "        attempts = fs[\"attempts\"] or steps.DEFAULT_MAX_ATTEMPTS\n",
        "        attempts = fs[\"attempts\"] if fs[\"attempts\"] > 0 else steps.DEFAULT_MAX_ATTEMPTS\n",
        "cli/add-refused",
    ),
    (
        "a bad --at is an error (exit 1), not a usage error",
        "ukue.py",
        "            raise UsageError(\"--at needs an RFC 3339 time such as 2026-10-06T09:00:00Z\") from None",
        "            raise CommandError(\"--at needs an RFC 3339 time such as 2026-10-06T09:00:00Z\") from None",
        "cli/add-refused",
    ),
    (
        "list shows 100 jobs by default (the library's), not 50",
        "ukue.py",
        "    fs.add(\"limit\", \"int\", 50,",
        "    fs.add(\"limit\", \"int\", 0,",
        "cli/list-limit",
    ),
    (
        "list shows any number of jobs",
        "ukue_steps.py",
        "    limit = 100 if limit <= 0 else min(limit, 1000)\n",
        "    limit = 100 if limit <= 0 else limit\n",
        "cli/list-limit",
    ),
    (
        "list ignores a state it does not know",
        "ukue.py",
        "        raise CommandError(f\"unknown state {json.dumps(state)} (want ready, delayed, running, done or dead)\")\n",
        "        state = \"\"\n",
        "cli/list-state-bad",
    ),
    (
        "show of a missing id prints null and exits 0",
        "ukue.py",
        "    if job is None:\n        raise CommandError(f\"there is no job {job_id}\")\n",
        "    if job is None:\n        return say(\"null\")\n",
        "cli/show-missing",
    ),
    (
        "retry sends back a job in any state",
        "ukue_steps.py",
        "\" WHERE id = ? AND state = 'dead'\", (now, now, job_id))",
        "\" WHERE id = ?\", (now, now, job_id))",
        "cli/retry-delete-bad-ids",
    ),
    (
        "delete skips a missing id",
        "ukue.py",
        "                raise CommandError(f\"there is no job {job_id}\") from None\n",
        "                continue\n",
        "cli/retry-delete-bad-ids",
    ),
    (
        "an error exits 2",
        "ukue.py",
        "    except CommandError as e:\n        complain(f\"ukue {name}: {printable(str(e))}\\n\")\n        return 1\n",
        "    except CommandError as e:\n        complain(f\"ukue {name}: {printable(str(e))}\\n\")\n        return 2\n",
        "cli/error-exit-1",
    ),
    (
        "an error's message lacks `ukue COMMAND: `",
        "ukue.py",
        "    except CommandError as e:\n        complain(f\"ukue {name}: {printable(str(e))}\\n\")\n",
        "    except CommandError as e:\n        complain(f\"{printable(str(e))}\\n\")\n",
        "cli/error-prefix",
    ),
    (
        "ukue without arguments exits 0",
        "ukue.py",
        "        complain(USAGE)\n        return 2\n",
        "        complain(USAGE)\n        return 0\n",
        "cli/usage-exit-2",
    ),
    (
        "add takes a fourth argument",
        "ukue.py",
        "    if not 2 <= len(pos) <= 3:\n",
        "    if len(pos) < 2:\n",
        "cli/usage-exit-2",
    ),
    (
        "purge without --state purges dead jobs",
        "ukue.py",
        "    fs.add(\"state\", \"string\", \"\", \"dead or done (required)\")",
        "    fs.add(\"state\", \"string\", \"dead\", \"dead or done (required)\")",
        "cli/usage-exit-2",
    ),
    (
        "help goes to stderr",
        "ukue.py",
        "    if name in (\"help\", \"-h\", \"--help\"):\n        _write(sys.stdout, USAGE)\n",
        "    if name in (\"help\", \"-h\", \"--help\"):\n        complain(USAGE)\n",
        "cli/help",
    ),
    (
        "the refusal of a newer format names no version",
        "ukue_steps.py",
        "        raise UkueError(\"refused\", f\"{path} uses ukue file format {number}, and this program reads up to\"\n                                   f\" format {FORMAT_VERSION}; use a newer ukue\")\n",
        "        raise UkueError(\"refused\", f\"{path} uses a ukue file format this program does not read\")\n",
        "cli/newer-version-message",
    ),
    (
        "stats of no jobs prints a header only",
        "ukue.py",
        "    if not queues:\n        say(\"no jobs\")\n        return\n",
        "    if not queues:\n        pass\n",
        "cli/stats-text",
    ),
    (
        "list of no jobs prints nothing",
        "ukue.py",
        "    if not jobs:\n        say(\"no jobs\")\n        return\n",
        "    if not jobs:\n        return\n",
        "cli/list-text",
    ),
    (
        "show prints a binary payload raw",
        "ukue.py",
        "    out.append(printable(text) if text is not None else \"(binary; use --json to get it as base64)\")\n",
        "    out.append(printable(text) if text is not None else job[\"payload\"].decode(\"latin-1\"))\n",
        "cli/show-text",
    ),
    (
        "the C1 control characters are written raw",
        "ukue.py",
        "        elif code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:\n",
        "        elif code < 0x20 or code == 0x7F:\n",
        "cli/text-escape",
    ),
    (
        "stats lists the queues in the order their first jobs came",
        "ukue_steps.py",
        "\" FROM ukue_jobs GROUP BY queue ORDER BY queue\", (now, now, now, now, now)",
        "\" FROM ukue_jobs GROUP BY queue ORDER BY min(id)\", (now, now, now, now, now)",
        "cli/stats-queue-order",
    ),
    (
        "format_version read with spaces around it (' 1' is 1)",
        "ukue_steps.py",
        r#"if not re.fullmatch(r"[+-]?[0-9]+", text):"#,
        r#"if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", text):"#,
        "sweep/format-versions",
    ),
    (
        "a queue name's length counted in bytes",
        "ukue_steps.py",
        "if len(queue) > MAX_QUEUE_CHARS:",
        "if len(queue.encode('utf-8')) > MAX_QUEUE_CHARS:",
        "sweep/queue-names",
    ),
    ("durations in µs (U+00B5) are not read", "ukue.py", r#""\u00b5s": 1_000, "#, "", "sweep/delay"),
    (
        "payload_base64 in URL-safe base64",
        "ukue.py",
        r#"base64.b64encode(job["payload"])"#,
        r#"base64.urlsafe_b64encode(job["payload"])"#,
        "sweep/payload-json",
    ),
    (
        "a PAYLOAD argument stripped of spaces and line ends",
        "ukue.py",
        "payload = os.fsencode(pos[2])",
        "payload = os.fsencode(pos[2]).strip()",
        "sweep/payload-argument",
    ),
    (
        "add reads only the first 64 KiB of stdin",
        "ukue.py",
        "return sys.stdin.buffer.read()",
        "return sys.stdin.buffer.read(65536)",
        "sweep/payload-stdin",
    ),
    (
        "work hands its command only the first 64 KiB of a payload",
        "ukue.py",
        r#"child = Child(self.command, env, job["payload"], self.log.lock)"#,
        r#"child = Child(self.command, env, job["payload"][:65536], self.log.lock)"#,
        "sweep/work-stdin",
    ),
    (
        "a number with a + sign is not read (`--priority +5`)",
        "ukue.py",
        r#"if s[:1] in ("+", "-"):"#,
        r#"if s[:1] == "-":"#,
        "sweep/priority",
    ),
    (
        "the tables are added without the switch to WAL",
        "ukue_steps.py",
        r#"con.execute("PRAGMA journal_mode = WAL").fetchall()"#,
        r#"con.execute("PRAGMA journal_mode").fetchall()"#,
        "sweep/app-databases",
    ),
    (
        "work.command-untouched: empty arguments after `--` are dropped",
        "ukue.py",
        "args, tail = args[:at], args[at + 1:]",
        "args, tail = args[:at], [a for a in args[at + 1:] if a]",
        "cli/work-command-untouched",
    ),
    (
        "work.command-not-found: a command that cannot run is not looked for before jobs are claimed",
        "ukue.py",
        "if shutil.which(command[0]) is None:",
        "if False:",
        "cli/work-command-not-found",
    ),
    (
        "work.concurrency-bad: --concurrency 0 is taken",
        "ukue.py",
        "if fs[\"concurrency\"] < 1:",
        "if fs[\"concurrency\"] < 0:",
        "cli/work-bad-options",
    ),
    (
        "work.lease-bad: a lease of 1 or 2 ms is taken",
        "ukue.py",
        "if fs[\"lease\"] < 3 * NS_PER_MS:",
        "if fs[\"lease\"] < NS_PER_MS:",
        "cli/work-bad-options",
    ),
    (
        "work.poll-bad: --poll 0 is taken",
        "ukue.py",
        "if fs[\"poll\"] <= 0:",
        "if fs[\"poll\"] < 0:",
        "cli/work-bad-options",
    ),
    (
        "work.grace-bad: a negative grace of a second is taken",
        "ukue.py",
        "if fs[\"grace\"] < 0:",
        "if fs[\"grace\"] < -NS_PER_S:",
        "cli/work-bad-options",
    ),
    (
        "work.timeout-negative: a negative timeout of a second is taken",
        "ukue.py",
        "if fs[\"timeout\"] < 0:",
        "if fs[\"timeout\"] < -NS_PER_S:",
        "cli/work-bad-options",
    ),
    (
        "work.env-inherited: the command gets only the UKUE_* variables",
        "ukue.py",
        "env = dict(os.environ)",
        "env = {}",
        "cli/work-env-inherited",
    ),
    (
        "work.env-file: UKUE_FILE is made absolute",
        "ukue.py",
        "env.update(UKUE_FILE=self.file,",
        "env.update(UKUE_FILE=os.path.abspath(self.file),",
        "cli/work-env-inherited",
    ),
    (
        "work.output: the command's stdout is thrown away",
        "ukue.py",
        "stderr=subprocess.PIPE, env=env,",
        "stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,",
        "cli/work-output",
    ),
    (
        "work.quiet: --quiet is ignored",
        "ukue.py",
        "self.least = 1 if quiet else 0",
        "self.least = 0",
        "cli/work-output",
    ),
    (
        "work.exit-other: every failing status is permanent",
        "ukue.py",
        "status == EXIT_PERMANENT",
        "status != 0",
        "cli/work-exit-other",
    ),
    (
        "work.last-error: a failed attempt's last_error is empty",
        "ukue.py",
        "con, job[\"id\"], job[\"token\"], error, steps.now_ms(), permanent=permanent))",
        "con, job[\"id\"], job[\"token\"], \"\", steps.now_ms(), permanent=permanent))",
        "cli/work-exit-other",
    ),
    (
        "work.last-error-stderr: last_error holds none of the command's stderr",
        "ukue.py",
        "error = f\"{error}: {detail}\"",
        "error = error",
        "cli/work-last-error-text",
    ),
    (
        "work.timeout-reason: a timed-out attempt's last_error does not say so",
        "ukue.py",
        "error, permanent = f\"stopped after the {format_duration(self.timeout_ns)} timeout\", False",
        "error, permanent = \"stopped\", False",
        "cli/work-last-error-text",
    ),
    (
        "work.background-output: the worker waits until nothing holds the command's stderr",
        "ukue.py",
        "status, stopped, cancelled = self.supervise(con, job, child, lease)",
        "status, stopped, cancelled = self.supervise(con, job, child, lease); child._forwarder.join()",
        "cli/work-background-output",
    ),
    (
        "work.concurrency: two commands at once by default",
        "ukue.py",
        "fs.add(\"concurrency\", \"int\", 1, \"jobs to run at once\")",
        "fs.add(\"concurrency\", \"int\", 2, \"jobs to run at once\")",
        "cli/work-concurrency",
    ),
    (
        "work.concurrency: one command at a time, whatever --concurrency says",
        "ukue.py",
        "for n in range(self.concurrency)]",
        "for n in range(1)]",
        "cli/work-concurrency",
    ),
    (
        "work.lease: --lease is ignored, every lease is 1m",
        "ukue.py",
        "self.lease_ms = max(lease_ns // NS_PER_MS, 1)",
        "self.lease_ms = 60_000",
        "cli/work-lease",
    ),
    (
        "work.poll: an idle worker looks again every second, whatever --poll says",
        "ukue.py",
        "                wait = self.poll_s\n",
        "                wait = 1.0\n",
        "cli/work-poll",
    ),
    (
        "work.poll: an idle worker looks again every 3 s by default",
        "ukue.py",
        "fs.add(\"poll\", \"duration\", NS_PER_S,",
        "fs.add(\"poll\", \"duration\", 3 * NS_PER_S,",
        "cli/work-poll",
    ),
    (
        "work.stop: a stopped worker goes on claiming jobs",
        "ukue.py",
        "while not self.stopping.is_set():",
        "while True:",
        "cli/work-stop",
    ),
    (
        "work.stop: on SIGTERM running commands are stopped at once",
        "ukue.py",
        "grace_at = self.stopper.at + self.grace_s if stopping else None",
        "grace_at = self.stopper.at if stopping else None",
        "cli/work-stop",
    ),
    (
        "work.stop-exit: a stopped worker exits without waiting for its commands",
        "ukue.py",
        "while t.is_alive():",
        "while t.is_alive() and not self.stopping.is_set():",
        "cli/work-stop",
    ),
    (
        "work.stop-twice: a second SIGINT is ignored",
        "ukue.py",
        "signal.signal(signal.SIGINT, signal.SIG_DFL)",
        "signal.signal(signal.SIGINT, signal.SIG_IGN)",
        "cli/work-stop",
    ),
    (
        "work.stop-kill: SIGTERM and SIGKILL reach the command alone, not its group",
        "ukue.py",
        "os.killpg(self.pid, sig)",
        "os.kill(self.pid, sig)",
        "cli/work-stop-kill",
    ),
    (
        "work.stop-kill: SIGKILL comes with SIGTERM, not 10 s later",
        "ukue.py",
        "KILL_DELAY = 10.0",
        "KILL_DELAY = 0.0",
        "cli/work-stop-kill",
    ),
    (
        "work.lease-lost: a renewal that finds the job gone is taken for a passing error",
        "ukue.py",
        "if e.kind == \"lease_lost\":",
        "if False:",
        "cli/work-stop-kill",
    ),
    // The cost of the steps (scale/*): the same answers, slower as the file grows.
    (
        "the pick sorts every due job of a priority in the table (NOT INDEXED)",
        "ukue_steps.py",
        "\"SELECT id FROM ukue_jobs WHERE queue = ? AND state = 'ready' AND priority = ? AND run_at <= ?\"",
        "\"SELECT id FROM ukue_jobs NOT INDEXED WHERE queue = ? AND state = 'ready' AND priority = ? AND run_at <= ?\"",
        "scale/claim-delayed-higher",
    ),
    (
        "a claim's first look for a due job walks the table (NOT INDEXED)",
        "ukue_steps.py",
        "\"SELECT EXISTS (SELECT 1 FROM ukue_jobs WHERE queue = ? AND state = 'ready' AND run_at <= ?),\"",
        "\"SELECT EXISTS (SELECT 1 FROM ukue_jobs NOT INDEXED WHERE queue = ? AND state = 'ready' AND run_at <= ?),\"",
        "scale/empty-claim",
    ),
    (
        "work.no-create: work creates a missing file",
        "ukue.py",
        "    with Opened(file):\n        pass",
        "    with Opened(file, create=True):\n        pass",
        "refusal/missing-path",
    ),
];

#[test]
fn heavy_each_edited_python_statement_fails_the_case_meant_to_catch_it() {
    if !have("python3") {
        return;
    }
    let escaped: Vec<String> = each_in_parallel(EDITS, HEAVY_THREADS, |(what, file, from, to, case)| {
        let dir = tempfile::tempdir().unwrap();
        for name in ["ukue.py", "ukue_steps.py"] {
            std::fs::copy(python_dir().join(name), dir.path().join(name)).unwrap();
        }
        let target = dir.path().join(file);
        let text = std::fs::read_to_string(&target).unwrap();
        assert_eq!(
            text.matches(from).count(),
            1,
            "{file} no longer holds {from:?} once: the edit `{what}` rotted"
        );
        std::fs::write(&target, text.replacen(from, to, 1)).unwrap();
        let (code, reports, stderr) = run_python(&dir.path().join("ukue.py"), &["--cases", case], &[]);
        let status =
            reports.iter().find(|r| r["id"] == *case).and_then(|r| r["status"].as_str()).unwrap_or("missing");
        (code != 1 || !["fail", "timeout", "error"].contains(&status))
            .then(|| format!("{what}: {case} was {status} (exit {code}) {stderr}"))
    })
    .into_iter()
    .flatten()
    .collect();
    assert!(escaped.is_empty(), "edited Python commands the suite passed:\n{}", escaped.join("\n"));
}
