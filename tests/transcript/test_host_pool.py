"""`maxkernel.host` naming several hosts, through the real server and real JAX workers: a graph
search spreads its evaluations over two local hosts (each node records where it ran), and the
Test lens fails over from a host that cannot be reached. Settings keep the one-name form."""
import json
import shutil
import socket
import sqlite3
from pathlib import Path

from lsp_client import LspClient

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "tests" / "optimize" / "kernels" / "scale_rows.py"
SCALE_ADD = ROOT / "tests" / "worker" / "tasks" / "infile" / "scale_add.py"
PYTHON = str(ROOT / ".venv" / "bin" / "python")
RUN_TIMEOUT = 300  # a shared, busy machine


def local_host(name):
    return {"name": name, "kind": "local", "python": PYTHON, "compileSlots": 1, "timingSlots": 1}


def closed_port_host(name, tmp_path):
    with socket.socket() as s:  # bound and released: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return {"name": name, "kind": "ssh", "destination": "nobody@127.0.0.1", "port": port,
            "sshOptions": ["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"],
            "connectTimeoutSeconds": 5, "python": PYTHON, "remoteDir": str(tmp_path / "r")}


def start(monkeypatch, tmp_path, options):
    monkeypatch.setenv("MAXKERNEL_STORE", str(tmp_path / "store.sqlite"))
    c = LspClient()
    c.initialize(options={"python": PYTHON, **options})
    return c


def test_a_graph_search_spreads_over_the_hosts_the_setting_lists(monkeypatch, tmp_path):
    kernel = tmp_path / "scale_rows.py"
    shutil.copy(KERNEL, kernel)
    c = start(monkeypatch, tmp_path, {"host": ["a", "b"], "hosts": [local_host("a"), local_host("b")],
                                      "budget": {"maxEvaluations": 5, "maxIterations": 10}})
    try:
        uri = c.open_file(kernel)[0]
        started = c.request("workspace/executeCommand", {
            "command": "maxkernel.graphSearch",
            "arguments": [{"uri": uri, "kernel": 0, "strategy": "parallel"}]})["result"]
        values = c.progress_values(started["progressToken"], RUN_TIMEOUT)
        messages = [v.get("message", "") for v in values]
        assert any(m.startswith(f"run {started['run']} on a,b") for m in messages), messages
        with sqlite3.connect(tmp_path / "store.sqlite") as db:
            host, status = db.execute("SELECT host, status FROM runs WHERE id = ?",
                                      (started["run"],)).fetchone()
            metrics = [json.loads(m or "{}") for (m,) in db.execute(
                "SELECT metrics_json FROM nodes WHERE run_id = ?", (started["run"],))]
        assert host == "a,b" and status in ("done", "stopped"), (host, status)
        assert {m["host"] for m in metrics if "host" in m} == {"a", "b"}, metrics
        assert any(" on host b" in m for m in messages), messages
    finally:
        c.close()


def test_the_test_lens_fails_over_from_an_unreachable_host(monkeypatch, tmp_path):
    task = tmp_path / "scale_add.py"
    shutil.copy(SCALE_ADD, task)
    # The one-string form "dead, a"; the dead host first, where an idle pool sends the first job.
    c = start(monkeypatch, tmp_path, {"host": "dead, a",
                                      "hosts": [closed_port_host("dead", tmp_path), local_host("a")]})
    try:
        uri = c.open_file(task)[0]
        started = c.request("workspace/executeCommand", {
            "command": "maxkernel.test", "arguments": [{"uri": uri, "kernel": 0}]})["result"]
        values = c.progress_values(started["progressToken"], RUN_TIMEOUT)
        assert values[1]["message"] == "on dead,a", values
        assert "Test passed on a" in values[-1]["message"], values
    finally:
        c.close()
