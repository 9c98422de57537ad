"""The `autotune` op: the configurations of a parameter space, best first.

The judge (this process) never runs the candidate: each configuration is judged as `evaluate`
judges a candidate (judge.candidate: the reference's answer from its child, a fresh child per
configuration exports the program, the judge runs, compares and times it).

Where the TPU compiler can score them (a generation in the request, no TPU attached, libtpu
installed; tpu_compiler.autotune_compiled), a child exports every configuration for TPU at the task's full
shapes, the judge has them compiled and ranks them by static cycles, with no run; only the best
are judged until one is correct. Else every configuration is judged and timed, as on a device;
the reply's `ranking` says which, and why the compiler was not used."""

from __future__ import annotations

import itertools

from mkworker import common as C
from mkworker.judge import candidate, clock, judge, run, timing
from mkworker.ops import prepared
from mkworker.sandbox import sandbox
from mkworker.tasks import shrink
from mkworker.tpu_compiler import autotune_compiled


def _configs(req) -> list[dict]:
    # `configs` (an explicit list) instead of `space`: the host sends only the configurations its
    # tuning cache does not already hold.
    if "configs" in req:
        configs = req["configs"]
        if (not isinstance(configs, list) or not configs
                or not all(isinstance(c, dict) and c for c in configs)):
            raise C.WorkerError(C.BAD_REQUEST, "`configs` must be a non-empty list of objects {param: value}")
        return configs
    space = req.get("space")
    if not isinstance(space, dict) or not space:
        raise C.WorkerError(C.BAD_REQUEST, "`space` must be a non-empty object {param: [values...]}")
    keys = list(space)
    vals = []
    for k in keys:
        v = space[k]
        if not isinstance(v, list) or not v:
            raise C.WorkerError(C.BAD_REQUEST, f"space[{k!r}] must be a non-empty list")
        vals.append(v)
    return [dict(zip(keys, combo)) for combo in itertools.product(*vals)]


def op_autotune(req, cancel, progress) -> dict:
    plat = run.platform()
    configs = _configs(req)
    max_configs = int(req.get("max_configs", 256))
    if len(configs) > max_configs:
        raise C.WorkerError(C.BAD_REQUEST, f"{len(configs)} configurations exceed max_configs={max_configs}")
    for cfg in configs:
        candidate.params_of(cfg)  # a bad configuration before any work
    prepared.gate_request(req)
    shrink.parse_request(req.get("shrink"))
    seeds = prepared.seeds_from(req, 2)
    target = req.get("target", "tpu")
    ranking = autotune_compiled.ranking(req, plat)
    fields = {k: req[k] for k in candidate.CHILD_FIELDS if k in req}
    results: list[dict] = []
    try:
        if ranking["basis"] == autotune_compiled.BASIS:
            return _rank_by_compiler(req, fields, configs, seeds, plat, target, ranking, results, cancel, progress)
        golden, _ = judge.golden_for(req, seeds, plat, cancel)
        progress(stage="started", total=len(configs), seeds=golden.seeds)
        hardware = prepared.request_hardware(req) if isinstance(req.get("hardware"), dict) else None
        for i, cfg in enumerate(configs):
            cancel.check()
            r = _autotune_one(req, fields, cfg, golden, plat, target, cancel, hardware=hardware)
            results.append(r)
            progress(done=i + 1, total=len(configs), config=cfg, status=r["status"],
                     median_s=(r.get("timing") or {}).get("median_s"))
        ordered = _sort_results(results)
        best = next((r for r in ordered if r["status"] == "ok"), None)
        mode = _reference_mode(req, plat)
        if best is not None:
            mode = run.RunMode.from_json(best["run_mode"])
        ref_timing = None
        ref = judge.reference_callable(golden, plat) if best is not None else None
        if ref is not None and req.get("time_reference", True):
            cfg_t = run.timing_config(req.get("timing"), mode)
            ref_timing = clock.time_fn(ref, _sets(golden), cfg_t, cancel)
        speedup = None
        if best is not None and ref_timing and mode.time_kind == "device":
            speedup = ref_timing["median_s"] / best["timing"]["median_s"]
        return dict(_common(golden, seeds, configs, ordered, ranking), best=best, reference_timing=ref_timing,
                    speedup=speedup, time_kind=mode.time_kind, run_mode=mode.to_json())
    except C.Cancelled as e:
        e.extra.update(results=_sort_results(results), completed=len(results), total=len(configs))
        raise


def _common(golden, seeds, configs, ordered, ranking) -> dict:
    gh = golden.header if golden is not None else {}
    return {"task": gh.get("task"), "instance": gh.get("instance"),
            "seeds": golden.seeds if golden is not None else seeds, "total": len(configs), "results": ordered,
            "ranking": ranking, "warnings": list(gh.get("warnings") or [])}


def _reference_mode(req, plat):
    """The run mode before any configuration ran (the reference child's)."""
    return run.choose_mode(plat, [{"compiler_params": "tpu"}], req.get("interpret_mode"))


def _sets(golden):
    return [(tuple(golden.device_inputs(i)), {}) for i in range(len(golden.seeds))]


# Configurations exported per child of the compiler's ranking: one child's CPU-time limit holds
# a chunk's traces and exports at full shapes.
COMPILE_CHUNK = 8


