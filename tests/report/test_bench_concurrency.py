"""`maxkernel bench` runs tasks at once up to the host's timing workers (a CPU host: as many as its
compile workers, capped at its cores; docs/hosts.md): results stay in suite order, one task's crash
touches no other, `--jobs 1` runs one at a time, `--seeds` and `--timing` reach every task."""

import json
import os
import shutil

import pytest
from conftest import ROOT, run_cli, venv_python

SCALE_ADD = ROOT / "tests" / "bench_suite" / "scale_add"
TIMING = {"warmup": 0, "min_runs": 2, "max_runs": 2, "min_seconds": 0, "max_seconds": 60}


def waiting_candidate(folder, mine, other, wait_s):
    """scale_add's candidate, whose module code marks `mine` started, waits up to `wait_s` for
    `other` to start and makes the folder `mine`.saw1 when it did, else `mine`.saw0 (folders: the
    worker's source gate refuses writing files)."""
    prelude = f"""
import os as _os
import time as _time
_os.mkdir({str(folder / (mine + ".start"))!r})
_t0 = _time.time()
while not _os.path.exists({str(folder / (other + ".start"))!r}) and _time.time() - _t0 < {wait_s}:
    _time.sleep(0.01)
_os.mkdir({str(folder / (mine + ".saw"))!r} + ("1" if _os.path.exists({str(folder / (other + ".start"))!r}) else "0"))
"""
    return (SCALE_ADD / "optimized.py").read_text() + prelude


def make_suite(root, wait_s, crash=False):
    suite = root / "suite"
    names = ["a_first", "b_second"]
    for mine, other in (names, names[::-1]):
        d = suite / mine
        d.mkdir(parents=True)
        shutil.copy(SCALE_ADD / "baseline.py", d / "baseline.py")
        (d / "optimized.py").write_text(waiting_candidate(root, mine, other, wait_s))
    if crash:
        d = suite / "c_crash"
        d.mkdir()
        shutil.copy(SCALE_ADD / "baseline.py", d / "baseline.py")
        (d / "optimized.py").write_text("import os\nos._exit(3)\n")
    return suite


def bench(suite, *extra):
    done = run_cli("bench", suite, "--format", "json", "--python", venv_python(), "--store",
                   suite.parent / "store.sqlite", "--no-cache", "--seeds", "3,4",
                   "--timing", json.dumps(TIMING), *extra, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="declared: one core: the timing lane has one worker")
def test_tasks_run_at_once_in_suite_order_and_a_crash_stays_in_its_task(tmp_path):
    out, stderr = bench(make_suite(tmp_path, wait_s=120, crash=True))
    assert "up to 2 at a time" in stderr
    assert out["summary"]["cost"]["concurrency"] == 2
    assert [t["name"] for t in out["tasks"]] == ["a_first", "b_second", "c_crash"]
    # Each waiting candidate saw the other start: both evaluations were running at once.
    assert (tmp_path / "a_first.saw1").is_dir()
    assert (tmp_path / "b_second.saw1").is_dir()
    tasks = {t["name"]: t for t in out["tasks"]}
    for name in ("a_first", "b_second"):
        assert tasks[name]["correct"] is True, tasks[name]
        assert tasks[name]["failure"] is None
    assert tasks["c_crash"]["correct"] is False
    # The candidate exits at import in its own child process: the judge's worker lives on.
    assert tasks["c_crash"]["failure"].startswith("runtime: the candidate's process ended without an answer"), \
        tasks["c_crash"]["failure"]
    assert out["summary"]["correct"] == 2 and out["summary"]["tasks"] == 3
    assert out["summary"]["cost"]["wall_seconds"] > 0


def test_jobs_one_runs_one_task_at_a_time(tmp_path):
    out, stderr = bench(make_suite(tmp_path, wait_s=3), "--jobs", "1")
    assert "up to 1 at a time" in stderr
    assert (tmp_path / "a_first.saw0").is_dir()  # the second had not started
    a, b = out["tasks"]
    assert a["correct"] and b["correct"]
    assert b["started_s"] >= a["started_s"] + a["host_seconds"]


def test_seeds_and_timing_reach_the_worker(tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(SCALE_ADD, suite / "scale_add")
    out, _ = bench(suite)
    [task] = out["tasks"]
    assert task["correct"] is True and task["candidate_median_s"] > 0
    store = suite.parent / "store.sqlite"
    # --no-cache wrote nothing; a run with the cache writes the judge's verdict under these
    # options, and a repeat with the same options finds it.
    for from_cache in (False, True):
        again = run_cli("bench", suite, "--format", "json", "--python", venv_python(), "--store", store,
                        "--seeds", "3,4", "--timing", json.dumps(TIMING), timeout=600)
        assert json.loads(again.stdout)["tasks"][0]["from_cache"] is from_cache
    other = run_cli("bench", suite, "--format", "json", "--python", venv_python(), "--store", store,
                    "--seeds", "5", "--timing", json.dumps(TIMING), timeout=600)
    assert json.loads(other.stdout)["tasks"][0]["from_cache"] is False


@pytest.mark.parametrize("args, message", [
    (["--seeds", "1,x"], "--seeds wants integers"),
    (["--seeds", ""], "--seeds wants integers"),
    (["--timing", "{"], "--timing is not valid JSON"),
    (["--timing", "[1]"], "--timing must be a JSON object"),
    (["--jobs", "0"], "--jobs wants a positive integer"),
    (["--jobs", "two"], "--jobs wants a positive integer"),
])
def test_bad_options_are_usage_errors(args, message):
    done = run_cli("bench", ROOT / "tests" / "bench_suite", *args)
    assert done.returncode == 2
    assert message in done.stderr
