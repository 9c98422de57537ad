"""The load bench's own checks: the typing model keeps documents bounded, and a short real run
against the server answers every request once and pairs its progress tokens."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402
import workload  # noqa: E402


def test_typing_returns_each_document_to_its_text_and_versions_only_grow():
    docs = workload.generate_documents(5, 12, 4, 300)
    for d in docs:
        d.uri = f"file:///load/{d.name}"
    typist = workload.Typist(docs, 9)
    versions = {}
    for _ in range(2000):
        doc, params = typist.keystroke()
        v = params["textDocument"]["version"]
        assert v > versions.get(doc.uri, 1)
        versions[doc.uri] = v
        (change,) = params["contentChanges"]
        assert len(change["text"]) <= 5  # one keystroke (Enter inserts the indent too)
    finished = [d for d in docs if d is not typist.current]
    assert len(versions) > 4 and all(d.text() == d.text_at_open for d in finished)
    assert all(d.call_positions() for d in docs)


def test_task_documents_carry_a_task_and_differ():
    docs = workload.generate_documents(5, 6, 3, 300)
    tasks = [d for d in docs if d.has_task]
    assert len(tasks) == 3 and len({d.text_at_open for d in tasks}) == 3
    assert all("def make_inputs" in d.text_at_open and "def reference" in d.text_at_open for d in tasks)


@pytest.mark.skipif(not Path(run.default_binary()).exists() and "MAXKERNEL_LSP" not in os.environ,
                    reason="no maxkernel-lsp built")
def test_a_short_run_answers_every_request_once_and_pairs_progress(tmp_path):
    out = tmp_path / "load.json"
    proc = subprocess.run([sys.executable, str(HERE / "run.py"), "--seconds", "15", "--warmup", "5", "--docs", "8",
                           "--task-docs", "2", "--jobs", "1", "--drain-seconds", "0", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert all(report["checks"].values()), report["checks"]
    assert report["exit_code"] == 0
    assert report["workload"]["keystrokes"] >= 100
    assert report["latency_ms"]["didChange->publishDiagnostics"]["all"]["n"] == report["workload"]["keystrokes"]
    assert report["progress"]["tokens"] >= 1 and not report["progress"]["unpaired"]
    assert len(report["memory"]["samples"]) >= 5
    # The server's own account is sampled alongside: [t, rss, heap in use, heap held, sqlite].
    own = report["memory"]["server_account"]["samples"]
    assert len(own) >= 5
    assert all(rss > 0 and 0 < heap <= held for _, rss, heap, held, _ in own)
    assert all(sqlite >= 0 for *_, sqlite in own) and own[-1][4] > 0  # a job opened the store
