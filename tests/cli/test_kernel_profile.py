"""`maxkernel profile` prints the kernel's diagnosis after the profile, in text and in JSON: the
same label and summary lines the editor shows. Real binary, real JAX worker on the local host,
on two kernels whose bottleneck is known (tests/optimize/kernels)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "tests" / "optimize" / "kernels"


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def python():
    venv = ROOT / ".venv" / "bin" / "python"
    return os.environ.get("MAXKERNEL_PYTHON", str(venv if venv.exists() else sys.executable))


def profile(path, *extra):
    r = subprocess.run([maxkernel(), "profile", str(path), "--python", python(), *extra],
                       capture_output=True, text=True, timeout=300, cwd=path.parent, check=False)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    return r.stdout


def test_the_text_ends_with_the_diagnosis_of_a_grid_overhead_bound_kernel(tmp_path):
    path = tmp_path / "add_tiny_blocks.py"
    # 256 grid steps instead of 1024: still overhead-bound many times over, and the interpret
    # profile (one host callback per step) takes a quarter of the time.
    text = (KERNELS / "add_tiny_blocks.py").read_text()
    assert "ROWS, COLS = 8192, 128" in text
    path.write_text(text.replace("ROWS, COLS = 8192, 128", "ROWS, COLS = 2048, 128"))
    lines = profile(path, "--target", "v5e").splitlines()
    (at,) = [i for i, l in enumerate(lines) if l.startswith("diagnosis: ")]
    assert re.fullmatch(r"diagnosis: grid overhead-bound \u00b7 \d+% of roofline", lines[at]), lines[at]
    summary = lines[at + 1:]
    assert summary and all(l.startswith("  ") for l in summary), summary
    assert summary[0].startswith("  grid overhead-bound: the model puts compute at "), summary
    assert any(re.fullmatch(r"  HBM traffic: [\d.]+ MiB, 1x the task's minimum of [\d.]+ MiB", l)
               for l in summary), summary
    assert any(l.startswith("  VMEM: 24 KiB per grid step of 16 MiB: ") and l.endswith(" headroom")
               for l in summary), summary
    assert any(l.endswith(", predicted (model, v5e)") for l in summary), summary
    assert not any("re-fetched" in l for l in summary)


def test_json_carries_the_diagnosis_with_the_re_fetched_operand(tmp_path):
    path = tmp_path / "matmul_refetch.py"
    path.write_text((KERNELS / "matmul_refetch.py").read_text())
    out = json.loads(profile(path, "--format", "json"))
    assert out["command"] == "profile" and out["result"]["ok"] is True
    d = out["diagnosis"]
    assert d["bound"] == "HBM"
    assert re.fullmatch(r"HBM-bound \u00b7 \d+% of roofline", d["label"]), d["label"]
    (refetch,) = d["refetched"]
    assert refetch["operand"] == "args[1]" and refetch["along_axes"] == [0] and refetch["ratio"] == 8
    assert d["hbm_bytes"] > d["min_bytes"] > 0
    assert d["vmem_bytes"] < d["vmem_limit_bytes"]
    assert d["score_label"] == "predicted (model, v5e)"  # a CPU profile is never the measured time
    assert abs(d["roofline_fraction"] - d["roofline_s"] / d["score_s"]) < 1e-9
    assert any(l.startswith("re-fetched: args[1] of _matmul 8x along grid axis 0") for l in d["lines"])
