"""The rule-based rewrites stay correct, not only lowerable: every variant mk_rewrite_variants
proposes for a kernel that triggers all four rules (kernels/matmul_bias_rules.py: block sizes,
dimension_semantics, buffering, an f32 accumulator) is evaluated by a real worker against the
kernel's frozen reference in TPU interpret mode, and must be correct. (tests/agents/
test_rewrites_lower.py checks that they lower.) A variant the rules could get wrong, a moved
index map, is caught by the same check."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from optimize_helpers import KERNELS, ROOT, maxkernel

sys.path.insert(0, str(ROOT / "tests" / "worker"))
from worker_harness import WorkerProcess

KERNEL = KERNELS / "matmul_bias_rules.py"
TASK = {"form": "infile", "path": str(KERNEL)}


def tool():
    beside_cli = Path(maxkernel()).parent / "mk_rewrite_variants"
    return os.environ.get("MAXKERNEL_REWRITE_VARIANTS", str(beside_cli))


@pytest.fixture(scope="module")
def worker():
    w = WorkerProcess()
    assert w.request("hello", timeout=120)["ok"]
    yield w
    w.close()


def evaluate(worker, source, tag):
    r = worker.request("evaluate", task=TASK, source=source, filename=f"/rewrites/{tag}.py",
                       seeds=[5], timing=False, timeout=300)
    assert r["ok"] is True, (tag, r.get("error"))
    return r


def test_every_rule_rewrite_is_still_correct(worker):
    assert Path(tool()).exists(), f"{tool()} is not built (it is built with maxkernel)"
    done = subprocess.run([tool(), str(KERNEL)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    variants = json.loads(done.stdout)["variants"]
    assert {v["strategy"] for v in variants} == {"block_sizes", "dimension_semantics",
                                                 "buffering", "accumulator_f32"}
    original = KERNEL.read_text()
    assert evaluate(worker, original, "original")["correct"] is True
    wrong = []
    for i, v in enumerate(variants):
        assert v["source"] != original
        r = evaluate(worker, v["source"], f"v{i}")
        if not r["correct"]:
            wrong.append((v["strategy"], v["description"], r["failure"]))
    assert not wrong, wrong


def test_the_check_rejects_a_rewrite_that_moves_an_index_map(worker):
    broken = KERNEL.read_text().replace("lambda i, k: (k, 0)", "lambda i, k: (0, 0)")
    r = evaluate(worker, broken, "moved_index_map")
    assert r["correct"] is False and r["failure"]["kind"] == "mismatch"
