"""The judge and the candidate in different processes (issue 36).

Each tasks/cheats/split_*.py cheat got through the worker when the candidate ran in the judge's
process (recorded in bench/RESULTS.md, "Issue 36"): forged protocol lines, the frozen reference
rewritten through frames or the garbage collector, module classes swapped, pytrees whose flatten
answers inside the comparison, an entry whose .trace shows an honest kernel, host callbacks in
branches and loops, scatter and loop work outside the kernel, a dead branch inflating the kernel's
FLOPs. Now the candidate runs in its own child and only data crosses; each test asserts the
verdict and its message. Interrupts, huge allocations and child processes end in a verdict within
seconds, and the worker serves the next candidate.
"""

import os
import sys
import time

import pytest
from worker_harness import ROOT, WorkerProcess, read_task, task_path

sys.path.insert(0, os.path.join(ROOT, "tpu", "worker"))

FAST = {"min_runs": 3, "min_seconds": 0.0, "max_seconds": 1.0}
MISMATCH = "seed 1: output 0: 2048 of 2048 elements outside rtol=1e-06, atol=1e-06"


@pytest.fixture(scope="module")
def worker():
    w = WorkerProcess()
    yield w
    w.close()


def _evaluate(worker, name, timeout=120, **kw):
    kw.setdefault("timing", FAST)
    kw.setdefault("seeds", [1, 2])
    return worker.request("evaluate", timeout=timeout, task={"form": "infile", "path": task_path("cheats", name)},
                          source=read_task("cheats", name), filename=task_path("cheats", name), **kw)


def _incorrect(r, kind, text):
    assert r["ok"] is True, r
    assert r["correct"] is False, r
    assert r["failure"]["kind"] == kind, r["failure"]
    assert text in r["failure"]["message"], r["failure"]["message"]


# The cheats whose kernel writes zeros: whatever they reach in their own process, the judge compares
# the program's outputs with the reference's.
@pytest.mark.parametrize("name", ["split_frame_golden.py", "split_gc_golden.py", "split_pytree_flatten.py",
                                  "split_class_swap_worker.py"])
def test_reaching_for_the_judge_finds_nothing(worker, name):
    _incorrect(_evaluate(worker, name), "mismatch", MISMATCH)


@pytest.mark.parametrize("name,rid", [("split_proc_forge.py", 4242), ("split_judge_forge.py", 4343)])
def test_a_forged_protocol_line_never_reaches_the_host(worker, name, rid):
    """Its own /proc/self/fd has no protocol pipe; the judge's /proc/<pid>/fd is closed to it (the
    worker is not dumpable, the child is in its own user namespace)."""
    rid = worker.send("evaluate", id=rid, task={"form": "infile", "path": task_path("cheats", name)},
                      source=read_task("cheats", name), filename=task_path("cheats", name), seeds=[1, 2], timing=FAST)
    r = worker.wait_for(rid)
    _incorrect(r, "mismatch", MISMATCH)
    assert not [ln for ln in worker.raw_lines if str(rid).encode() in ln and b'"speedup": 4' in ln]


def test_a_swapped_module_class_poisons_nothing_after_it():
    """A bench run's order: the tampering task first, then a plain zeros kernel; the second gets the
    verdict it gets alone."""
    w = WorkerProcess()
    try:
        alone = _evaluate(w, "split_zeros_plain.py")
        _incorrect(alone, "mismatch", MISMATCH)
        _incorrect(_evaluate(w, "split_class_swap.py"), "mismatch", MISMATCH)
        after = _evaluate(w, "split_zeros_plain.py")
        _incorrect(after, "mismatch", MISMATCH)
        assert after["failure"]["message"] == alone["failure"]["message"]
    finally:
        w.close()


def test_an_entry_with_its_own_trace_is_judged_by_what_runs(worker):
    _incorrect(_evaluate(worker, "split_fake_trace.py"), "no_pallas_kernel",
               "the candidate's program for the target contains no Pallas kernel")


@pytest.mark.parametrize("name", ["split_callback_cond.py", "split_callback_while.py", "split_callback_kernel.py"])
def test_host_callbacks_anywhere_are_refused(worker, name):
    r = _evaluate(worker, name)
    assert r["ok"] is False, r
    assert r["error"]["kind"] == "refused" and r["error"]["rule"] == "host-callback", r["error"]
    assert r["error"]["message"] == (
        f"{name}: the candidate's program calls back into Python on the host (jax.pure_callback, "
        f"io_callback, debug callbacks): the judge runs only XLA and the kernels [host-callback]")


OUTSIDE = "the work is done outside the kernel: the program's XLA ops outside every kernel do "


