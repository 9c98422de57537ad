"""The `evaluate` op. The judge (this process) gates the text, then runs the reference (a child
kept per task, or a fresh one) and the candidate (a fresh child) outside its own process
(mkw_sandbox, mkw_child) and decides from data alone (mkw_judge): the inputs and the reference's
outputs as arrays, the candidate's exported program, which the judge runs, compares and times
itself; at the request's extra shapes too (mkw_judge_extra)."""

from __future__ import annotations

import mkw_common as C
import mkw_extra_shapes
import mkw_judge
import mkw_judge_extra
import mkw_prepared
import mkw_run
import mkw_sandbox
import mkw_shrink
import mkw_timing


def op_evaluate(req, cancel, progress) -> dict:
    return op_evaluate_split(req, cancel, progress)


def op_evaluate_split(req, cancel, progress) -> dict:
    plat = mkw_run.platform()
    hardware = mkw_prepared.request_hardware(req)
    if not isinstance(req.get("task"), dict):
        raise C.WorkerError(C.BAD_REQUEST, "request needs a `task`")
    mkw_prepared.gate_task(req)
    src = req.get("source")
    if src is not None and not isinstance(src, str):
        raise C.WorkerError(C.BAD_REQUEST, "`source` must be a string")
    if isinstance(src, str):
        mkw_prepared.gate_candidate_text(src, req.get("filename") or "<buffer>", req["task"])
    mkw_shrink.parse_request(req.get("shrink"))
    extra = mkw_extra_shapes.parse_request(req.get("extra_shapes"))  # a bad request before any work
    seeds = mkw_prepared.seeds_from(req, 3)
    t_start = mkw_judge.time.perf_counter()
    golden, reused = mkw_judge.golden_for(req, seeds, plat, cancel, req.get("extra_shapes") if extra else None)
    t_ref = mkw_judge.elapsed(t_start)
    progress(stage="reference_done", seeds=seeds, reused=reused)
    gh = golden.header
    fields = {k: req[k] for k in ("task", "source", "filename", "kernel", "shrink", "interpret_mode") if k in req}
    t_cand = mkw_judge.time.perf_counter()
    inputs, input_blobs = golden.inputs_for_candidate()
    header, blobs = mkw_sandbox.run_child(dict(fields, role="candidate", inputs=inputs), cancel=cancel,
                                          blobs=input_blobs)
    t_cand = mkw_judge.elapsed(t_cand)
    mkw_judge._raise_error(header)
    facts = header.get("pallas_calls") if isinstance(header.get("pallas_calls"), list) else []
    res = {
        "entry": header.get("entry"),
        "task": gh.get("task"),
        "instance": gh.get("instance"),
        "seeds": golden.seeds,
        "pallas_kernels": [f.get("kernel") for f in facts if isinstance(f, dict)],
        "pallas_calls": facts,
        "warnings": list(gh.get("warnings") or []) + list(header.get("warnings") or []),
        "speedup": None,
        "timing": None,
        "reference_reused": reused,
        "judge": {"sandbox": header.get("sandbox"), "program_from": "exported", "reference_from": golden.origin,
                  "phases": {"reference_child_s": round(t_ref, 4), "candidate_child_s": round(t_cand, 4),
                             "candidate_child": header.get("phases")}},
    }
    mode = mkw_run.RunMode.from_json(header.get("run_mode") or {"mode": "interpret", "interpret_kind": "hlo",
                                                                  "platform": plat})
    mode.platform = plat
    res["run_mode"] = mode.to_json()
    res["time_kind"] = mode.time_kind
    # The child's own checks are a first line: a verdict there only makes the candidate look worse.
    checks = []
    if isinstance(header.get("donated"), dict):
        problem = str(header["donated"].get("message"))
        seed = golden.seeds[0]
        header["donated"].update(seed=seed, message=f"seed {seed}: {problem}")
        checks = [{"seed": seed, "ok": False, "kind": "input_mutated", "message": problem,
                   "runs": [{"order": "candidate_first", "ok": False, "kind": "input_mutated", "message": problem,
                             "input_problems": [problem], "outputs": []}]}]
    for first in (header.get("gate"), header.get("donated"), (header.get("work") or {}).get("verdict")):
        if first:
            res.update(correct=False, failure=first, checks=checks)
            if header.get("work"):
                res["work"] = header["work"]
            return res
    ins = mkw_judge.input_avals(golden)
    tol, accept = gh.get("tolerances"), bool(gh.get("accept_dtype_difference"))
    try:
        if req.get("interpret_mode") == "none":
            # The host's own choice: kernels that pass interpret=... themselves are plain XLA in
            # every program, so there is no kernel to find and no outside to count.
            work, failure = {"skipped": "interpret_mode none: the kernels pass interpret=... themselves"}, None
        else:
            work, failure = mkw_judge.judge_target(mkw_judge._blob(header.get("target_program"), blobs), golden,
                                                   ins, header.get("work"))
        res["work"] = dict(header.get("work") or {}, judge=work)
        if failure:
            res.update(correct=False, failure=failure, checks=[])
            return res
        t0 = mkw_judge.time.perf_counter()
        compiled = mkw_judge.candidate_callable(header, blobs, golden, plat)
    except mkw_judge.ShapeMismatch as e:
        seed = golden.seeds[0]
        res.update(correct=False, checks=[], failure={"kind": "shape_mismatch", "seed": seed,
                                                      "message": f"seed {seed}: {e}"})
        return res
    except mkw_judge.ProgramRefused as e:
        res.update(correct=False, checks=[], failure={"kind": "refused", "rule": "exported-program",
                                                      "message": str(e)})
        return res
    res["compile_s"] = {"candidate": mkw_judge.elapsed(t0), "reference": gh.get("compile_s")}
    ref = mkw_judge.reference_callable(golden, plat)
    try:
        checks, failure = mkw_judge.check(compiled, ref, golden, tol, plat, accept, cancel, facts)
    except C.WorkerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise C.WorkerError(C.RUNTIME, f"the candidate's program failed while the judge ran it: "
                                       f"{str(e).splitlines()[0][:500] if str(e) else type(e).__name__}") from None
    res.update(checks=checks, correct=failure is None, failure=failure)
    res["judge"]["phases"]["judge_compile_and_checks_s"] = round(mkw_judge.elapsed(t0), 4)
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
        timing = mkw_judge.time_programs(compiled, ref, golden, cfg, cancel, tol, plat, accept)
        timing.update(time_kind=mode.time_kind, instance=gh.get("instance_label"))
        res["timing"] = timing
        bad = mkw_timing.timing_verdict(res, timing, {"reference": mkw_judge.roofline_reference(golden, ins)},
                                        hardware)
        if bad:
            res.update(correct=False, failure=bad)
        elif mode.time_kind == "device":
            res["speedup"], timing["speedup_clock"] = mkw_timing.speedup(timing)
    return res