def _rank_by_compiler(req, fields, configs, seeds, plat, target, ranking, results, cancel, progress) -> dict:
    """The candidate's child exports every configuration for TPU at the task's full shapes; the
    judge has each compiled (libtpu's own process) and ranks them by static cycles, then checks
    the fewest-cycles ones until one is correct (tpu_compiler.autotune_compiled)."""
    gen = ranking["generation"]
    progress(stage="started", total=len(configs), seeds=seeds, ranking=ranking["basis"])
    done = 0
    for start in range(0, len(configs), COMPILE_CHUNK):
        cancel.check()
        chunk = configs[start:start + COMPILE_CHUNK]
        header, blobs = sandbox.run_child(dict(fields, role="compile_configs", configs=chunk), cancel=cancel)
        judge.raise_error(header)
        records = header.get("configs")
        if not isinstance(records, list) or len(records) != len(chunk):
            raise C.WorkerError(C.INTERNAL, "the candidate's process sent a malformed answer")
        for cfg, r in zip(chunk, records):
            cancel.check()
            r = _exported_record(cfg, r, blobs)
            if r["status"] == "exported":
                module = blobs[r.pop("program")["blob"]]
                r = autotune_compiled.compile_exported(r, module, gen, req, req.get("filename") or "<buffer>",
                                                           req.get("source"), cancel)
            else:
                r.pop("facts", None)
            results.append(r)
            done += 1
            progress(done=done, total=len(configs), config=cfg, status=r["status"], cycles=r.get("cycles"))
    ranked = [r for r in results if r["status"] == "ranked"]
    golden = None
    best = None
    if ranked:
        golden, _ = judge.golden_for(req, seeds, plat, cancel)

        def check(cfg):
            cancel.check()
            return _autotune_one(req, fields, cfg, golden, plat, target, cancel, timed=False)

        best = autotune_compiled.check_best(ranked, check, progress)
    mode = _reference_mode(req, plat)
    return dict(_common(golden, seeds, configs, _sort_results(results), ranking), best=best,
                reference_timing=None, speedup=None, time_kind="compiled", run_mode=mode.to_json())


_RECORD_KEYS = {"status", "correct", "timing", "instance", "grid", "vmem_bytes_per_step", "failure", "stage",
                "reason", "locations", "facts", "program"}


def _exported_record(cfg, r, blobs) -> dict:
    """A configuration's record from the child, kept to the fields the judge knows; the config is
    the judge's own."""
    if not isinstance(r, dict):
        raise C.WorkerError(C.INTERNAL, "the candidate's process sent a malformed configuration record")
    out = {k: v for k, v in r.items() if k in _RECORD_KEYS}
    out["config"] = cfg
    out["correct"] = False  # no configuration is correct before the judge ran it
    out["timing"] = None
    if out.get("status") not in ("exported", "incorrect", "skipped", "failed", "unscored"):
        out.update(status="failed", reason="the candidate's process sent an unknown status")
    if out["status"] == "exported":
        prog = out.get("program")
        if not isinstance(prog, dict) or not isinstance(prog.get("blob"), int) or not 0 <= prog["blob"] < len(blobs):
            out.update(status="failed", reason="the candidate's process sent no program")
            out.pop("program", None)
    return out


def _sort_results(results):
    # `ranked`: compiled and scored, not run (ranked below the best that was checked).
    rank = {"ok": 0, "ranked": 1, "incorrect": 2, "skipped": 3, "unscored": 4, "failed": 5}
    return sorted(results, key=lambda r: (rank.get(r["status"], 9), r.get("cycles") or float("inf"),
                                          r.get("profile_cycles") or float("inf"),
                                          (r.get("timing") or {}).get("median_s") or float("inf")))


def _autotune_one(req, fields, cfg, golden, plat, target, cancel, timed=True, hardware=None) -> dict:
    """One configuration judged as `evaluate` judges a candidate (judge.candidate: a fresh
    child exports it, the judge runs and compares it), then timed by the judge."""
    r = {"config": cfg, "status": "failed", "correct": False, "timing": None,
         "instance": golden.header.get("instance_label")}
    try:
        judged = candidate.judge(fields, golden, plat, cancel, params=cfg,
                                           lower_first=(target == "tpu"))
    except C.Cancelled:
        raise
    except C.WorkerError as e:
        return autotune_compiled.config_failed(r, e)
    res = judged.res
    facts = judged.facts
    r["grid"] = [f.get("grid") for f in facts if isinstance(f, dict)]
    r["vmem_bytes_per_step"] = [f.get("vmem_bytes_per_step") for f in facts if isinstance(f, dict)]
    r["run_mode"] = res["run_mode"]
    if isinstance(res.get("target_failure"), dict):
        tf = res["target_failure"]
        r.update(status="skipped", stage="lowering", reason=str(tf.get("message", "")),
                 locations=tf.get("locations") or [])
        return r
    if judged.failure is not None:
        r.update(status="incorrect", failure=judged.failure)
        return r
    r["compile_s"] = (res.get("compile_s") or {}).get("candidate")
    r["correct"] = True
    if not timed:
        # Ranked by the TPU compiler already: interpret time would add nothing.
        r["status"] = "ok"
        return r
    tol, accept = golden.tolerances()
    cfg_t = run.timing_config(req.get("timing"), judged.mode)
    t = judge.time_programs(judged.compiled, None, golden, cfg_t, cancel, tol, plat, accept,
                                device=judged.mode.time_kind == "device")
    t["time_kind"] = judged.mode.time_kind
    roofline = {"reference": judge.roofline_reference(golden, judge.input_avals(golden))}
    failure = timing.timing_verdict(r, t, roofline, hardware)
    if failure:
        r.update(status="incorrect", correct=False, failure=failure, timing=None)
        return r
    r["timing"] = t["candidate"]
    r["time_kind"] = t["time_kind"]
    r["status"] = "ok"
    return r