@pytest.mark.parametrize("name,rule,text", [
    ("split_scatter_outside.py", "exported-program", OUTSIDE + "100% of the reference's FLOPs (4,096 of 4,096;"),
    ("split_while_outside.py", "loop",
     "the work is done outside the kernel: a loop outside every kernel runs an unknown number of times"),
    ("split_dead_branch.py", "exported-program", OUTSIDE + "100% of the reference's matmul FLOPs (524,288 of 524,288;"),
])
def test_work_outside_the_kernels_is_counted_in_the_exported_program(worker, name, rule, text):
    r = _evaluate(worker, name)
    _incorrect(r, "work_outside_kernel", text)
    assert r["failure"]["rule"] == rule
    assert r["work"]["judge"]["kernels"] == 1


def test_an_interrupt_at_import_is_a_verdict_in_seconds(worker):
    t0 = time.monotonic()
    r = _evaluate(worker, "split_interrupt_import.py", timeout=60)
    assert time.monotonic() - t0 < 30
    assert r["ok"] is False and r["error"]["kind"] == "import", r
    assert "KeyboardInterrupt" in r["error"]["message"]
    _incorrect(_evaluate(worker, "split_zeros_plain.py"), "mismatch", MISMATCH)  # the worker serves on


def test_a_huge_allocation_meets_the_limit_not_the_oom_killer(worker):
    t0 = time.monotonic()
    r = _evaluate(worker, "split_big_alloc.py", timeout=60)
    assert time.monotonic() - t0 < 30
    assert r["ok"] is False and r["error"]["kind"] == "import", r
    assert "MemoryError" in r["error"]["message"]
    _incorrect(_evaluate(worker, "split_zeros_plain.py"), "mismatch", MISMATCH)


def test_child_processes_end_with_the_candidate(tmp_path):
    pidfile = tmp_path / "pids.txt"
    w = WorkerProcess(extra_env={"MKW_TEST_PIDFILE": str(pidfile)})
    try:
        t0 = time.monotonic()
        _incorrect(_evaluate(w, "split_spawn_children.py"), "mismatch", MISMATCH)
        assert time.monotonic() - t0 < 60
        pids = [int(p) for p in pidfile.read_text().split()]
        assert pids  # the reference's and the candidate's children both forked one
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.1)
        assert not [p for p in pids if _alive(p)]
        _incorrect(_evaluate(w, "split_zeros_plain.py"), "mismatch", MISMATCH)
    finally:
        w.close()


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_the_candidate_has_no_network_and_its_own_limits(worker):
    r = _evaluate(worker, "split_zeros_plain.py")
    notes = r["judge"]["sandbox"]
    assert any(n.startswith("network") for n in notes)
    assert any(n.startswith("limits address_space_mb=") for n in notes)
    if os.path.exists("/proc/self/ns/net") and "isolated (own" in notes[0]:
        assert notes[0] == "network isolated (own network namespace)"


def _children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return out


def test_the_reference_child_is_kept_for_fresh_seeds():
    """A search draws fresh seeds for each evaluation: the task's reference child is kept (it loaded
    the task and compiled the reference once) and answers each new seed list; if it dies, the next
    evaluation starts a fresh one and loses nothing. A candidate that is the task's own file (its
    code runs in the reference's child at import) never leaves that child behind."""
    w = WorkerProcess()
    try:
        path = task_path("infile", "scale_add.py")

        def evaluate(variant="\n# a variant of the file, as a search writes them\n"):
            r = w.request("evaluate", timeout=120, task={"form": "infile", "path": path},
                          source=read_task("infile", "scale_add.py") + variant, filename=path, timing=False)
            assert r["ok"] is True and r["correct"] is True, r
            return r

        own = [evaluate(variant=""), evaluate(variant="")]
        assert [r["judge"]["reference_from"] for r in own] == ["fresh child", "fresh child"]
        first, second = evaluate(), evaluate()
        assert first["judge"]["reference_from"] == "fresh child"
        assert second["judge"]["reference_from"] == "kept child"
        assert first["seeds"] != second["seeds"]
        zygote = [p for p in _children(w.proc.pid) if b"mkworker.sandbox.zygote" in open(f"/proc/{p}/cmdline", "rb").read()]
        assert len(zygote) == 1
        # The candidates' children are killed as their answers arrive (SIGKILL is asynchronous, and
        # a JAX process takes a moment to tear down); the reference's stays.
        deadline = time.monotonic() + 30
        while len(kept := [p for p in _children(zygote[0]) if _alive(p)]) > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(kept) == 1
        os.kill(kept[0], 9)
        third = evaluate()
        assert third["judge"]["reference_from"] == "fresh child"
        assert evaluate()["judge"]["reference_from"] == "kept child"
    finally:
        w.close()


