"""The debugger repairs wrong results, not only lowering errors (fixtures/make_debug_chain.py):
on real workers, a candidate that lowers but gives wrong numbers is checked before it becomes a
node, and the worker's correctness report goes to the debugger: which output, where (first
wrong indices, whole rows, the blocks and their edges), NaN, the errors against the tolerance,
the seed and shapes, and the extra shape when that is where it fails. The recordings answer the
way real models do (prose around the code, a snippet before the file, a wrong first fix), and
each debugger answer is served only to a prompt that quotes its attempt's report. A fixed
pattern is kept as a lesson."""
import importlib.util
import json
import os
import sqlite3
import sys

import pytest
from optimize_helpers import FIXTURES, kernel_copy, optimize, replay_server, sent_text

sys.path.insert(0, str(FIXTURES))
import make_debug_chain as chain

KEY = "sk-recordings-0123456789"

CASES = {
    # scenario: (kernel, extra args, the fixed code, debugger attempts)
    "block_edge": ("rows_floor_grid.py", (), chain.FLOOR_CDIV, 2),
    "acc_reset": ("matmul_acc.py", ("--extra-shapes", "none"), chain.ACC_FIXED, 2),
    "nan_row": ("rows_unit_norm.py", ("--extra-shapes", "none"), chain.NORM_FIXED, 1),
}

# The first report in full detail, where it says most.
DETAIL = {"block_edge": [
    "The task's own shape passes; the failing shape is the extra shape `ragged` (inputs (384, 128))",
    "output 0 float32[384, 128]: 16384 of 49152 elements wrong",
    "whole rows 256..383 (128 of 384) are wrong",
    "the output block is (256, 128) (grid (2, 1)); 1 of 2 blocks have wrong elements: (1, 0)",
    "only the last, partial block is wrong (384 is not a multiple of 256: 128 left over)"]}


@pytest.mark.parametrize("scenario", list(CASES))
def test_the_debugger_repairs_a_wrong_result_from_the_workers_report(tmp_path, scenario):
    name, extra, fixed, attempts = CASES[scenario]
    fixture = FIXTURES / f"debug_{scenario}_openai.json"
    kernel = kernel_copy(tmp_path, name)
    store = tmp_path / "store.sqlite"
    env = dict(os.environ, OPENAI_API_KEY=KEY)
    with replay_server(fixture) as (spec, read_log):
        r = optimize(kernel, store, "--llm", spec, "--no-diagnosis", "--budget", "iterations=1",
                     "--branches", "1", *extra, env=env)
        log = read_log()
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    strategy = "llm:" + chain.SCENARIOS[scenario]["strategy"][0]
    (node,) = [n for n in out["nodes"] if n["strategy"] == strategy]
    assert node["status"] == "correct", node
    plural = "attempt)" if attempts == 1 else "attempts)"
    assert node["description"].endswith(f"(wrong result fixed by the debugger in {attempts} {plural}"), node
    with sqlite3.connect(store) as db:
        code = dict(db.execute("SELECT strategy, code FROM nodes WHERE run_id = ?", (out["run"],)))
        lessons = db.execute("SELECT strategy, notes FROM lessons").fetchall()
    assert code[strategy] == fixed, "the debugger's last fix is not what became the node"

    assert [rec["purpose"] for rec in log] == ["planner", "implementer"] + ["debugger"] * attempts
    assert all(rec["entry"] is not None for rec in log), "a request found no answer meant for it"
    recorded = json.loads(fixture.read_text())["entries"]
    for rec in log[2:]:
        text = sent_text(rec)
        # The prompt carries the worker's report: the entry's facts, the seed, the tolerance.
        for needle in recorded[rec["entry"]]["expects"]:
            assert needle in text, (needle, text)
        assert "Correctness report (seed " in text and "allowed |c - r| <= " in text
        assert "first wrong: [" in text
    # The first debugger call was sent the implementer's wrong file, numbered.
    assert "   1 | " in sent_text(log[2]) and "pallas_call" in sent_text(log[2])
    for needle in DETAIL.get(scenario, ()):
        assert needle in sent_text(log[2]), needle
    # The fixed pattern is a lesson for later plans.
    fixes = [s for s, notes in lessons if notes == "correctness fix"]
    assert len(fixes) == 1, lessons
    assert "a wrong result (" in fixes[0] and "was fixed by changing:" in fixes[0]



@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_the_debugger_repairs_a_kernel_the_tpu_compiler_refuses_for_vmem(tmp_path):
    """2048-row blocks lower, but the real TPU compiler (libtpu, turned on for this run only)
    refuses them for scoped VMEM; the debugger is sent the compiler's words and its second fix
    compiles (its first, half the block, is still refused)."""
    fixture = FIXTURES / "debug_vmem_openai.json"
    kernel = kernel_copy(tmp_path, "rows_vmem_blocks.py")
    store = tmp_path / "store.sqlite"
    env = dict(os.environ, OPENAI_API_KEY=KEY, MAXKERNEL_TPU_COMPILE="1")
    with replay_server(fixture) as (spec, read_log):
        r = optimize(kernel, store, "--llm", spec, "--no-diagnosis", "--budget", "iterations=1",
                     "--branches", "1", "--extra-shapes", "none", env=env)
        log = read_log()
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    strategy = "llm:" + chain.SCENARIOS["vmem"]["strategy"][0]
    (node,) = [n for n in out["nodes"] if n["strategy"] == strategy]
    assert node["status"] == "correct", node
    assert node["description"].endswith("(compile fixed by the debugger in 2 attempts)"), node
    # Scored by the same compiler that refused the first two: it compiled.
    assert node["time_kind"] == "compiled", node
    with sqlite3.connect(store) as db:
        code = dict(db.execute("SELECT strategy, code FROM nodes WHERE run_id = ?", (out["run"],)))
        metrics = {s: json.loads(m) for s, m in db.execute(
            "SELECT strategy, metrics_json FROM nodes WHERE run_id = ?", (out["run"],))}
        (params,) = db.execute("SELECT params_json FROM runs WHERE id = ?", (out["run"],)).fetchone()
    assert code[strategy] == chain.VMEM_FIXED
    # XLA's program is compiled once per run, by the reference op that scores the XLA baseline;
    # the candidates' compile checks compile only the candidate.
    assert json.loads(params)["xla"]["time_kind"] == "compiled", params
    compiled = metrics[strategy]["tpu_compile"]
    assert compiled["candidate"]["status"] == "compiled", compiled
    assert "reference" not in compiled, compiled

    assert [rec["purpose"] for rec in log] == ["planner", "implementer", "debugger", "debugger"]
    assert all(rec["entry"] is not None for rec in log), "a request found no answer meant for it"
    recorded = json.loads(fixture.read_text())["entries"]
    for rec in log[2:]:
        text = sent_text(rec)
        for needle in recorded[rec["entry"]]["expects"]:
            assert needle in text, (needle, text)
        assert "the TPU compiler (libtpu" in text and "refused the kernel (vmem)" in text
        assert "exceeded scoped vmem limit" in text
    assert "BLOCK_ROWS = 2048" in sent_text(log[2]) and "BLOCK_ROWS = 1024" in sent_text(log[3])
