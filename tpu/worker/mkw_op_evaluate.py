"""The `evaluate` op. The judge (this process) gates the text, then runs the reference (a child
kept per task, or a fresh one) and the candidate (a fresh child) outside its own process
(mkw_sandbox, mkw_child) and decides from data alone (mkw_judge): the inputs and the reference's
outputs as arrays, the candidate's exported program, which the judge runs, compares and times
itself; at the request's extra shapes too (mkw_judge_extra)."""

from __future__ import annotations

import mkw_extra_shapes
import mkw_judge
import mkw_judge_candidate
import mkw_judge_extra
import mkw_prepared
import mkw_run
import mkw_shrink
import mkw_timing


def op_evaluate(req, cancel, progress) -> dict:
    return op_evaluate_split(req, cancel, progress)


def op_evaluate_split(req, cancel, progress) -> dict:
    plat = mkw_run.platform()
    hardware = mkw_prepared.request_hardware(req)
    mkw_prepared.gate_request(req)
    mkw_shrink.parse_request(req.get("shrink"))
    extra = mkw_extra_shapes.parse_request(req.get("extra_shapes"))  # a bad request before any work
    seeds = mkw_prepared.seeds_from(req, 3)
    t_start = mkw_judge.time.perf_counter()
    golden, reused = mkw_judge.golden_for(req, seeds, plat, cancel, req.get("extra_shapes") if extra else None)
    t_ref = mkw_judge.elapsed(t_start)
    progress(stage="reference_done", seeds=seeds, reused=reused)
    gh = golden.header
    fields = {k: req[k] for k in mkw_judge_candidate.CHILD_FIELDS if k in req}
    judged = mkw_judge_candidate.judge(fields, golden, plat, cancel)
    res, failure, mode = judged.res, judged.failure, judged.mode
    res["reference_reused"] = reused
    res["judge"]["phases"]["reference_child_s"] = round(t_ref, 4)
    if judged.decided:
        return res
    compiled, ref = judged.compiled, judged.ref
    facts = judged.facts
    tol, accept = golden.tolerances()
    ins = mkw_judge.input_avals(golden)
    progress(stage="checked", correct=failure is None)
    if extra is not None:
        t_extra = mkw_judge.time.perf_counter()
        res["extra_shapes"], extra_failure = mkw_judge_extra.check(extra, golden, fields, facts, plat, tol, accept,
                                                                   cancel, failure is None)
        res["judge"]["phases"]["extra_shapes_s"] = round(mkw_judge.elapsed(t_extra), 4)
        if extra_failure:
            res.update(correct=False, failure=extra_failure)
            failure = extra_failure
        progress(stage="extra_shapes", passed=res["extra_shapes"]["passed"], failed=res["extra_shapes"]["failed"])
    if failure is None and req.get("timing", True) is not False:
        cfg = mkw_run.timing_config(req.get("timing") if isinstance(req.get("timing"), dict) else None, mode)
        timing = mkw_judge.time_programs(compiled, ref, golden, cfg, cancel, tol, plat, accept,
                                         device=mode.time_kind == "device")
        timing.update(time_kind=mode.time_kind, instance=gh.get("instance_label"))
        res["timing"] = timing
        bad = mkw_timing.timing_verdict(res, timing, {"reference": mkw_judge.roofline_reference(golden, ins)},
                                        hardware)
        if bad:
            res.update(correct=False, failure=bad)
        elif mode.time_kind == "device":
            res["speedup"], timing["speedup_clock"] = mkw_timing.speedup(timing)
    return res

