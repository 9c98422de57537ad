"""Auto and graph-search runs from the editor, through the real server, real JAX workers and a
real SQLite run store: progress, the MK300 result, the "Apply best variant" quick fix (a versioned,
annotated workspace edit), refusal after an edit, cancel, exit during a run, and the report."""
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from lsp_client import LspClient, apply_text_edits

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "tests" / "optimize" / "kernels" / "scale_rows.py"
PYTHON = ROOT / ".venv" / "bin" / "python"
RUN_TIMEOUT = 240  # a shared, busy machine: one evaluation can take ~10 s


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    # One store for the module: the evaluation cache makes repeated candidates cheap.
    return tmp_path_factory.mktemp("store") / "store.sqlite"


@pytest.fixture
def kernel(tmp_path):
    path = tmp_path / "scale_rows.py"
    shutil.copy(KERNEL, path)
    return path


def start_server(monkeypatch, store, budget, on_apply=None, **options):
    monkeypatch.setenv("MAXKERNEL_STORE", str(store))
    requests = {"workspace/applyEdit": on_apply or (lambda params: {"applied": False})}
    c = LspClient(server_requests=requests)
    c.initialize(options={"python": str(PYTHON), "budget": budget, **options})
    return c


def execute(c, command, argument, timeout=30):
    return c.request("workspace/executeCommand", {"command": command, "arguments": [argument]},
                     timeout=timeout)


def mk300(c, uri):
    params = c.wait_notification(
        "textDocument/publishDiagnostics",
        lambda p: p["uri"] == uri and any(d.get("code") == "MK300" for d in p["diagnostics"]),
        timeout=RUN_TIMEOUT)
    (d,) = [d for d in params["diagnostics"] if d["code"] == "MK300"]
    return d


def run_row(store, run_id):
    with sqlite3.connect(store) as db:
        return db.execute("SELECT status, best_node FROM runs WHERE id = ?", (run_id,)).fetchone()


def node_code(store, run_id, node):
    with sqlite3.connect(store) as db:
        return db.execute("SELECT code FROM nodes WHERE run_id = ? AND id = ?",
                          (run_id, node)).fetchone()[0]


def worker_processes(store):
    """Live maxkernel_worker.py processes started for this store (workers inherit the env)."""
    found = []
    marker = f"MAXKERNEL_STORE={store}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue  # gone meanwhile, or not ours
        if b"maxkernel_worker.py" in cmdline and marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def block_rows(text):
    return int(re.search(r"^BLOCK_ROWS = (\d+)$", text, re.MULTILINE).group(1))


def test_auto_run_reports_applies_the_best_variant_and_refuses_after_an_edit(monkeypatch, store, kernel):
    applied = []

    def accept(params):
        applied.append(params)
        return {"applied": True}

    c = start_server(monkeypatch, store, {"maxIterations": 1}, on_apply=accept)
    try:
        uri, text = c.open_file(kernel)
        started = execute(c, "maxkernel.optimizeAuto", {"uri": uri, "kernel": 0})["result"]
        assert started["status"] == "started" and started["job"] and started["run"]
        values = c.progress_values(started["progressToken"], RUN_TIMEOUT)
        assert values[0]["kind"] == "begin" and values[0]["cancellable"] is True
        reports = [v for v in values if v["kind"] == "report" and v["message"].startswith("iteration")]
        assert reports and "predicted (model, v5e)" in reports[-1]["message"]
        assert any("percentage" in v for v in reports)

        d = mk300(c, uri)
        assert d["severity"] == 3 and d["source"] == "maxkernel"
        m = re.match(r"Auto: best (\d+\.\d\d)x predicted \(model, v5e\) after (\d+) evaluations \u2014 node (\d+): ",
                     d["message"])
        assert m, d["message"]
        assert float(m.group(1)) > 1.0
        assert d["range"]["start"]["line"] == next(
            i for i, l in enumerate(text.splitlines()) if "pl.pallas_call(" in l)
        status, best = run_row(store, started["run"])
        assert status == "done" and best == int(m.group(3))  # runs end done, failed or cancelled

        lenses = c.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
        titles = [l["command"]["title"] for l in lenses]
        assert f"Best {m.group(1)}x" in titles and "Report" in titles

        actions = c.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": d["range"],
            "context": {"diagnostics": [d]}})["result"]
        (fix,) = [a for a in actions if a["title"].startswith("Apply best variant")]
        assert fix["kind"] == "quickfix"
        answer = c.request("workspace/executeCommand", fix["command"], timeout=30)["result"]
        assert answer["status"] == "applied"

        (edit_params,) = applied
        (change,) = edit_params["edit"]["documentChanges"]
        assert change["textDocument"] == {"uri": uri, "version": 1}
        edits = change["edits"]
        (annotation_id,) = {e["annotationId"] for e in edits}
        annotation = edit_params["edit"]["changeAnnotations"][annotation_id]
        assert annotation["needsConfirmation"] is True
        # Only the lines that differ: most of the module stays out of the edit.
        covered = sum(e["range"]["end"]["line"] - e["range"]["start"]["line"] for e in edits)
        assert covered < len(text.splitlines()) // 2, edits
        new_text = apply_text_edits(text, edits)
        assert new_text == node_code(store, started["run"], best)
        assert block_rows(new_text) > block_rows(text)

        # The client applied it: the document moved on, so applying again is refused.
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                            "contentChanges": [{"text": new_text}]})
        refused = execute(c, "maxkernel.applyBestVariant", {"uri": uri, "run": started["run"]})["result"]
        assert refused["status"] == "refused" and "changed since the run started" in refused["message"]
        shown = c.wait_notification("window/showMessage", lambda p: "not applied" in p["message"])
        assert "version 1, now 2" in shown["message"]
        assert len(applied) == 1

        report = execute(c, "maxkernel.openReport", {"uri": uri})["result"]
        path = Path(report["reportPath"])
        assert path.suffix == ".html" and path.parent == store.parent / "reports"
        assert started["run"] in path.read_text()
        assert any(r["method"] == "window/showDocument" and r["params"]["uri"] == path.as_uri()
                   for r in c.received_server_requests)
    finally:
        c.close()


