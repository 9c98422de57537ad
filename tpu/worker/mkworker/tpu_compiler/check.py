"""The compile check of a candidate by the TPU compiler (tpu_compiler.compiler), for the `lower` op:
the candidate and the task's reference are compiled for the requested generation; a refusal
becomes a `compile` error at the pallas_call's line, and both programs' static cycles give the
speedup against XLA's compiled program ("predicted (TPU compiler, <generation>)")."""

from __future__ import annotations

import hashlib
import json
import os
import threading

from mkworker import common as C
from mkworker.judge import run
from mkworker.tpu_compiler import compiler, part

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
        ref, a, k, _ = run.bind_static(task.reference_fn, args, kwargs)
        res = compiler.estimate(ref, a, generation, kwargs=k, limits=limits,
                                        cancelled=_polled(cancel))
        if res.get("status") == "too_large":
            res = _reference_part(ref, a, k, generation, limits, cancel, res)
    except Exception as e:  # noqa: BLE001 - the baseline is reported, never fatal
        res = {"generation": generation, "status": "export_failed", "error": f"{type(e).__name__}: {e}"[:2000]}
    _raise_if_cancelled(res)
    res = _slim(res)
    if res.get("status") in ("compiled", "refused"):
        with _cache_lock:
            _reference_cache[key] = res
    return res


def _reference_part(ref, a, k, generation, limits, cancel, full: dict) -> dict:
    """XLA's program too large to profile at full size: compiled with the task's count axes cut
    and extrapolated (tpu_compiler.part), else the full compile's record."""
    try:
        cut = part.instance(ref, a, k)
        if cut is None:
            return full
        pa, pk, desc = cut
        whole = compiler.export_for_tpu(ref, a, k)
        small = compiler.export_for_tpu(ref, pa, pk)
    except Exception:  # noqa: BLE001 - no part: the full record stands
        return full
    scale = part.factor(whole, small)
    if scale is None:
        return full
    res = compiler.estimate_exported(small, generation, limits, _polled(cancel))
    _raise_if_cancelled(res)
    if res.get("status") != "compiled" or not res.get("cycles"):
        return full
    return part.extrapolated(res, scale, desc, full)


def refusal_message(cand: dict, generation: str) -> str:
    return (f"the TPU compiler (libtpu {cand.get('libtpu')}, {generation}) refused the kernel "
            f"({cand.get('error_kind')}): {cand.get('error', '')}"[:8000])


def refusal_locations(cand: dict, facts, filename: str, source: str | None) -> list[dict]:
    return _locations(cand.get("error", ""), facts, filename, source)


def compile_blob(module: bytes, generation: str, req, cancel=None) -> dict:
    """A candidate's program exported for TPU elsewhere (its child), compiled for `generation`:
    the compile's record as check() reports it; Cancelled when `cancel` is set meanwhile."""
    cand = compiler.estimate_serialized(module, generation, limits=_limits(req), cancelled=_polled(cancel))
    _raise_if_cancelled(cand)
    return _slim(cand)


def export_for_compile(entry, args, kwargs, prep, generation: str, req) -> tuple[dict, list[bytes]]:
    """The half of the compile check that runs where the candidate runs (its child): the
    candidate and the task's reference exported for TPU, as blobs; compile() does the rest in
    the worker, which hands the bytes to the compiler's process."""
    pending: dict = {"generation": generation}
    blobs: list[bytes] = []
    ok, why = compiler.available()
    if not ok:
        pending["candidate"] = {"generation": generation, "status": "unavailable", "reason": why}
        return pending, blobs
    exported = {}
    for name, fn in (("candidate", entry), ("reference", None)):
        if name == "reference" and req.get("compile_reference") is False:
            break
        try:
            a, k = args, kwargs
            if fn is None:
                fn, a, k, _ = run.bind_static(prep.task.reference_fn, args, kwargs)
            exported[name] = compiler.export_for_tpu(fn, a, k)
            blobs.append(exported[name].serialize())
            pending[name] = {"blob": len(blobs) - 1}
        except Exception as e:  # noqa: BLE001 - reported as the compile's status
            pending[name] = {"generation": generation, "status": "export_failed",
                             "error": f"{type(e).__name__}: {e}"[:8000]}
    if "candidate" in exported:
        _export_parts(entry, args, kwargs, prep, exported, pending, blobs)
    return pending, blobs


