"""The correctness checks shared by evaluate and autotune: compile the candidate, run it and
the frozen reference in both orders on cloned inputs, compare, and check the inputs afterwards."""

from __future__ import annotations

import time

import jax
import mkw_common as C
import mkw_facts
import mkw_golden
import mkw_mismatch
import mkw_run
import mkw_trace


def compile_candidate(entry, s0, mode, filename, source):
    with mode.context():
        try:
            traced = mkw_trace.jitted(s0.bind(entry)).trace(*s0.args, **s0.kwargs)
        except Exception as e:  # noqa: BLE001
            mode.reset()
            raise C.from_exception(C.TRACE, e, filename, source=source, prefix="tracing failed") from None
        try:
            lowered = traced.lower()
        except Exception as e:  # noqa: BLE001
            mode.reset()
            raise C.from_exception(C.LOWERING, e, filename, source=source, prefix="lowering failed") from None
        try:
            return lowered.compile(), traced
        except Exception as e:  # noqa: BLE001
            mode.reset()
            raise C.from_exception(C.COMPILE, e, filename, source=source, prefix="compilation failed") from None


def check_candidate(entry, golden: mkw_golden.Golden, mode: mkw_run.RunMode, plat, task_tol, cancel,
                    filename, source) -> dict:
    """Compiles the candidate and checks it on every input set, in both
    orders (candidate then reference, reference then candidate), on cloned
    inputs, verifying afterwards that the inputs are untouched."""
    t0 = time.perf_counter()
    compiled, traced = compile_candidate(entry, golden.sets[0], mode, filename, source)
    compile_s = time.perf_counter() - t0
    out_avals = [jax.ShapeDtypeStruct(o.shape, o.dtype) for o in jax.tree_util.tree_leaves(traced.out_info)] \
        if hasattr(traced, "out_info") else []

    def run_cand(s):
        a, k = s.clone()
        if mode.kind == "device":
            mkw_run.poison_allocator(out_avals)
        try:
            with mode.context():
                out = compiled(*a, **k)
                jax.block_until_ready(out)
        except Exception as e:  # noqa: BLE001
            mode.reset()
            raise C.from_exception(C.RUNTIME, e, filename, source=source,
                                   prefix=f"the candidate failed while running (seed {s.seed})") from None
        problems = mkw_run.check_inputs_intact((a, k), s.pristine)
        return out, problems

    checks = []
    failure = None
    reports = {}  # seed -> the correctness report of its first failing run
    # A suite convention may accept an output dtype other than the reference's (mkw_tasks).
    accept_dtype = bool(getattr(golden.task, "accept_dtype_difference", False))
    for s, gold in zip(golden.sets, golden.outputs):
        cancel.check()
        entry_res = {"seed": s.seed, "ok": True, "runs": []}
        outs = {}
        c1, p1 = run_cand(s)
        r1 = golden.run_ref(s)
        r2 = golden.run_ref(s)
        c2, p2 = run_cand(s)
        outs["candidate_first"], outs["reference_first"] = (c1, p1, r1), (c2, p2, r2)
        for order, (c, probs, r) in outs.items():
            cmp = mkw_run.compare(c, gold, task_tol, plat, accept_dtype)
            run = {"order": order, "ok": cmp["ok"] and not probs, "outputs": cmp["outputs"]}
            if probs:
                run["input_problems"] = probs
                run["kind"] = "input_mutated"
                run["message"] = "; ".join(probs)
            elif not cmp["ok"]:
                run["kind"] = cmp["kind"]
                run["message"] = cmp["message"]
            ref_cmp = mkw_run.compare([jax.numpy.asarray(x) for x in r], gold, task_tol, plat, accept_dtype)
            if not ref_cmp["ok"]:
                run["ok"] = False
                run.setdefault("kind", "reference_changed")
                run.setdefault("message", "the reference no longer reproduces its own outputs after the "
                                          "candidate ran: " + ref_cmp["message"])
            entry_res["runs"].append(run)
            if not run["ok"] and entry_res["ok"]:
                entry_res.update(ok=False, kind=run["kind"], message=run["message"])
                if cmp.get("kind") in ("mismatch", "nonfinite") and not probs:
                    reports[s.seed] = _mismatch_report(c, gold, s, order, traced, task_tol, plat)
        checks.append(entry_res)
        if not entry_res["ok"] and failure is None:
            failure = {"kind": entry_res["kind"], "message": f"seed {s.seed}: {entry_res['message']}",
                       "seed": s.seed}
            if s.seed in reports:
                failure["report"] = reports[s.seed]
    # Input mutation outranks numerical failures (the numbers are then moot).
    for c in checks:
        if c.get("kind") == "input_mutated":
            failure = {"kind": "input_mutated", "message": f"seed {c['seed']}: {c['message']}",
                       "seed": c["seed"]}
            break
    return {"compiled": compiled, "compile_s": compile_s, "checks": checks, "failure": failure,
            "correct": failure is None}


def _mismatch_report(cand, gold, s, order, traced, task_tol, plat) -> dict:
    """Where and how the outputs differ (mkw_mismatch), with the kernel's output blocks from its
    lowering facts; computed only for a failing run."""
    shapes = [list(g.shape) for g in gold]
    try:
        blocks = mkw_mismatch.output_blocks(mkw_facts.all_facts(traced.jaxpr), shapes)
    except Exception:  # noqa: BLE001 - the report goes without block facts
        blocks = {}
    return mkw_mismatch.report(
        jax.tree_util.tree_leaves(cand), gold, lambda dt: mkw_run.tolerances_for(dt, task_tol, plat),
        seed=s.seed, order=order, blocks=blocks,
        input_shapes=[list(x.shape) for x in s.leaves() if hasattr(x, "shape")])
