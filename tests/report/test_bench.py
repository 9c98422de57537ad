"""`maxkernel bench` on tests/bench_suite with the local host (CPU, interpret mode): per-task
verdicts, fast_0 = the correct fraction, speedups never shown as numbers, and the cache."""

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli, venv_python

SUITE = ROOT / "tests" / "bench_suite"
EXPECTED_CORRECT = {"scale_add": True, "row_sum": True, "shifted_blocks": False}


@pytest.fixture(scope="module")
def bench_store(tmp_path_factory):
    return tmp_path_factory.mktemp("bench") / "store.sqlite"


@pytest.fixture(scope="module")
def first_run(bench_store):
    done = run_cli(
        "bench",
        SUITE,
        "--format",
        "json",
        "--python",
        venv_python(),
        "--store",
        bench_store,  # a fresh store: nothing to read; this run writes the verdicts the next reads
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_per_task_verdicts(first_run):
    tasks = {t["name"]: t for t in first_run["tasks"]}
    assert set(tasks) == set(EXPECTED_CORRECT)
    for name, correct in EXPECTED_CORRECT.items():
        task = tasks[name]
        assert task["evaluated"] and task["compiled"], task
        assert task["correct"] is correct, task
        assert Path(task["candidate"]).name == "optimized.py"
        assert task["from_cache"] is False
    assert tasks["shifted_blocks"]["failure"].startswith("mismatch")
    assert tasks["scale_add"]["failure"] is None


def test_cpu_speedups_are_not_numbers(first_run):
    for task in first_run["tasks"]:
        assert task["speedup"] is None
        if task["correct"]:
            assert task["time_kind"] == "interpret"
            assert task["speedup_display"] == "n/a (interpret)"
            assert task["candidate_median_s"] > 0
    summary = first_run["summary"]
    assert summary["geomean_speedup"] is None
    assert summary["tasks_with_speedup"] == 0
    assert summary["speedup_note"]


def test_rates_and_fast_p(first_run):
    summary = first_run["summary"]
    correct = sum(t["correct"] for t in first_run["tasks"])
    assert summary["tasks"] == len(first_run["tasks"]) == 3
    assert summary["correct"] == correct
    assert summary["compiled"] == sum(t["compiled"] for t in first_run["tasks"])
    assert summary["fast_p"]["fast_0"] == pytest.approx(correct / summary["tasks"])
    for p in ("fast_1", "fast_1.5", "fast_2"):
        assert summary["fast_p"][p] is None
    host_seconds = sum(t["host_seconds"] for t in first_run["tasks"])
    assert summary["cost"]["host_seconds"] == pytest.approx(host_seconds)
    assert summary["cost"]["cache_hits"] == 0


def test_second_run_comes_from_the_cache_as_text(first_run, bench_store):
    done = run_cli(
        "bench", SUITE, "--python", venv_python(), "--store", bench_store, timeout=600
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "3 cache hit(s)" in out
    assert "correct 2/3" in out
    assert "fast_0 0.667" in out and "fast_1 n/a" in out
    assert out.count("n/a (interpret)") == 2
    lines = {line.split()[0]: line for line in out.splitlines() if line.split()[:1]}
    assert lines["shifted_blocks"].split()[1:3] == ["yes", "no"]


def test_usage_errors(tmp_path):
    assert run_cli("bench").returncode == 2
    assert run_cli("bench", SUITE, "--format", "xml").returncode == 2
    assert run_cli("bench", tmp_path / "missing").returncode == 2
    empty = run_cli("bench", tmp_path)
    assert empty.returncode == 2 and "no JAXBench tasks" in empty.stderr
