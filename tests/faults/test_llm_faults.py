"""LLM faults during `maxkernel optimize --llm replay:FIXTURE` against real workers: rate-limit
bursts and storms with Retry-After, 5xx, a stream cut mid-answer, a non-JSON body, an answer
with no code, a provider that never answers. Every run must end (within its budget where it has
one) with a status and stop_reason that say what happened, and leave no process behind."""
import json
import os
import re
import subprocess
import time

import pytest

from conftest import maxkernel, python, wait_until, worker_processes
from fault_fixtures import answer, code, fault, plan, with_block, write

RUN_TIMEOUT = 600  # a busy 2-core machine: the baseline alone can take ~30 s


def optimize(tmp, kernel, entries, *extra):
    fixture = write(tmp / "fixture.json", entries)
    store = tmp / "store.sqlite"
    env = dict(os.environ, OPENAI_API_KEY="sk-fault-matrix", MAXKERNEL_STORE=str(store))
    args = [maxkernel(), "optimize", str(kernel), "--python", python(), "--store", str(store),
            "--llm", f"replay:{fixture}", "--format", "json", "--no-report", "--branches", "1",
            *extra]
    started = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env, cwd=tmp)
    seconds = time.monotonic() - started
    # Nothing outlives the command: no worker, no replay server.
    for script in (b"maxkernel_worker.py", b"replay_server.py"):
        wait_until(lambda: not worker_processes(store, script), 30, f"{script} to exit")
    return r, seconds


def retries(stderr):
    return re.findall(r"llm attempt (\d)/(\d) failed: (.*); retrying in (\d+) ms", stderr)


def chain(block=64):
    return [answer("planner", plan(f"row_block_{block}")),
            answer("implementer", code(with_block(block)))]


def test_a_rate_limit_burst_honours_retry_after_and_the_run_goes_on(tmp_path, kernel):
    burst = [fault("planner", type="rate_limit", retry_after=2) for _ in range(3)]
    r, _ = optimize(tmp_path, kernel, burst + chain(), "--budget", "iterations=1")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "done" and out["stop_reason"] == "budget: 1 iterations"
    # Three 429s, each waited out for at least its Retry-After, then the answer was used.
    waits = retries(r.stderr)
    assert [w[0] for w in waits] == ["1", "2", "3"], r.stderr
    assert all("429" in w[2] or "rate" in w[2].lower() for w in waits)
    assert all(int(w[3]) >= 2000 for w in waits)
    nodes = {n["id"]: n for n in out["nodes"]}
    assert nodes[1]["strategy"] == "llm:row_block_64" and nodes[1]["status"] == "correct"


@pytest.mark.parametrize("kind", ["rate_limit", "server_error"])
def test_a_storm_of_errors_stops_the_run_cleanly_after_bounded_retries(tmp_path, kernel, kind):
    storm = [fault("planner", type=kind, retry_after=1) for _ in range(8)]
    r, seconds = optimize(tmp_path, kernel, storm + chain(), "--budget", "iterations=3")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "done"
    assert out["stop_reason"].startswith("LLM: ") and "after 4 attempts" in out["stop_reason"]
    assert ("429" if kind == "rate_limit" else "500") in out["stop_reason"]
    assert len(retries(r.stderr)) == 3  # attempts are bounded: 4, not 8
    assert [n["id"] for n in out["nodes"]] == [0] and out["nodes"][0]["status"] == "correct"
    assert out["cost"]["tokens_in"] == 0


def test_a_stream_cut_before_any_text_is_retried(tmp_path, kernel):
    entries = [answer("planner", plan("row_block_64"), type="truncate", after_chunks=1)] + chain()
    r, _ = optimize(tmp_path, kernel, entries, "--budget", "iterations=1")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "done" and out["stop_reason"] == "budget: 1 iterations"
    assert len(retries(r.stderr)) == 1
    assert [n["strategy"] for n in out["nodes"]] == ["baseline", "llm:row_block_64"]


def test_a_stream_cut_after_text_stops_the_run_without_a_retry(tmp_path, kernel):
    entries = [answer("planner", plan("row_block_64"), type="truncate", after_chunks=2)] + chain()
    r, _ = optimize(tmp_path, kernel, entries, "--budget", "iterations=1")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "done" and out["stop_reason"].startswith("LLM: ")
    assert retries(r.stderr) == []  # text already reached the caller: never sent twice
    assert [n["id"] for n in out["nodes"]] == [0]


def test_a_body_that_is_not_json_stops_the_run_as_malformed(tmp_path, kernel):
    entries = [fault("planner", type="malformed")] + chain()
    r, _ = optimize(tmp_path, kernel, entries, "--budget", "iterations=1")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "done" and out["stop_reason"].startswith("LLM: ")
    assert retries(r.stderr) == []  # malformed output is not retried
    assert [n["id"] for n in out["nodes"]] == [0]


def test_an_answer_without_code_skips_the_strategy_and_the_rules_take_over(tmp_path, kernel):
    prose = "I would use a bigger block, but I cannot show code right now."
    entries = [answer("planner", plan("row_block_64")), answer("implementer", prose),
               answer("implementer", prose)]
    r, _ = optimize(tmp_path, kernel, entries, "--budget", "iterations=1", "--branches", "2")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "done" and out["stop_reason"] == "budget: 1 iterations"
    assert "implementer (row_block_64)" in r.stderr  # the skipped strategy is logged
    children = [n for n in out["nodes"] if n["id"] != 0]
    # The rule-based expander proposed instead: progress without the LLM's candidate.
    assert children and not any(n["strategy"].startswith("llm:") for n in children)
    assert any(n["status"] == "correct" for n in children)
    # Both implementer answers (the first and the retry quoting the parse error) were paid for.
    assert out["cost"]["tokens_in"] == 3 * 500


def test_a_provider_that_never_answers_ends_the_run_within_its_wall_budget(tmp_path, kernel):
    budget = 30
    entries = [fault("planner", type="hang", seconds=600)] + chain()
    # No extra shapes: their lowering and root evaluation count against the seconds budget, and
    # this test needs the budget to run out while the planner hangs, not before it is asked.
    r, seconds = optimize(tmp_path, kernel, entries, "--budget", f"iterations=3,seconds={budget}",
                          "--extra-shapes", "none")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "done"
    assert out["stop_reason"] == f"budget: {budget} s of wall time (an LLM call was cut short)"
    assert [n["id"] for n in out["nodes"]] == [0]
    # The run ended at its budget (plus start-up and teardown), not after retries x 300 s.
    assert seconds < budget + 60
