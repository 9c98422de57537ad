"""`maxkernel test`'s text output on a work verdict (a candidate that lets XLA do the matmul
outside its pallas_call): besides the failure line it names the line the verdict points at, the
same location the editor's Test lens carries. Real binary, real JAX worker on the local host."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHEAT = ROOT / "tests" / "worker" / "tasks" / "cheats" / "xla_matmul_copy.py"


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def python():
    venv = ROOT / ".venv" / "bin" / "python"
    return os.environ.get("MAXKERNEL_PYTHON", str(venv if venv.exists() else sys.executable))


def test_the_text_of_a_work_verdict_names_its_line(tmp_path):
    text = CHEAT.read_text()
    (line,) = [i for i, l in enumerate(text.splitlines(), start=1) if "# cheat" in l]
    path = tmp_path / CHEAT.name
    path.write_text(text)
    r = subprocess.run([maxkernel(), "test", str(path), "--python", python(), "--no-cache",
                        "--store", str(tmp_path / "store.sqlite")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)  # the kernel's fault, not the host's
    lines = r.stdout.splitlines()
    assert lines[0] == f"{CHEAT.name} on local" and lines[1] == "WRONG", lines
    (failure,) = [i for i, l in enumerate(lines) if l.startswith("  failure (work_outside_kernel): ")]
    message = lines[failure].split(": ", 1)[1]
    assert message.startswith("the work is done outside the kernel: ")
    assert lines[failure + 1] == f"  {path}:{line}:1: {message}", lines
