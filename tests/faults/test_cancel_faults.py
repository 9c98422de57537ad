"""Cancelling a run whose worker is stuck in a candidate that never reaches a cancel check point:
the worker is asked to cancel, and a worker that does not stop within 3 s is killed
(docs/reliability.md, "cancellation"). Checked on the processes themselves: every worker of the
run is gone within the 3 s plus a margin for the kill and the reap on a busy machine, long
before the host's --timeout. A candidate stuck while the LLM expander lowers it is not reached by
the cancel (the compile check before the debugger takes the search's cancel function)."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from conftest import maxkernel, python, wait_until, worker_processes
from fault_fixtures import answer, code, plan, with_block, write

GRACE_S = 3.0    # the promise
MARGIN_S = 2.0   # SIGKILL, reaping and polling on a loaded 2-core machine
LOOP = "    while True:\n        pass\n"


def cpu_seconds(pid):
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spinning(pids, seconds=2.0):
    """The pids that kept burning CPU over the next `seconds` (an idle worker uses none; on a
    shared 2-core machine a spinning one gets a fraction of a core): stuck in the loop."""
    first = {p: cpu_seconds(p) for p in pids}
    time.sleep(seconds)
    return [p for p in pids if first[p] is not None and (cpu_seconds(p) or 0) - first[p] > 0.25 * seconds]


def run_until_a_worker_spins(tmp_path, kernel, candidate):
    """Starts a one-round run whose only candidate is `candidate`, waits until one of its workers
    spins in it; returns (the CLI process, its workers, the store)."""
    entries = [answer("planner", plan("stuck")), answer("implementer", code(candidate))]
    entries += [answer("debugger", "I cannot fix this one.") for _ in range(4)]
    fixture = write(tmp_path / "fixture.json", entries)
    store = tmp_path / "store.sqlite"
    env = dict(os.environ, OPENAI_API_KEY="sk-fault-matrix", MAXKERNEL_STORE=str(store))
    args = [maxkernel(), "optimize", str(kernel), "--python", python(), "--store", str(store),
            "--llm", f"replay:{fixture}", "--format", "json", "--no-report", "--budget",
            "iterations=1", "--branches", "1", "--timeout", "300"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path)
    for line in proc.stderr:
        if "| node 0 " in line:  # the baseline is done; the stuck candidate comes next
            break
    wait_until(lambda: spinning(run_processes(store)), 120, "a worker spinning in the candidate")
    return proc, run_processes(store), store


def run_processes(store):
    """The run's workers, and their zygotes and candidate children (the candidate runs in a child
    forked from its worker's zygote, and spins there)."""
    return worker_processes(store) + worker_processes(store, b"mkworker.sandbox.zygote")


def cancel_and_time(proc, workers, store):
    """Ctrl-C; seconds until every one of `workers` is gone (None if not within the promise)."""
    proc.send_signal(signal.SIGINT)
    cancelled_at = time.monotonic()
    try:
        wait_until(lambda: not [p for p in workers if p in run_processes(store)],
                   GRACE_S + MARGIN_S, "every worker of the run to be gone")
    except AssertionError:
        return None
    return time.monotonic() - cancelled_at


def stop_everything(proc, store):
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pid in run_processes(store):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_cancelled_run_kills_a_worker_stuck_in_a_candidate_within_three_seconds(tmp_path, kernel):
    # Lowers fine, then loops forever inside the compiled program (XLA runs the loop: no cancel
    # check point is ever reached), so only the host's kill can stop the timing worker.
    spin = ("    spin = jax.lax.while_loop(lambda c: c >= 0.0, lambda c: c + 1.0, x[0, 0] * 0.0)\n"
            "    x = x + spin * 0.0\n")
    proc, workers, store = run_until_a_worker_spins(tmp_path, kernel, with_block(64, spin))
    try:
        took = cancel_and_time(proc, workers, store)
        out, err = proc.communicate(timeout=60)
    finally:
        stop_everything(proc, store)
    assert took is not None, f"workers {workers} outlived the cancel by {GRACE_S + MARGIN_S} s"
    assert proc.returncode == 130, err
    result = json.loads(out)
    assert result["status"] == "cancelled"
    # The candidate never finished: no verdict is invented for it; its node stays pending.
    (stuck,) = [n for n in result["nodes"] if n["strategy"] == "llm:stuck"]
    assert stuck["status"] == "pending" and stuck["speedup"] is None, stuck


def test_a_cancel_reaches_a_candidate_stuck_in_the_llm_compile_check(tmp_path, kernel):
    # Loops while the candidate is traced: the compile worker, in the expander's lowering check.
    proc, workers, store = run_until_a_worker_spins(tmp_path, kernel, with_block(64, LOOP))
    try:
        took = cancel_and_time(proc, workers, store)
    finally:
        stop_everything(proc, store)
    assert took is not None, f"workers {workers} outlived the cancel by {GRACE_S + MARGIN_S} s"
