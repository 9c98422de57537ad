"""Another process holds the store's write lock (a sqlite3 `BEGIN EXCLUSIVE` left open, as a
shell or a second tool would) while `maxkernel optimize` writes to it. A lock released within
the busy timeout only delays the run, which then finishes; a lock held past it stops the run
with "database is locked" naming the store and how to resume, exit 1. Either way the database
stays sound (PRAGMA integrity_check), and the stopped run resumes once the lock is gone.
The lock holder is a real process (python's sqlite3 module) on the same file."""
import json
import os
import sqlite3
import subprocess
import sys
import time

from conftest import maxkernel, python, wait_until, worker_processes

# Holds the write lock until told to let go (a line on stdin), reporting each step on stdout.
HOLDER = r"""
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=120, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
print("released", flush=True)
"""


class LockHolder:
    def __init__(self, store):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(store)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "locked"  # blocks until it has the lock
        self.locked_at = time.monotonic()

    def release(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "released"
        assert self.proc.wait(timeout=30) == 0

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def command(kernel, store, *extra):
    return [maxkernel(), "optimize", str(kernel), "--python", python(), "--store", str(store),
            "--format", "json", "--no-report", "--branches", "2", *extra]


def env_for(store, busy_ms=None):
    env = dict(os.environ, MAXKERNEL_STORE=str(store))
    if busy_ms is not None:
        env["MAXKERNEL_STORE_BUSY_TIMEOUT_MS"] = str(busy_ms)
    return env


def integrity(store):
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0]


def test_a_lock_released_within_the_busy_timeout_only_delays_the_run(tmp_path, kernel):
    store = tmp_path / "store.sqlite"
    holder = LockHolder(store)  # before the run opens the store: its first write must wait
    try:
        proc = subprocess.Popen(command(kernel, store, "--budget", "iterations=1"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env_for(store, busy_ms=60000))
        try:
            # The run can get nowhere while the lock is held: it has not written its run yet.
            # Hold the lock for a while (the fault itself), then let go.
            held = 3.0
            try:
                proc.wait(timeout=held)
            except subprocess.TimeoutExpired:
                pass
            assert proc.poll() is None, proc.stderr.read()
            holder.release()
            out, err = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        holder.kill()
    wait_until(lambda: not worker_processes(store), 60, "the workers to exit")
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "done", result
    assert "database is locked" not in err
    assert integrity(store) == "ok"


def test_a_lock_held_past_the_timeout_stops_the_run_resumably(tmp_path, kernel):
    store = tmp_path / "store.sqlite"
    proc = subprocess.Popen(command(kernel, store, "--budget", "iterations=2"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env_for(store, busy_ms=1500))
    holder = None
    try:
        stderr = []
        for line in proc.stderr:
            stderr.append(line)
            if "| node 0 " in line:  # the baseline is recorded; the next writes meet the lock
                holder = LockHolder(store)
                break
        assert holder is not None, "".join(stderr)
        out, rest = proc.communicate(timeout=600)
        stderr = "".join(stderr) + rest
        waited = time.monotonic() - holder.locked_at
        holder.release()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if holder:
            holder.kill()
    wait_until(lambda: not worker_processes(store), 60, "the workers to exit")
    assert proc.returncode == 1, stderr
    assert out == ""
    assert "terminate called" not in stderr
    assert "database is locked" in stderr, stderr
    assert str(store) in stderr, stderr
    assert waited >= 1.5, waited  # it waited for the busy timeout before giving up
    assert integrity(store) == "ok"
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        ((run_id, status),) = db.execute("SELECT id, status FROM runs").fetchall()
    assert status == "running"
    assert f"maxkernel runs resume {run_id}" in stderr, stderr

    # The lock is gone: the run resumes and finishes.
    r = subprocess.run([maxkernel(), "runs", "resume", run_id, "--python", python(), "--store",
                        str(store), "--format", "json", "--no-report"],
                       capture_output=True, text=True, timeout=600, env=env_for(store))
    wait_until(lambda: not worker_processes(store), 60, "the workers to exit")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "done"
    assert integrity(store) == "ok"
