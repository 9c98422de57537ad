"""The `evaluate` op. The judge (this process) gates the text, then runs the reference and the
candidate each in a fresh child (mkw_sandbox, mkw_child) and decides from data alone (mkw_judge):
the inputs and the reference's outputs as arrays, the candidate's exported program, which the judge
runs, compares and times itself. A request with `extra_shapes` still takes the in-process path
(the frozen reference, the candidate's checks in mkw_check, mkw_extra_shapes, mkw_timing)."""

from __future__ import annotations

import mkw_check
import mkw_clock
import mkw_common as C
import mkw_cost
import mkw_extra_shapes
import mkw_facts
import mkw_golden
import mkw_judge
import mkw_prepared
import mkw_run
import mkw_sandbox
import mkw_shrink
import mkw_tasks
import mkw_timing
import mkw_trace


def op_evaluate(req, cancel, progress) -> dict:
    if req.get("extra_shapes") is not None:
        return op_evaluate_in_process(req, cancel, progress)
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
    seeds = mkw_prepared.seeds_from(req, 3)
    t_start = mkw_judge.time.perf_counter()
    golden, reused = mkw_judge.golden_for(req, seeds, plat, cancel)
    t_ref = mkw_judge.elapsed(t_start)
    progress(stage="reference_done", seeds=seeds, reused=reused)
    gh = golden.header
    fields = {k: req[k] for k in ("task", "source", "filename", "kernel", "shrink", "interpret_mode") if k in req}
    t_cand = mkw_judge.time.perf_counter()
    header, blobs = mkw_sandbox.run_child(dict(fields, role="candidate"), cancel=cancel)
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
        "judge": {"sandbox": header.get("sandbox"), "program_from": "exported",
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


def op_evaluate_in_process(req, cancel, progress) -> dict:
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