def test_graph_search_beam_ends_with_a_result_that_goes_stale(monkeypatch, store, kernel):
    c = start_server(monkeypatch, store, {"maxIterations": 1})
    try:
        uri, text = c.open_file(kernel)
        started = execute(c, "maxkernel.graphSearch",
                          {"uri": uri, "kernel": 0, "strategy": "beam"})["result"]
        values = c.progress_values(started["progressToken"], RUN_TIMEOUT)
        assert values[0]["kind"] == "begin" and values[-1]["kind"] == "end"
        assert any(v.get("message", "").startswith("iteration 1/1") for v in values)
        d = mk300(c, uri)
        assert d["message"].startswith("Graph search (beam): ") and "evaluations" in d["message"]
        assert run_row(store, started["run"])[0] in ("done", "stopped")
        # The baseline's diagnosis (the kernel as in the document): a hint and the hover.
        (hint,) = diagnosis_hints(c, uri)
        bound = root_bottleneck(store, started["run"])["bound"]
        assert re.fullmatch(re.escape(f" {bound}-bound \u00b7 ") + r"\d+% of roofline", hint["label"]), hint
        assert "of the roofline" in hint["tooltip"] and "predicted (model, v5e)" in hint["tooltip"]
        call_line = next(i for i, l in enumerate(text.splitlines()) if "pl.pallas_call(" in l)
        hover = c.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": call_line, "character": 20}})
        value = hover["result"]["contents"]["value"]
        assert f"(run {started['run']}, the baseline)" in value, value

        # Editing the kernel's pallas_call marks the result stale, as Test's results are.
        line = next(i for i, l in enumerate(text.splitlines()) if "grid=(ROWS // BLOCK_ROWS,)" in l)
        col = text.splitlines()[line].index("BLOCK_ROWS,)") + len("BLOCK_ROWS")
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": line, "character": col}, "end": {"line": line, "character": col}},
             "text": " // 1"}]})
        (stale,) = [d for d in c.diagnostics(uri, version=2) if d["code"] == "MK300"]
        assert stale["severity"] == 4 and stale["message"].startswith("[stale: the kernel changed")
        (stale_hint,) = diagnosis_hints(c, uri)
        assert stale_hint["label"] == hint["label"] + " (stale)"
        bad = execute(c, "maxkernel.graphSearch", {"uri": uri, "kernel": 0, "strategy": "dfs"})
        assert bad["error"]["code"] == -32602 and "beam, parallel or ucb" in bad["error"]["message"]
    finally:
        c.close()


def diagnosis_hints(c, uri):
    hints = c.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 200, "character": 0}}})["result"]
    return [h for h in hints if "% of roofline" in h["label"]]


def root_bottleneck(store, run_id):
    with sqlite3.connect(store) as db:
        metrics = db.execute("SELECT metrics_json FROM nodes WHERE run_id = ? AND id = 0",
                             (run_id,)).fetchone()[0]
    return json.loads(metrics)["bottleneck"]


def wait_for_worker(c, store, token):
    """Waits (on progress events) until the run has a live worker process."""
    while not worker_processes(store):
        c.wait_notification("$/progress", lambda p: p["token"] == token, timeout=RUN_TIMEOUT)


