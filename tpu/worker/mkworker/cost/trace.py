"""Tracing and lowering a candidate, and what its traced program says on its face: the
inputs' shapes, warnings about its pallas_calls, and the gate that wants a live pallas_call."""

from __future__ import annotations

import jax
import numpy as np

from mkworker import common as C


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


def lower_gpu(traced, fn, args, kwargs, plat, filename, source):
    """Lower for a GPU (CUDA): natively on a GPU, otherwise cross-platform (the Pallas -> Triton
    lowering runs in Python without a GPU and raises Triton's block-shape errors: a power-of-two
    rule on every array; tl.dot's minimum of 16 is checked only when Triton compiles). XLA's Triton custom call has no
    serialisation guarantee, so the lowering is not exported, only made."""
    try:
        if plat == "gpu":
            return traced.lower(), "cuda"
        return traced.lower(lowering_platforms=("cuda",)), "cuda"
    except C.WorkerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise C.from_exception(C.LOWERING, e, filename, source=source,
                               prefix="lowering for GPU (CUDA) failed") from None


def kernel_platform(facts) -> str | None:
    """"gpu" when the candidate's pallas_calls are all GPU kernels (Triton compiler params), "tpu"
    when any is a TPU kernel or names no backend, None without pallas_calls."""
    if not facts:
        return None
    return "gpu" if all(f.get("compiler_params") == "triton" for f in facts) else "tpu"


def fact_warnings(facts) -> list[str]:
    w = []
    for f in facts:
        if f.get("interpret"):
            w.append(f"pallas_call {f['kernel']} passes interpret=...: it will not run as a Mosaic kernel")
        if not f.get("live", True):
            w.append(f"the result of pallas_call {f['kernel']} is never used")
    return w


def describe_avals(args, kwargs):
    def d(x):
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return {"shape": [int(s) for s in x.shape], "dtype": str(np.dtype(x.dtype))
                    if not str(x.dtype).startswith("key") else str(x.dtype)}
        return {"value": repr(x)[:80]}
    out = [d(x) for x in jax.tree_util.tree_leaves(args)]
    if kwargs:
        out += [dict(d(v), name=k) for k, v in kwargs.items()]
    return out


def pallas_gate(facts):
    if not facts:
        return {"kind": "no_pallas_call",
                "message": "the candidate's jaxpr contains no pallas_call (plain XLA is not a kernel)"}
    if not any(f.get("live", True) for f in facts):
        return {"kind": "no_pallas_call",
                "message": "every pallas_call's result is unused: the output is computed without a kernel"}
    return None
