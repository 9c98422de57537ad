"""The `profile` op: one input set, the candidate run under jax.profiler with every
pallas_call in its own named scope, and the trace summarized per kernel (cost.profile)."""

from __future__ import annotations

import os
import time

import jax

from mkworker import common as C
from mkworker import scratch
from mkworker.cost import facts as cost_facts
from mkworker.cost import profile, trace
from mkworker.judge import judge, run
from mkworker.ops import prepared
from mkworker.sandbox import sandbox
from mkworker.tasks import shrink


def op_profile(req, cancel, progress) -> dict:
    """The worker's side: the request gated here, the candidate profiled in a fresh child
    (profile_in_child), the trace written where the worker said. What comes back is a report of
    the candidate's own process, a diagnosis, never a verdict or a score."""
    prepared.gate_request(req)
    out_dir = req.get("out_dir")
    out_dir = os.path.abspath(out_dir) if out_dir else scratch.numbered_dir("profile_{n}")
    os.makedirs(out_dir, exist_ok=True)
    header, _ = sandbox.run_child(dict(req, role="op", child_op="profile", out_dir=out_dir), cancel=cancel)
    judge.raise_error(header)
    header.pop("sandbox", None)
    return header


def profile_in_child(req, cancel, stage) -> tuple[dict, list[bytes]]:
    plat = run.platform()
    prep = prepared.Prepared(req)
    stage["name"] = "run"
    try:
        shrink.configure(prep.task, req.get("shrink"))
        runs = max(1, int(req.get("runs", 3)))
        seed = req.get("seed")
        seed = int(seed) if seed is not None else run.fresh_seeds(1)[0]
        s = run.make_input_set(prep.task, seed)
        entry = s.bind(prep.entry)
        _, closed = trace.trace_candidate(entry, s.args, s.kwargs, prep.filename, prep.source)
        facts = cost_facts.all_facts(closed, filename=prep.filename)
        mode = run.choose_mode(plat, facts, req.get("interpret_mode"))
        flat, tree = jax.tree_util.tree_flatten((s.args, s.kwargs))

        def flat_entry(*leaves):
            a, k = jax.tree_util.tree_unflatten(tree, leaves)
            return entry(*a, **k)

        out_dir = req.get("out_dir")
        if out_dir:
            out_dir = os.path.abspath(out_dir)
        else:
            out_dir = scratch.numbered_dir("profile_{n}")
        os.makedirs(out_dir, exist_ok=True)
        with mode.context():
            try:
                closed_i = jax.make_jaxpr(flat_entry)(*flat)
                scoped, kernels = profile.scoped_function(closed_i)
                t0 = time.perf_counter()
                compiled = jax.jit(scoped).trace(*flat).lower().compile()
                compile_s = time.perf_counter() - t0
            except Exception as e:  # noqa: BLE001
                mode.reset()
                raise C.from_exception(C.COMPILE, e, prep.filename, source=prep.source,
                                       prefix="preparing the profiled program failed") from None
            kernels = list(kernels)
            module, ops = profile.entry_ops(compiled.as_text() or "")
            try:
                jax.block_until_ready(compiled(*flat))
                cancel.check()
                with jax.profiler.trace(out_dir, create_perfetto_trace=True):
                    for i in range(runs):
                        with jax.profiler.TraceAnnotation(f"{profile.RUN_ANNOTATION}/{i}"):
                            jax.block_until_ready(compiled(*flat))
            except C.WorkerError:
                raise
            except Exception as e:  # noqa: BLE001
                mode.reset()
                raise C.from_exception(C.RUNTIME, e, prep.filename, source=prep.source,
                                       prefix="the candidate failed while profiling") from None
        trace_file, xplane = profile.find_trace_file(out_dir)
        if trace_file is None:
            raise C.WorkerError(C.INTERNAL, f"jax.profiler wrote no trace JSON under {out_dir}")
        prep.watch.check("profiling")
        summary = profile.summarize(trace_file, module, ops, kernels, runs, plat)
        return {
            "entry": prep.entry_name,
            "instance": shrink.describe(prep.task),
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
        }, []
    finally:
        prep.close()
