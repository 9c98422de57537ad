"""The `lower` op: trace the candidate at the task's full (abstract) shapes, report its
pallas_calls, lower it for its accelerator (or natively) and, when asked, compile it.

target "tpu" is the compile check of a kernel: TPU kernels lower for TPU, and a candidate whose
pallas_calls are all GPU kernels (Triton compiler params, the generator's GPU form) lowers for
CUDA instead, since it cannot lower for TPU; target "gpu" always lowers for CUDA.

With a `generation` in the request and no TPU attached, a TPU lowering is then compiled by the
TPU compiler for that generation (tpu_compiler.check): its refusals are `compile` errors at the
pallas_call's line, and the reply's `tpu_compile` has both programs' static cycles."""

from __future__ import annotations

import collections
import time

from mkworker import common as C
from mkworker.cost import cost, trace
from mkworker.cost import facts as cost_facts
from mkworker.judge import judge, run
from mkworker.ops import prepared
from mkworker.sandbox import sandbox
from mkworker.tasks import shrink
from mkworker.tpu_compiler import check


def op_lower(req, cancel, progress) -> dict:
    """The worker's side: the request checked and gated here, the candidate traced and lowered
    in a fresh child (lower_in_child), the TPU compiler run from here on the programs the
    children exported (the reference's from a child that loads the task alone)."""
    target = req.get("target", "tpu")
    if target not in ("tpu", "gpu", "native"):
        raise C.WorkerError(C.BAD_REQUEST, "target must be 'tpu', 'gpu' or 'native'")
    if shrink.parse_request(req.get("shrink")) is not None:
        raise C.WorkerError(C.BAD_REQUEST, "`shrink` is for evaluate, autotune and profile: lower "
                                           "always uses the task's full shapes (it needs no data)")
    prepared.gate_request(req)
    plat = run.platform()
    own_reference = judge.task_is_candidate(req) or judge.task_key(req, plat) is None
    child_req = dict(req, role="op", child_op="lower", compile_reference=(
        req.get("compile_reference", True) is not False and own_reference))
    header, blobs = sandbox.run_child(child_req, cancel=cancel)
    judge.raise_error(header)
    pending = header.pop("tpu_compile_pending", None)
    header.pop("sandbox", None)
    if isinstance(pending, dict):
        if not own_reference and req.get("compile_reference", True) is not False:
            _add_reference_program(req, plat, pending, blobs, cancel)
        facts = header.get("pallas_calls") or []
        try:
            header["tpu_compile"] = check.compile_exported(
                pending, blobs, facts, req.get("filename") or "<buffer>", req.get("source"), req, cancel)
        except C.WorkerError as e:
            e.extra.update(lowered=True, lowered_for=header.get("lowered_for"), pallas_calls=facts)
            raise
        cand = header["tpu_compile"]["candidate"]
        header["compiled_by"] = "tpu_compiler" if cand["status"] == "compiled" else "lowering"
        if cand["status"] != "compiled":
            header.setdefault("warnings", []).append(
                f"not compiled by the TPU compiler ({cand['status']}: "
                f"{cand.get('reason') or cand.get('error', '')[:300]}); checked by lowering only")
    return header


# The task's reference exported for TPU at its full shapes, per task (its child loads the task
# alone, so no candidate's code made the program "vs XLA" compares with).
_REFERENCE_PROGRAMS: collections.OrderedDict = collections.OrderedDict()
_REFERENCE_PROGRAMS_KEPT = 8


def _add_reference_program(req, plat, pending, blobs, cancel) -> None:
    key = judge.task_key(req, plat)
    hit = _REFERENCE_PROGRAMS.get(key)
    if hit is None:
        fields = {k: req[k] for k in ("task", "source", "filename") if k in req}
        h, b = sandbox.run_child(dict(fields, role="reference_export"), cancel=cancel)
        if h.get("error") or not isinstance(h.get("program"), dict):
            err = (h.get("error") or {}).get("message") or h.get("program_error") or "no program"
            hit = {"status": "export_failed", "error": str(err)[:8000]}
        else:
            hit = b[0]
        _REFERENCE_PROGRAMS[key] = hit
        while len(_REFERENCE_PROGRAMS) > _REFERENCE_PROGRAMS_KEPT:
            _REFERENCE_PROGRAMS.popitem(last=False)
    _REFERENCE_PROGRAMS.move_to_end(key)
    if isinstance(hit, bytes):
        blobs.append(hit)
        pending["reference"] = {"blob": len(blobs) - 1}
    else:
        pending["reference"] = dict(hit, generation=pending.get("generation"))


