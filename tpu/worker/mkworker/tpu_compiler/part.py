"""A part of a task for the TPU compiler: the same program with its count axes (batch, heads:
tasks.count_axes) cut down, for when the full-size program is too large for libtpu's static
profile on this host (its memory grows with the kernel's body and grid: a conv2d kernel over
8x1024x1024x32 needs more than 16 GiB to profile, the same kernel over one image 5 GiB).

A count axis is a set of independent instances of the same work, so the full program's cycles
are the part's times the ratio of output elements (`factor`): every instance does what the
part's instances do. Outer count axes are cut, each to 1. An axis among an input's last two is
one that kernels tile (4096 rows of a matmul cut to 2 would be another program, its MXU passes
nearly empty): only where no outer axis can be cut are an input's rows (its second-last axis)
cut, where they are a count axis (a matmul's rows), and then only to whole tiles: halved while
they keep at least INNER_MIN (8192 -> 1024).
The record says it was extrapolated and from what."""

from __future__ import annotations

import math

import jax
import numpy as np

from mkworker.tasks import count_axes

# Programs whose inputs hold less than this profile at full size on this host: no part is made.
PART_MIN_BYTES = 64 << 20
# A tiled count axis (a matmul's rows) is cut no lower than this: whole tiles of every kernel.
INNER_MIN = 1024


def _nbytes(x) -> int:
    return int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize


def instance(reference, args, kwargs, min_bytes: int = PART_MIN_BYTES):
    """(part_args, part_kwargs, description) with each outer count axis of the inputs (batch,
    heads) cut to 1, as ShapeDtypeStructs; None when the inputs are small, the reference has no
    outer count axis larger than 1, or it cannot be traced."""
    leaves, tree = jax.tree_util.tree_flatten((tuple(args), dict(kwargs or {})))
    if sum(_nbytes(x) for x in leaves if hasattr(x, "shape")) < min_bytes:
        return None
    flags = count_axes.count_axes(reference, args, kwargs)
    if flags is None or len(flags) != len(leaves):
        return None
    # A count axis as long as some feature axis is probably the same extent seen twice (the
    # queries of a (batch, seq, heads, dim) layout and the keys they attend to): kept whole.
    features = {int(d) for x, fl in zip(leaves, flags) for d, c in zip(x.shape, fl) if not c}
    specs, cut = [], []
    for x, fl in zip(leaves, flags):
        shape = list(x.shape)
        for i, is_count in enumerate(fl[:max(0, len(shape) - 2)]):
            if is_count and shape[i] > 1 and shape[i] not in features:
                cut.append(f"{shape[i]} -> 1")
                shape[i] = 1
        specs.append(jax.ShapeDtypeStruct(tuple(shape), x.dtype))
    if not cut:
        specs, cut = _inner_cut(leaves, flags, features)
    if not cut:
        return None
    part_args, part_kwargs = jax.tree_util.tree_unflatten(tree, specs)
    return part_args, part_kwargs, ", ".join(sorted(set(cut)))


def _inner_cut(leaves, flags, features):
    """(specs, cuts) with each input's rows (its second-last axis) halved while they keep
    INNER_MIN, where they are a count axis; the same extent in every input's rows is cut alike."""
    to = {}
    for x, fl in zip(leaves, flags):
        if len(x.shape) >= 2 and fl[-2]:
            size = int(x.shape[-2])
            if size >= 2 * INNER_MIN and size not in features:
                small = size
                while small % 2 == 0 and small // 2 >= INNER_MIN:
                    small //= 2
                to[size] = small
    specs = []
    for x, fl in zip(leaves, flags):
        shape = list(x.shape)
        if len(shape) >= 2 and fl[-2]:
            shape[-2] = to.get(int(shape[-2]), shape[-2])
        specs.append(jax.ShapeDtypeStruct(tuple(shape), x.dtype))
    return specs, [f"{a} -> {b}" for a, b in sorted(to.items())]


def factor(full_exported, part_exported) -> float | None:
    """How many parts make the full program: the ratio of their output elements."""
    def elems(e):
        return sum(math.prod(a.shape) for a in e.out_avals)
    full, part = elems(full_exported), elems(part_exported)
    return full / part if part and full > part else None


def extrapolated(part: dict, scale: float, cut: str, full: dict) -> dict:
    """The compile record of the full program from its part's: cycles (and seconds) scaled."""
    out = dict(part)
    out["cycles"] = round(part["cycles"] * scale)
    if part.get("predicted_s"):
        out["predicted_s"] = part["predicted_s"] * scale
    out["extrapolated"] = {"factor": scale, "part_cycles": part["cycles"], "count_axes": cut,
                           "full_status": full.get("status"), "full_reason": full.get("reason")}
    note = (f"the full-size program was {full.get('status')} for the static profile: compiled with "
            f"its count axes cut ({cut}) and its cycles scaled by {scale:g}")
    out["cycles_note"] = note + (f"; {part['cycles_note']}" if part.get("cycles_note") else "")
    return out
