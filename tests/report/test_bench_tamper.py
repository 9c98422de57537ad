"""A bench run where the first task's candidate tampers with its process (it swaps the class of the
worker's comparison module, so every output "matches") and the second task's candidate writes
zeros: the second gets the verdict it gets alone (issue 36: candidates run in children, and the
judge's process never runs candidate code, whichever op the host sends first)."""

import json
import shutil

from conftest import ROOT, run_cli, venv_python

SCALE_ADD = ROOT / "tests" / "bench_suite" / "scale_add"
TIMING = {"warmup": 0, "min_runs": 2, "max_runs": 2, "min_seconds": 0, "max_seconds": 60}

SWAP = '''
import functools as _functools
import sys as _sys


def _get(obj, path):
    return _functools.reduce(getattr, path.split("/"), obj)


def _all_match(*args, **kwargs):
    return {"ok": True, "outputs": []}


_run = _get(_sys, "modules").get("mkw" + "_run")
if _run is not None:
    class _Module(type(_run)):
        compare = property(lambda self: _all_match)

    _get(_sys, "modules")["builtins"].setattr(_run, "__cl" + "ass__", _Module)
'''


def _task(suite, name, optimized):
    d = suite / name
    d.mkdir(parents=True)
    shutil.copy(SCALE_ADD / "baseline.py", d / "baseline.py")
    (d / "optimized.py").write_text(optimized)


def _zeros():
    return (SCALE_ADD / "optimized.py").read_text().replace(
        "o_ref[...] = 2.0 * x_ref[...] + y_ref[...]", "o_ref[...] = jnp.zeros_like(o_ref)")


def _bench(suite):
    done = run_cli("bench", suite, "--format", "json", "--python", venv_python(), "--store",
                   suite.parent / "store.sqlite", "--no-cache", "--seeds", "3,4", "--jobs", "1",
                   "--timing", json.dumps(TIMING), timeout=600)
    assert done.returncode == 0, done.stderr
    return {t["name"]: t for t in json.loads(done.stdout)["tasks"]}


def test_a_task_that_tampers_changes_nothing_for_the_next(tmp_path):
    suite = tmp_path / "suite"
    _task(suite, "a_tamper", (SCALE_ADD / "optimized.py").read_text() + SWAP)
    _task(suite, "b_zeros", _zeros())
    tasks = _bench(suite)
    assert list(tasks) == ["a_tamper", "b_zeros"]
    assert tasks["a_tamper"]["correct"] is True, tasks["a_tamper"]  # its kernel is right
    # As alone: every element is wrong (a poisoned comparison would have said "correct").
    assert tasks["b_zeros"]["correct"] is False, tasks["b_zeros"]
    assert tasks["b_zeros"]["failure"].startswith("mismatch: seed 3: output 0: 8192 of 8192 elements"), \
        tasks["b_zeros"]["failure"]
