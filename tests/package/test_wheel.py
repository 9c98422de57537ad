"""`pip install maxkernel-*.whl` into a fresh virtual environment puts `maxkernel` and
`maxkernel-lsp` on its PATH, as ruff's wheel does, with what they need at run time: from PATH, out of
the checkout, `maxkernel check` finds the kernel of a file and fails a syntax error, and the
server answers initialize. The wheel's platform tag names the glibc the package needs."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from lsp_client.connection import (
    Connection,  # tests/lsp_client, on sys.path through tests/conftest.py
)

ROOT = Path(__file__).resolve().parents[2]


def base_python():
    """The interpreter the checkout's .venv was made from (a venv of a venv works, but say it)."""
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv.resolve() if venv.exists() else Path(sys.executable).resolve())


def test_wheel_puts_both_programs_on_path_in_a_fresh_venv(package, tmp_path):
    _, wheel = package
    assert wheel.name.startswith("maxkernel-") and "-py3-none-manylinux_2_" in wheel.name, wheel.name
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        record = whl.read(next(n for n in names if n.endswith(".dist-info/RECORD"))).decode()
    assert all(n in record for n in names), "RECORD lists every file"

    venv = tmp_path / "venv"
    # --without-pip and the checkout's pip pointed at it: the same install, seconds faster.
    subprocess.run([base_python(), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                        "--no-index", "--no-deps", "-q", str(wheel)],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout + r.stderr

    # Nothing of the checkout on PATH or in the environment: only the venv's bin and the system's.
    path = f"{venv / 'bin'}:/usr/bin:/bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAXKERNEL_")} | {"PATH": path}
    assert shutil.which("maxkernel", path=path) == str(venv / "bin" / "maxkernel")
    assert shutil.which("maxkernel-lsp", path=path) == str(venv / "bin" / "maxkernel-lsp")
    worker = venv / "share" / "maxkernel" / "tpu" / "worker"
    assert (worker / "maxkernel_worker.py").exists()
    assert (worker / "mkworker" / "judge" / "judge.py").exists()  # the package, subpackages included
    ldd = subprocess.run(["ldd", str(venv / "bin" / "maxkernel-lsp")], capture_output=True, text=True,
                         check=True).stdout
    spdlog = next(line for line in ldd.splitlines() if "libspdlog" in line)
    assert str(venv / "bin" / ".." / "lib" / "maxkernel") in spdlog, spdlog  # the wheel's copy

    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "examples" / "tiled_matmul_task.py", work / "kernel.py")
    (work / "broken.py").write_text("def f(:\n    pass\n")
    check = subprocess.run(["maxkernel", "check", "--format", "json", "kernel.py"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=60, check=False)
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["summary"]["kernels"] >= 1
    broken = subprocess.run(["maxkernel", "check", "broken.py"], cwd=work, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert broken.returncode == 1 and "broken.py:1" in broken.stdout + broken.stderr, broken

    conn = Connection(["maxkernel-lsp"], cwd=str(work), env=env, reader_thread=True)
    try:
        rid = conn.send_request("initialize", {"processId": None, "rootUri": work.as_uri(), "capabilities": {}})[0]
        reply = conn.wait_response(rid, 30)
        assert reply["result"]["serverInfo"]["name"] == "maxkernel-lsp"
    finally:
        conn.kill()
