"""Auto from the editor with an LLM: settings name the provider (a replay fixture here), the key
arrives from the editor's secret store in initializationOptions, the planner/implementer/debugger
chain runs against a real worker, and the key shows up nowhere the server writes."""
import shutil
import sqlite3
from pathlib import Path

from lsp_client import LspClient

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "tests" / "optimize" / "kernels" / "scale_rows.py"
FIXTURE = ROOT / "tests" / "optimize" / "fixtures" / "agent_chain_openai.json"
PYTHON = ROOT / ".venv" / "bin" / "python"
PLANTED_KEY = "sk-PLANTED-editor-5e4d3c2b1a"


def test_auto_with_a_recorded_llm_and_a_key_from_the_secret_store(monkeypatch, tmp_path):
    store = tmp_path / "store.sqlite"
    monkeypatch.setenv("MAXKERNEL_STORE", str(store))
    monkeypatch.setenv("MAXKERNEL_LOG_LEVEL", "debug")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the key must come from the editor
    kernel = tmp_path / "scale_rows.py"
    shutil.copy(KERNEL, kernel)
    c = LspClient()
    try:
        c.initialize(options={
            "python": str(PYTHON), "budget": {"maxIterations": 1},
            "llm": {"provider": "replay", "fixture": str(FIXTURE)},
            "secrets": {"llm": {"provider": "openai", "apiKey": PLANTED_KEY}}})
        uri = kernel.as_uri()
        c.open(uri, kernel.read_text())
        c.diagnostics(uri, version=1)
        started = c.request("workspace/executeCommand", {
            "command": "maxkernel.optimizeAuto", "arguments": [{"uri": uri, "kernel": 0}]})["result"]
        assert started["status"] == "started"
        params = c.wait_notification(
            "textDocument/publishDiagnostics",
            lambda p: p["uri"] == uri and any(d.get("code") == "MK300" for d in p["diagnostics"]),
            timeout=300)
        (d,) = [d for d in params["diagnostics"] if d["code"] == "MK300"]
        assert d["message"].startswith("Auto: best ") and "predicted (model, v5e)" in d["message"]
        with sqlite3.connect(store) as db:
            rows = db.execute("SELECT id, strategy, status, code FROM nodes WHERE run_id = ? "
                              "ORDER BY id", (started["run"],)).fetchall()
            llm, cost = db.execute("SELECT llm, cost_json FROM runs WHERE id = ?",
                                   (started["run"],)).fetchone()
        assert llm == f"replay:{FIXTURE}"
        strategies = [r[1] for r in rows]
        assert strategies[:3] == ["baseline", "llm:row_block_12", "llm:row_block_64"]
        assert "BLOCK_ROWS = 16\n" in rows[1][3]  # the debugger's fix of the 12-row block
        assert all(r[2] == "correct" for r in rows[:3])
        assert '"tokens_in":5900' in cost.replace(" ", "")  # the profile analyst's 300 too
    finally:
        c.shutdown_and_exit()
    logs = "".join(c.stderr_lines)
    assert "API key received" in logs
    assert PLANTED_KEY not in logs
    assert PLANTED_KEY.encode() not in store.read_bytes()
