"""`cmake --install` lays out a prefix from which both programs run outside the checkout: the
binaries in bin/, the worker they start and the diagnostics page they link in share/maxkernel/.
The installed `maxkernel` checks a file and lowers a kernel with the installed worker; the
installed server answers initialize."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_dir():
    cli = os.environ.get("MAXKERNEL_CLI")
    return Path(os.environ.get("MAXKERNEL_BUILD", Path(cli).parents[1] if cli else ROOT / "build"))


def python():
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv if venv.exists() else sys.executable)


def test_cmake_install_gives_programs_that_run_from_the_prefix(tmp_path):
    prefix = tmp_path / "prefix"
    r = subprocess.run(["cmake", "--install", str(build_dir()), "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    for program in ("maxkernel", "maxkernel-lsp"):
        assert os.access(prefix / "bin" / program, os.X_OK)
    share = prefix / "share" / "maxkernel"
    assert (share / "tpu" / "worker" / "maxkernel_worker.py").exists()
    assert (share / "docs" / "diagnostics.md").exists() and (share / "LICENSE").exists()
    assert (share / "editors" / "neovim" / "lsp" / "maxkernel.lua").exists()

    # Run from a copy of an example outside the checkout, with the checkout out of reach.
    kernel = tmp_path / "work" / "tiled_matmul_task.py"
    kernel.parent.mkdir()
    shutil.copy(ROOT / "examples" / "tiled_matmul_task.py", kernel)
    env = {k: v for k, v in os.environ.items() if k != "MAXKERNEL_WORKER_DIR"}
    check = subprocess.run([str(prefix / "bin" / "maxkernel"), "check", "--format", "json", str(kernel)],
                           capture_output=True, text=True, timeout=60, cwd=kernel.parent, env=env, check=False)
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["summary"]["kernels"] >= 1
    lower = subprocess.run([str(prefix / "bin" / "maxkernel"), "lower", str(kernel), "--python", python(),
                            "--format", "json"],
                           capture_output=True, text=True, timeout=300, cwd=kernel.parent, env=env, check=False)
    assert lower.returncode == 0, (lower.stdout, lower.stderr)
    assert json.loads(lower.stdout)["host"] == "local"

    from lsp_client.connection import (
        Connection,  # tests/lsp_client, on sys.path through tests/conftest.py
    )
    conn = Connection([str(prefix / "bin" / "maxkernel-lsp")], reader_thread=True)
    try:
        rid = conn.send_request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})[0]
        reply = conn.wait_response(rid, 30)
        assert reply["result"]["serverInfo"]["name"] == "maxkernel-lsp"
    finally:
        conn.kill()
