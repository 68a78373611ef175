#!/usr/bin/env python3
"""A ukue worker over HTTP, in Python's standard library: it claims jobs
from `ukue serve`, runs a command for each, and acks, fails or extends.

    ukue serve jobs.ukue
    clients/python/http_worker.py emails -- ./send-email.sh

As `ukue work` does: the command gets the payload on stdin and, in its
environment, UKUE_URL, UKUE_QUEUE, UKUE_JOB_ID, UKUE_ATTEMPT and
UKUE_MAX_ATTEMPTS. Exit 0 acks the job, 65 sends it to dead at once, any
other exit fails the attempt (the server retries it after the backoff).
While the command runs the lease is extended every third of --lease; a
lost lease stops the command. SIGINT or SIGTERM stops claiming, gives a
running command --grace seconds, then stops it and releases its job.

The server is UKUE_URL (default http://127.0.0.1:7660) or --url; the token,
if it needs one, UKUE_TOKEN. A server that cannot be reached, or that
answers 5xx (its file busy with other writers: "database is locked"), is
tried again, so the worker outlives a restart of the server and a busy file.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

PERMANENT = 65


class Lost(Exception):
    """The server answered 409: this worker no longer holds the job."""


class Unavailable(RuntimeError):
    """The server answered 5xx: it could not do it now (a busy file)."""


class Stop(Exception):
    """A signal came while the worker waited for a job."""


class Client:
    def __init__(self, url, token):
        self.url = url.rstrip("/")
        self.token = token

    def call(self, path, body, timeout):
        """POST one request; the decoded JSON, None for 204. Raises Lost on
        409, Unavailable on 5xx, RuntimeError on any other refusal, OSError
        when unreachable."""
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return None if resp.status == 204 else json.load(resp)
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            if e.code == 409:
                raise Lost(detail) from None
            if e.code >= 500:
                raise Unavailable(f"POST {path}: HTTP {e.code}: {detail}") from None
            raise RuntimeError(f"POST {path}: HTTP {e.code}: {detail}") from None

    def settle(self, path, body, stopping):
        """A call that must reach the server (ack, fail, release): tried
        again while the server is unreachable. False when the job was lost."""
        pause = 0.1
        while True:
            try:
                self.call(path, body, timeout=30)
                return True
            except Lost:
                return False
            except (OSError, urllib.error.URLError, Unavailable) as e:
                log(f"{path}: {e}; trying again")
                time.sleep(pause)
                pause = min(pause * 2, 5.0)


def log(message):
    print(f"http_worker: {message}", file=sys.stderr, flush=True)


class Worker:
    def __init__(self, args):
        self.args = args
        self.client = Client(args.url, os.environ.get("UKUE_TOKEN", ""))
        self.stopping = threading.Event()
        self.waiting = False  # in a claim: a signal may interrupt it

    def on_signal(self, signum, frame):
        self.stopping.set()
        if self.waiting:
            raise Stop()

    def claim(self):
        body = {"queue": self.args.queue, "lease": self.args.lease, "wait": self.args.wait}
        pause = 0.1
        while not self.stopping.is_set():
            self.waiting = True
            try:
                return self.client.call("/v1/claim", body, timeout=self.args.wait + 30)
            except Stop:
                return None
            except (OSError, urllib.error.URLError, Unavailable) as e:
                log(f"claim: {e}; trying again")
            finally:
                self.waiting = False
            self.stopping.wait(pause)
            pause = min(pause * 2, 5.0)
        return None

    def run(self, job):
        """Runs the command for a claimed job and settles it."""
        jid, token = job["id"], job["token"]
        path = f"/v1/jobs/{jid}"
        env = dict(os.environ, UKUE_URL=self.client.url, UKUE_QUEUE=job["queue"], UKUE_JOB_ID=str(jid),
                   UKUE_ATTEMPT=str(job["attempt"]), UKUE_MAX_ATTEMPTS=str(job["max_attempts"]))
        if "payload" in job:
            payload = job["payload"].encode()
        else:
            import base64
            payload = base64.b64decode(job["payload_base64"])
        proc = subprocess.Popen(self.args.command, stdin=subprocess.PIPE, env=env, start_new_session=True)
        lost = threading.Event()
        done = threading.Event()

        def extend():
            while not done.wait(self.args.lease / 3):
                try:
                    self.client.call(path + "/extend", {"token": token, "lease": self.args.lease}, timeout=30)
                except Lost:
                    lost.set()
                    log(f"job {jid}: lease lost; stopping its command")
                    stop_group(proc)
                    return
                except (OSError, urllib.error.URLError, RuntimeError) as e:
                    log(f"job {jid}: extend: {e}")

        extender = threading.Thread(target=extend, daemon=True)
        extender.start()
        try:
            proc.stdin.write(payload)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        stopped_at = None
        while True:
            try:
                status = proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                pass
            if self.stopping.is_set() and stopped_at is None:
                stopped_at = time.monotonic()
            if stopped_at is not None and time.monotonic() - stopped_at > self.args.grace:
                stop_group(proc)
        done.set()
        extender.join()
        if lost.is_set():
            return
        if stopped_at is not None and status != 0:
            # Stopped by us: not the job's fault, so the attempt is given back.
            self.client.settle(path + "/release", {"token": token}, self.stopping)
        elif status == 0:
            if not self.client.settle(path + "/ack", {"token": token}, self.stopping):
                log(f"job {jid}: done, but the lease was lost before the ack")
        else:
            body = {"token": token, "error": f"exit status {status}"}
            if status == PERMANENT:
                body["dead"] = True
            self.client.settle(path + "/fail", body, self.stopping)
        if not self.args.quiet:
            log(f"job {jid} (attempt {job['attempt']}): exit {status}")

    def loop(self):
        signal.signal(signal.SIGTERM, self.on_signal)
        signal.signal(signal.SIGINT, self.on_signal)
        while not self.stopping.is_set():
            job = self.claim()
            if job is None:
                if self.args.once:
                    return 1
                continue
            self.run(job)
            if self.args.once:
                return 0
        return 0


def stop_group(proc):
    """SIGTERM to the command's process group, SIGKILL 10 s later."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main(argv):
    p = argparse.ArgumentParser(prog="http_worker.py", description=__doc__.split("\n\n")[0])
    p.add_argument("queue")
    p.add_argument("--url", default=os.environ.get("UKUE_URL", "http://127.0.0.1:7660"))
    p.add_argument("--lease", type=float, default=60.0, help="seconds (default 60)")
    p.add_argument("--wait", type=float, default=20.0, help="seconds a claim waits for a job (at most 30)")
    p.add_argument("--grace", type=float, default=30.0, help="seconds a running command gets after a stop")
    p.add_argument("--once", action="store_true", help="run one job, then exit (1 when none came)")
    p.add_argument("--quiet", action="store_true")
    if "--" not in argv:
        p.error("give the command after --")
    split = argv.index("--")
    args = p.parse_args(argv[:split])
    args.command = argv[split + 1:]
    if not args.command:
        p.error("give the command after --")
    return Worker(args).loop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
