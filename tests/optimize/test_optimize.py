"""`maxkernel optimize` and `maxkernel runs` end to end: real worker processes on the local host,
no LLM (autotuner moves + rule-based rewrites), a fresh SQLite store per test."""
import json
import os
import random
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "kernels"


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def python():
    return os.environ.get("MAXKERNEL_PYTHON", str(ROOT / ".venv" / "bin" / "python"))


@pytest.fixture
def workspace(tmp_path):
    kernel = tmp_path / "scale_rows.py"
    kernel.write_text((KERNELS / "scale_rows.py").read_text())
    return tmp_path, kernel, tmp_path / "store.sqlite"


def optimize(kernel, store, *extra, cwd=None, timeout=600):
    args = [maxkernel(), "optimize", str(kernel), "--python", python(), "--store", str(store),
            "--format", "json", *map(str, extra)]
    return subprocess.run(args, check=False, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def runs(*args, store, timeout=600):
    return subprocess.run([maxkernel(), "runs", *map(str, args), "--store", str(store)],
                          check=False, capture_output=True, text=True, timeout=timeout)


def node_rows(store, run_id):
    with sqlite3.connect(store) as db:
        return db.execute(
            "SELECT id, parent, status, code_hash, finished_at, metrics_json, speedup FROM nodes "
            "WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()


def test_auto_finds_a_predicted_gain_and_writes_the_report(workspace):
    tmp, kernel, store = workspace
    report = tmp / "report.html"
    r = optimize(kernel, store, "--mode", "auto", "--budget", "iterations=2", "--branches", "2",
                 "--report", report)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "done" and out["stop_reason"] == "budget: 2 iterations"
    assert out["strategy"] == "greedy"
    # On a CPU host the score is the TPU model's prediction, and it says so.
    assert out["score_kind"] == "predicted (model, v5e)"
    assert out["best"]["speedup"] > 1.0
    nodes = {n["id"]: n for n in out["nodes"]}
    assert nodes[0]["speedup"] == 1.0 and nodes[0]["strategy"] == "baseline"
    best = nodes[out["best"]["node"]]
    assert best["status"] == "correct"
    # Only correct nodes carry a speedup.
    assert all(n["speedup"] is None for n in nodes.values() if n["status"] != "correct")
    # Identical candidates are evaluated once: every node's normalised source differs.
    hashes = [n["code_hash"] for n in nodes.values()]
    assert len(hashes) == len(set(hashes))
    # Progress went to stderr, one line per evaluated node.
    assert r.stderr.count("] ") >= len(nodes)
    html = report.read_text()
    assert out["run"] in html and "<svg" in html and "<script" not in html


@pytest.mark.parametrize("strategy", ["beam", "parallel", "ucb"])
def test_each_graph_strategy_runs_within_its_evaluation_budget(workspace, strategy):
    _tmp, kernel, store = workspace
    r = optimize(kernel, store, "--mode", "graph", "--search", strategy, "--beam", "2",
                 "--branches", "2", "--budget", "evaluations=5,iterations=10", "--no-report")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["strategy"] == strategy
    assert out["cost"]["evaluations"] == 5
    assert out["stop_reason"] == "budget: 5 evaluations"
    assert len(out["nodes"]) == 5
    # Block moves on an 8-row kernel predict a gain: the best is a correct child, not the root
    # (which scores 1.0 and could never fail a ">= 1.0"), and no correct node beats it.
    correct = [n for n in out["nodes"] if n["status"] == "correct"]
    best = max(correct, key=lambda n: n["speedup"])
    assert out["best"]["node"] == best["id"] != 0 and out["best"]["speedup"] == best["speedup"] > 1.0
    children = [n for n in out["nodes"] if n["parent"] == 0]
    if strategy == "parallel":
        # Two independent lineages hang off the root.
        assert len(children) >= 2
    assert all(n["status"] in ("correct", "incorrect", "failed") for n in out["nodes"])


def test_a_baseline_that_does_not_lower_stops_with_the_reason(tmp_path):
    kernel = tmp_path / "broken.py"
    kernel.write_text((KERNELS / "broken_baseline.py").read_text())
    r = optimize(kernel, tmp_path / "s.sqlite", "--no-report")
    assert r.returncode == 1
    out = json.loads(r.stdout)
    assert out["status"] == "failed"
    assert "the baseline failed" in out["stop_reason"]
    assert "divisible by 8 and 128" in out["stop_reason"]
    assert len(out["nodes"]) == 1


def test_usage_errors_are_clear(tmp_path):
    r = subprocess.run([maxkernel(), "optimize", str(KERNELS / "scale_rows.py"), "--budget",
                        "speed=2"], check=False, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown budget 'speed'" in r.stderr
    r = subprocess.run([maxkernel(), "optimize", str(KERNELS / "scale_rows.py"), "--search",
                        "random"], check=False, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--search is beam, parallel or ucb" in r.stderr
    r = runs("show", "r-none", store=tmp_path / "s.sqlite")
    assert r.returncode == 1 and "no run 'r-none'" in r.stderr


def test_a_killed_run_resumes_without_evaluating_a_finished_node_again(workspace):
    _tmp, kernel, store = workspace
    args = [maxkernel(), "optimize", str(kernel), "--python", python(), "--store", str(store),
            "--mode", "graph", "--search", "beam", "--branches", "2", "--concurrency", "1",
            "--budget", "evaluations=6,iterations=10", "--roofline", "0", "--no-report"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run_id = None
    kill_after = random.Random().randint(1, 4)  # evaluated nodes seen before the kill
    seen = 0
    for line in proc.stderr:
        if line.startswith("run ") and run_id is None:
            run_id = line.split()[1].rstrip(":")
        if "| node " in line:
            seen += 1
            if seen >= kill_after:
                proc.send_signal(signal.SIGKILL)
                break
    proc.wait(timeout=60)
    assert run_id, "the run id was not printed"
    before = {row[0]: row for row in node_rows(store, run_id) if row[4] > 0}
    assert len(before) >= kill_after
    shown = json.loads(runs("show", run_id, "--format", "json", store=store).stdout)
    assert shown["status"] == "running"  # killed: nothing marked it finished

    r = runs("resume", run_id, "--python", python(), "--no-report", store=store)
    assert r.returncode == 0, r.stderr
    after = {row[0]: row for row in node_rows(store, run_id)}
    # Every node finished before the kill is untouched: same verdict, same finish time, same
    # metrics, so it was not evaluated again.
    for node_id, row in before.items():
        assert after[node_id] == row, f"node {node_id} changed on resume"
    assert all(row[4] > 0 for row in after.values()), "unfinished nodes after resume"
    hashes = [row[3] for row in after.values()]
    assert len(hashes) == len(set(hashes))
    final = json.loads(runs("show", run_id, "--format", "json", store=store).stdout)
    assert final["status"] == "done"
    assert final["cost"]["evaluations"] == 6
    listed = runs("list", store=store).stdout
    assert run_id in listed
