"""What a program costs: XLA's cost analysis, the kernels' own estimates, and the whole
program's work (cost.work) against the reference's."""

from __future__ import annotations

import jax

from mkworker.cost import facts as cost_facts
from mkworker.cost import work as cost_work
from mkworker.judge import run


def reference_work(task, args, kwargs):
    """The reference's work, counted once per task object."""
    cached = getattr(task, "_mk_reference_work", None)
    if cached is not None:
        return cached
    try:
        ref, a, k, _ = run.bind_static(task.reference_fn, args, kwargs)
        closed = jax.jit(ref).trace(*a, **k).jaxpr
        work = cost_work.reference_work(closed, None, closed.out_avals)
    except Exception as e:  # noqa: BLE001 - reported, never fatal
        work = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    task._mk_reference_work = work
    return work


def work_report(closed, facts, task, args, kwargs, filename) -> dict:
    """The `work` object: the candidate's whole program against the reference."""
    try:
        cand = cost_work.program_work(closed, facts, filename)
    except Exception as e:  # noqa: BLE001
        return {"error": f"counting the candidate's work failed: {type(e).__name__}: {str(e)[:300]}",
                "verdict": None}
    ref = reference_work(task, args, kwargs)
    rep_ = cost_work.report(cand, None if "error" in ref else ref)
    if "error" in ref:
        rep_["reference_error"] = ref["error"]
    return rep_


def cost_dict(ca):
    if ca is None:
        return None
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else None
    if not isinstance(ca, dict):
        return None
    flops = ca.get("flops")
    nbytes = ca.get("bytes accessed")
    trans = ca.get("transcendentals")
    if flops is None and nbytes is None:
        return None
    out = {"flops": cost_facts.num(flops), "bytes_accessed": cost_facts.num(nbytes),
           "transcendentals": cost_facts.num(trans)}
    if out["flops"] is not None and out["flops"] < 0:
        out["flops"] = None
    if out["bytes_accessed"] is not None and out["bytes_accessed"] < 0:
        out["bytes_accessed"] = None
    out["arithmetic_intensity"] = cost_facts.intensity(out["flops"], out["bytes_accessed"])
    return out


def cost_summary(facts, task, args, kwargs) -> dict:
    out: dict = {}
    ests = [f["cost"] for f in facts if f.get("cost")]
    if ests:
        k = {"flops": sum(e.get("flops") or 0 for e in ests),
             "bytes_accessed": sum(e.get("bytes_accessed") or 0 for e in ests),
             "transcendentals": sum(e.get("transcendentals") or 0 for e in ests),
             "kernels_with_estimate": len(ests), "kernels": len(facts)}
        k["arithmetic_intensity"] = cost_facts.intensity(k["flops"], k["bytes_accessed"])
        out["pallas_cost_estimate"] = k
    try:
        ref, a, k, _ = run.bind_static(task.reference_fn, args, kwargs)
        ca = jax.jit(ref).trace(*a, **k).lower().cost_analysis()
        ref = cost_dict(ca)
        if ref:
            ref["backend"] = jax.default_backend()
            out["reference_xla"] = ref
    except Exception as e:  # noqa: BLE001
        out["reference_xla_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    if task.get_flops is not None:
        try:
            out["get_flops"] = cost_facts.num(task.get_flops())
        except Exception as e:  # noqa: BLE001
            out["get_flops_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    # One headline figure, preferring the kernel author's estimate.
    src = None
    if "pallas_cost_estimate" in out and out["pallas_cost_estimate"]["kernels_with_estimate"] == len(facts):
        src = "pallas_cost_estimate"
    elif "reference_xla" in out:
        src = "reference_xla"
    flops = nbytes = None
    if src:
        flops = out[src].get("flops")
        nbytes = out[src].get("bytes_accessed")
    if out.get("get_flops") is not None:
        flops = out["get_flops"]
        src = (src + "+get_flops") if src else "get_flops"
    out["flops"] = flops
    out["bytes_accessed"] = nbytes
    out["arithmetic_intensity"] = cost_facts.intensity(flops, nbytes)
    out["source"] = src
    return out
