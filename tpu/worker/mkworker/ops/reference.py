"""The `reference` op: the task's reference run as XLA runs it, the baseline
of a search that starts from a plain JAX function (speedup 1.0 = XLA).

It reports the reference's XLA cost analysis at the task's full shapes
(FLOPs, bytes accessed: what a host without a device predicts the baseline
from) and, on a host with a device, the measured time of the compiled
reference on fresh inputs. On a CPU host nothing is timed: interpret or CPU
time says nothing about a TPU. With a `generation` in the request and no TPU attached, the
reference is compiled for that generation by the TPU compiler (`tpu_compile`: XLA's own fusion
decisions, static cycles, predicted_s).
"""

from __future__ import annotations

import jax

from mkworker import common as C
from mkworker.cost import cost as xla_cost
from mkworker.cost import trace
from mkworker.judge import golden as judge_golden
from mkworker.judge import run
from mkworker.ops import prepared
from mkworker.tasks import tasks
from mkworker.tpu_compiler import check, compiler


def _nbytes(x) -> int:
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is None or dtype is None or str(dtype).startswith("key"):
        return 0
    n = 1
    for d in shape:
        n *= int(d)
    return n * jax.numpy.dtype(dtype).itemsize


def _xla_cost(task) -> dict:
    args, kwargs = run.abstract_inputs(task)
    # Python numbers among the inputs are static arguments, as in every other op.
    bound, dyn_args, dyn_kwargs, _ = run.bind_static(task.reference_fn, args, kwargs)
    try:
        lowered = jax.jit(bound).trace(*dyn_args, **dyn_kwargs).lower()
    except Exception as e:  # noqa: BLE001
        raise C.from_exception(C.TASK, e, task.ref_module.filename, source=task.ref_module.source,
                               prefix=f"the reference `{task.reference_name}` does not trace",
                               file=task.ref_module.filename) from None
    cost = xla_cost.cost_dict(lowered.cost_analysis())
    if cost is None:
        raise C.WorkerError(C.TASK, "XLA reported no cost analysis for the reference")
    cost["backend"] = jax.default_backend()
    # What any program computing this must move: every input read once, every output written
    # once. XLA on a TPU fuses elementwise chains down to about this; the CPU backend's
    # "bytes accessed" counts unfused intermediates and would flatter a kernel.
    outs = jax.eval_shape(bound, *dyn_args, **dyn_kwargs)
    cost["min_bytes"] = sum(_nbytes(x) for x in jax.tree_util.tree_leaves((dyn_args, dyn_kwargs, outs)))
    cost["input_shapes"] = trace.describe_avals(dyn_args, dyn_kwargs)
    return cost


def op_reference(req, cancel, progress) -> dict:
    if "task" not in req:
        raise C.WorkerError(C.BAD_REQUEST, "request needs a `task`")
    task = tasks.resolve(req["task"], req.get("source"), req.get("filename") or "<buffer>")
    try:
        plat = run.platform()
        res = {"task": task.describe(), "platform": plat, "cost": _xla_cost(task),
               "time_kind": "none", "timing": None}
        progress(stage="cost", flops=res["cost"].get("flops"))
        cancel.check()
        gen = check.wanted(req, plat)
        if gen:
            # XLA's program compiled for the target by the TPU compiler: the baseline "vs XLA"
            # is scored from, the same way as the candidates' (tpu_compiler.check).
            args, kwargs = run.abstract_inputs(task)
            res["tpu_compile"] = check.reference(task, args, kwargs, gen, req.get("compile_limits"),
                                                        cancel)
            res["tpu_compile"]["label"] = compiler.label(gen)
            progress(stage="compiled", status=res["tpu_compile"].get("status"))
            cancel.check()
        if plat in ("tpu", "gpu"):
            mode = run.choose_mode(plat, [], "none")  # the reference has no kernel to interpret
            golden = judge_golden.Golden(task, prepared.seeds_from(req, 3), plat, mode, cancel)
            cfg = run.timing_config(req.get("timing") if isinstance(req.get("timing"), dict) else None,
                                        mode)
            sets = [(s.args, s.kwargs) for s in golden.sets]
            with mode.context():
                res["timing"] = {"reference": run.time_fn(golden.ref_compiled, sets, cfg, cancel),
                                 "config": cfg}
            res["time_kind"] = "device"
            res["seeds"] = [s.seed for s in golden.sets]
            res["warnings"] = golden.warnings
        return res
    finally:
        task.close()