def test_autotune_judges_every_configuration_as_evaluate_does():
    """Autotune's configurations run in children too: a cheat that swaps the worker's comparison
    module and zeroes the frozen reference (every configuration scored `ok` in the worker's own
    process) is incorrect at each configuration, and a plain zeros kernel evaluated next on the
    same worker gets the verdict it gets alone."""
    w = WorkerProcess()
    try:
        alone = _evaluate(w, "split_zeros_plain.py")
        _incorrect(alone, "mismatch", MISMATCH)
        name = "split_autotune_swap.py"
        r = w.request("autotune", timeout=240, task={"form": "infile", "path": task_path("cheats", name)},
                      source=read_task("cheats", name), filename=task_path("cheats", name), seeds=[1, 2],
                      space={"BLOCK_ROWS": [8, 16]}, timing=FAST)
        assert r["ok"] is True, r
        assert r["best"] is None, r["best"]
        assert [x["status"] for x in r["results"]] == ["incorrect", "incorrect"], r["results"]
        for x in r["results"]:
            assert x["failure"]["kind"] == "mismatch", x
            assert MISMATCH in x["failure"]["message"], x["failure"]
        after = _evaluate(w, "split_zeros_plain.py")
        assert after["failure"]["message"] == alone["failure"]["message"], after["failure"]
    finally:
        w.close()


@pytest.mark.parametrize("op,fields", [("lower", {}), ("profile", {"runs": 1})])
def test_lower_and_profile_run_the_candidate_outside_the_judge(op, fields):
    """`lower` and `profile` load the candidate too: in the worker's own process, the class swap
    outlived them and every later evaluation on that worker compared nothing. They run in a
    child now; the zeros kernel evaluated next gets the verdict it gets alone."""
    w = WorkerProcess()
    try:
        alone = _evaluate(w, "split_zeros_plain.py")
        _incorrect(alone, "mismatch", MISMATCH)
        name = "split_class_swap_worker.py"
        r = w.request(op, timeout=120, task={"form": "infile", "path": task_path("cheats", name)},
                      source=read_task("cheats", name), filename=task_path("cheats", name), **fields)
        assert r["ok"] is True and r["pallas_calls" if op == "lower" else "pallas_kernels"], r
        after = _evaluate(w, "split_zeros_plain.py")
        _incorrect(after, "mismatch", MISMATCH)
        assert after["failure"]["message"] == alone["failure"]["message"]
    finally:
        w.close()


def test_the_judge_profiles_its_own_runs_for_device_time():
    """On a TPU or GPU host the judge reads device time from a profiler trace of the programs it
    runs itself (time_programs, device=True), never from the candidate's process. A CPU trace
    has no device ops: each side says so, and the wall-clock timing stands."""
    import jax
    import jax.numpy as jnp
    from mkworker import common
    from mkworker.judge import judge
    import numpy as np

    class Golden:  # the judge's view of a reference answer: arrays only
        def __init__(self):
            self.seeds = [1, 2]
            self.inputs = [[np.ones((8, 128), np.float32)], [np.full((8, 128), 2.0, np.float32)]]
            self.outputs = [[2.0 * i[0]] for i in self.inputs]

        def device_inputs(self, i):
            return [jnp.asarray(a) for a in self.inputs[i]]

    spec = jax.ShapeDtypeStruct((8, 128), jnp.float32)
    double = jax.jit(lambda v: (v * 2.0,)).trace(spec).lower().compile()
    cfg = {"warmup": 0, "min_runs": 2, "max_runs": 2, "min_seconds": 0.0, "max_seconds": 5.0}
    out = judge.time_programs(double, double, Golden(), cfg, common.CancelToken(), None, "cpu", False,
                                  device=True)
    assert out["timed_by"] == "judge" and out["timed_outputs"]["ok"] is True, out
    for side in ("candidate", "reference"):
        assert out[side]["median_s"] > 0
        assert out[side]["device"] == {"error": "the trace has no device op events"}, out[side]
    plain = judge.time_programs(double, None, Golden(), cfg, common.CancelToken(), None, "cpu", False)
    assert "device" not in plain["candidate"] and plain["reference"] is None


@pytest.mark.parametrize("body,says", [
    ("    import os\n    os._exit(7)\n", "it exited with code 7"),
    ("    import numpy as np\n    np.lib.stride_tricks.as_strided(np.zeros(1), shape=(2,), strides=(1 << 44,)).sum()\n",
     "it crashed (signal 11, SIGSEGV; a crash)"),
])
def test_how_a_candidate_process_ended_is_in_the_verdict(worker, body, says):
    """The zygote reaps its children and tells the judge how one ended (its exit code or signal)."""
    path = task_path("infile", "scale_add.py")
    src = read_task("infile", "scale_add.py").replace("def candidate(x, y):\n", "def candidate(x, y):\n" + body, 1)
    for op in ("lower", "evaluate"):
        r = worker.request(op, task={"form": "infile", "path": path}, source=src, filename=path, seeds=[1],
                           timing=False)
        assert r["ok"] is False, r
        assert r["error"]["message"] == "the candidate's process ended without an answer: " + says, r["error"]
    assert worker.request("hello")["ok"] is True
