"""Shared helpers for the fault matrix: the binaries, the venv's Python, a kernel copy per test,
and the live worker processes started for one store (workers inherit MAXKERNEL_STORE)."""
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
KERNEL = ROOT / "tests" / "optimize" / "kernels" / "scale_rows.py"
sys.path.insert(0, str(HERE))


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def python():
    return os.environ.get("MAXKERNEL_PYTHON", str(ROOT / ".venv" / "bin" / "python"))


def worker_processes(store, script=b"maxkernel_worker.py"):
    """Live processes running `script` (workers, the replay server) whose environment names this
    store; every test sets MAXKERNEL_STORE, and children inherit it."""
    found = []
    marker = f"MAXKERNEL_STORE={store}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours
        if state != "Z" and script in cmdline and marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def wait_until(predicate, timeout, what):
    """Polls a condition of the outside world (processes going away) until it holds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def kernel(tmp_path):
    path = tmp_path / "scale_rows.py"
    shutil.copy(KERNEL, path)
    return path
