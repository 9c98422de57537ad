"""Evaluate ONE candidate kernel in a fresh Python process and exit.

This is the "MaxKernel seed" way of evaluating a candidate: a new `python`
process per candidate that imports JAX, executes the task and candidate
files, checks the candidate against the frozen reference and times it, prints
one JSON line on stdout and exits.  bench/worker_throughput/run.py starts it
once per candidate and compares it with the warm worker's `evaluate`.

    python fresh_eval.py --task task.py --candidate cand_03.py \
        --seeds 11,22,33 --timing '{"warmup": 1, "min_runs": 5, "min_seconds": 0, "max_seconds": 0.5}'

The work mirrors the worker's in-process `evaluate` before the judge split (mkw_check.py, since removed;
mkworker/judge/run.py) step for step, with the same counts of kernel runs:

1. input sets from `make_inputs(jax.random.key(seed))` per seed, host copies
   kept (pristine bytes);
2. the reference compiled ahead of time (`jit(...).trace().lower().compile()`)
   inside `pltpu.force_tpu_interpret_mode(InterpretParams(uninitialized_memory="nan"))`
   and run once per input set (golden outputs), before the candidate file is
   executed;
3. candidate file executed as a fresh module; its jaxpr traced (outside the
   interpret context, as the worker does for its facts) and checked for a
   pallas_call (the kernel gate);
4. candidate compiled ahead of time inside the interpret context;
5. per seed: candidate, reference, reference, candidate, each on fresh
   copies of the inputs, inputs checked for mutation after each candidate
   run, each output compared with the golden outputs by the worker's own
   comparison (judge.run.compare, imported from tpu/worker: the task's TOLERANCES
   or the per-dtype defaults, |c - r| <= atol * max(1, max|r|) + rtol * |r|,
   finiteness, exact integers);
6. timing of candidate and reference with the same loop as judge.run.time_fn
   (warmup, then until min_runs and min_seconds, capped by max_runs /
   max_seconds, block_until_ready around every run), inputs rotating over
   the input sets.

Standard library + JAX/numpy + the worker's judge.run (for its comparison) only.  Exit status 0 when a JSON result was
printed (correct or not), 1 on an unexpected error (JSON with "error").
"""

from __future__ import annotations

import time

T_PROCESS0 = time.perf_counter()  # first thing: the imports below are measured

import argparse
import json
import math
import os
import statistics
import sys
import types

WORKER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tpu", "worker")

DEFAULT_TIMING = {"warmup": 1, "min_runs": 5, "min_seconds": 0.1, "max_runs": 200, "max_seconds": 3.0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", required=True, help="in-file task: reference, make_inputs, TOLERANCES")
    ap.add_argument("--candidate", required=True, help="candidate file defining `candidate`")
    ap.add_argument("--entry", default="candidate")
    ap.add_argument("--seeds", default="11,22,33")
    ap.add_argument("--timing", default=json.dumps(DEFAULT_TIMING))
    args = ap.parse_args(argv)
    phases: dict[str, float] = {}
    t = time.perf_counter()
    phases["stdlib_imports_s"] = t - T_PROCESS0

    # -- 0. imports (what every fresh process pays)
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental.pallas import tpu as pltpu
    sys.path.insert(0, WORKER_DIR)
    from mkworker.judge import run  # the worker's output comparison, so both paths judge a candidate alike
    phases["import_s"] = time.perf_counter() - t

    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    cfg = dict(DEFAULT_TIMING)
    cfg.update({k: type(DEFAULT_TIMING[k])(v) for k, v in json.loads(args.timing).items()
                if k in DEFAULT_TIMING and v is not None})
    cfg["min_runs"] = max(1, cfg["min_runs"])
    cfg["max_runs"] = max(cfg["min_runs"], cfg["max_runs"])

    def interp():
        return pltpu.force_tpu_interpret_mode(pltpu.InterpretParams(uninitialized_memory="nan"))

    def load(path: str, role: str) -> dict:
        with open(path, encoding="utf-8") as f:
            src = f.read()
        mod = types.ModuleType(f"_fresh_{role}")
        mod.__file__ = path
        sys.modules[mod.__name__] = mod
        exec(compile(src, path, "exec"), mod.__dict__)  # noqa: S102 - running the candidate is the point
        return mod.__dict__

    def clone(arrs):
        return tuple(jnp.array(x, copy=True) for x in arrs)

    def to_host(tree):
        return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]

    # -- 1. task + input sets
    t = time.perf_counter()
    task = load(args.task, "task")
    reference, make_inputs = task["reference"], task["make_inputs"]
    tol = task.get("TOLERANCES")  # None: the worker's per-dtype defaults
    plat = run.platform()
    sets, pristine = [], []
    for seed in seeds:
        v = make_inputs(jax.random.key(seed))
        v = tuple(v) if isinstance(v, (tuple, list)) else (v,)
        v = tuple(jnp.asarray(x) for x in v)
        jax.block_until_ready(v)
        sets.append(v)
        pristine.append([np.array(x, copy=True) for x in v])
    phases["task_inputs_s"] = time.perf_counter() - t

    # -- 2. frozen reference: compile + golden outputs (before the candidate runs)
    t = time.perf_counter()
    with interp():
        ref_compiled = jax.jit(reference).trace(*sets[0]).lower().compile()
        phases["reference_compile_s"] = time.perf_counter() - t
        golden = [to_host(ref_compiled(*clone(s))) for s in sets]
    phases["reference_total_s"] = time.perf_counter() - t

    # -- 3. candidate module + kernel gate (trace outside the interpret context)
    t = time.perf_counter()
    cand = load(args.candidate, "candidate")
    entry = cand[args.entry]
    jaxpr = jax.jit(entry).trace(*sets[0]).jaxpr
    n_pallas = _count_pallas(jaxpr)
    phases["candidate_load_trace_s"] = time.perf_counter() - t
    result = {"candidate": os.path.basename(args.candidate), "seeds": seeds, "pallas_calls": n_pallas,
              "jax": jax.__version__, "platform": jax.devices()[0].platform, "pid": os.getpid()}
    if n_pallas == 0:
        result.update(correct=False, failure={"kind": "no_pallas_call"})
        return _emit(result, phases)

    # -- 4. candidate compile
    t = time.perf_counter()
    with interp():
        cand_compiled = jax.jit(entry).trace(*sets[0]).lower().compile()
    phases["candidate_compile_s"] = time.perf_counter() - t

    # -- 5. checks: cand, ref, ref, cand per seed
    t = time.perf_counter()

    def run_cand(i):
        a = clone(sets[i])
        with interp():
            out = cand_compiled(*a)
            jax.block_until_ready(out)
        problems = []
        for j, (x, p) in enumerate(zip(a, pristine[i])):
            if x.is_deleted() or np.asarray(x).tobytes() != np.ascontiguousarray(p).tobytes():
                problems.append(f"input {j} donated or modified")
        return out, problems

    def run_ref(i):
        with interp():
            return to_host(ref_compiled(*clone(sets[i])))

    failure = None
    kernel_runs = {"candidate_checks": 0, "reference_checks": 0}
    for i, seed in enumerate(seeds):
        c1, p1 = run_cand(i)
        r1 = run_ref(i)
        r2 = run_ref(i)
        c2, p2 = run_cand(i)
        kernel_runs["candidate_checks"] += 2
        kernel_runs["reference_checks"] += 2
        for c, probs, r in ((c1, p1, r1), (c2, p2, r2)):
            msg = None
            if probs:
                msg = ("input_mutated", "; ".join(probs))
            else:
                msg = _compare(run, c, golden[i], tol, plat) or \
                    _compare(run, r, golden[i], tol, plat, reference=True)
            if msg and failure is None:
                failure = {"kind": msg[0], "seed": seed, "message": msg[1]}
    phases["checks_s"] = time.perf_counter() - t
    result.update(correct=failure is None, failure=failure)

    # -- 6. timing (only when correct), same loop as the worker
    if failure is None:
        t = time.perf_counter()
        with interp():
            result["timing"] = {"config": cfg,
                                "candidate": _time_fn(jax, cand_compiled, sets, cfg),
                                "reference": _time_fn(jax, ref_compiled, sets, cfg)}
        phases["timing_s"] = time.perf_counter() - t
    result["kernel_runs"] = kernel_runs
    return _emit(result, phases)


