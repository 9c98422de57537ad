"""`maxkernel lower --target v5e` compiles with the TPU compiler (libtpu) on a host without a TPU:
a kernel that lowers but overflows VMEM is refused, at its pallas_call line. Real binary, real
worker on the local host. Needs libtpu (scripts/requirements.txt)."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("libtpu") is None:
    pytest.skip("declared: libtpu is not installed (pip install -r scripts/requirements.txt)",
                allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tests" / "worker" / "tasks" / "infile" / "vmem_overflow.py"


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def python():
    venv = ROOT / ".venv" / "bin" / "python"
    return os.environ.get("MAXKERNEL_PYTHON", str(venv if venv.exists() else sys.executable))


def test_lower_refuses_a_kernel_that_overflows_vmem_at_its_line(tmp_path):
    path = tmp_path / "vmem_overflow.py"
    shutil.copy(TASK, path)
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "PALLAS_CALL_LINE" in text)
    env = dict(os.environ, MAXKERNEL_TPU_COMPILE="1")
    r = subprocess.run([maxkernel(), "lower", str(path), "--python", python(), "--target", "v5e",
                        "--format", "json"], capture_output=True, text=True, timeout=600,
                       cwd=tmp_path, env=env, check=False)
    assert r.returncode != 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert out["status"] == "failed", out
    assert "the TPU compiler (libtpu" in out["message"] and "refused the kernel (vmem)" in out["message"]
    assert "would exceed memory" in out["message"]
    text = json.dumps(out)
    assert f'"line": {line}' in text and "the TPU compiler refused pallas_call _kernel" in text, text[:3000]
