"""The editor's server dies or loses its client during an Auto run: SIGKILL leaves the run
`running` and resumable from the CLI (finished nodes are never evaluated again), and its workers
notice the closed pipe and exit; a client that closes stdin without shutdown makes the server
exit 1 with the run `cancelled` (resumable) and no worker left."""
import os
import signal
import sqlite3
import subprocess

import pytest

from conftest import maxkernel, python, wait_until, worker_processes
from lsp_client import LspClient

RUN_TIMEOUT = 300  # one evaluation can take ~10-30 s on a busy 2-core machine


def finished_nodes(store, run_id):
    with sqlite3.connect(store) as db:
        return {row[0]: row for row in db.execute(
            "SELECT id, status, code_hash, finished_at, metrics_json, speedup FROM nodes "
            "WHERE run_id = ? AND finished_at > 0 ORDER BY id", (run_id,))}


def run_status(store, run_id):
    with sqlite3.connect(store) as db:
        return db.execute("SELECT status, stop_reason FROM runs WHERE id = ?", (run_id,)).fetchone()


@pytest.fixture
def server(monkeypatch, tmp_path):
    store = tmp_path / "store.sqlite"
    monkeypatch.setenv("MAXKERNEL_STORE", str(store))
    c = LspClient()
    c.initialize(options={"python": python(), "budget": {"maxIterations": 4}})
    yield c, store
    c.close()
    wait_until(lambda: not worker_processes(store), 60, "the workers to exit")


def start_auto(c, kernel):
    uri = kernel.as_uri()
    c.open(uri, kernel.read_text())
    c.diagnostics(uri, version=1)
    started = c.request("workspace/executeCommand", {
        "command": "maxkernel.optimizeAuto", "arguments": [{"uri": uri, "kernel": 0}]},
        timeout=30)["result"]
    assert started["status"] == "started"
    return started


def wait_for_progress(c, store, started, condition):
    """Waits on the run's progress events until `condition()` holds."""
    while not condition():
        c.wait_notification("$/progress", lambda p: p["token"] == started["progressToken"],
                            timeout=RUN_TIMEOUT)


def test_a_killed_server_leaves_a_run_the_cli_resumes_and_no_orphaned_worker(server, kernel):
    c, store = server
    started = start_auto(c, kernel)
    run_id = started["run"]
    # The baseline and at least one candidate are finished, and a worker is alive.
    wait_for_progress(c, store, started,
                      lambda: len(finished_nodes(store, run_id)) >= 2 and worker_processes(store))
    c.proc.send_signal(signal.SIGKILL)
    assert c.proc.wait(timeout=30) == -signal.SIGKILL
    before = finished_nodes(store, run_id)
    assert run_status(store, run_id)[0] == "running"
    # The workers see their stdin close and exit on their own (nobody is left to kill them).
    wait_until(lambda: not worker_processes(store), 120, "orphaned workers to exit")

    r = subprocess.run([maxkernel(), "runs", "resume", run_id, "--store", str(store),
                        "--python", python()], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, MAXKERNEL_STORE=str(store)), cwd=store.parent)
    assert r.returncode == 0, r.stderr
    status, reason = run_status(store, run_id)
    assert status == "done" and reason, (status, reason)
    after = finished_nodes(store, run_id)
    # Every node finished before the kill is byte-for-byte what it was: not evaluated again.
    for node_id, row in before.items():
        assert after[node_id] == row
    assert len(after) > len(before) or "iterations" in reason or "no gain" in reason
    wait_until(lambda: not worker_processes(store), 60, "the resumed run's workers to exit")


def test_a_client_that_closes_stdin_mid_run_cancels_it_resumably(server, kernel):
    c, store = server
    started = start_auto(c, kernel)
    run_id = started["run"]
    wait_for_progress(c, store, started, lambda: worker_processes(store))
    c.proc.stdin.close()  # no shutdown, no exit: the editor vanished
    assert c.proc.wait(timeout=90) == 1
    status, reason = run_status(store, run_id)
    assert status == "cancelled", (status, reason)
    wait_until(lambda: not worker_processes(store), 60, "the run's workers to exit")
    # Cancelled runs are resumable.
    r = subprocess.run([maxkernel(), "runs", "resume", run_id, "--store", str(store),
                        "--python", python()], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, MAXKERNEL_STORE=str(store)), cwd=store.parent)
    assert r.returncode == 0, r.stderr
    assert run_status(store, run_id)[0] == "done"