def lower_in_child(req, cancel, stage) -> tuple[dict, list[bytes]]:
    """The candidate's side, in its child: trace, lower and (natively) compile; with a TPU
    generation asked for, the programs the worker has the TPU compiler compile (`blobs`)."""
    target = req.get("target", "tpu")
    prep = prepared.Prepared(req)
    stage["name"] = "trace"
    blobs: list[bytes] = []
    try:
        full_args, full_kwargs = run.abstract_inputs(prep.task)
        # Python-number inputs are static arguments (judge.run.bind_static), as in every op.
        entry, args, kwargs, statics = run.bind_static(prep.entry, full_args, full_kwargs)
        cancel.check()
        traced, closed = trace.trace_candidate(entry, args, kwargs, prep.filename, prep.source)
        facts = cost_facts.all_facts(closed, filename=prep.filename)
        plat = run.platform()
        base = {
            "entry": prep.entry_name,
            "task": prep.task.describe(),
            "inputs": trace.describe_avals(full_args, full_kwargs),
            "static_args": run.static_arg_names(prep.entry, statics),
            "pallas_calls": facts,
            "num_pallas_calls": len(facts),
            "vmem_assumptions": cost_facts.VMEM_ASSUMPTIONS,
            "warnings": trace.fact_warnings(facts),
        }
        cancel.check()
        try:
            if target in ("tpu", "gpu"):
                gpu = target == "gpu" or trace.kernel_platform(facts) == "gpu"
                lower = trace.lower_gpu if gpu else trace.lower_tpu
                lowered, lowered_for = lower(traced, entry, args, kwargs, plat, prep.filename,
                                             prep.source)
            else:
                mode = run.choose_mode(plat, facts, req.get("interpret_mode"))
                try:
                    with mode.context():
                        lowered = trace.jitted(entry).trace(*args, **kwargs).lower()
                except Exception as e:  # noqa: BLE001
                    mode.reset()
                    raise C.from_exception(C.LOWERING, e, prep.filename, source=prep.source,
                                           prefix=f"lowering for {plat} failed") from None
                lowered_for = plat
                base["run_mode"] = mode.to_json()
            native = target == "native" or (plat, lowered_for) in (("tpu", "tpu"), ("gpu", "cuda"))
            if req.get("compile") and hasattr(lowered, "compile") and native:
                try:
                    t0 = time.perf_counter()
                    lowered.compile()
                    base["compile_s"] = time.perf_counter() - t0
                except Exception as e:  # noqa: BLE001
                    raise C.from_exception(C.COMPILE, e, prep.filename, source=prep.source,
                                           prefix="compilation failed") from None
        except C.WorkerError as e:
            e.extra.setdefault("lowered", False)
            e.extra.setdefault("pallas_calls", facts)
            raise
        base["lowered"] = True
        base["lowered_for"] = lowered_for
        gen = check.wanted(req, plat) if lowered_for == "tpu" else None
        if gen:
            base["tpu_compile_pending"], blobs = check.export_for_compile(entry, args, kwargs, prep,
                                                                                  gen, req)
        base["cost"] = cost.cost_summary(facts, prep.task, full_args, full_kwargs)
        base["work"] = cost.work_report(closed, facts, prep.task, full_args, full_kwargs, prep.filename)
        if base["work"].get("verdict"):
            base["warnings"].append(base["work"]["verdict"]["message"])
        prep.watch.check("tracing")
        if not facts:
            base["warnings"].append("no pallas_call found in the traced entry point")
        return base, blobs
    finally:
        prep.close()
