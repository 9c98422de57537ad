"""A forked child's work (sandbox.zygote): where task and candidate code runs, never in the judge.

role `reference`: loads the task (for an in-file task that is the candidate's own file), draws the
input sets of the seeds and runs the reference on them; sends the inputs and outputs as raw arrays,
and the reference's exported programs (to run for timing, and for the target, to count its work).
role `compile_configs`: autotune's configurations of the candidate, each traced at the task's full
shapes and exported for TPU (tpu_compiler.autotune_compiled.export_config); the judge has them compiled.
role `op`: the candidate's side of `lower` or `profile` (ops.lower.lower_in_child,
ops.profile.profile_in_child); their replies are reports, not verdicts.
role `reference_export`: the task's reference exported for TPU at its full shapes (the program
`lower`'s "vs XLA" compiles), from a child that loads the task alone.
role `candidate`: loads the gated candidate, traces it (facts, the kernel gate, the work report of
its jaxpr: a first line the judge does not rely on), exports the program that runs here (on a CPU
host the Pallas interpreter lowered to plain XLA) and the program for the target; sends them.

Every answer is data (protocol.wire); the judge decides what it means."""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
import traceback

import jax

from mkworker import common as C
from mkworker.cost import cost, trace
from mkworker.cost import facts as cost_facts
from mkworker.judge import clock, run
from mkworker.judge import golden as judge_golden
from mkworker.ops import lower as ops_lower
from mkworker.ops import prepared, profile
from mkworker.protocol import input_wire, wire
from mkworker.tasks import extra_shapes as tasks_extra_shapes
from mkworker.tasks import shrink, tasks
from mkworker.tpu_compiler import autotune_compiled, compiler

EXPORT_PLATFORM = {"cpu": "cpu", "gpu": "cuda", "tpu": "tpu"}
# The first run only looks for the interpreter's errors, its speed is never read: XLA's CPU
# backend compiles it with LLVM's cheap settings (about a quarter less compile time).
FIRST_RUN_XLA = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def main(sock, notes: list[str]) -> int:
    sys.stdout = sys.stderr
    try:
        req, blobs_in = wire.recv(sock, time.monotonic() + 60, what="the judge")
    except wire.WireError:
        return 3
    # The judge made this folder and removes it once the child is gone, whatever the child did.
    workdir = req.get("workdir")
    os.chdir(workdir if isinstance(workdir, str) and os.path.isdir(workdir)
             else tempfile.mkdtemp(prefix="maxkernel-candidate-"))
    stage = {"name": "start"}
    if req.get("role") == "compile_configs":
        return _answer(sock, notes, stage, lambda: _compile_configs(req, stage))
    if req.get("role") == "op":
        return _answer(sock, notes, stage, lambda: _op(req, stage))
    if req.get("role") == "reference_export":
        return _answer(sock, notes, stage, lambda: _reference_export(req, stage))
    if req.get("role") != "reference":
        return _answer(sock, notes, stage, lambda: _candidate(req, stage, blobs_in))
    ref = []

    def first():
        ref.append(_Reference(req, stage))
        return ref[0].answer(req["seeds"], stage, first=True, extra_shapes=req.get("extra_shapes"))

    code = _answer(sock, notes, stage, first)
    # Kept by the judge (`serve`): more seeds of the same task, until the judge closes the socket.
    while code == 0 and ref and req.get("serve"):
        try:
            more, _ = wire.recv(sock, time.monotonic() + 10 ** 7, what="the judge")
        except wire.WireError:
            return 0
        seeds = more.get("seeds")
        if not isinstance(seeds, list) or not seeds or not all(isinstance(x, int) for x in seeds):
            return 3
        code = _answer(sock, notes, stage, functools.partial(ref[0].answer, seeds, stage, first=False,
                                                             extra_shapes=more.get("extra_shapes")))
    return code


def _answer(sock, notes, stage, work) -> int:
    """Sends what `work` returns, or the error it raised; 0 when the answer went out, 5 when it
    was an error (a child that failed once is not asked again)."""
    failed = True
    try:
        header, blobs = work()
        header["sandbox"] = notes
        failed = False
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
        wire.send(sock, _jsonable(header), blobs)
    except (OSError, TypeError, ValueError):
        return 4
    return 5 if failed else 0


def _jsonable(obj):
    import maxkernel_worker
    return maxkernel_worker.jsonable(obj)


def _mode(req, plat):
    return run.choose_mode(plat, [{"compiler_params": "tpu"}], req.get("interpret_mode"))


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
        return run.RunMode("device", None, plat)
    return run.RunMode("interpret", "hlo", plat)


