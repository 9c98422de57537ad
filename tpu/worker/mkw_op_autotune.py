"""The `autotune` op: the configurations of a parameter space, best first.

Where the TPU compiler can score them (a generation in the request, no TPU attached, libtpu
installed; mkw_autotune_compiled), they are ranked by its static cycles from a compile each, with
no run, and only the best are checked against the frozen reference until one is correct. Else
every configuration is checked (mkw_check) and timed (mkw_timing), as on a device; the reply's
`ranking` says which, and why the compiler was not used."""

from __future__ import annotations

import itertools

import mkw_autotune_compiled
import mkw_check
import mkw_clock
import mkw_common as C
import mkw_golden
import mkw_prepared
import mkw_run
import mkw_shrink
import mkw_tasks
import mkw_timing
import mkw_trace


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
    plat = mkw_run.platform()
    configs = _configs(req)
    max_configs = int(req.get("max_configs", 256))
    if len(configs) > max_configs:
        raise C.WorkerError(C.BAD_REQUEST, f"{len(configs)} configurations exceed max_configs={max_configs}")
    if "task" not in req:
        raise C.WorkerError(C.BAD_REQUEST, "request needs a `task`")
    watch = mkw_clock.Watch(req.get("filename") or "<buffer>")
    mkw_prepared.gate_task(req)
    task = mkw_tasks.resolve(req["task"], req.get("source"), req.get("filename") or "<buffer>")
    results: list[dict] = []
    try:
        mkw_shrink.configure(task, req.get("shrink"))
        src, fname = mkw_prepared.request_candidate(req, task)
        if isinstance(src, str):
            mkw_prepared.gate_candidate(src, fname or "<buffer>", task)  # every configuration has this text
        seeds = mkw_prepared.seeds_from(req, 2)
        pre_mode = mkw_run.choose_mode(plat, [{"compiler_params": "tpu"}], req.get("interpret_mode"))
        target = req.get("target", "tpu")
        ranking = mkw_autotune_compiled.ranking(req, plat)
        if ranking["basis"] == mkw_autotune_compiled.BASIS:
            return _rank_by_compiler(req, task, configs, seeds, pre_mode, plat, target, ranking, results,
                                     cancel, progress, watch)
        golden, _ = mkw_golden.frozen(task, seeds, plat, pre_mode, cancel)
        progress(stage="started", total=len(configs), seeds=seeds)
        for i, cfg in enumerate(configs):
            cancel.check()
            r = _autotune_one(req, task, cfg, golden, plat, target, cancel, watch)
            results.append(r)
            progress(done=i + 1, total=len(configs), config=cfg, status=r["status"],
                     median_s=(r.get("timing") or {}).get("median_s"))
        ordered = _sort_results(results)
        best = next((r for r in ordered if r["status"] == "ok"), None)
        ref_timing = None
        mode = golden.mode
        if best is not None:
            mode = mkw_run.RunMode.from_json(best["run_mode"])
        if best is not None and req.get("time_reference", True):
            cfg_t = mkw_run.timing_config(req.get("timing"), mode)
            with mode.context():
                ref_timing = mkw_run.time_fn(golden.ref_compiled, [(s.args, s.kwargs) for s in golden.sets],
                                             cfg_t, cancel)
        speedup = None
        if best is not None and ref_timing and mode.time_kind == "device":
            speedup = ref_timing["median_s"] / best["timing"]["median_s"]
        return {
            "task": task.describe(),
            "instance": mkw_shrink.describe(task),
            "seeds": seeds,
            "total": len(configs),
            "results": ordered,
            "best": best,
            "reference_timing": ref_timing,
            "speedup": speedup,
            "time_kind": mode.time_kind,
            "run_mode": mode.to_json(),
            "ranking": ranking,
            "warnings": golden.warnings,
        }
    except C.Cancelled as e:
        e.extra.update(results=_sort_results(results), completed=len(results), total=len(configs))
        raise
    finally:
        task.close()