def _emit(result, phases) -> int:
    phases["in_process_total_s"] = time.perf_counter() - T_PROCESS0
    result["phases"] = phases
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


def _count_pallas(closed) -> int:
    """pallas_call equations in a (closed) jaxpr, nested jaxprs included."""
    seen = 0
    stack = [getattr(closed, "jaxpr", closed)]
    while stack:
        jp = stack.pop()
        for eqn in jp.eqns:
            if eqn.primitive.name == "pallas_call":
                seen += 1
                continue
            for v in eqn.params.values():
                for w in (v if isinstance(v, (list, tuple)) else (v,)):
                    if hasattr(w, "eqns"):
                        stack.append(w)
                    elif hasattr(w, "jaxpr") and hasattr(w.jaxpr, "eqns"):
                        stack.append(w.jaxpr)
    return seen


def _compare(run, cand, golden, tol, plat, reference=False):
    """(kind, message) when `cand` differs from the golden outputs by the worker's rule, as
    the worker's checks word it (now judge.judge.check); None when it matches."""
    cmp = run.compare(cand, golden, tol, plat)
    if cmp["ok"]:
        return None
    if reference:
        return ("reference_changed", "the reference no longer reproduces its own outputs after the "
                                     "candidate ran: " + cmp["message"])
    return (cmp["kind"], cmp["message"])


def _percentile(s, q):
    if len(s) == 1:
        return s[0]
    pos = (len(s) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _time_fn(jax, fn, sets, cfg) -> dict:
    """Same loop as judge.run.time_fn."""
    n = len(sets)
    for i in range(cfg["warmup"]):
        jax.block_until_ready(fn(*sets[i % n]))
    times = []
    start = time.perf_counter()
    i = 0
    while True:
        elapsed = time.perf_counter() - start
        if len(times) >= cfg["max_runs"] or (elapsed >= cfg["max_seconds"] and times):
            break
        if len(times) >= cfg["min_runs"] and elapsed >= cfg["min_seconds"]:
            break
        t0 = time.perf_counter()
        out = fn(*sets[i % n])
        jax.block_until_ready(out)
        times.append(time.perf_counter() - t0)
        del out
        i += 1
    s = sorted(times)
    return {"runs": len(s), "input_sets": n, "median_s": statistics.median(s),
            "p10_s": _percentile(s, 0.10), "p90_s": _percentile(s, 0.90), "min_s": s[0],
            "mean_s": statistics.fmean(s), "total_s": sum(s)}


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # noqa: BLE001
        import traceback
        sys.stdout.write(json.dumps({"error": f"{type(e).__name__}: {e}",
                                     "traceback": traceback.format_exc()[-4000:]}) + "\n")
        sys.exit(1)