def _first_run(bound, s0, facts, req, plat, prep):
    """On a CPU host the TPU interpreter runs the candidate once here first: it raises on
    out-of-bounds reads and the like, which the plain-XLA program the judge runs would not (a
    first-line check: an error here only makes the candidate's verdict worse)."""
    mode = run.choose_mode(plat, facts, req.get("interpret_mode"))
    if mode.kind != "interpret" or mode.interpret_kind != "tpu":
        return
    try:
        with mode.context():
            compiled = jax.jit(bound).trace(*s0.args, **s0.kwargs).lower().compile(compiler_options=FIRST_RUN_XLA)
            jax.block_until_ready(compiled(*s0.args, **s0.kwargs))
    except Exception as e:  # noqa: BLE001
        mode.reset()
        if run.looks_unsupported(e):
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


def _sets(golden, blobs: list[bytes]) -> list[dict]:
    """Each input set's inputs and the reference's outputs as array metas, their bytes appended
    to `blobs` in the same order."""
    sets = []
    for s, outs in zip(golden.sets, golden.outputs):
        sets.append({"seed": s.seed, "inputs": [wire.array_meta(jax.numpy.asarray(x)) for x in s.leaves()],
                     "outputs": [wire.array_meta(o) for o in outs]})
        blobs += [wire.to_blob(x) for x in s.leaves()] + [wire.to_blob(o) for o in outs]
    return sets


class _Reference:
    """The task's reference in this child: loaded once; the first answer carries its programs,
    later answers (the judge keeps this child for more seeds of the same task) only the input
    sets and outputs, the compiled reference reused."""

    def __init__(self, req, stage):
        self.plat = run.platform()
        self.mode = _mode(req, self.plat)
        stage["name"] = "load"
        self.task = tasks.resolve(req["task"], req.get("source"), req.get("filename") or "<buffer>")
        shrink.configure(self.task, req.get("shrink"))
        self.compiled: dict = {}  # the compiled reference by signature (the task's own shape, extra shapes)

    def answer(self, seeds, stage, first: bool, extra_shapes=None):
        stage["name"] = "reference"
        task, plat = self.task, self.plat
        golden = judge_golden.Golden(task, seeds, plat, self.mode, C.CancelToken(), compiled=self.compiled)
        blobs: list[bytes] = []
        s0 = golden.sets[0]
        header = {"task": task.describe(), "instance": shrink.describe(task),
                  "instance_label": shrink.label(task), "tolerances": task.tolerances,
                  "accept_dtype_difference": bool(task.accept_dtype_difference),
                  "sets": _sets(golden, blobs),
                  "warnings": list(golden.warnings) + list(getattr(task, "load_warnings", []) or []),
                  "compile_s": golden.compile_s, "reference_frozen": bool(task.reference_frozen),
                  "signature": golden.signature,
                  "inputs_structure": input_wire.describe(s0.full_args, s0.full_kwargs, s0.leaves())}
        if first:
            self._programs(s0, header, blobs)
        parsed = tasks_extra_shapes.parse_request(extra_shapes)
        if parsed and parsed[0]:
            header["extra"] = self._extra(parsed[0], seeds[0], blobs)
        return header, blobs

    def _extra(self, cases, seed, blobs) -> list[dict]:
        """Per extra shape (tasks.extra_shapes): its result so far, and the input set and the
        reference's outputs at its shape, or a `not_checked` result."""
        sizes = tasks_extra_shapes.task_sizes(self.task)
        out = []
        for case in cases:
            result, golden = tasks_extra_shapes.resolve_case(case, self.task, sizes, [seed], self.mode, self.plat,
                                                           C.CancelToken(), compiled=self.compiled)
            entry = {"result": result}
            if golden is not None:
                s0 = golden.sets[0]
                entry["sets_blob"] = len(blobs)  # where its arrays start among the answer's blobs
                entry.update(sets=_sets(golden, blobs),
                             inputs_structure=input_wire.describe(s0.full_args, s0.full_kwargs, s0.leaves()))
            out.append(entry)
        return out

    def _programs(self, s0, header, blobs):
        bound = s0.bind(self.task.reference_fn)
        try:
            mod, kept, _ = _export(bound, s0.args, s0.kwargs, EXPORT_PLATFORM.get(self.plat, self.plat))
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


