"""`maxkernel lower --target v5e` answers within seconds on real kernels (issue 33): the kernels in
the style of public expert code (tests/corpus/expert: per-function dtype aliases, dataclass block
sizes, functools.partial, scalar prefetch), the example task, and the generator's own kernel for a
task of every class at full size. The source gate once hung on the first of these until the
worker's 300 s timeout killed it; each run here has a limit far below that.

Real binary, real JAX worker on the local host."""
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "worker"))

from worker_harness import WorkerProcess  # noqa: E402

EXPERT = sorted((ROOT / "tests" / "corpus" / "expert").glob("*.py"))
SUITE = ROOT / "bench" / "suites" / "reference" / "jaxbench"
# One task of each class the generator writes (bench/suites/reference/README.md).
CLASS_TASKS = ["linear_bias_gelu", "linear_softmax", "rmsnorm", "gated_tanh_chain", "causal_attention"]
# A worker starts (JAX import) and lowers at full size; a hang is what this bound catches.
WITHIN_S = 120


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def python():
    venv = ROOT / ".venv" / "bin" / "python"
    return os.environ.get("MAXKERNEL_PYTHON", str(venv if venv.exists() else sys.executable))


def lower(path: Path):
    start = time.monotonic()
    r = subprocess.run([maxkernel(), "lower", str(path), "--target", "v5e", "--python", python(),
                        "--timeout", str(WITHIN_S)],
                       capture_output=True, text=True, timeout=WITHIN_S + 30, cwd=path.parent, check=False)
    took = time.monotonic() - start
    assert r.returncode == 0, (path.name, r.returncode, r.stdout, r.stderr)
    assert "lowered" in r.stdout, r.stdout
    assert took < WITHIN_S, (path.name, took)
    return r.stdout


@pytest.mark.parametrize("path", EXPERT + [ROOT / "examples" / "tiled_matmul_task.py"], ids=lambda p: p.stem)
def test_expert_style_kernels_lower_within_seconds(tmp_path, path):
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    out = lower(copy)
    assert "pallas_call" in out or "grid" in out, out


@pytest.fixture(scope="module")
def generated():
    """The generator's kernel for each class task, at full size, from one worker."""
    worker = WorkerProcess()
    try:
        out = {}
        for name in CLASS_TASKS:
            r = worker.request("generate", task={"form": "jaxbench", "dir": str(SUITE / name)}, entry="workload",
                               filename=str(SUITE / name / "optimized.py"), timeout=300)
            assert r["ok"] is True, (name, r.get("error"))
            out[name] = r["source"]
        return out
    finally:
        worker.close()


@pytest.mark.parametrize("name", CLASS_TASKS)
def test_generated_kernels_of_every_class_lower_within_seconds(tmp_path, generated, name):
    shutil.copy(SUITE / name / "baseline.py", tmp_path / "baseline.py")
    kernel = tmp_path / "optimized.py"
    kernel.write_text(generated[name])
    lower(kernel)
