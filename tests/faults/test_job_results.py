"""Finished jobs leave only the latest result per document and kernel (ARCHITECTURE.md, memory
held for a session does not grow with the work done): Test run again and again on one kernel
shows one verdict, the newest, and no job stays counted as running."""
import shutil
from pathlib import Path

import pytest
from lsp_client import LspClient

TASK = Path(__file__).resolve().parents[1] / "worker" / "tasks" / "infile" / "scale_add.py"


@pytest.fixture
def server(tmp_path, monkeypatch):
    monkeypatch.setenv("MAXKERNEL_STORE", str(tmp_path / "store.sqlite"))
    c = LspClient()
    c.initialize()
    yield c
    c.close()


def run_to_end(c, command, uri):
    started = c.request("workspace/executeCommand",
                        {"command": command, "arguments": [{"uri": uri, "kernel": 0}]})["result"]
    assert started["status"] == "started", started
    while True:
        p = c.wait_notification("$/progress", lambda p: p["token"] == started["progressToken"],
                                timeout=180)
        if p["value"]["kind"] == "end":
            return p["value"].get("message", "")


def verdicts(c, uri, code):
    return [d for d in c.diagnostics(uri) if d["code"] == code]


def test_repeated_jobs_leave_one_result_per_kernel_the_newest(server, tmp_path):
    path = tmp_path / "scale_add.py"
    shutil.copy(TASK, path)
    uri = path.as_uri()
    server.open(uri, path.read_text())
    server.diagnostics(uri, version=1)

    first = run_to_end(server, "maxkernel.test", uri)
    (verdict,) = verdicts(server, uri, "MK200")
    assert verdict["message"].startswith("Test passed on local:"), verdict["message"]
    assert "(cached)" not in first
    for _ in range(3):  # the same kernel again: answered from the evaluation cache
        run_to_end(server, "maxkernel.test", uri)
    (verdict,) = verdicts(server, uri, "MK200")  # one verdict, not four
    assert verdict["message"].startswith("Test passed on local (cached):"), verdict["message"]
    hints = server.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 200, "character": 0}}})["result"]
    assert len([h for h in hints if "interpret" in str(h["label"])]) == 1, hints
    status = server.request("maxkernel/status")["result"]
    assert status["runningJobs"]["kernel"] == 0, status
