"""The compile check of a candidate by the TPU compiler (mkw_tpu_compiler), for the `lower` op:
the candidate and the task's reference are compiled for the requested generation; a refusal
becomes a `compile` error at the pallas_call's line, and both programs' static cycles give the
speedup against XLA's compiled program ("predicted (TPU compiler, <generation>)")."""

from __future__ import annotations

import json
import os
import threading

import mkw_common as C
import mkw_run
import mkw_tpu_compiler

# The reference's compile, per task and shapes and generation: it is the same for every candidate.
_reference_cache: dict[str, dict] = {}
_cache_lock = threading.Lock()


def wanted(req, plat: str) -> str | None:
    """The generation to compile for, or None: only when the request names one, no TPU is
    attached (there the native compile is the check) and MAXKERNEL_TPU_COMPILE is not 0."""
    gen = req.get("generation")
    if not gen or plat == "tpu" or os.environ.get("MAXKERNEL_TPU_COMPILE") == "0":
        return None
    return str(gen)


def _limits(req) -> dict | None:
    lim = req.get("compile_limits")
    return lim if isinstance(lim, dict) else None


def _slim(res: dict) -> dict:
    """The reply's view of a compile (the clock note stays in knowledge/data)."""
    out = dict(res)
    if isinstance(out.get("clock"), dict):
        out["clock"] = {"hz": out["clock"]["hz"], "source": out["clock"].get("source")}
    return out


def _locations(error: str, facts, filename: str, source: str | None) -> list[dict]:
    """The compiler names the HLO op and operand, not a source line: the pallas_calls whose kernel
    it names, else every pallas_call (a program with one is the common case); then any line the
    text names."""
    summary = error.splitlines()[0][:300] if error else "the TPU compiler refused the program"
    located = [f for f in facts if (f.get("location") or {}).get("line")]
    named = [f for f in located if f.get("kernel") and f["kernel"] in error]
    locs = []
    for i, f in enumerate(named or located):
        locs.append({"line": int(f["location"]["line"]), "column": 1,
                     "message": f"the TPU compiler refused pallas_call {f.get('kernel')}: {summary}",
                     **({"related": True} if i else {})})
    num_lines = len(source.splitlines()) if source is not None else None
    seen = {loc["line"] for loc in locs}
    for h in C.message_hints(error, filename, num_lines):
        if h["line"] not in seen:
            locs.append({"line": h["line"], "column": h["column"],
                         "message": "named in the compiler's error: " + summary, "related": bool(locs)})
    return locs


def _polled(cancel):
    """The compiler polls a callable while it waits; a cancelled request kills its compile."""
    return (lambda: cancel.cancelled) if cancel is not None else None


def _raise_if_cancelled(res: dict) -> None:
    if res.get("status") == "cancelled":
        raise C.Cancelled()


def reference(task, args, kwargs, generation: str, limits, cancel=None) -> dict:
    limits = limits if isinstance(limits, dict) else None
    # The reference's own source is in the key: an edited reference is compiled again.
    key = json.dumps([task.describe(), getattr(task.ref_module, "source", None), repr(args), repr(kwargs),
                      generation, limits], default=str)
    with _cache_lock:
        hit = _reference_cache.get(key)
    if hit is not None:
        return hit
    try:
        ref, a, k, _ = mkw_run.bind_static(task.reference_fn, args, kwargs)
        res = mkw_tpu_compiler.estimate(ref, a, generation, kwargs=k, limits=limits,
                                        cancelled=_polled(cancel))
    except Exception as e:  # noqa: BLE001 - the baseline is reported, never fatal
        res = {"generation": generation, "status": "export_failed", "error": f"{type(e).__name__}: {e}"[:2000]}
    _raise_if_cancelled(res)
    res = _slim(res)
    if res.get("status") in ("compiled", "refused"):
        with _cache_lock:
            _reference_cache[key] = res
    return res


def check(entry, args, kwargs, facts, prep, generation: str, req, cancel=None) -> dict:
    """The `tpu_compile` object of a lower reply; raises a `compile` WorkerError when the TPU
    compiler refuses the candidate, Cancelled when `cancel` is set during the compile."""
    limits = _limits(req)
    cand = mkw_tpu_compiler.estimate(entry, args, generation, kwargs=kwargs, limits=limits,
                                     cancelled=_polled(cancel))
    _raise_if_cancelled(cand)
    cand = _slim(cand)
    out = {"generation": generation, "label": mkw_tpu_compiler.label(generation), "candidate": cand}
    if cand["status"] == "refused":
        raise C.WorkerError(
            C.COMPILE,
            f"the TPU compiler (libtpu {cand.get('libtpu')}, {generation}) refused the kernel "
            f"({cand.get('error_kind')}): {cand.get('error', '')}"[:8000],
            locations=_locations(cand.get("error", ""), facts, prep.filename, prep.source),
            tpu_compile=out, compiled_by="tpu_compiler")
    if cand["status"] != "compiled" or req.get("compile_reference") is False:
        return out
    ref = reference(prep.task, args, kwargs, generation, limits, cancel)
    out["reference"] = ref
    if ref.get("cycles") and cand.get("cycles"):
        # Same compiler, same generation: the cycle ratio needs no clock.
        out["speedup_vs_xla"] = ref["cycles"] / cand["cycles"]
        out["basis"] = (f"{out['label']}: XLA's compiled reference vs the compiled candidate, "
                        "libtpu static cycles")
    return out
