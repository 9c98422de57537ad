"""The sub-agent chain on a recording against a real worker: profile analyst -> planner ->
implementer (a block that breaks the TPU rules) -> debugger (fixed from the worker's real
lowering error) -> implementer, through `maxkernel optimize --llm replay:FILE`. Also: LLM budgets stop a run, and
a planted API key appears nowhere the run writes."""
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixtures" / "agent_chain_openai.json"
PLANTED_KEY = "sk-PLANTED-9f8e7d6c5b4a"


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def python():
    return os.environ.get("MAXKERNEL_PYTHON", str(ROOT / ".venv" / "bin" / "python"))


def optimize(tmp, *extra):
    kernel = tmp / "scale_rows.py"
    kernel.write_text((HERE / "kernels" / "scale_rows.py").read_text())
    env = dict(os.environ, OPENAI_API_KEY=PLANTED_KEY, MAXKERNEL_LOG_LEVEL="debug")
    args = [maxkernel(), "optimize", str(kernel), "--python", python(), "--store",
            str(tmp / "store.sqlite"), "--llm", f"replay:{FIXTURE}", "--format", "json",
            "--report", str(tmp / "report.html"), *extra]
    return subprocess.run(args, check=False, capture_output=True, text=True, timeout=600, env=env, cwd=tmp)


def test_plan_implement_debug_implement_chain(tmp_path):
    r = optimize(tmp_path, "--budget", "iterations=1", "--branches", "2")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["llm"] == f"replay:{FIXTURE}"
    nodes = {n["id"]: n for n in out["nodes"]}
    assert [nodes[i]["strategy"] for i in (1, 2)] == ["llm:row_block_12", "llm:row_block_64"]
    # The implementer's 12-row block does not lower for TPU; the debugger's fix (16 rows) was
    # what got evaluated, and the node says so.
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        code = dict(db.execute("SELECT id, code FROM nodes WHERE run_id = ?", (out["run"],)))
    assert "BLOCK_ROWS = 16\n" in code[1] and "BLOCK_ROWS = 12" not in code[1]
    assert "debugger" in nodes[1]["description"]
    assert "BLOCK_ROWS = 64\n" in code[2]
    assert all(nodes[i]["status"] == "correct" for i in (0, 1, 2))
    assert out["best"]["node"] == 2 and out["best"]["speedup"] > nodes[1]["speedup"] > 1.0
    # Usage of all five calls (profile analyst, planner, implementer, debugger, implementer) is
    # accounted.
    assert out["cost"]["tokens_in"] == 300 + 900 + 1500 + 1700 + 1500
    assert out["cost"]["tokens_out"] == 40 + 120 + 400 + 420 + 400
    assert out["cost"]["usd"] > 0
    # The key reached the provider (as the replay server saw it) and nothing else.
    written = [r.stdout, r.stderr, (tmp_path / "report.html").read_text(),
               (tmp_path / "store.sqlite").read_bytes().decode("latin-1")]
    for text in written:
        assert PLANTED_KEY not in text


def test_a_token_budget_stops_the_run_cleanly(tmp_path):
    r = optimize(tmp_path, "--budget", "iterations=3,tokens=2000", "--branches", "2")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "done"
    assert out["stop_reason"].startswith("LLM: ") and "budget" in out["stop_reason"].lower()
    spent = out["cost"]["tokens_in"] + out["cost"]["tokens_out"]
    # The profile analyst (340), the planner (1020) and one implementer (1900) fit before the
    # limit was seen; no call was made after it.
    assert 2000 <= spent <= 340 + 1020 + 1900
    assert [n["id"] for n in out["nodes"]] == [0]  # no candidate was left half-made


@pytest.mark.parametrize("strategy", ["beam", "parallel", "ucb"])
def test_each_graph_strategy_on_a_recording(tmp_path, strategy):
    kernel = tmp_path / "scale_rows.py"
    kernel.write_text((HERE / "kernels" / "scale_rows.py").read_text())
    env = dict(os.environ, OPENAI_API_KEY=PLANTED_KEY)
    fixture = HERE / "fixtures" / "agent_search_openai.json"
    r = subprocess.run([maxkernel(), "optimize", str(kernel), "--python", python(), "--store",
                        str(tmp_path / "store.sqlite"), "--llm", f"replay:{fixture}", "--mode",
                        "graph", "--search", strategy, "--branches", "2", "--budget",
                        "evaluations=5,iterations=10", "--roofline", "0", "--format", "json", "--no-report"],
                       check=False, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["strategy"] == strategy and out["status"] == "done"
    assert out["cost"]["evaluations"] == 5
    llm_nodes = [n for n in out["nodes"] if n["strategy"].startswith("llm:")]
    assert llm_nodes, [n["strategy"] for n in out["nodes"]]
    assert out["cost"]["tokens_in"] > 0
    # A wrong kernel from the LLM can never be best; every speedup belongs to a correct node.
    assert all(n["speedup"] is None for n in out["nodes"] if n["status"] != "correct")
    assert out["best"]["speedup"] > 1.0