@pytest.mark.parametrize("how", ["cancelJob", "progress token"])
def test_cancel_stops_the_run_resumably_and_leaves_no_worker(monkeypatch, store, kernel, how):
    c = start_server(monkeypatch, store, {"maxIterations": 6})
    try:
        uri, _ = c.open_file(kernel)
        started = execute(c, "maxkernel.optimizeAuto", {"uri": uri, "kernel": 0})["result"]
        wait_for_worker(c, store, started["progressToken"])
        if how == "cancelJob":
            answer = execute(c, "maxkernel.cancelJob", {"job": started["job"]})["result"]
            assert answer == {"status": "cancelling", "job": started["job"]}
        else:
            c.notify("window/workDoneProgress/cancel", {"token": started["progressToken"]})
        values = c.progress_values(started["progressToken"], RUN_TIMEOUT)
        assert "cancelled" in values[-1]["message"]
        assert run_row(store, started["run"])[0] == "cancelled"
        assert "cancelled" in mk300(c, uri)["message"]
        assert worker_processes(store) == []
        unknown = execute(c, "maxkernel.cancelJob", {"job": "opt-999"})
        assert "no running job" in unknown["error"]["message"]
    finally:
        c.close()


def test_exit_during_a_run_cancels_it_and_stops_its_workers(monkeypatch, store, kernel):
    c = start_server(monkeypatch, store, {"maxIterations": 6})
    try:
        uri, _ = c.open_file(kernel)
        started = execute(c, "maxkernel.optimizeAuto", {"uri": uri, "kernel": 0})["result"]
        wait_for_worker(c, store, started["progressToken"])
        assert c.shutdown_and_exit(timeout=60) == 0
        assert run_row(store, started["run"])[0] == "cancelled"
        assert worker_processes(store) == []
    finally:
        c.close()


def test_bad_input_is_refused_with_a_clear_error(monkeypatch, store, kernel, tmp_path):
    c = start_server(monkeypatch, store, {"maxIterations": "many"})
    try:
        uri, _ = c.open_file(kernel)
        resp = execute(c, "maxkernel.optimizeAuto", {"uri": uri, "kernel": 0})
        assert resp["error"]["code"] == -32602
        assert "maxkernel.budget.maxIterations must be a non-negative integer" in resp["error"]["message"]
        resp = execute(c, "maxkernel.optimizeAuto", {"uri": uri, "kernel": 7})
        assert resp["error"]["code"] == -32602 and "kernel" in resp["error"]["message"]
        lonely = tmp_path / "lonely.py"
        lonely.write_text((ROOT / "examples" / "softmax_rows.py").read_text())
        lonely_uri, _ = c.open_file(lonely)
        resp = execute(c, "maxkernel.graphSearch", {"uri": lonely_uri, "kernel": 0})
        assert resp["error"]["code"] == -32803 and "make_inputs" in resp["error"]["message"]
        resp = execute(c, "maxkernel.applyBestVariant", {"uri": uri, "run": "r-none"})
        assert resp["error"]["code"] == -32602 and "no finished run" in resp["error"]["message"]
        resp = execute(c, "maxkernel.cancelJob", {"uri": uri, "kernel": 0})
        assert resp["error"]["code"] == -32602 and "no running Auto or graph search job" in resp["error"]["message"]
        resp = execute(c, "maxkernel.openReport", {"run": "r-none"})
        assert resp["error"]["code"] == -32602 and "no run 'r-none'" in resp["error"]["message"]
    finally:
        c.close()


def test_the_autotune_setting_gives_an_auto_run_its_autotune_phase(monkeypatch, tmp_path, kernel):
    store = tmp_path / "own.sqlite"  # its own store: the tuning cache starts empty
    c = start_server(monkeypatch, store, {"maxIterations": 1}, autotuneConfigs=4)
    try:
        uri, _ = c.open_file(kernel)
        started = execute(c, "maxkernel.optimizeAuto", {"uri": uri, "kernel": 0})["result"]
        mk300(c, uri)
    finally:
        c.close()
    with sqlite3.connect(store) as db:
        params, cost = db.execute("SELECT params_json, cost_json FROM runs WHERE id = ?",
                                  (started["run"],)).fetchone()
        strategies = [r[0] for r in db.execute(
            "SELECT strategy FROM nodes WHERE run_id = ? ORDER BY id", (started["run"],))]
    assert json.loads(params)["search"]["autotune_configs"] == 4
    assert json.loads(cost)["tuning_evaluations"] == 3
    assert strategies[:2] == ["baseline", "autotune_phase"]
