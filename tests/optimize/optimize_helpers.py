"""Shared by the claim tests in tests/optimize: the binaries, a kernel copy, the run store's rows,
and a replay server (agents/replay) this test starts itself, so it can read the request log
(GET /_log) after the run: what each sub-agent was actually sent."""
import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
KERNELS = HERE / "kernels"
FIXTURES = HERE / "fixtures"
REPLAY = ROOT / "agents" / "replay" / "replay_server.py"


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def python():
    return os.environ.get("MAXKERNEL_PYTHON", str(ROOT / ".venv" / "bin" / "python"))


def kernel_copy(tmp, name="scale_rows.py", text=None):
    path = tmp / name
    path.write_text(text if text is not None else (KERNELS / name).read_text())
    return path


def optimize_args(kernel, store, *extra):
    return [maxkernel(), "optimize", str(kernel), "--python", python(), "--store", str(store),
            "--format", "json", "--no-report", *map(str, extra)]


def optimize(kernel, store, *extra, env=None, timeout=600):
    return subprocess.run(optimize_args(kernel, store, *extra), check=False, capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=kernel.parent)


def runs(*args, store, timeout=600, env=None):
    return subprocess.run([maxkernel(), "runs", *map(str, args), "--store", str(store)],
                          check=False, capture_output=True, text=True, timeout=timeout, env=env)


def node_rows(store, run_id):
    with sqlite3.connect(store) as db:
        return db.execute(
            "SELECT id, parent, status, code_hash, finished_at, metrics_json, speedup, strategy "
            "FROM nodes WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()


def run_state(store, run_id):
    """The search state a run keeps between sessions (round counter, elapsed time)."""
    with sqlite3.connect(store) as db:
        status, params = db.execute("SELECT status, params_json FROM runs WHERE id = ?",
                                    (run_id,)).fetchone()
    return status, json.loads(params).get("state", {})


@contextmanager
def replay_server(fixture):
    """Runs agents/replay/replay_server.py on `fixture`; yields (spec for --llm, read_log)."""
    proc = subprocess.Popen([sys.executable, str(REPLAY), str(fixture)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("PORT "), f"the replay server said {line!r}"
        url = f"http://127.0.0.1:{int(line.split()[1])}"
        model = json.loads(Path(fixture).read_text())["model"]

        def read_log():
            with urllib.request.urlopen(f"{url}/_log", timeout=10) as r:
                return json.loads(r.read())

        yield f"openai:{model}@{url}/v1", read_log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def sent_text(record):
    """Everything a request sent the model: its messages' contents, joined."""
    body = json.loads(record["body"])
    return "\n".join(m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
                     for m in body["messages"])


def wait_gone(pids, timeout):
    """Seconds until none of `pids` is a live (non-zombie) process, or None after `timeout`."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        alive = []
        for pid in pids:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                alive.append(pid)
        if not alive:
            return time.monotonic() - start
        time.sleep(0.02)
    return None
