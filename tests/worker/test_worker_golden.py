"""The frozen reference kept across evaluates (tpu/worker/mkworker/judge/golden.py): reused for the same task
and explicit seeds, never for fresh random seeds, never weakening a check, and rebuilt when
something in the worker changed it."""

from worker_harness import read_task, task_path

TASK = {"form": "infile", "path": task_path("infile", "scale_add.py")}
NO_TIMING = {"min_runs": 1, "max_runs": 1, "min_seconds": 0.0, "max_seconds": 0.0, "warmup": 0}

# Module-level code of a candidate that replaces every cached reference output by zeros.
TAMPER = """
import sys as _sys
import numpy as _np
for _golden, _digest in list(_sys.modules["mkworker.judge.golden"]._entries.values()):
    _golden.outputs[:] = [[_np.zeros_like(o) for o in outs] for outs in _golden.outputs]
"""


def _evaluate(worker, source, **kw):
    kw.setdefault("timing", NO_TIMING)
    return worker.request("evaluate", task=kw.pop("task", TASK), source=source,
                          filename=task_path("infile", "candidate_under_test.py"), **kw)


def test_same_task_and_seeds_reuse_the_reference_and_every_check_still_runs(fresh_worker):
    first = _evaluate(fresh_worker, read_task("infile", "scale_add.py"), seeds=[5, 6])
    assert first["ok"] and first["correct"], first
    assert first["reference_reused"] is False
    again = _evaluate(fresh_worker, read_task("infile", "scale_add.py"), seeds=[5, 6])
    assert again["ok"] and again["correct"] and again["reference_reused"] is True
    # Same outcome as the first evaluate: every seed, both orders, checked again.
    assert [c["seed"] for c in again["checks"]] == [5, 6]
    for c in again["checks"]:
        assert c["ok"] and [run["order"] for run in c["runs"]] == ["candidate_first", "reference_first"]
    assert again["timing"]["reference"]["runs"] == 1

    zeros = _evaluate(fresh_worker, read_task("infile", "cheat_zeros.py"), seeds=[5, 6])
    assert zeros["reference_reused"] is True
    assert zeros["correct"] is False and zeros["failure"]["kind"] == "mismatch"
    mutate = _evaluate(fresh_worker, read_task("infile", "cheat_mutate.py"), seeds=[5, 6])
    assert mutate["reference_reused"] is True
    assert mutate["correct"] is False and mutate["failure"]["kind"] == "input_mutated"
    plain = _evaluate(fresh_worker, read_task("infile", "cheat_plain_jnp.py"), seeds=[5, 6])
    assert plain["correct"] is False and plain["failure"]["kind"] == "no_pallas_call"

    other_seeds = _evaluate(fresh_worker, read_task("infile", "scale_add.py"), seeds=[5, 7])
    assert other_seeds["correct"] and other_seeds["reference_reused"] is False
    random_seeds = _evaluate(fresh_worker, read_task("infile", "scale_add.py"))
    assert random_seeds["correct"] and random_seeds["reference_reused"] is False


def test_reference_from_the_candidates_own_buffer_is_never_shared(fresh_worker):
    src = read_task("infile", "scale_add.py")
    for _ in range(2):
        r = _evaluate(fresh_worker, src, task={"form": "infile"}, seeds=[1])
        assert r["correct"] and r["task"]["reference_frozen"] is False
        assert r["reference_reused"] is False


def test_a_candidate_cannot_reach_the_cached_reference(fresh_worker):
    assert _evaluate(fresh_worker, read_task("infile", "scale_add.py"), seeds=[9])["correct"]
    # A correct candidate whose module code zeroes the cached reference outputs is refused by
    # the source gate (it reaches sys.modules) before a line of it runs ...
    tamper = _evaluate(fresh_worker, read_task("infile", "scale_add.py") + TAMPER, seeds=[9])
    assert tamper["ok"] is False and tamper["error"]["kind"] == "refused", tamper
    assert tamper["error"]["rule"] == "worker-state"
    # ... so the cached reference is intact, reused, and the next candidate's zeros still fail.
    zeros = _evaluate(fresh_worker, read_task("infile", "cheat_zeros.py"), seeds=[9])
    assert zeros["reference_reused"] is True
    assert zeros["correct"] is False and zeros["failure"]["kind"] == "mismatch"


def test_a_changed_cached_reference_is_rebuilt_not_trusted():
    """The digest behind the gate: a cached entry changed by anything in the worker is dropped
    (in-process, since no candidate can reach the cache any more)."""
    import os
    import sys
    import types

    import numpy as np
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "tpu", "worker"))
    from mkworker.judge import golden as judge_golden

    x = np.arange(4, dtype=np.float32)
    s = types.SimpleNamespace(leaves=lambda: [x], pristine=[x.copy()])
    golden = types.SimpleNamespace(sets=[s], outputs=[[2 * x]], warnings=[], task=None)
    judge_golden.store("k", golden)
    assert judge_golden.lookup("k")[0] is not None
    cached = judge_golden._entries["k"][0]
    cached.outputs[0][0] = np.zeros_like(x)  # what the tamper above would have done
    again, warning = judge_golden.lookup("k")
    assert again is None and "computed again" in warning
    judge_golden.clear()


def test_cache_off_by_environment():
    from worker_harness import WorkerProcess

    w = WorkerProcess(extra_env={"MAXKERNEL_WORKER_GOLDEN_CACHE": "0"})
    try:
        for _ in range(2):
            r = _evaluate(w, read_task("infile", "scale_add.py"), seeds=[4])
            assert r["correct"] and r["reference_reused"] is False
    finally:
        w.close()
