"""A forked child's work (mkw_zygote): where task and candidate code runs, never in the judge.

role `reference`: loads the task (for an in-file task that is the candidate's own file), draws the
input sets of the seeds and runs the reference on them; sends the inputs and outputs as raw arrays,
and the reference's exported programs (to run for timing, and for the target, to count its work).
role `candidate`: loads the gated candidate, traces it (facts, the kernel gate, the work report of
its jaxpr: a first line the judge does not rely on), exports the program that runs here (on a CPU
host the Pallas interpreter lowered to plain XLA) and the program for the target; sends them.

Every answer is data (mkw_wire); the judge decides what it means."""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback

import jax
import mkw_clock
import mkw_common as C
import mkw_cost
import mkw_facts
import mkw_golden
import mkw_prepared
import mkw_run
import mkw_shrink
import mkw_tasks
import mkw_trace
import mkw_wire

EXPORT_PLATFORM = {"cpu": "cpu", "gpu": "cuda", "tpu": "tpu"}


def main(sock, notes: list[str]) -> int:
    sys.stdout = sys.stderr
    try:
        req, _ = mkw_wire.recv(sock, time.monotonic() + 60, what="the judge")
    except mkw_wire.WireError:
        return 3
    # The judge made this folder and removes it once the child is gone, whatever the child did.
    workdir = req.get("workdir")
    os.chdir(workdir if isinstance(workdir, str) and os.path.isdir(workdir)
             else tempfile.mkdtemp(prefix="maxkernel-candidate-"))
    stage = {"name": "start"}
    try:
        role = req.get("role")
        header, blobs = (_reference if role == "reference" else _candidate)(req, stage)
        header["sandbox"] = notes
    except C.WorkerError as e:
        header, blobs = {"error": e.to_json()}, []
    except BaseException as e:  # noqa: BLE001 - KeyboardInterrupt, SystemExit, MemoryError included
        kind = C.IMPORT if stage["name"] == "load" else C.RUNTIME
        header = {"error": {"kind": kind, "exception_type": type(e).__name__,
                            "message": f"the candidate raised {type(e).__name__} ({stage['name']}): "
                                       f"{str(e)[:500]}",
                            "traceback": traceback.format_exc()[-8000:]}}
        blobs = []
    try:
        mkw_wire.send(sock, _jsonable(header), blobs)
    except (OSError, TypeError, ValueError):
        return 4
    return 0


def _jsonable(obj):
    import maxkernel_worker
    return maxkernel_worker.jsonable(obj)


def _mode(req, plat):
    return mkw_run.choose_mode(plat, [{"compiler_params": "tpu"}], req.get("interpret_mode"))


def _export(fn, args, kwargs, platform):
    """(module bytes, kept argument indices, out avals as metas) of fn exported for `platform`."""
    exp = jax.export.export(jax.jit(fn), platforms=[platform])(*args, **kwargs)
    outs = [{"dtype": a.dtype.name, "shape": [int(d) for d in a.shape]} for a in exp.out_avals]
    return exp.mlir_module_serialized, list(exp.module_kept_var_idx), outs


def _run_context(plat, requested):
    """On a CPU host the program that runs is the Pallas interpreter lowered to plain XLA
    (interpret=True): the TPU interpreter's simulated memories are host callbacks, which an
    exported program cannot hold. `interpret_mode: none` forces nothing (the kernel passes
    interpret=... itself)."""
    if plat in ("tpu", "gpu") or requested == "none":
        return mkw_run.RunMode("device", None, plat)
    return mkw_run.RunMode("interpret", "hlo", plat)


def _first_run(bound, s0, facts, req, plat, prep):
    """On a CPU host the TPU interpreter runs the candidate once here first: it raises on
    out-of-bounds reads and the like, which the plain-XLA program the judge runs would not (a
    first-line check: an error here only makes the candidate's verdict worse)."""
    mode = mkw_run.choose_mode(plat, facts, req.get("interpret_mode"))
    if mode.kind != "interpret" or mode.interpret_kind != "tpu":
        return
    try:
        with mode.context():
            jax.block_until_ready(jax.jit(bound)(*s0.args, **s0.kwargs))
    except Exception as e:  # noqa: BLE001
        mode.reset()
        if mkw_run.looks_unsupported(e):
            return  # the interpreter cannot run it; the judge's run decides
        err = C.from_exception(C.RUNTIME, e, prep.filename, source=prep.source,
                               prefix=f"the candidate failed while running (seed {s0.seed})")
        if not err.extra.get("locations"):
            # A failure inside a kernel has no Python frame of the user's: the pallas_call sites.
            err.extra["locations"] = [
                {"line": f["location"]["line"], "column": 1,
                 "message": f"while running pallas_call {f['kernel']}: {err.message.splitlines()[0][:300]}"}
                for f in facts if f.get("location")]
        raise err from None


