"""The long-running operations: lower, evaluate, profile, autotune.

Each takes the request dict, a CancelToken and a Progress sink, and returns
the response fields (without id/ok) or raises mkw_common.WorkerError.
"""

from __future__ import annotations

import itertools
import os
import time

import jax
import mkw_clock
import mkw_common as C
import mkw_facts
import mkw_gate
import mkw_golden
import mkw_profile
import mkw_run
import mkw_shrink
import mkw_tasks
import mkw_work
import numpy as np

WORKDIR = {"path": None}  # set by the protocol layer (the private temp dir)
_profile_counter = itertools.count()


# ---------------------------------------------------------------------------
# Shared preparation.

class Prepared:
    def __init__(self, req: dict, params: dict | None = None, task: mkw_tasks.Task | None = None,
                 watch: mkw_clock.Watch | None = None):
        self.modules = []
        self.own_task = task is None
        # Started before any candidate code (an in-file task file is candidate code too) runs.
        self.watch = watch or mkw_clock.Watch(req.get("filename") or "<buffer>")
        if task is None:
            gate_task(req)
        src = req.get("source")
        if src is not None and not isinstance(src, str):
            raise C.WorkerError(C.BAD_REQUEST, "`source` must be a string")
        fname = req.get("filename") or "<buffer>"
        if "task" not in req and task is None:
            raise C.WorkerError(C.BAD_REQUEST, "request needs a `task`")
        self.task = task or mkw_tasks.resolve(req["task"], src, fname)
        if src is None:
            src, fname = self.task.candidate_source, self.task.candidate_filename
        if src is None:
            self.close()
            raise C.WorkerError(C.BAD_REQUEST,
                                "request needs `source` (the candidate text) or a task that names a candidate")
        self.source, self.filename = src, fname
        self.params = params
        try:
            gate_candidate(src, fname, self.task)
            self.cand = mkw_tasks.load_candidate(src, fname, self.task, params=params)
            self.modules.append(self.cand)
            self.watch.check("executing the module")
            self.entry_name, self.entry = mkw_tasks.candidate_entry(self.cand, self.task, req.get("kernel"))
        except BaseException:
            self.close()
            raise

    def close(self):
        for m in self.modules:
            m.close()
        self.modules = []
        if self.own_task and getattr(self, "task", None) is not None:
            self.task.close()


# ---------------------------------------------------------------------------
# The source gate (mkw_gate): refused before a line of the candidate runs.

