"""What docs/optimize.md promises about budgets, Ctrl-C, resuming and the evaluation cache, on real
workers (no LLM): `patience` and `target` stop a run when they should; Ctrl-C marks a CLI run
`cancelled`; a resumed run never evaluates a finished node again and carries its elapsed time
(and the `seconds` budget counts the time of earlier sessions); a repeated evaluation is answered
by the evaluation cache; a run interrupted mid-round resumes with the same choices and round
counter (the interrupted round is closed by its leftover children)."""
import json
import re
import signal
import sqlite3
import subprocess
import time

import pytest
from optimize_helpers import (
    kernel_copy,
    node_rows,
    optimize,
    optimize_args,
    python,
    run_state,
    runs,
)

PROGRESS = re.compile(r"^\[iteration (\d+)(?:/\d+)?\] (\d+) evaluations, best ([\d.]+)x")


def rounds_done(stderr):
    """{round: best speedup when it ended} from the 'iteration N done' progress lines."""
    out = {}
    for line in stderr.splitlines():
        m = PROGRESS.match(line)
        if m and line.endswith(f"iteration {m.group(1)} done"):
            out[int(m.group(1))] = float(m.group(3))
    return out


def graph(store, run_id):
    """The choices a run made: each node's parent, strategy and code."""
    return sorted((-1 if row[1] is None else row[1], row[7], row[3])
                  for row in node_rows(store, run_id))


def interrupt_when(proc, predicate):
    """Reads the run's stderr until `predicate(line)`, then sends SIGINT (Ctrl-C)."""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if predicate(line, seen):
            proc.send_signal(signal.SIGINT)
            break
    out, rest = proc.communicate(timeout=600)
    return out, "".join(seen) + rest


def test_patience_stops_after_that_many_rounds_without_a_gain(tmp_path):
    # One block over the whole array: no block move or rewrite predicts a gain.
    text = (kernel_copy(tmp_path).read_text()).replace("BLOCK_ROWS = 8\n", "BLOCK_ROWS = 256\n")
    kernel = kernel_copy(tmp_path, "one_block.py", text)
    store = tmp_path / "store.sqlite"
    r = optimize(kernel, store, "--budget", "iterations=8,patience=2", "--branches", "2")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["stop_reason"] == "no gain in 2 iterations", out["stop_reason"]
    assert run_state(store, out["run"])[1]["round"] == 2
    # No round improved on the kernel as written, and both rounds proposed something.
    assert rounds_done(r.stderr) == {1: 1.0, 2: 1.0}, r.stderr
    assert out["best"]["node"] == 0 and len(out["nodes"]) >= 3


def test_target_stops_the_run_in_the_round_that_reaches_it(tmp_path):
    kernel = kernel_copy(tmp_path)
    store = tmp_path / "store.sqlite"
    r = optimize(kernel, store, "--budget", "iterations=10,target=1.5", "--branches", "2")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["stop_reason"] == "target speedup 1.50x reached", out["stop_reason"]
    assert out["best"]["speedup"] >= 1.5
    done = rounds_done(r.stderr)
    last = run_state(store, out["run"])[1]["round"]
    assert last < 10 and sorted(done) == list(range(1, last + 1)), r.stderr
    # Every earlier round ended below the target: the run stopped at the first round that hit it.
    assert all(best < 1.5 for n, best in done.items() if n < last) and done[last] >= 1.5


# No stop at the roofline: both runs go through the same rounds (the model puts these kernels at it).
# Extra shapes are judged like the own shape (the judge's verdicts are the cached ones).
ARGS = ("--budget", "iterations=2", "--branches", "2", "--concurrency", "1", "--roofline", "0")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """An uninterrupted run (no cache hits) in a store the next tests reuse: what a resumed run
    must match, and the evaluation cache they are answered from."""
    tmp = tmp_path_factory.mktemp("finished")
    kernel = kernel_copy(tmp)
    store = tmp / "store.sqlite"
    r = optimize(kernel, store, *ARGS)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["stop_reason"] == "budget: 2 iterations" and out["cost"]["cache_hits"] == 0
    return kernel, store, out