def _export_parts(entry, args, kwargs, prep, exported, pending, blobs) -> None:
    """For a large task, the candidate (and the reference, when it is compiled here) exported
    again with the task's count axes cut (tpu_compiler.part): compiled only when the full-size
    program is too large to profile."""
    try:
        ref, a, k, _ = run.bind_static(prep.task.reference_fn, args, kwargs)
        cut = part.instance(ref, a, k)
        if cut is None:
            return
        pa, pk, desc = cut
        small = compiler.export_for_tpu(entry, pa, pk)
        scale = part.factor(exported["candidate"], small)
        if scale is None:
            return
        blobs.append(small.serialize())
        parts = {"factor": scale, "count_axes": desc, "candidate": {"blob": len(blobs) - 1}}
        if "reference" in exported:
            rfn, ra, rk, _ = run.bind_static(prep.task.reference_fn, pa, pk)
            blobs.append(compiler.export_for_tpu(rfn, ra, rk).serialize())
            parts["reference"] = {"blob": len(blobs) - 1}
        pending["part"] = parts
    except Exception:  # noqa: BLE001 - no part: a full-size compile's record stands as it is
        return


def compile_exported(pending: dict, blobs: list[bytes], facts, filename: str, source: str | None, req,
                     cancel=None) -> dict:
    """The `tpu_compile` object of a lower reply from export_for_compile's answer; raises a
    `compile` WorkerError when the TPU compiler refuses the candidate, Cancelled when `cancel`
    is set during the compile."""
    generation = str(pending.get("generation"))
    cand = _compiled(pending.get("candidate"), blobs, generation, req, cancel)
    cand = _from_part(cand, pending, "candidate", blobs, generation, req, cancel)
    out = {"generation": generation, "label": compiler.label(generation), "candidate": cand}
    if cand["status"] == "refused":
        raise C.WorkerError(C.COMPILE, refusal_message(cand, generation),
                            locations=refusal_locations(cand, facts, filename, source),
                            tpu_compile=out, compiled_by="tpu_compiler")
    if cand["status"] != "compiled" or not isinstance(pending.get("reference"), dict):
        return out
    ref_desc = pending["reference"]
    if isinstance(ref_desc.get("blob"), int) and 0 <= ref_desc["blob"] < len(blobs):
        # The reference's compile is the same for every candidate: keyed by its program's bytes.
        key = json.dumps([hashlib.sha256(blobs[ref_desc["blob"]]).hexdigest(), generation, _limits(req)],
                         default=str)
        with _cache_lock:
            ref = _reference_cache.get(key)
        if ref is None:
            ref = _compiled(ref_desc, blobs, generation, req, cancel)
            ref = _from_part(ref, pending, "reference", blobs, generation, req, cancel)
            if ref.get("status") in ("compiled", "refused"):
                with _cache_lock:
                    _reference_cache[key] = ref
    else:
        ref = _from_part(_slim(ref_desc), pending, "reference", blobs, generation, req, cancel)
    out["reference"] = ref
    if ref.get("cycles") and cand.get("cycles"):
        # Same compiler, same generation: the cycle ratio needs no clock.
        out["speedup_vs_xla"] = ref["cycles"] / cand["cycles"]
        out["basis"] = (f"{out['label']}: XLA's compiled reference vs the compiled candidate, "
                        "libtpu static cycles")
        stood_in = [f"{side} {op}" for side, rec in (("XLA's", ref), ("the kernel's", cand))
                    for op in (rec.get("cost_model_ops") or {})]
        if stood_in:
            out["basis"] += (f"; XLA's cost-model estimate for {', '.join(stood_in)} "
                             "(the static profile gave it 0 cycles)")
        floored = [side for side, rec in (("XLA's program", ref), ("the kernel", cand))
                   if rec.get("hbm_floor")]
        if floored:
            out["basis"] += (f"; {' and '.join(floored)} at the floor of reading the inputs and "
                             "writing the outputs once at HBM bandwidth (the profile gave fewer cycles)")
    return out


def _from_part(full: dict, pending: dict, side: str, blobs, generation, req, cancel) -> dict:
    """A program too large to profile at full size, scored from its part when the child
    exported one (tpu_compiler.part); otherwise the full compile's record as it is."""
    parts = pending.get("part")
    if full.get("status") != "too_large" or not isinstance(parts, dict) or side not in parts:
        return full
    small = _compiled(parts[side], blobs, generation, req, cancel)
    if small.get("status") != "compiled" or not small.get("cycles"):
        return full
    return part.extrapolated(small, float(parts["factor"]), str(parts.get("count_axes")), full)


def _compiled(desc, blobs, generation, req, cancel) -> dict:
    if not isinstance(desc, dict):
        return {"generation": generation, "status": "export_failed", "error": "no program was exported"}
    blob = desc.get("blob")
    if isinstance(blob, int) and 0 <= blob < len(blobs):
        return compile_blob(blobs[blob], generation, req, cancel)
    return _slim({k: v for k, v in desc.items() if k in ("generation", "status", "reason", "error")})
