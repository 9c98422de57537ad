"""`maxkernel test --no-cache` neither reads nor writes the evaluation cache; without it only the
judge's verdict is stored (issue 36). Real binary, real JAX worker on the local host."""
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ZEROS = ROOT / "tests" / "worker" / "tasks" / "cheats" / "split_zeros_plain.py"
FORGE = ROOT / "tests" / "worker" / "tasks" / "cheats" / "split_proc_forge.py"


def maxkernel():
    return os.environ.get("MAXKERNEL_CLI", str(ROOT / "build" / "bin" / "maxkernel"))


def python():
    venv = ROOT / ".venv" / "bin" / "python"
    return os.environ.get("MAXKERNEL_PYTHON", str(venv if venv.exists() else sys.executable))


def _test(path, store, *extra):
    return subprocess.run([maxkernel(), "test", str(path), "--python", python(), "--store", str(store), *extra],
                          check=False, capture_output=True, text=True, timeout=300, cwd=path.parent)


def _cached(store):
    if not store.exists():
        return []
    with sqlite3.connect(store) as db:
        if not db.execute("SELECT name FROM sqlite_master WHERE name = 'eval_cache'").fetchall():
            return []
        return [row[0] for row in db.execute("SELECT result_json FROM eval_cache")]


def test_no_cache_leaves_the_store_unchanged_and_a_forged_verdict_is_never_stored(tmp_path):
    zeros = tmp_path / ZEROS.name
    zeros.write_text(ZEROS.read_text())
    forge = tmp_path / FORGE.name
    forge.write_text(FORGE.read_text())
    store = tmp_path / "store.sqlite"
    r = _test(zeros, store, "--no-cache")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert _cached(store) == []
    r = _test(forge, store)
    assert r.returncode == 1, (r.stdout, r.stderr)  # the forged "correct" line never reached the host
    (verdict,) = _cached(store)
    assert '"correct":false' in verdict.replace(" ", "") and '"speedup":42' not in verdict.replace(" ", "")