def start(kernel, store, *extra):
    return subprocess.Popen(optimize_args(kernel, store, *ARGS, *extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=kernel.parent)


def test_ctrl_c_cancels_a_run_that_resumes_from_the_evaluation_cache(finished):
    kernel, store, whole = finished
    # The same run again, on the same store, stopped by Ctrl-C after its first round.
    proc = start(kernel, store)
    stdout, stderr = interrupt_when(proc, lambda line, _: line.rstrip().endswith("iteration 1 done"))
    assert proc.returncode == 130, stderr
    cut = json.loads(stdout)
    run_id = cut["run"]
    assert cut["status"] == "cancelled" and cut["stop_reason"] == "cancelled"
    assert f"stopped; resume with: maxkernel runs resume {run_id}" in stderr
    status, state = run_state(store, run_id)
    assert status == "cancelled" and state["round"] >= 1 and state["elapsed_s"] > 0
    # Every evaluation of the second run was answered by the evaluation cache: same metrics.
    assert cut["cost"]["evaluations"] >= 3
    assert cut["cost"]["cache_hits"] == cut["cost"]["evaluations"], cut["cost"]
    first = {(n["parent"], n["code_hash"]): n["speedup"] for n in whole["nodes"]}
    assert all(first[(n["parent"], n["code_hash"])] == n["speedup"]
               for n in cut["nodes"] if n["status"] == "correct")
    before = {row[0]: row for row in node_rows(store, run_id) if row[4] > 0}

    started = time.monotonic()
    r = runs("resume", run_id, "--python", python(), "--no-report", store=store)
    resumed_s = time.monotonic() - started
    assert r.returncode == 0, r.stderr
    status, final = run_state(store, run_id)
    assert status == "done" and state["round"] <= final["round"] <= 2  # 2 rounds in all
    after = {row[0]: row for row in node_rows(store, run_id)}
    for node_id, row in before.items():
        assert after[node_id] == row, f"node {node_id} was evaluated again"
    # The elapsed time carries over: the first session's plus (at most) this one's.
    assert state["elapsed_s"] <= final["elapsed_s"] <= state["elapsed_s"] + resumed_s + 1


def test_a_run_interrupted_mid_round_resumes_with_the_same_choices_and_round_counter(finished):
    kernel, store, whole = finished
    # Uncached, so the second child of round 2 is still being evaluated when Ctrl-C lands.
    proc = start(kernel, store, "--no-cache")
    stdout, stderr = interrupt_when(proc, lambda line, _: "| node 3 " in line)
    assert proc.returncode == 130, stderr
    run_id = json.loads(stdout)["run"]
    assert any(row[4] == 0 for row in node_rows(store, run_id)), "no node was left pending"
    r = runs("resume", run_id, "--python", python(), "--no-report", store=store)
    assert r.returncode == 0, r.stderr
    # The same parents chose the same children, and the run ended where the whole run did.
    assert graph(store, run_id) == graph(store, whole["run"])
    status, final = run_state(store, run_id)
    assert (status, final["round"]) == ("done", 2)


def test_the_seconds_budget_counts_the_time_of_earlier_sessions(finished):
    kernel, store, _ = finished
    proc = subprocess.Popen(
        # No cache: the store's finished run would answer every node at once, and the first
        # session must spend measurable time before the interrupt.
        optimize_args(kernel, store, "--budget", "iterations=2,seconds=900", "--branches", "2",
                      "--concurrency", "1", "--no-cache"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=kernel.parent)
    stdout, stderr = interrupt_when(proc, lambda line, _: "| node 1 " in line)
    assert proc.returncode == 130, stderr
    run_id = json.loads(stdout)["run"]
    status, state = run_state(store, run_id)
    assert status == "cancelled" and state["elapsed_s"] > 2
    ids_before = {row[0] for row in node_rows(store, run_id)}
    # Pretend the budget was smaller from the start: the first session has already spent it.
    spent = int(state["elapsed_s"]) - 1
    with sqlite3.connect(store) as db:
        budget = json.loads(db.execute("SELECT budget_json FROM runs WHERE id = ?",
                                       (run_id,)).fetchone()[0])
        assert budget["seconds"] == 900
        budget["seconds"] = spent
        db.execute("UPDATE runs SET budget_json = ? WHERE id = ?", (json.dumps(budget), run_id))

    r = runs("resume", run_id, "--python", python(), "--no-report", store=store)
    assert r.returncode == 0, r.stderr
    shown = json.loads(runs("show", run_id, "--format", "json", store=store).stdout)
    # The resume finishes the nodes the first session left pending and stops: it does not grant
    # itself a fresh budget of its own.
    assert shown["status"] == "done"
    assert shown["stop_reason"] == f"budget: {spent} s of wall time", shown["stop_reason"]
    assert {n["id"] for n in shown["nodes"]} == ids_before
    assert all(n["finished_at"] > 0 for n in shown["nodes"])
    assert run_state(store, run_id)[1]["elapsed_s"] >= state["elapsed_s"]
