"""Compile-only ranking for the `autotune` op: each configuration is traced at the task's full
shapes and compiled for the target generation by the TPU compiler (tpu_compiler.check); libtpu's
static cycles rank the ones it compiles, with no run. A configuration the compiler refuses (scoped
VMEM, layouts) is `skipped` at stage "compile" and can never be best. Only then are the ranked
configurations checked against the frozen reference, best first, until one is correct: that one
is the best; those ranked below it stay `ranked` (compiled, not run)."""

from __future__ import annotations

from mkworker import common as C
from mkworker.cost import cost, trace
from mkworker.cost import facts as cost_facts
from mkworker.judge import run
from mkworker.ops import prepared
from mkworker.sandbox import gate as sandbox_gate
from mkworker.tpu_compiler import check as tpu_compiler_check
from mkworker.tpu_compiler import compiler

BASIS = "tpu_compiler"


def ranking(req, plat: str) -> dict:
    """How this request's configurations are ranked: {"basis": "tpu_compiler", "label", ...} when
    the TPU compiler can score them; else {"basis": "run", "label", "compiler"} (today's ranking,
    with why the compiler is not used)."""
    why = None
    gen = tpu_compiler_check.wanted(req, plat)
    available, reason = compiler.available()
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
        return {"basis": BASIS, "label": compiler.label(gen), "generation": gen}
    on_device = plat in ("tpu", "gpu")
    return {"basis": "run", "compiler": why,
            "label": ("measured (device)" if on_device
                      else "interpret time (not a kernel time; the host ranks by its own model)")}


def export_config(req, task, cfg, full_args, full_kwargs) -> tuple[dict, bytes | None]:
    """One configuration at the task's full shapes, in the candidate's child: (its record, its
    program exported for TPU) when it lowers; else (a verdict without a run, None): `skipped` at
    lowering, `incorrect` for a static gate, `unscored` for a GPU kernel."""
    r = {"config": cfg, "status": "failed", "correct": False, "timing": None, "instance": "full"}
    prep = None
    try:
        prep = prepared.Prepared(req, params=cfg, task=task)
        entry, args, kwargs, _ = run.bind_static(prep.entry, full_args, full_kwargs)
        traced, facts = trace_config(r, prep, task, entry, args, kwargs, full_args, full_kwargs)
        r["facts"] = facts
        if traced is None:
            return r, None
        if trace.kernel_platform(facts) == "gpu":
            r.update(status="unscored", reason="a GPU (Triton) kernel: the TPU compiler does not rank it")
            return r, None
        try:  # one lowering: the block-shape errors (as lowering errors) and the program to compile
            module = compiler.export_for_tpu(entry, args, kwargs).serialize()
        except Exception as e:  # noqa: BLE001
            raise C.from_exception(C.LOWERING, e, prep.filename, source=prep.source,
                                   prefix="lowering for TPU failed") from None
        r["status"] = "exported"
        return r, module
    except C.WorkerError as e:
        return config_failed(r, e), None
    finally:
        if prep is not None:
            prep.close()


def compile_exported(r: dict, module: bytes, generation: str, req, filename: str, source: str | None,
                     cancel) -> dict:
    """The judge's half: the configuration's exported program compiled by libtpu (a process of
    its own): `ranked` with its cycles, `skipped` at compile where the compiler refuses it,
    `unscored` when it gave no cycles (over its bound, say)."""
    facts = r.pop("facts", None) or []
    cand = tpu_compiler_check.compile_blob(module, generation, req, cancel)
    r["tpu_compile"] = cand
    if cand.get("status") == "refused":
        r.update(status="skipped", stage=C.COMPILE,
                 reason=tpu_compiler_check.refusal_message(cand, generation),
                 locations=tpu_compiler_check.refusal_locations(cand, facts, filename, source))
    elif cand.get("status") == "compiled" and cand.get("cycles"):
        # At the HBM floor several tilings tie on cycles; the profile's own count breaks the tie.
        r.update(status="ranked", cycles=cand["cycles"], predicted_s=cand.get("predicted_s"),
                 profile_cycles=(cand.get("hbm_floor") or {}).get("profile_cycles", cand["cycles"]),
                 time_kind="compiled")
    else:
        r.update(status="unscored", reason=cand.get("reason") or cand.get("cycles_note") or cand.get("status"))
    return r


def trace_config(r: dict, prep, task, entry, args, kwargs, work_args, work_kwargs):
    """(traced, facts) of one configuration, its grid and VMEM per step noted in `r`; traced is
    None, and `r` marked `incorrect`, when the pallas_call gate or the work check refuses it."""
    traced, closed = trace.trace_candidate(entry, args, kwargs, prep.filename, prep.source)
    facts = cost_facts.all_facts(closed, filename=prep.filename)
    r["grid"] = [f["grid"] for f in facts]
    r["vmem_bytes_per_step"] = [f["vmem_bytes_per_step"] for f in facts]
    gate = trace.pallas_gate(facts)
    if gate:
        r.update(status="incorrect", failure=gate)
        return None, facts
    work = cost.work_report(closed, facts, task, work_args, work_kwargs, prep.filename)
    if work.get("verdict"):
        r.update(status="incorrect", failure=work["verdict"])
        return None, facts
    return traced, facts


def config_failed(r: dict, e: C.WorkerError) -> dict:
    """A configuration's record when it did not lower, compile or run: `skipped` where the
    compiler refused it, `failed` otherwise. A refusal of the source gate is re-raised: the
    candidate reached for the worker, so no configuration of it is scored."""
    if e.kind == sandbox_gate.REFUSED:
        raise e
    status = "skipped" if e.kind in (C.LOWERING, C.COMPILE) else "failed"
    r.update(status=status, stage=e.kind, reason=e.message, locations=e.extra.get("locations", []))
    return r


def check_best(ranked: list[dict], check, progress) -> dict | None:
    """Runs `check(config)` (the correctness check against the frozen reference) on the ranked
    configurations, fewest cycles first, until one is correct; returns it (now `ok`), or None."""
    for r in sorted(ranked, key=lambda x: (x["cycles"], x.get("profile_cycles", x["cycles"]))):
        checked = check(r["config"])
        for k in ("status", "correct", "failure", "stage", "reason", "locations", "run_mode", "compile_s"):
            if k in checked:
                r[k] = checked[k]
        r["checked_instance"] = checked.get("instance")
        progress(stage="checked", config=r["config"], status=r["status"], cycles=r["cycles"])
        if r["status"] == "ok":
            return r
    return None
