"""Candidates that take the worker down during a search: a segfault (a wild numpy read), os._exit, an
kernel that spins on the device (killed at the host's --timeout) and an address-space blow-up (stopped by the
worker's RLIMIT_AS from MAXKERNEL_WORKER_LIMITS). Each such node is `failed` with a reason that
names the fault; the good candidate of the same round is still evaluated and the run finishes.
The candidates come from a replay fixture, as an LLM would propose them."""
import json
import os
import subprocess

from conftest import maxkernel, python, wait_until, worker_processes
from fault_fixtures import answer, code, plan, with_block, write

# A real segfault the source gate lets through (it refuses ctypes): numpy reads 16 TiB past an
# array through a strided view.
SEGFAULT = ("    import numpy as np\n"
            "    np.lib.stride_tricks.as_strided(np.zeros(1), shape=(2,), strides=(1 << 44,)).sum()\n")
EXIT = "    import os\n    os._exit(7)\n"
# A kernel that never finishes on the device: it lowers (the compile check passes quickly) and
# spins when it runs, so only the evaluation meets the host's --timeout.
SPIN = ("    spin = jax.lax.while_loop(lambda c: c >= 0, lambda c: c * 0 + 1, 0)\n"
        "    o_ref[...] = jnp.zeros_like(o_ref) + spin.astype(o_ref.dtype)\n")
# Address space taken 1 GiB at a time until the worker's RLIMIT_AS stops it. bytes(n) is calloc'd
# (fresh zero pages, never touched), so the hoard costs no physical memory and no time; a
# bytearray would memset each GiB and, on a loaded 24 GiB machine, meet the timeout or the OOM
# killer before the limit. The source gate refuses mmap.
BLOW_UP = "    hoard = []\n    while True:\n        hoard.append(bytes(1 << 30))\n"


def run_with(tmp, kernel, strategies, *extra, env_extra=None):
    """One round over `strategies` ({name: candidate source}); the debugger gets answers without
    code, so every broken candidate reaches the evaluation as it is."""
    entries = [answer("planner", plan(*strategies))]
    entries += [answer("implementer", code(source)) for source in strategies.values()]
    entries += [answer("debugger", "I cannot fix this one.") for _ in range(4 * len(strategies))]
    fixture = write(tmp / "fixture.json", entries)
    store = tmp / "store.sqlite"
    env = dict(os.environ, OPENAI_API_KEY="sk-fault-matrix", MAXKERNEL_STORE=str(store),
               **(env_extra or {}))
    args = [maxkernel(), "optimize", str(kernel), "--python", python(), "--store", str(store),
            "--llm", f"replay:{fixture}", "--format", "json", "--no-report", "--budget",
            "iterations=1", "--branches", str(len(strategies)), "--concurrency", "2", *extra]
    r = subprocess.run(args, capture_output=True, text=True, timeout=900, env=env, cwd=tmp)
    wait_until(lambda: not worker_processes(store), 30, "the workers to exit")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "done" and out["stop_reason"] == "budget: 1 iterations", out
    return {n["strategy"].removeprefix("llm:"): n for n in out["nodes"]}, out


def test_crashing_candidates_fail_with_the_reason_and_the_run_goes_on(tmp_path, kernel):
    nodes, out = run_with(tmp_path, kernel, {
        "segfault": with_block(64, SEGFAULT), "exit": with_block(32, EXIT),
        "row_block_16": with_block(16)})
    assert nodes["segfault"]["status"] == "failed"
    assert "crashed" in nodes["segfault"]["error"] and "signal 11" in nodes["segfault"]["error"]
    assert nodes["exit"]["status"] == "failed" and "exited with code 7" in nodes["exit"]["error"]
    assert nodes["row_block_16"]["status"] == "correct" and nodes["row_block_16"]["speedup"] > 1
    assert out["best"]["node"] == nodes["row_block_16"]["id"]


def test_a_hang_is_killed_at_the_timeout_and_a_blow_up_hits_the_memory_limit(tmp_path, kernel):
    nodes, out = run_with(
        tmp_path, kernel,
        {"loop": with_block(64, kernel_extra=SPIN), "hoard": with_block(32, BLOW_UP),
         "row_block_16": with_block(16)},
        "--timeout", "45", env_extra={"MAXKERNEL_WORKER_LIMITS": '{"address_space_mb": 16384}'})
    assert nodes["loop"]["status"] == "failed" and "timed out" in nodes["loop"]["error"]
    assert nodes["hoard"]["status"] == "failed"
    assert "Cannot allocate memory" in nodes["hoard"]["error"] or "MemoryError" in nodes["hoard"]["error"]
    assert nodes["row_block_16"]["status"] == "correct"
    assert out["best"]["node"] == nodes["row_block_16"]["id"]
