"""Paths for the report and bench CLI tests: the `maxkernel` binary and the demo-run helper come
from MAXKERNEL_BUILD (default: build/), or MAXKERNEL_CLI / MAXKERNEL_REPORT_DEMO_DB directly."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / os.environ.get(
    "MAXKERNEL_BUILD", "build"
)  # relative to the repository root


def maxkernel_path():
    return str(
        Path(
            os.environ.get("MAXKERNEL_CLI", str(BUILD / "bin" / "maxkernel"))
        ).resolve()
    )


def demo_db_helper():
    return os.environ.get(
        "MAXKERNEL_REPORT_DEMO_DB", str(BUILD / "bin" / "mk_report_demo_db")
    )


def venv_python():
    return os.environ.get("MAXKERNEL_PYTHON", str(ROOT / ".venv" / "bin" / "python"))


def run_cli(*args, cwd=None, timeout=60, env=None):
    return subprocess.run(
        [maxkernel_path(), *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


@pytest.fixture
def demo_store(tmp_path):
    """A real SQLite run store holding the demo run; returns (store path, run id)."""
    store = tmp_path / "runs.sqlite"
    done = subprocess.run(
        [demo_db_helper(), str(store)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return store, done.stdout.strip()
