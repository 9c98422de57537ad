"""A damaged store file at the store path: random bytes, or a real store cut short (the file
truncated to a fraction of its size, as a full disk or a bad copy leaves it). `maxkernel
optimize` and `maxkernel knowledge` stop with an error naming the file and saying what to do
(move it away); `maxkernel test` warns the same way and runs uncached; the language server
answers the Auto command with that error and keeps serving its static features. Nothing ever
writes to the damaged file: its bytes are the same afterwards."""
import hashlib
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, maxkernel, python, wait_until, worker_processes
from lsp_client import LspClient

TEST_TASK = ROOT / "tests" / "worker" / "tasks" / "infile" / "scale_add.py"


def env_for(store):
    return dict(os.environ, MAXKERNEL_STORE=str(store))


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def real_store(tmp_path_factory):
    """A store as the CLI makes it (schema, the bundled corpus indexed: many pages)."""
    store = tmp_path_factory.mktemp("real") / "store.sqlite"
    r = subprocess.run([maxkernel(), "knowledge", "search", "vmem", "--store", str(store)],
                       capture_output=True, text=True, timeout=120, env=env_for(store))
    assert r.returncode == 0, r.stderr
    assert not Path(f"{store}-wal").exists()  # closed cleanly: everything is in the main file
    return store


@pytest.fixture(params=["random-bytes", "truncated-half", "truncated-header"])
def damaged(request, tmp_path, real_store):
    store = tmp_path / "store.sqlite"
    if request.param == "random-bytes":
        store.write_bytes(random.Random(7).randbytes(96 * 1024))
    else:
        data = real_store.read_bytes()
        assert len(data) > 64 * 1024, len(data)  # enough pages for a cut to lose some
        store.write_bytes(data[:len(data) // 2] if request.param == "truncated-half" else data[:60])
    return store


def assert_names_the_file_and_the_remedy(text, store):
    assert f"{store} is damaged or not a SQLite database" in text, text
    assert f"mv {store} {store}.damaged" in text, text


def assert_untouched(store, before):
    assert digest(store) == before, "the damaged store was written to"
    wal = Path(f"{store}-wal")
    assert not wal.exists() or wal.stat().st_size == 0, "frames were written for the damaged store"


def test_optimize_and_knowledge_stop_with_the_file_and_what_to_do(damaged, kernel):
    before = digest(damaged)
    r = subprocess.run([maxkernel(), "optimize", str(kernel), "--python", python(), "--store",
                        str(damaged), "--format", "json", "--no-report"],
                       capture_output=True, text=True, timeout=120, env=env_for(damaged))
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert "maxkernel optimize: the run store" in r.stderr, r.stderr
    assert_names_the_file_and_the_remedy(r.stderr, damaged)
    assert_untouched(damaged, before)
    assert not worker_processes(damaged)

    r = subprocess.run([maxkernel(), "knowledge", "search", "vmem", "--store", str(damaged)],
                       capture_output=True, text=True, timeout=60, env=env_for(damaged))
    assert r.returncode == 2, r.stderr
    assert_names_the_file_and_the_remedy(r.stderr, damaged)
    assert_untouched(damaged, before)


def test_test_warns_with_the_file_and_runs_uncached(tmp_path):
    store = tmp_path / "store.sqlite"
    store.write_bytes(random.Random(11).randbytes(32 * 1024))
    before = digest(store)
    task = tmp_path / "scale_add.py"
    shutil.copy(TEST_TASK, task)
    r = subprocess.run([maxkernel(), "test", str(task), "--python", python(), "--store",
                        str(store), "--format", "json"],
                       capture_output=True, text=True, timeout=300, env=env_for(store))
    wait_until(lambda: not worker_processes(store), 30, "the worker to exit")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "ok" and out["result"]["correct"] is True, out
    assert out["from_cache"] is False
    assert "evaluation cache disabled" in r.stderr, r.stderr
    assert_names_the_file_and_the_remedy(r.stderr, store)
    assert_untouched(store, before)


def test_the_server_reports_the_file_and_keeps_serving_static_features(monkeypatch, damaged,
                                                                        kernel):
    before = digest(damaged)
    monkeypatch.setenv("MAXKERNEL_STORE", str(damaged))
    c = LspClient()
    try:
        c.initialize(options={"python": python(), "budget": {"maxIterations": 1}})
        uri = kernel.as_uri()
        c.open(uri, kernel.read_text())
        first = c.diagnostics(uri, version=1)
        answer = c.request("workspace/executeCommand", {
            "command": "maxkernel.optimizeAuto", "arguments": [{"uri": uri, "kernel": 0}]},
            timeout=60)
        assert "error" in answer, answer
        assert_names_the_file_and_the_remedy(answer["error"]["message"], damaged)
        # Static features still work: an edit is analysed again, symbols and lenses answer.
        text = kernel.read_text() + "\n# edited\n"
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                            "contentChanges": [{"text": text}]})
        assert c.diagnostics(uri, version=2) == first
        symbols = c.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        assert symbols["result"], symbols
        lenses = c.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
        assert lenses["result"], lenses
        assert c.shutdown_and_exit() == 0
    finally:
        c.close()
    assert_untouched(damaged, before)
    assert not worker_processes(damaged)
