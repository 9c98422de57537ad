"""The `evaluate` op. The judge (this process) gates the text, then runs the reference (a child
kept per task, or a fresh one) and the candidate (a fresh child) outside its own process
(sandbox.sandbox, sandbox.child) and decides from data alone (judge.judge): the inputs and the reference's
outputs as arrays, the candidate's exported program, which the judge runs, compares and times
itself; at the request's extra shapes too (judge.extra)."""

from __future__ import annotations

from mkworker.judge import candidate, judge, run
from mkworker.judge import extra as judge_extra
from mkworker.judge import timing as judge_timing
from mkworker.ops import prepared
from mkworker.tasks import extra_shapes, shrink


def op_evaluate(req, cancel, progress) -> dict:
    return op_evaluate_split(req, cancel, progress)


def op_evaluate_split(req, cancel, progress) -> dict:
    plat = run.platform()
    hardware = prepared.request_hardware(req)
    prepared.gate_request(req)
    shrink.parse_request(req.get("shrink"))
    extra = extra_shapes.parse_request(req.get("extra_shapes"))  # a bad request before any work
    seeds = prepared.seeds_from(req, 3)
    t_start = judge.time.perf_counter()
    golden, reused = judge.golden_for(req, seeds, plat, cancel, req.get("extra_shapes") if extra else None)
    t_ref = judge.elapsed(t_start)
    progress(stage="reference_done", seeds=seeds, reused=reused)
    gh = golden.header
    fields = {k: req[k] for k in candidate.CHILD_FIELDS if k in req}
    judged = candidate.judge(fields, golden, plat, cancel)
    res, failure, mode = judged.res, judged.failure, judged.mode
    res["reference_reused"] = reused
    res["judge"]["phases"]["reference_child_s"] = round(t_ref, 4)
    if judged.decided:
        return res
    compiled, ref = judged.compiled, judged.ref
    facts = judged.facts
    tol, accept = golden.tolerances()
    ins = judge.input_avals(golden)
    progress(stage="checked", correct=failure is None)
    if extra is not None:
        t_extra = judge.time.perf_counter()
        res["extra_shapes"], extra_failure = judge_extra.check(extra, golden, fields, facts, plat, tol, accept,
                                                                   cancel, failure is None)
        res["judge"]["phases"]["extra_shapes_s"] = round(judge.elapsed(t_extra), 4)
        if extra_failure:
            res.update(correct=False, failure=extra_failure)
            failure = extra_failure
        progress(stage="extra_shapes", passed=res["extra_shapes"]["passed"], failed=res["extra_shapes"]["failed"])
    if failure is None and req.get("timing", True) is not False:
        cfg = run.timing_config(req.get("timing") if isinstance(req.get("timing"), dict) else None, mode)
        timing = judge.time_programs(compiled, ref, golden, cfg, cancel, tol, plat, accept,
                                         device=mode.time_kind == "device")
        timing.update(time_kind=mode.time_kind, instance=gh.get("instance_label"))
        res["timing"] = timing
        bad = judge_timing.timing_verdict(res, timing, {"reference": judge.roofline_reference(golden, ins)},
                                        hardware)
        if bad:
            res.update(correct=False, failure=bad)
        elif mode.time_kind == "device":
            res["speedup"], timing["speedup_clock"] = judge_timing.speedup(timing)
    return res