def _judge_inputs(given, blobs):
    """An input set of the judge's (the reference's child drew it), rebuilt into the task's call;
    None when the judge sent none or it does not fit (the child then draws its own)."""
    if not isinstance(given, dict) or not isinstance(given.get("arrays"), list) or \
            len(given["arrays"]) != len(blobs) or not isinstance(given.get("seed"), int):
        return None
    try:
        arrays = [jax.numpy.asarray(wire.from_blob(m, b)) for m, b in zip(given["arrays"], blobs)]
        args, kwargs = input_wire.rebuild(given.get("structure"), arrays)
    except (ValueError, RecursionError, wire.WireError):
        return None
    s = run.InputSet(given["seed"], args, kwargs, [])
    if [id(x) for x in s.leaves()] != [id(x) for x in arrays]:
        return None  # the statics split differently here: draw them
    return s


def _candidate(req, stage, blobs_in=()):
    if req.get("extra_inputs") is not None:
        return _candidate_extra(req, stage, blobs_in)
    plat = run.platform()
    last = [time.perf_counter()]
    phases = {}

    def mark(name):
        now = time.perf_counter()
        phases[name] = round(now - last[0], 4)
        last[0] = now

    stage["name"] = "load"
    prep = prepared.Prepared(req, params=req.get("params") or None)
    task = prep.task
    shrink.configure(task, req.get("shrink"))
    stage["name"] = "trace"
    s0 = _judge_inputs(req.get("inputs"), blobs_in) or run.make_input_set(task, 0)
    bound = s0.bind(prep.entry)
    traced, closed = trace.trace_candidate(bound, s0.args, s0.kwargs, prep.filename, prep.source)
    facts = cost_facts.all_facts(closed, filename=prep.filename)
    mark("load_and_trace_s")
    header = {"entry": prep.entry_name, "pallas_calls": facts, "phases": phases,
              "warnings": trace.fact_warnings(facts), "gate": trace.pallas_gate(facts)}
    header["donated"] = _donated(jax.jit(lambda *a, **k: bound(*a, **k)).trace(*s0.args, **s0.kwargs).jaxpr)
    prep.watch.check("tracing")
    if not header["gate"]:
        header["work"] = cost.work_report(closed, facts, task, s0.args, s0.kwargs, prep.filename)
    if header["gate"] or header["donated"] or (header.get("work") or {}).get("verdict"):
        prep.close()
        return header, []  # a first-line verdict: nothing left for the judge to run
    mark("facts_and_work_s")
    if req.get("lower_first"):
        failure = _lower_for_target(traced, bound, s0, facts, plat, prep)
        mark("lower_first_s")
        if failure is not None:
            header["target_failure"] = failure
            prep.close()
            return header, []
    stage["name"] = "run"
    _first_run(bound, s0, facts, req, plat, prep)
    mark("first_run_s")
    prep.watch.check("the first run")
    stage["name"] = "export"
    mode = _export_mode(plat, req, facts)
    header["run_mode"] = mode.to_json()
    blobs = []
    t0 = time.perf_counter()
    mod, kept, outs = _export_run(bound, s0, mode, plat, prep)
    header["export_s"] = time.perf_counter() - t0
    header["program"] = {"blob": 0, "kept": kept, "outputs": outs}
    blobs.append(mod)
    target = "cuda" if trace.kernel_platform(facts) == "gpu" else "tpu"
    try:
        mod, kept, _ = _export(bound, s0.args, s0.kwargs, target)
        header["target_program"] = {"blob": 1, "kept": kept, "platform": target}
        blobs.append(mod)
    except Exception as e:  # noqa: BLE001 - the judge says the work could not be counted
        header["target_program_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    prep.watch.check("exporting")
    clock.INTEGRITY.verify()
    mark("export_s")
    prep.close()
    return header, blobs


def _lower_for_target(traced, bound, s0, facts, plat, prep) -> dict | None:
    """The compile check of autotune's configurations, before anything runs: a TPU kernel
    lowers for TPU (Mosaic's block-shape rules), a Triton kernel for CUDA, unless this host is
    that device (running compiles it). The failure as the worker's error, or None."""
    gpu_kernel = trace.kernel_platform(facts) == "gpu"
    if plat == "tpu" or (gpu_kernel and plat == "gpu"):
        return None
    lower = trace.lower_gpu if gpu_kernel else trace.lower_tpu
    try:
        lower(traced, bound, s0.args, s0.kwargs, plat, prep.filename, prep.source)
    except C.WorkerError as e:
        return e.to_json()
    return None


def _export_mode(plat, req, facts):
    mode = _run_context(plat, req.get("interpret_mode"))
    if plat == "gpu" and any(f.get("compiler_params") == "tpu" for f in facts):
        mode = run.RunMode("interpret", "hlo", plat, run.TPU_KERNEL_ON_GPU)
    return mode


def _export_run(bound, s, mode, plat, prep):
    """The program the judge runs on this host, exported at the input set `s`."""
    try:
        with mode.context():
            return _export(bound, s.args, s.kwargs, EXPORT_PLATFORM.get(plat, plat))
    except Exception as e:  # noqa: BLE001
        if "host_callback" in str(e) or "callback" in type(e).__name__.lower():
            raise C.WorkerError(
                "refused", f"{os.path.basename(prep.filename)}: the candidate's program calls back into Python "
                           f"on the host (jax.pure_callback, io_callback, debug callbacks): the judge runs only "
                           f"XLA and the kernels [host-callback]", rule="host-callback", locations=[]) from None
        raise C.from_exception(C.LOWERING, e, prep.filename, source=prep.source,
                               prefix="the candidate's program could not be exported") from None


def _candidate_extra(req, stage, blobs_in):
    """The candidate at the task's extra shapes (tasks.extra_shapes), after its own shape passed in
    the judge: per shape the judge sent an input set for, the interpreter's first run and the
    program exported there, or the error the candidate met (the judge reports it for that shape)."""
    plat = run.platform()
    stage["name"] = "load"
    prep = prepared.Prepared(req)
    shrink.configure(prep.task, req.get("shrink"))
    header, blobs, k = {"extra_programs": []}, [], 0
    for given in req["extra_inputs"] if isinstance(req["extra_inputs"], list) else []:
        n = len(given.get("arrays") or []) if isinstance(given, dict) else 0
        s, k = _judge_inputs(given, blobs_in[k:k + n]), k + n
        if s is None:
            header["extra_programs"].append({"error": {"kind": C.RUNTIME, "message": "no inputs for this shape"}})
            continue
        stage["name"] = "trace"
        try:
            bound = s.bind(prep.entry)
            _, closed = trace.trace_candidate(bound, s.args, s.kwargs, prep.filename, prep.source)
            facts = cost_facts.all_facts(closed, filename=prep.filename)
            stage["name"] = "run"
            _first_run(bound, s, facts, req, plat, prep)
            stage["name"] = "export"
            mod, kept, outs = _export_run(bound, s, _export_mode(plat, req, facts), plat, prep)
        except C.WorkerError as e:
            header["extra_programs"].append({"error": e.to_json()})
            continue
        header["extra_programs"].append({"program": {"blob": len(blobs), "kept": kept, "outputs": outs},
                                         "pallas_calls": facts})  # the blocks at this shape, for the report
        blobs.append(mod)
        prep.watch.check("the extra shapes")
    clock.INTEGRITY.verify()
    prep.close()
    return header, blobs


def _compile_configs(req, stage):
    """Per configuration: its record (tpu_compiler.autotune_compiled.export_config) and, when it lowered,
    its program exported for TPU at the task's full shapes (a blob)."""
    stage["name"] = "load"
    task = tasks.resolve(req["task"], req.get("source"), req.get("filename") or "<buffer>")
    try:
        full_args, full_kwargs = run.abstract_inputs(task)
        records, blobs = [], []
        for cfg in req.get("configs") or []:
            stage["name"] = "trace"
            r, module = autotune_compiled.export_config(req, task, cfg, full_args, full_kwargs)
            if module is not None:
                r["program"] = {"blob": len(blobs)}
                blobs.append(module)
            records.append(r)
        return {"configs": records}, blobs
    finally:
        task.close()


def _op(req, stage):
    ops = {"lower": ops_lower.lower_in_child, "profile": profile.profile_in_child}
    op = ops.get(req.get("child_op"))
    if op is None:
        raise C.WorkerError(C.BAD_REQUEST, f"no child op {req.get('child_op')!r}")
    stage["name"] = "load"
    return op(req, C.CancelToken(), stage)


def _reference_export(req, stage):
    stage["name"] = "load"
    task = tasks.resolve(req["task"], req.get("source"), req.get("filename") or "<buffer>")
    try:
        stage["name"] = "reference"
        args, kwargs = run.abstract_inputs(task)
        fn, a, k, _ = run.bind_static(task.reference_fn, args, kwargs)
        try:
            return {"program": {"blob": 0}}, [compiler.export_for_tpu(fn, a, k).serialize()]
        except Exception as e:  # noqa: BLE001 - the reference is then not compiled
            return {"program_error": f"{type(e).__name__}: {str(e)[:2000]}"}, []
    finally:
        task.close()