def _reference(req, stage):
    plat = mkw_run.platform()
    stage["name"] = "load"
    task = mkw_tasks.resolve(req["task"], req.get("source"), req.get("filename") or "<buffer>")
    mkw_shrink.configure(task, req.get("shrink"))
    stage["name"] = "reference"
    golden = mkw_golden.Golden(task, req["seeds"], plat, _mode(req, plat), C.CancelToken())
    metas, blobs = [], []
    sets = []
    for s, outs in zip(golden.sets, golden.outputs):
        ins = [mkw_wire.to_blob(x) for x in s.leaves()]
        entry = {"seed": s.seed, "inputs": [mkw_wire.array_meta(jax.numpy.asarray(x)) for x in s.leaves()],
                 "outputs": [mkw_wire.array_meta(o) for o in outs]}
        sets.append(entry)
        blobs += ins + [mkw_wire.to_blob(o) for o in outs]
    s0 = golden.sets[0]
    bound = s0.bind(task.reference_fn)
    header = {"task": task.describe(), "instance": mkw_shrink.describe(task),
              "instance_label": mkw_shrink.label(task), "tolerances": task.tolerances,
              "accept_dtype_difference": bool(task.accept_dtype_difference), "sets": sets,
              "warnings": list(golden.warnings) + list(getattr(task, "load_warnings", []) or []),
              "compile_s": golden.compile_s, "reference_frozen": bool(task.reference_frozen)}
    metas.append(len(blobs))
    try:
        mod, kept, _ = _export(bound, s0.args, s0.kwargs, EXPORT_PLATFORM.get(plat, plat))
        header["program"] = {"blob": len(blobs), "kept": kept}
        blobs.append(mod)
    except Exception as e:  # noqa: BLE001 - the reference is then not timed
        header["program_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    try:
        mod, kept, _ = _export(bound, s0.args, s0.kwargs, "tpu")
        header["target_program"] = {"blob": len(blobs), "kept": kept, "platform": "tpu"}
        blobs.append(mod)
    except Exception as e:  # noqa: BLE001
        header["target_program_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    return header, blobs


def _donated(closed):
    """The input_mutated failure when the entry donates one of its inputs (a first-line verdict:
    the judge's own inputs are never donated, an exported program carries no donation)."""
    top = list(closed.jaxpr.invars)
    for eqn in closed.jaxpr.eqns:
        for var, donated in zip(eqn.invars, eqn.params.get("donated_invars") or ()):
            if donated and var in top:
                return {"kind": "input_mutated", "seed": None,
                        "message": f"input {top.index(var)} was donated/deleted by the candidate"}
    return None


def _candidate(req, stage):
    plat = mkw_run.platform()
    last = [time.perf_counter()]
    phases = {}

    def mark(name):
        now = time.perf_counter()
        phases[name] = round(now - last[0], 4)
        last[0] = now

    stage["name"] = "load"
    prep = mkw_prepared.Prepared(req)
    task = prep.task
    mkw_shrink.configure(task, req.get("shrink"))
    stage["name"] = "trace"
    s0 = mkw_run.make_input_set(task, 0)
    bound = s0.bind(prep.entry)
    _, closed = mkw_trace.trace_candidate(bound, s0.args, s0.kwargs, prep.filename, prep.source)
    facts = mkw_facts.all_facts(closed, filename=prep.filename)
    mark("load_and_trace_s")
    header = {"entry": prep.entry_name, "pallas_calls": facts, "phases": phases,
              "warnings": mkw_trace.fact_warnings(facts), "gate": mkw_trace.pallas_gate(facts)}
    header["donated"] = _donated(jax.jit(lambda *a, **k: bound(*a, **k)).trace(*s0.args, **s0.kwargs).jaxpr)
    prep.watch.check("tracing")
    if not header["gate"]:
        header["work"] = mkw_cost.work_report(closed, facts, task, s0.args, s0.kwargs, prep.filename)
    if header["gate"] or header["donated"] or (header.get("work") or {}).get("verdict"):
        prep.close()
        return header, []  # a first-line verdict: nothing left for the judge to run
    mark("facts_and_work_s")
    stage["name"] = "run"
    _first_run(bound, s0, facts, req, plat, prep)
    mark("first_run_s")
    prep.watch.check("the first run")
    stage["name"] = "export"
    mode = _run_context(plat, req.get("interpret_mode"))
    if plat == "gpu" and any(f.get("compiler_params") == "tpu" for f in facts):
        mode = mkw_run.RunMode("interpret", "hlo", plat, mkw_run.TPU_KERNEL_ON_GPU)
    header["run_mode"] = mode.to_json()
    blobs = []
    t0 = time.perf_counter()
    try:
        with mode.context():
            mod, kept, outs = _export(bound, s0.args, s0.kwargs, EXPORT_PLATFORM.get(plat, plat))
    except Exception as e:  # noqa: BLE001
        if "host_callback" in str(e) or "callback" in type(e).__name__.lower():
            raise C.WorkerError(
                "refused", f"{os.path.basename(prep.filename)}: the candidate's program calls back into Python "
                           f"on the host (jax.pure_callback, io_callback, debug callbacks): the judge runs only "
                           f"XLA and the kernels [host-callback]", rule="host-callback", locations=[]) from None
        raise C.from_exception(C.LOWERING, e, prep.filename, source=prep.source,
                               prefix="the candidate's program could not be exported") from None
    header["export_s"] = time.perf_counter() - t0
    header["program"] = {"blob": 0, "kept": kept, "outputs": outs}
    blobs.append(mod)
    target = "cuda" if mkw_trace.kernel_platform(facts) == "gpu" else "tpu"
    try:
        mod, kept, _ = _export(bound, s0.args, s0.kwargs, target)
        header["target_program"] = {"blob": 1, "kept": kept, "platform": target}
        blobs.append(mod)
    except Exception as e:  # noqa: BLE001 - the judge says the work could not be counted
        header["target_program_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    prep.watch.check("exporting")
    mkw_clock.INTEGRITY.verify()
    mark("export_s")
    prep.close()
    return header, blobs
