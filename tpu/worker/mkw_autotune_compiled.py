"""Compile-only ranking for the `autotune` op: each configuration is traced at the task's full
shapes and compiled for the target generation by the TPU compiler (mkw_tpu_check); libtpu's
static cycles rank the ones it compiles, with no run. A configuration the compiler refuses (scoped
VMEM, layouts) is `skipped` at stage "compile" and can never be best. Only then are the ranked
configurations checked against the frozen reference, best first, until one is correct: that one
is the best; those ranked below it stay `ranked` (compiled, not run)."""

from __future__ import annotations

import mkw_common as C
import mkw_cost
import mkw_facts
import mkw_gate
import mkw_prepared
import mkw_run
import mkw_tpu_check
import mkw_tpu_compiler
import mkw_trace

BASIS = "tpu_compiler"


def ranking(req, plat: str) -> dict:
    """How this request's configurations are ranked: {"basis": "tpu_compiler", "label", ...} when
    the TPU compiler can score them; else {"basis": "run", "label", "compiler"} (today's ranking,
    with why the compiler is not used)."""
    why = None
    gen = mkw_tpu_check.wanted(req, plat)
    available, reason = mkw_tpu_compiler.available()
    if req.get("target", "tpu") != "tpu":
        why = f"target {req.get('target')!r}: the TPU compiler ranks TPU kernels only"
    elif plat in ("tpu", "gpu"):
        why = f"a {plat.upper()} is attached: configurations are measured"
    elif not req.get("generation"):
        why = "the request names no TPU generation"
    elif gen is None:
        why = "turned off (MAXKERNEL_TPU_COMPILE=0)"
    elif not available:
        why = reason
    elif req.get("rank_by", "compiler") != "compiler":
        why = f"rank_by {req.get('rank_by')!r} asked for"
    if why is None:
        return {"basis": BASIS, "label": mkw_tpu_compiler.label(gen), "generation": gen}
    on_device = plat in ("tpu", "gpu")
    return {"basis": "run", "compiler": why,
            "label": ("measured (device)" if on_device
                      else "interpret time (not a kernel time; the host ranks by its own model)")}


def compile_one(req, task, cfg, full_args, full_kwargs, plat, generation, cancel, watch) -> dict:
    """One configuration at the task's full shapes: `ranked` with its cycles, or a verdict
    without a run (`skipped` at lowering or compile, `incorrect` for a static gate), or
    `unscored` when the compiler gave no cycles (over its bound, say)."""
    r = {"config": cfg, "status": "failed", "correct": False, "timing": None, "instance": "full"}
    prep = None
    try:
        prep = mkw_prepared.Prepared(req, params=cfg, task=task, watch=watch)
        entry, args, kwargs, _ = mkw_run.bind_static(prep.entry, full_args, full_kwargs)
        traced, facts, _ = trace_config(r, prep, task, entry, args, kwargs, full_args, full_kwargs)
        if traced is None:
            return r
        if mkw_trace.kernel_platform(facts) == "gpu":
            r.update(status="unscored", reason="a GPU (Triton) kernel: the TPU compiler does not rank it")
            return r
        cancel.check()
        mkw_trace.lower_tpu(traced, entry, args, kwargs, plat, prep.filename, prep.source)
        # The candidate only: the reference's compile is the same for every configuration.
        tc = mkw_tpu_check.check(entry, args, kwargs, facts, prep, generation,
                                 {**req, "compile_reference": False}, cancel)
        cand = tc["candidate"]
        r["tpu_compile"] = cand
        if cand.get("status") == "compiled" and cand.get("cycles"):
            r.update(status="ranked", cycles=cand["cycles"], predicted_s=cand.get("predicted_s"),
                     time_kind="compiled")
        else:
            r.update(status="unscored",
                     reason=cand.get("reason") or cand.get("cycles_note") or cand.get("status"))
        return r
    except C.Cancelled:
        raise
    except C.WorkerError as e:
        config_failed(r, e)
        if "tpu_compile" in e.extra:
            r["tpu_compile"] = e.extra["tpu_compile"].get("candidate")
        return r
    finally:
        if prep is not None:
            prep.close()


def trace_config(r: dict, prep, task, entry, args, kwargs, work_args, work_kwargs):
    """(traced, facts, work report) of one configuration, its grid and VMEM per step noted in
    `r`; traced is None, and `r` marked `incorrect`, when the pallas_call gate or the work check
    refuses it (the work report is then None where the gate refused first)."""
    traced, closed = mkw_trace.trace_candidate(entry, args, kwargs, prep.filename, prep.source)
    facts = mkw_facts.all_facts(closed, filename=prep.filename)
    r["grid"] = [f["grid"] for f in facts]
    r["vmem_bytes_per_step"] = [f["vmem_bytes_per_step"] for f in facts]
    gate = mkw_trace.pallas_gate(facts)
    if gate:
        r.update(status="incorrect", failure=gate)
        return None, facts, None
    work = mkw_cost.work_report(closed, facts, task, work_args, work_kwargs, prep.filename)
    if work.get("verdict"):
        r.update(status="incorrect", failure=work["verdict"])
        return None, facts, work
    return traced, facts, work


def config_failed(r: dict, e: C.WorkerError) -> dict:
    """A configuration's record when it did not lower, compile or run: `skipped` where the
    compiler refused it, `failed` otherwise. A refusal of the source gate is re-raised: the
    candidate reached for the worker, so no configuration of it is scored."""
    if e.kind == mkw_gate.REFUSED:
        raise e
    status = "skipped" if e.kind in (C.LOWERING, C.COMPILE) else "failed"
    r.update(status=status, stage=e.kind, reason=e.message, locations=e.extra.get("locations", []))
    return r


def check_best(ranked: list[dict], check, progress) -> dict | None:
    """Runs `check(config)` (the correctness check against the frozen reference) on the ranked
    configurations, fewest cycles first, until one is correct; returns it (now `ok`), or None."""
    for r in sorted(ranked, key=lambda x: x["cycles"]):
        checked = check(r["config"])
        for k in ("status", "correct", "failure", "stage", "reason", "locations", "run_mode", "compile_s"):
            if k in checked:
                r[k] = checked[k]
        r["checked_instance"] = checked.get("instance")
        progress(stage="checked", config=r["config"], status=r["status"], cycles=r["cycles"])
        if r["status"] == "ok":
            return r
    return None
