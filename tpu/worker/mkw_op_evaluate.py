"""The `evaluate` op: the frozen reference first, then the gated candidate, its checks
(mkw_check), the extra shapes the host asked for (mkw_extra_shapes) and, when it is correct,
its timing (mkw_timing)."""

from __future__ import annotations

import mkw_check
import mkw_clock
import mkw_common as C
import mkw_cost
import mkw_extra_shapes
import mkw_facts
import mkw_golden
import mkw_prepared
import mkw_run
import mkw_shrink
import mkw_tasks
import mkw_timing
import mkw_trace


def op_evaluate(req, cancel, progress) -> dict:
    plat = mkw_run.platform()
    hardware = mkw_prepared.request_hardware(req)
    watch = mkw_clock.Watch(req.get("filename") or "<buffer>")
    mkw_prepared.gate_task(req)
    task = mkw_tasks.resolve(req.get("task"), req.get("source"), req.get("filename") or "<buffer>") \
        if "task" in req else None
    if task is None:
        raise C.WorkerError(C.BAD_REQUEST, "request needs a `task`")
    try:
        mkw_shrink.configure(task, req.get("shrink"))
        mkw_extra_shapes.parse_request(req.get("extra_shapes"))  # a bad request before any work
        src, fname = mkw_prepared.request_candidate(req, task)
        if isinstance(src, str):
            mkw_prepared.gate_candidate(src, fname or "<buffer>", task)  # before the reference's work is spent
        seeds = mkw_prepared.seeds_from(req, 3)
        # The frozen reference runs first, before any candidate code exists (or comes from an
        # earlier evaluate of the same task and seeds, see mkw_golden).
        pre_mode = mkw_run.choose_mode(plat, [{"compiler_params": "tpu"}], req.get("interpret_mode"))
        golden, reused = mkw_golden.frozen(task, seeds, plat, pre_mode, cancel)
        progress(stage="reference_done", seeds=seeds, reused=reused)
        prep = mkw_prepared.Prepared(req, task=task, watch=watch)
        try:
            res = _evaluate_prepared(req, prep, golden, plat, cancel, progress, hardware)
            res["reference_reused"] = reused
            return res
        finally:
            prep.close()
    finally:
        task.close()


def _evaluate_prepared(req, prep, golden, plat, cancel, progress, hardware=None):
    task = prep.task
    s0 = golden.sets[0]
    _, closed = mkw_trace.trace_candidate(s0.bind(prep.entry), s0.args, s0.kwargs, prep.filename, prep.source)
    facts = mkw_facts.all_facts(closed, filename=prep.filename)
    res = {
        "entry": prep.entry_name,
        "task": task.describe(),
        # The shapes every result below was measured at (mkw_shrink): full, or shrunk.
        "instance": mkw_shrink.describe(task),
        "seeds": [s.seed for s in golden.sets],
        "pallas_kernels": [f["kernel"] for f in facts],
        "pallas_calls": facts,
        "warnings": list(golden.warnings) + mkw_trace.fact_warnings(facts),

        "speedup": None,
        "timing": None,
    }
    gate = mkw_trace.pallas_gate(facts)
    mode = mkw_run.choose_mode(plat, facts, req.get("interpret_mode"))
    res["run_mode"] = mode.to_json()
    res["time_kind"] = mode.time_kind
    prep.watch.check("tracing")
    if gate:
        res.update(correct=False, failure=gate, checks=[])
        return res
    res["work"] = mkw_cost.work_report(closed, facts, task, s0.args, s0.kwargs, prep.filename)
    if res["work"].get("verdict"):
        res.update(correct=False, failure=res["work"]["verdict"], checks=[])
        return res
    cancel.check()
    try:
        chk = mkw_check.check_candidate(prep.entry, golden, mode, plat, task.tolerances, cancel, prep.filename,
                              prep.source)
    except C.WorkerError as e:
        if mode.kind == "interpret" and mode.interpret_kind == "tpu" and req.get("interpret_mode", "auto") \
                == "auto" and e.kind in (C.LOWERING, C.COMPILE, C.RUNTIME) and \
                any(s in e.message.lower() for s in ("not implemented", "unimplemented", "unsupported",
                                                     "not supported")):
            res["warnings"].append(f"TPU interpret mode could not run this kernel ({e.message[:200]}); "
                                   f"fell back to interpret=True")
            mode = mkw_run.RunMode("interpret", "hlo", plat)
            golden.mode = mode
            res["run_mode"] = mode.to_json()
            chk = mkw_check.check_candidate(prep.entry, golden, mode, plat, task.tolerances, cancel, prep.filename,
                                  prep.source)
        else:
            if e.kind == C.RUNTIME and not e.extra.get("locations"):
                # A failure inside a compiled kernel has no Python frame of
                # the user's: point at the pallas_call sites instead.
                e.extra["locations"] = [
                    {"line": f["location"]["line"], "column": 1,
                     "message": f"while running pallas_call {f['kernel']}: {e.message.splitlines()[0][:300]}"}
                    for f in facts if f.get("location")]
            raise
    prep.watch.check("the checks")
    res["compile_s"] = {"candidate": chk["compile_s"], "reference": golden.compile_s}
    res["checks"] = chk["checks"]
    res["correct"] = chk["correct"]
    res["failure"] = chk["failure"]
    progress(stage="checked", correct=chk["correct"])
    extra = mkw_extra_shapes.parse_request(req.get("extra_shapes"))
    if extra is not None:
        res["extra_shapes"], failure = mkw_extra_shapes.check(extra, prep, golden, mode, plat, cancel,
                                                              chk["correct"])
        prep.watch.check("the extra shapes")
        if failure:
            res.update(correct=False, failure=failure)
            chk["correct"] = False
        progress(stage="extra_shapes", passed=res["extra_shapes"]["passed"],
                 failed=res["extra_shapes"]["failed"])
    want_timing = req.get("timing", True) is not False
    if chk["correct"] and want_timing:
        cfg = mkw_run.timing_config(req.get("timing") if isinstance(req.get("timing"), dict) else None, mode)
        res["timing"] = mkw_timing.time_pair(chk["compiled"], golden, mode, cfg, cancel, plat=plat)
        prep.watch.check("timing")
        failure = mkw_timing.timing_verdict(res, res["timing"], res.get("work"), hardware)
        if failure:
            res.update(correct=False, failure=failure)
        elif mode.time_kind == "device":
            res["speedup"], res["timing"]["speedup_clock"] = mkw_timing.speedup(res["timing"])
    return res