def gate_task(req: dict) -> None:
    """An in-file task is the candidate's own file (the editor's saved buffer, or the buffer
    itself): its text runs as the task module, so it is gated like a candidate."""
    t = req.get("task")
    if not isinstance(t, dict) or t.get("form") != "infile":
        return
    if isinstance(t.get("source"), str):
        text, fname = t["source"], t.get("filename") or req.get("filename") or "<task>"
    elif isinstance(t.get("path"), str):
        fname = os.path.abspath(t["path"])
        try:
            with open(fname, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            return  # resolving the task reports it
    elif isinstance(req.get("source"), str):
        text, fname = req["source"], req.get("filename") or "<buffer>"
    else:
        return
    mkw_gate.refuse_with_helpers(text, fname, os.path.dirname(fname) if os.path.isabs(fname) else None)


def gate_candidate(source: str, filename: str, task) -> None:
    ref_file = getattr(getattr(task, "ref_module", None), "filename", None)
    names = mkw_gate.task_module_names(ref_file) if task is not None and task.form != "infile" else ()
    folder = os.path.dirname(filename) if os.path.isabs(filename) else getattr(task, "task_dir", None)
    mkw_gate.refuse_with_helpers(source, filename, folder, task_modules=names)


def _request_candidate(req, task):
    src = req.get("source")
    if isinstance(src, str):
        return src, req.get("filename") or "<buffer>"
    return task.candidate_source, task.candidate_filename


# ---------------------------------------------------------------------------
# The whole program's work (mkw_work).

def reference_work(task, args, kwargs):
    """The reference's work, counted once per task object."""
    cached = getattr(task, "_mk_reference_work", None)
    if cached is not None:
        return cached
    try:
        ref, a, k, _ = mkw_run.bind_static(task.reference_fn, args, kwargs)
        closed = jax.jit(ref).trace(*a, **k).jaxpr
        work = mkw_work.reference_work(closed, None, closed.out_avals)
    except Exception as e:  # noqa: BLE001 - reported, never fatal
        work = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    task._mk_reference_work = work
    return work


def work_report(closed, facts, task, args, kwargs, filename) -> dict:
    """The `work` object: the candidate's whole program against the reference."""
    try:
        cand = mkw_work.program_work(closed, facts, filename)
    except Exception as e:  # noqa: BLE001
        return {"error": f"counting the candidate's work failed: {type(e).__name__}: {str(e)[:300]}",
                "verdict": None}
    ref = reference_work(task, args, kwargs)
    rep_ = mkw_work.report(cand, None if "error" in ref else ref)
    if "error" in ref:
        rep_["reference_error"] = ref["error"]
    return rep_


def _hardware(req):
    hw = req.get("hardware")
    if hw is None and isinstance(req.get("target"), dict):
        hw = req["target"]
    if hw is not None and not isinstance(hw, dict):
        raise C.WorkerError(C.BAD_REQUEST, "`hardware` must be an object {name, peak_flops_per_s, "
                                           "hbm_bandwidth_bytes_per_s}")
    return hw


def jitted(fn):
    return fn if (hasattr(fn, "trace") and hasattr(fn, "lower")) else jax.jit(fn)


def trace_candidate(fn, args, kwargs, filename, source):
    try:
        traced = jitted(fn).trace(*args, **kwargs)
        return traced, traced.jaxpr
    except C.WorkerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise C.from_exception(C.TRACE, e, filename, source=source, prefix="tracing failed") from None


def lower_tpu(traced, fn, args, kwargs, plat, filename, source):
    """Lower for TPU: the real platform when a TPU is attached, otherwise
    cross-platform (Pallas -> Mosaic lowering runs without a TPU and raises
    the TPU block-shape errors)."""
    try:
        if plat == "tpu":
            return traced.lower(), "tpu"
        try:
            return traced.lower(lowering_platforms=("tpu",)), "tpu"
        except TypeError:
            # No lowering_platforms on this JAX: use jax.export.
            exp = jax.export.export(jitted(fn), platforms=["tpu"])(*args, **kwargs)
            return exp, "tpu"
    except C.WorkerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise C.from_exception(C.LOWERING, e, filename, source=source, prefix="lowering for TPU failed") from None


def _cost_dict(ca):
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
    out = {"flops": mkw_facts._num(flops), "bytes_accessed": mkw_facts._num(nbytes),
           "transcendentals": mkw_facts._num(trans)}
    if out["flops"] is not None and out["flops"] < 0:
        out["flops"] = None
    if out["bytes_accessed"] is not None and out["bytes_accessed"] < 0:
        out["bytes_accessed"] = None
    out["arithmetic_intensity"] = mkw_facts.intensity(out["flops"], out["bytes_accessed"])
    return out


def cost_summary(facts, task, args, kwargs) -> dict:
    out: dict = {}
    ests = [f["cost"] for f in facts if f.get("cost")]
    if ests:
        k = {"flops": sum(e.get("flops") or 0 for e in ests),
             "bytes_accessed": sum(e.get("bytes_accessed") or 0 for e in ests),
             "transcendentals": sum(e.get("transcendentals") or 0 for e in ests),
             "kernels_with_estimate": len(ests), "kernels": len(facts)}
        k["arithmetic_intensity"] = mkw_facts.intensity(k["flops"], k["bytes_accessed"])
        out["pallas_cost_estimate"] = k
    try:
        ref, a, k, _ = mkw_run.bind_static(task.reference_fn, args, kwargs)
        ca = jax.jit(ref).trace(*a, **k).lower().cost_analysis()
        ref = _cost_dict(ca)
        if ref:
            ref["backend"] = jax.default_backend()
            out["reference_xla"] = ref
    except Exception as e:  # noqa: BLE001
        out["reference_xla_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    if task.get_flops is not None:
        try:
            out["get_flops"] = mkw_facts._num(task.get_flops())
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
    out["arithmetic_intensity"] = mkw_facts.intensity(flops, nbytes)
    out["source"] = src
    return out


def _fact_warnings(facts) -> list[str]:
    w = []
    for f in facts:
        if f.get("interpret"):
            w.append(f"pallas_call {f['kernel']} passes interpret=...: it will not run as a Mosaic kernel")
        if not f.get("live", True):
            w.append(f"the result of pallas_call {f['kernel']} is never used")
    return w


# ---------------------------------------------------------------------------
# lower

def op_lower(req, cancel, progress) -> dict:
    target = req.get("target", "tpu")
    if target not in ("tpu", "native"):
        raise C.WorkerError(C.BAD_REQUEST, "target must be 'tpu' or 'native'")
    if mkw_shrink.parse_request(req.get("shrink")) is not None:
        raise C.WorkerError(C.BAD_REQUEST, "`shrink` is for evaluate, autotune and profile: lower "
                                           "always uses the task's full shapes (it needs no data)")
    prep = Prepared(req)
    try:
        full_args, full_kwargs = mkw_run.abstract_inputs(prep.task)
        # Python-number inputs are static arguments (mkw_run.bind_static), as in every op.
        entry, args, kwargs, statics = mkw_run.bind_static(prep.entry, full_args, full_kwargs)
        cancel.check()
        traced, closed = trace_candidate(entry, args, kwargs, prep.filename, prep.source)
        facts = mkw_facts.all_facts(closed, filename=prep.filename)
        plat = mkw_run.platform()
        base = {
            "entry": prep.entry_name,
            "task": prep.task.describe(),
            "inputs": _describe_avals(full_args, full_kwargs),
            "static_args": mkw_run.static_arg_names(prep.entry, statics),
            "pallas_calls": facts,
            "num_pallas_calls": len(facts),
            "vmem_assumptions": mkw_facts.VMEM_ASSUMPTIONS,
            "warnings": _fact_warnings(facts),
        }
        cancel.check()
        try:
            if target == "tpu":
                lowered, lowered_for = lower_tpu(traced, entry, args, kwargs, plat, prep.filename,
                                                 prep.source)
            else:
                mode = mkw_run.choose_mode(plat, facts, req.get("interpret_mode"))
                try:
                    with mode.context():
                        lowered = jitted(entry).trace(*args, **kwargs).lower()
                except Exception as e:  # noqa: BLE001
                    mode.reset()
                    raise C.from_exception(C.LOWERING, e, prep.filename, source=prep.source,
                                           prefix=f"lowering for {plat} failed") from None
                lowered_for = plat
                base["run_mode"] = mode.to_json()
            if req.get("compile") and hasattr(lowered, "compile") and (target == "native" or plat == "tpu"):
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
        base["cost"] = cost_summary(facts, prep.task, full_args, full_kwargs)
        base["work"] = work_report(closed, facts, prep.task, full_args, full_kwargs, prep.filename)
        if base["work"].get("verdict"):
            base["warnings"].append(base["work"]["verdict"]["message"])
        prep.watch.check("tracing")
        if not facts:
            base["warnings"].append("no pallas_call found in the traced entry point")
        return base
    finally:
        prep.close()


def _describe_avals(args, kwargs):
    def d(x):
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return {"shape": [int(s) for s in x.shape], "dtype": str(np.dtype(x.dtype))
                    if not str(x.dtype).startswith("key") else str(x.dtype)}
        return {"value": repr(x)[:80]}
    out = [d(x) for x in jax.tree_util.tree_leaves(args)]
    if kwargs:
        out += [dict(d(v), name=k) for k, v in kwargs.items()]
    return out


# ---------------------------------------------------------------------------
# evaluate (and the checking core shared with autotune)

class Golden:
    """The frozen reference: input sets and the reference's outputs,
    computed before any candidate code is executed."""

    def __init__(self, task, seeds, plat, mode, cancel):
        self.task = task
        self.sets: list[mkw_run.InputSet] = []
        self.outputs: list[list[np.ndarray]] = []
        self.warnings: list[str] = []
        self.mode = mode
        ref_name = task.reference_name
        for seed in seeds:
            cancel.check()
            s = mkw_run.make_input_set(task, seed)
            self.sets.append(s)
            self.warnings.extend(s.warnings)
        a0, k0 = self.sets[0].args, self.sets[0].kwargs
        try:
            with mode.context():
                t0 = time.perf_counter()
                ref = self.sets[0].bind(task.reference_fn)
                self.ref_compiled = jax.jit(ref).trace(*a0, **k0).lower().compile()
                self.compile_s = time.perf_counter() - t0
                for s in self.sets:
                    cancel.check()
                    a, k = s.clone()
                    self.outputs.append(mkw_run.to_host(self.ref_compiled(*a, **k)))
        except C.WorkerError:
            raise
        except Exception as e:  # noqa: BLE001
            raise C.from_exception(C.TASK, e, task.ref_module.filename, source=task.ref_module.source,
                                   prefix=f"the reference `{ref_name}` failed",
                                   file=task.ref_module.filename) from None
        for i, outs in enumerate(self.outputs):
            for j, o in enumerate(outs):
                if o.size > 1 and np.issubdtype(o.dtype, np.number) and np.all(o == o.flat[0]):
                    self.warnings.append(f"reference output {j} is constant for seed {self.sets[i].seed}")

    def run_ref(self, s: mkw_run.InputSet):
        a, k = s.clone()
        with self.mode.context():
            return mkw_run.to_host(self.ref_compiled(*a, **k))


def _seeds_from(req, default_n):
    seeds = req.get("seeds")
    if seeds is not None:
        if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
            raise C.WorkerError(C.BAD_REQUEST, "`seeds` must be a non-empty list of integers")
        return [int(s) for s in seeds]
    n = int(req.get("num_seeds", default_n))
    if n < 1:
        raise C.WorkerError(C.BAD_REQUEST, "num_seeds must be >= 1")
    return mkw_run.fresh_seeds(n)


def _compile_candidate(entry, s0, mode, filename, source):
    with mode.context():
        try:
            traced = jitted(s0.bind(entry)).trace(*s0.args, **s0.kwargs)
        except Exception as e:  # noqa: BLE001
            mode.reset()
            raise C.from_exception(C.TRACE, e, filename, source=source, prefix="tracing failed") from None
        try:
            lowered = traced.lower()
        except Exception as e:  # noqa: BLE001
            mode.reset()
            raise C.from_exception(C.LOWERING, e, filename, source=source, prefix="lowering failed") from None
        try:
            return lowered.compile(), traced
        except Exception as e:  # noqa: BLE001
            mode.reset()
            raise C.from_exception(C.COMPILE, e, filename, source=source, prefix="compilation failed") from None


def check_candidate(entry, golden: Golden, mode: mkw_run.RunMode, plat, task_tol, cancel,
                    filename, source) -> dict:
    """Compiles the candidate and checks it on every input set, in both
    orders (candidate then reference, reference then candidate), on cloned
    inputs, verifying afterwards that the inputs are untouched."""
    t0 = time.perf_counter()
    compiled, traced = _compile_candidate(entry, golden.sets[0], mode, filename, source)
    compile_s = time.perf_counter() - t0
    out_avals = [jax.ShapeDtypeStruct(o.shape, o.dtype) for o in jax.tree_util.tree_leaves(traced.out_info)] \
        if hasattr(traced, "out_info") else []

    def run_cand(s):
        a, k = s.clone()
        if mode.kind == "device":
            mkw_run.poison_allocator(out_avals)
        try:
            with mode.context():
                out = compiled(*a, **k)
                jax.block_until_ready(out)
        except Exception as e:  # noqa: BLE001
            mode.reset()
            raise C.from_exception(C.RUNTIME, e, filename, source=source,
                                   prefix=f"the candidate failed while running (seed {s.seed})") from None
        problems = mkw_run.check_inputs_intact((a, k), s.pristine)
        return out, problems

    checks = []
    failure = None
    # A suite convention may accept an output dtype other than the reference's (mkw_tasks).
    accept_dtype = bool(getattr(golden.task, "accept_dtype_difference", False))
    for s, gold in zip(golden.sets, golden.outputs):
        cancel.check()
        entry_res = {"seed": s.seed, "ok": True, "runs": []}
        outs = {}
        c1, p1 = run_cand(s)
        r1 = golden.run_ref(s)
        r2 = golden.run_ref(s)
        c2, p2 = run_cand(s)
        outs["candidate_first"], outs["reference_first"] = (c1, p1, r1), (c2, p2, r2)
        for order, (c, probs, r) in outs.items():
            cmp = mkw_run.compare(c, gold, task_tol, plat, accept_dtype)
            run = {"order": order, "ok": cmp["ok"] and not probs, "outputs": cmp["outputs"]}
            if probs:
                run["input_problems"] = probs
                run["kind"] = "input_mutated"
                run["message"] = "; ".join(probs)
            elif not cmp["ok"]:
                run["kind"] = cmp["kind"]
                run["message"] = cmp["message"]
            ref_cmp = mkw_run.compare([jax.numpy.asarray(x) for x in r], gold, task_tol, plat, accept_dtype)
            if not ref_cmp["ok"]:
                run["ok"] = False
                run.setdefault("kind", "reference_changed")
                run.setdefault("message", "the reference no longer reproduces its own outputs after the "
                                          "candidate ran: " + ref_cmp["message"])
            entry_res["runs"].append(run)
            if not run["ok"] and entry_res["ok"]:
                entry_res.update(ok=False, kind=run["kind"], message=run["message"])
        checks.append(entry_res)
        if not entry_res["ok"] and failure is None:
            failure = {"kind": entry_res["kind"], "message": f"seed {s.seed}: {entry_res['message']}",
                       "seed": s.seed}
    # Input mutation outranks numerical failures (the numbers are then moot).
    for c in checks:
        if c.get("kind") == "input_mutated":
            failure = {"kind": "input_mutated", "message": f"seed {c['seed']}: {c['message']}",
                       "seed": c["seed"]}
            break
    return {"compiled": compiled, "compile_s": compile_s, "checks": checks, "failure": failure,
            "correct": failure is None}


def time_pair(cand_compiled, golden: Golden, mode, cfg, cancel, with_reference=True, plat=None):
    """Times the candidate (and the reference) with mkw_clock's bound loop. The last output of
    every input set is kept and checked against the golden outputs afterwards, so a candidate
    that is right while checked and returns stale or skipped results while timed is caught
    (`timed_outputs`). On a TPU/GPU the device time of the same calls comes from a profiler
    trace (`device` in each side's stats)."""
    sets = [(s.args, s.kwargs) for s in golden.sets]
    timed_outs: list = []
    with mode.context():
        cand = mkw_clock.time_fn(cand_compiled, sets, cfg, cancel, outputs=timed_outs)
        ref = mkw_clock.time_fn(golden.ref_compiled, sets, cfg, cancel) if with_reference else None
    out = {"candidate": cand, "reference": ref, "config": cfg, "time_kind": mode.time_kind,
           "instance": mkw_shrink.label(golden.task)}
    out["timed_outputs"] = _check_timed_outputs(timed_outs, golden, plat or mkw_run.platform())
    if mode.time_kind == "device":
        runs = max(1, min(int(cfg.get("min_runs", 20)), 20))
        with mode.context():
            cand["device"] = _device_time(cand_compiled, sets, runs, "candidate")
            if ref is not None:
                ref["device"] = _device_time(golden.ref_compiled, sets, runs, "reference")
    return out


def _check_timed_outputs(outputs, golden: Golden, plat) -> dict:
    accept_dtype = bool(getattr(golden.task, "accept_dtype_difference", False))
    tol = golden.task.tolerances if golden.task is not None else None
    for s, out, gold in zip(golden.sets, outputs, golden.outputs):
        cmp = mkw_run.compare(out, gold, tol, plat, accept_dtype)
        if not cmp["ok"]:
            return {"ok": False, "checked": len(outputs), "failure": {
                "kind": "timed_outputs_differ", "seed": s.seed,
                "message": (f"seed {s.seed}: the outputs of the timed runs differ from the checked ones "
                            f"({cmp['message']}): the candidate keeps state or caches results across calls")}}
    return {"ok": True, "checked": len(outputs)}


def _device_time(compiled, sets, runs, label):
    """Device time of `runs` calls from a jax.profiler trace (mkw_clock.device_run_times)."""
    import shutil
    out_dir = os.path.join(WORKDIR["path"] or os.getcwd(), f"timed_{next(_profile_counter)}_{label}")
    try:
        module, _ = mkw_profile.entry_ops(compiled.as_text() or "")
        mkw_clock.profile_runs(compiled, sets, runs, out_dir)
        trace_file, _ = mkw_profile.find_trace_file(out_dir)
        if trace_file is None:
            return {"error": "jax.profiler wrote no trace"}
        found = mkw_clock.device_run_times(mkw_clock.load_trace_events(trace_file), module, runs)
        return found if found is not None else {"error": "the trace has no device op events"}
    except Exception as e:  # noqa: BLE001 - the wall-clock timing stands on its own
        return {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def _speedup(timing):
    """(speedup, clock): from the profiler's device medians when both sides have one."""
    c, r = timing["candidate"], timing["reference"] or {}
    cd, rd = (c.get("device") or {}).get("median_s"), (r.get("device") or {}).get("median_s")
    if cd and rd:
        return rd / cd, "profiler"
    cm, rm = c.get("median_s"), r.get("median_s")
    return ((rm / cm) if cm and rm else None), "wall"


def _timing_verdict(res, timing, work, hardware):
    """Timed outputs that differ, or a time below the hardware's roofline, make the result not
    correct (never a speedup)."""
    bad = timing.get("timed_outputs") or {}
    if bad.get("ok") is False:
        return bad["failure"]
    ref = (work or {}).get("reference")
    if hardware and ref:
        roof = mkw_work.roofline(ref, hardware)
        if roof:
            c = timing["candidate"]
            measured = (c.get("device") or {}).get("median_s") or c.get("median_s")
            fail = mkw_work.below_roofline(measured, roof)
            roof.update(measured_s=measured, below=fail is not None)
            res["roofline"] = roof
            return fail
    return None


def _pallas_gate(facts):
    if not facts:
        return {"kind": "no_pallas_call",
                "message": "the candidate's jaxpr contains no pallas_call (plain XLA is not a kernel)"}
    if not any(f.get("live", True) for f in facts):
        return {"kind": "no_pallas_call",
                "message": "every pallas_call's result is unused: the output is computed without a kernel"}
    return None


def op_evaluate(req, cancel, progress) -> dict:
    plat = mkw_run.platform()
    hardware = _hardware(req)
    watch = mkw_clock.Watch(req.get("filename") or "<buffer>")
    gate_task(req)
    task = mkw_tasks.resolve(req.get("task"), req.get("source"), req.get("filename") or "<buffer>") \
        if "task" in req else None
    if task is None:
        raise C.WorkerError(C.BAD_REQUEST, "request needs a `task`")
    try:
        mkw_shrink.configure(task, req.get("shrink"))
        src, fname = _request_candidate(req, task)
        if isinstance(src, str):
            gate_candidate(src, fname or "<buffer>", task)  # before the reference's work is spent
        seeds = _seeds_from(req, 3)
        # The frozen reference runs first, before any candidate code exists (or comes from an
        # earlier evaluate of the same task and seeds, see mkw_golden).
        pre_mode = mkw_run.choose_mode(plat, [{"compiler_params": "tpu"}], req.get("interpret_mode"))
        golden, reused = _frozen_reference(task, seeds, plat, pre_mode, cancel)
        progress(stage="reference_done", seeds=seeds, reused=reused)
        prep = Prepared(req, task=task, watch=watch)
        try:
            res = _evaluate_prepared(req, prep, golden, plat, cancel, progress, hardware)
            res["reference_reused"] = reused
            return res
        finally:
            prep.close()
    finally:
        task.close()


def _frozen_reference(task, seeds, plat, mode, cancel):
    """(Golden, reused): the cached one for this task, seeds and mode, else a new one."""
    key = mkw_golden.key_for(task, seeds, plat, mode)
    golden, warning = mkw_golden.lookup(key)
    if golden is not None:
        golden.task = task
        return golden, True
    golden = Golden(task, seeds, plat, mode, cancel)
    mkw_golden.store(key, golden)
    if warning:
        golden.warnings.append(warning)
    return golden, False


def _evaluate_prepared(req, prep, golden, plat, cancel, progress, hardware=None):
    task = prep.task
    s0 = golden.sets[0]
    _, closed = trace_candidate(s0.bind(prep.entry), s0.args, s0.kwargs, prep.filename, prep.source)
    facts = mkw_facts.all_facts(closed, filename=prep.filename)
    res = {
        "entry": prep.entry_name,
        "task": task.describe(),
        # The shapes every result below was measured at (mkw_shrink): full, or shrunk.
        "instance": mkw_shrink.describe(task),
        "seeds": [s.seed for s in golden.sets],
        "pallas_kernels": [f["kernel"] for f in facts],
        "pallas_calls": facts,
        "warnings": list(golden.warnings) + _fact_warnings(facts),

        "speedup": None,
        "timing": None,
    }
    gate = _pallas_gate(facts)
    mode = mkw_run.choose_mode(plat, facts, req.get("interpret_mode"))
    res["run_mode"] = mode.to_json()
    res["time_kind"] = mode.time_kind
    prep.watch.check("tracing")
    if gate:
        res.update(correct=False, failure=gate, checks=[])
        return res
    res["work"] = work_report(closed, facts, task, s0.args, s0.kwargs, prep.filename)
    if res["work"].get("verdict"):
        res.update(correct=False, failure=res["work"]["verdict"], checks=[])
        return res
    cancel.check()
    try:
        chk = check_candidate(prep.entry, golden, mode, plat, task.tolerances, cancel, prep.filename,
                              prep.source)
    except C.WorkerError as e:
        if mode.kind == "interpret" and mode.interpret_kind == "tpu" and req.get("interpret_mode", "auto") \
                == "auto" and e.kind in (C.LOWERING, C.COMPILE, C.RUNTIME) and \
                any(s in e.message.lower() for s in ("not implemented", "unimplemented", "unsupported",
                                                     "not supported")):
            res["warnings"].append(f"TPU interpret mode could not run this kernel ({e.message[:200]}); "
                                   f"fell back to interpret=True")
            mode = mkw_run.RunMode("interpret", "hlo", plat)
            golden.mode = mode
            res["run_mode"] = mode.to_json()
            chk = check_candidate(prep.entry, golden, mode, plat, task.tolerances, cancel, prep.filename,
                                  prep.source)
        else:
            if e.kind == C.RUNTIME and not e.extra.get("locations"):
                # A failure inside a compiled kernel has no Python frame of
                # the user's: point at the pallas_call sites instead.
                e.extra["locations"] = [
                    {"line": f["location"]["line"], "column": 1,
                     "message": f"while running pallas_call {f['kernel']}: {e.message.splitlines()[0][:300]}"}
                    for f in facts if f.get("location")]
            raise
    prep.watch.check("the checks")
    res["compile_s"] = {"candidate": chk["compile_s"], "reference": golden.compile_s}
    res["checks"] = chk["checks"]
    res["correct"] = chk["correct"]
    res["failure"] = chk["failure"]
    progress(stage="checked", correct=chk["correct"])
    want_timing = req.get("timing", True) is not False
    if chk["correct"] and want_timing:
        cfg = mkw_run.timing_config(req.get("timing") if isinstance(req.get("timing"), dict) else None, mode)
        res["timing"] = time_pair(chk["compiled"], golden, mode, cfg, cancel, plat=plat)
        prep.watch.check("timing")
        failure = _timing_verdict(res, res["timing"], res.get("work"), hardware)
        if failure:
            res.update(correct=False, failure=failure)
        elif mode.time_kind == "device":
            res["speedup"], res["timing"]["speedup_clock"] = _speedup(res["timing"])
    return res


# ---------------------------------------------------------------------------
# profile

def op_profile(req, cancel, progress) -> dict:
    plat = mkw_run.platform()
    prep = Prepared(req)
    try:
        mkw_shrink.configure(prep.task, req.get("shrink"))
        runs = max(1, int(req.get("runs", 3)))
        seed = req.get("seed")
        seed = int(seed) if seed is not None else mkw_run.fresh_seeds(1)[0]
        s = mkw_run.make_input_set(prep.task, seed)
        entry = s.bind(prep.entry)
        _, closed = trace_candidate(entry, s.args, s.kwargs, prep.filename, prep.source)
        facts = mkw_facts.all_facts(closed, filename=prep.filename)
        mode = mkw_run.choose_mode(plat, facts, req.get("interpret_mode"))
        flat, tree = jax.tree_util.tree_flatten((s.args, s.kwargs))

        def flat_entry(*leaves):
            a, k = jax.tree_util.tree_unflatten(tree, leaves)
            return entry(*a, **k)

        out_dir = req.get("out_dir")
        if out_dir:
            out_dir = os.path.abspath(out_dir)
        else:
            out_dir = os.path.join(WORKDIR["path"] or os.getcwd(), f"profile_{next(_profile_counter)}")
        os.makedirs(out_dir, exist_ok=True)
        with mode.context():
            try:
                closed_i = jax.make_jaxpr(flat_entry)(*flat)
                scoped, kernels = mkw_profile.scoped_function(closed_i)
                t0 = time.perf_counter()
                compiled = jax.jit(scoped).trace(*flat).lower().compile()
                compile_s = time.perf_counter() - t0
            except Exception as e:  # noqa: BLE001
                mode.reset()
                raise C.from_exception(C.COMPILE, e, prep.filename, source=prep.source,
                                       prefix="preparing the profiled program failed") from None
            kernels = list(kernels)
            module, ops = mkw_profile.entry_ops(compiled.as_text() or "")
            try:
                jax.block_until_ready(compiled(*flat))
                cancel.check()
                with jax.profiler.trace(out_dir, create_perfetto_trace=True):
                    for i in range(runs):
                        with jax.profiler.TraceAnnotation(f"{mkw_profile.RUN_ANNOTATION}/{i}"):
                            jax.block_until_ready(compiled(*flat))
            except C.WorkerError:
                raise
            except Exception as e:  # noqa: BLE001
                mode.reset()
                raise C.from_exception(C.RUNTIME, e, prep.filename, source=prep.source,
                                       prefix="the candidate failed while profiling") from None
        trace_file, xplane = mkw_profile.find_trace_file(out_dir)
        if trace_file is None:
            raise C.WorkerError(C.INTERNAL, f"jax.profiler wrote no trace JSON under {out_dir}")
        prep.watch.check("profiling")
        summary = mkw_profile.summarize(trace_file, module, ops, kernels, runs, plat)
        return {
            "entry": prep.entry_name,
            "instance": mkw_shrink.describe(prep.task),
            "seed": seed,
            "runs": runs,
            "run_mode": mode.to_json(),
            "time_kind": mode.time_kind,
            "compile_s": compile_s,
            "trace_dir": out_dir,
            "trace_file": trace_file,
            "xplane_file": xplane,
            "summary": summary,
            "pallas_kernels": kernels,
        }
    finally:
        prep.close()


# ---------------------------------------------------------------------------
# autotune

def _configs(space) -> list[dict]:
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
    configs = _configs(req.get("space"))
    max_configs = int(req.get("max_configs", 256))
    if len(configs) > max_configs:
        raise C.WorkerError(C.BAD_REQUEST, f"{len(configs)} configurations exceed max_configs={max_configs}")
    if "task" not in req:
        raise C.WorkerError(C.BAD_REQUEST, "request needs a `task`")
    watch = mkw_clock.Watch(req.get("filename") or "<buffer>")
    gate_task(req)
    task = mkw_tasks.resolve(req["task"], req.get("source"), req.get("filename") or "<buffer>")
    results: list[dict] = []
    try:
        mkw_shrink.configure(task, req.get("shrink"))
        src, fname = _request_candidate(req, task)
        if isinstance(src, str):
            gate_candidate(src, fname or "<buffer>", task)  # every configuration has this text
        seeds = _seeds_from(req, 2)
        pre_mode = mkw_run.choose_mode(plat, [{"compiler_params": "tpu"}], req.get("interpret_mode"))
        golden, _ = _frozen_reference(task, seeds, plat, pre_mode, cancel)
        target = req.get("target", "tpu")
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
            "warnings": golden.warnings,
        }
    except C.Cancelled as e:
        e.extra.update(results=_sort_results(results), completed=len(results), total=len(configs))
        raise
    finally:
        task.close()


def _sort_results(results):
    rank = {"ok": 0, "incorrect": 1, "skipped": 2, "failed": 3}
    return sorted(results, key=lambda r: (rank.get(r["status"], 9),
                                          (r.get("timing") or {}).get("median_s") or float("inf")))


def _autotune_one(req, task, cfg, golden, plat, target, cancel, watch=None) -> dict:
    r = {"config": cfg, "status": "failed", "correct": False, "timing": None,
         "instance": mkw_shrink.label(task)}
    prep = None
    try:
        prep = Prepared(req, params=cfg, task=task, watch=watch)
        s0 = golden.sets[0]
        entry = s0.bind(prep.entry)
        traced, closed = trace_candidate(entry, s0.args, s0.kwargs, prep.filename, prep.source)
        facts = mkw_facts.all_facts(closed, filename=prep.filename)
        r["grid"] = [f["grid"] for f in facts]
        r["vmem_bytes_per_step"] = [f["vmem_bytes_per_step"] for f in facts]
        gate = _pallas_gate(facts)
        if gate:
            r.update(status="incorrect", failure=gate)
            return r
        work = work_report(closed, facts, task, s0.args, s0.kwargs, prep.filename)
        if work.get("verdict"):
            r.update(status="incorrect", failure=work["verdict"])
            return r
        if target == "tpu" and plat != "tpu":
            try:
                lower_tpu(traced, entry, s0.args, s0.kwargs, plat, prep.filename, prep.source)
            except C.WorkerError as e:
                r.update(status="skipped", stage="lowering", reason=e.message,
                         locations=e.extra.get("locations", []))
                return r
        cancel.check()
        mode = mkw_run.choose_mode(plat, facts, req.get("interpret_mode"))
        r["run_mode"] = mode.to_json()
        chk = check_candidate(prep.entry, golden, mode, plat, task.tolerances, cancel, prep.filename,
                              prep.source)
        r["compile_s"] = chk["compile_s"]
        if not chk["correct"]:
            r.update(status="incorrect", failure=chk["failure"])
            return r
        r["correct"] = True
        cfg_t = mkw_run.timing_config(req.get("timing"), mode)
        t = time_pair(chk["compiled"], golden, mode, cfg_t, cancel, with_reference=False, plat=plat)
        prep.watch.check("timing")
        failure = _timing_verdict(r, t, work, _hardware(req) if isinstance(req.get("hardware"), dict) else None)
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
        if e.kind == mkw_gate.REFUSED:
            raise  # the candidate reached for the worker: no configuration of it is scored
        status = "skipped" if e.kind in (C.LOWERING, C.COMPILE) else "failed"
        r.update(status=status, stage=e.kind, reason=e.message, locations=e.extra.get("locations", []))
        return r
    finally:
        if prep is not None:
            prep.close()
