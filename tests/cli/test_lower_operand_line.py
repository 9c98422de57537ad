"""`maxkernel lower` puts a lowering error that names an operand ("Block spec for args[0] ...") on
that operand's in_specs / out_specs line, with the kernel's def line and its pallas_call line
after it: the same place the editor's on-save lowering puts it (service/operand_errors, the one
place both call). Real binary, real JAX worker on the local host."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BAD_BLOCK = ROOT / "tests" / "worker" / "tasks" / "infile" / "bad_block.py"


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def python():
    venv = ROOT / ".venv" / "bin" / "python"
    return os.environ.get("MAXKERNEL_PYTHON", str(venv if venv.exists() else sys.executable))


def test_lower_names_the_operands_blockspec_line(tmp_path):
    path = tmp_path / BAD_BLOCK.name
    path.write_text(BAD_BLOCK.read_text())
    lines = path.read_text().splitlines()
    spec_line = next(i for i, l in enumerate(lines, start=1) if "in_specs=[spec, spec]" in l)
    def_line = next(i for i, l in enumerate(lines, start=1) if l.startswith("def _kernel("))
    call_line = next(i for i, l in enumerate(lines, start=1) if "PALLAS_CALL_LINE" in l)
    r = subprocess.run([maxkernel(), "lower", str(path), "--python", python(), "--timeout", "240"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    out = r.stdout.splitlines()
    (error,) = [i for i, l in enumerate(out) if l.startswith("error (")]
    assert "divisible by 8 and 128" in out[error]
    # The message may go on over several lines; the locations follow it.
    where = [line for line in out[error:] if line.startswith(f"  {path}:")]
    assert where[0].startswith(f"  {path}:{spec_line}:"), out
    assert where[1:3] == [f"  {path}:{def_line}:1: the kernel `_kernel`",
                          f"  {path}:{call_line}:1: its pallas_call"], out