def _rank_by_compiler(req, task, configs, seeds, pre_mode, plat, target, ranking, results, cancel,
                      progress, watch) -> dict:
    """Compiles every configuration (no run), then checks the fewest-cycles ones until one is
    correct (mkw_autotune_compiled)."""
    gen = ranking["generation"]
    full_args, full_kwargs = mkw_run.abstract_inputs(task)
    progress(stage="started", total=len(configs), seeds=seeds, ranking=ranking["basis"])
    for i, cfg in enumerate(configs):
        cancel.check()
        r = mkw_autotune_compiled.compile_one(req, task, cfg, full_args, full_kwargs, plat, gen, cancel, watch)
        results.append(r)
        progress(done=i + 1, total=len(configs), config=cfg, status=r["status"], cycles=r.get("cycles"))
    ranked = [r for r in results if r["status"] == "ranked"]
    golden = None
    best = None
    if ranked:
        golden, _ = mkw_golden.frozen(task, seeds, plat, pre_mode, cancel)

        def check(cfg):
            cancel.check()
            return _autotune_one(req, task, cfg, golden, plat, target, cancel, watch, timed=False)

        best = mkw_autotune_compiled.check_best(ranked, check, progress)
    return {
        "task": task.describe(),
        "instance": mkw_shrink.describe(task),
        "seeds": seeds,
        "total": len(configs),
        "results": _sort_results(results),
        "best": best,
        "reference_timing": None,
        "speedup": None,
        "time_kind": "compiled",
        "run_mode": (golden.mode if golden is not None else pre_mode).to_json(),
        "ranking": ranking,
        "warnings": golden.warnings if golden is not None else [],
    }


def _sort_results(results):
    # `ranked`: compiled and scored, not run (ranked below the best that was checked).
    rank = {"ok": 0, "ranked": 1, "incorrect": 2, "skipped": 3, "unscored": 4, "failed": 5}
    return sorted(results, key=lambda r: (rank.get(r["status"], 9), r.get("cycles") or float("inf"),
                                          (r.get("timing") or {}).get("median_s") or float("inf")))


def _autotune_one(req, task, cfg, golden, plat, target, cancel, watch=None, timed=True) -> dict:
    r = {"config": cfg, "status": "failed", "correct": False, "timing": None,
         "instance": mkw_shrink.label(task)}
    prep = None
    try:
        prep = mkw_prepared.Prepared(req, params=cfg, task=task, watch=watch)
        s0 = golden.sets[0]
        entry = s0.bind(prep.entry)
        traced, facts, work = mkw_autotune_compiled.trace_config(r, prep, task, entry, s0.args, s0.kwargs,
                                                                 s0.args, s0.kwargs)
        if traced is None:
            return r
        gpu_kernel = mkw_trace.kernel_platform(facts) == "gpu"
        # The compile check: a TPU kernel cross-lowers for TPU; a GPU (Triton) kernel for CUDA,
        # unless it is on a GPU, where running it compiles it.
        if target == "tpu" and plat != "tpu" and not (gpu_kernel and plat == "gpu"):
            lower = mkw_trace.lower_gpu if gpu_kernel else mkw_trace.lower_tpu
            try:
                lower(traced, entry, s0.args, s0.kwargs, plat, prep.filename, prep.source)
            except C.WorkerError as e:
                r.update(status="skipped", stage="lowering", reason=e.message,
                         locations=e.extra.get("locations", []))
                return r
        cancel.check()
        mode = mkw_run.choose_mode(plat, facts, req.get("interpret_mode"))
        r["run_mode"] = mode.to_json()
        chk = mkw_check.check_candidate(prep.entry, golden, mode, plat, task.tolerances, cancel, prep.filename,
                              prep.source)
        r["compile_s"] = chk["compile_s"]
        if not chk["correct"]:
            r.update(status="incorrect", failure=chk["failure"])
            return r
        r["correct"] = True
        if not timed:
            # Ranked by the TPU compiler already: interpret time would add nothing.
            r["status"] = "ok"
            return r
        cfg_t = mkw_run.timing_config(req.get("timing"), mode)
        t = mkw_timing.time_pair(chk["compiled"], golden, mode, cfg_t, cancel, with_reference=False, plat=plat)
        prep.watch.check("timing")
        hardware = mkw_prepared.request_hardware(req) if isinstance(req.get("hardware"), dict) else None
        failure = mkw_timing.timing_verdict(r, t, work, hardware)
        if failure:
            r.update(status="incorrect", correct=False, failure=failure, timing=None)
            return r
        r["timing"] = t["candidate"]
        r["time_kind"] = t["time_kind"]
        r["status"] = "ok"
        return r
    except C.Cancelled:
        raise
    except C.WorkerError as e:
        return mkw_autotune_compiled.config_failed(r, e)
    finally:
        if prep is not None:
            prep.close()
