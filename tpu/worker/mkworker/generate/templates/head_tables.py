"""Per-head constants an attention-shaped kernel reads from its reference (retention's decays,
ALiBi's slopes), at every head count the module may run with.

Such constants are functions of the shapes: a decay or slope spread over the heads
(`linspace(..., heads)`, `2 ** (-8 h / heads)`) changes with their count, so the values read at
the task's head count are wrong on a shrunk instance with fewer heads. The reference is traced
again at smaller head counts (and at half the sequence, where a constant that changes with the
sequence is refused) and read there by the class's own matcher. The module carries one tuple when
every count reads the first heads of the task's values, else a table by head count."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from mkworker.generate import common as G
from mkworker.generate import index as X


def _layout_axes(layout: str) -> tuple[int, int]:
    """(head axis, seq axis) of a 4-D q/k/v in a layout model's spelling."""
    return (1, 2) if layout == "bhsd" else (2, 1)


def retraced(ctx, m: dict, q_var, k_var, heads: int, seq: int):
    """The context with the reference traced at `heads` q heads and `seq` positions (kv heads
    in proportion), or None where it cannot be (keyword arrays, other inputs than q, k, v)."""
    if ctx.retrace is None or heads * m["KVH"] % m["H"]:
        return None
    invars = list(ctx.jaxpr.invars)
    if len(invars) != 3:
        return None
    kv_heads = heads * m["KVH"] // m["H"]
    specs = []
    for var in invars:
        role = "q" if var is q_var else "k" if var is k_var else "v"
        shape = list(X.shape_of(var))
        h_ax, s_ax = _layout_axes(m[role])
        shape[h_ax] = heads if role == "q" else kv_heads
        shape[s_ax] = seq
        specs.append(jax.ShapeDtypeStruct(tuple(shape), var.aval.dtype))
    try:
        closed = ctx.retrace(specs)
    except Exception:  # noqa: BLE001 - a reference that does not trace at that size
        return None
    return dataclasses.replace(ctx, closed_jaxpr=closed,
                               in_avals=[v.aval for v in closed.jaxpr.invars],
                               out_avals=[v.aval for v in closed.jaxpr.outvars])


def _read(read, ctx2, heads):
    if ctx2 is None:
        return None
    try:
        values = read(ctx2)
    except G.NoTemplate:
        return None
    except Exception:  # noqa: BLE001 - the matcher on a trace it was not written for
        return None
    return values if values is not None and len(values) == heads else None


def tables(ctx, m: dict, q_var, k_var, values: tuple, read, what: str, fail) -> dict:
    """{heads: per-head values} at the task's head count and the smaller ones a shrunk instance
    may use (halvings, 1 and 2), each read by `read(ctx) -> tuple | None` on the reference traced
    there; `fail(message)` when the values change with the sequence's length."""
    H, S = m["H"], m["S"]
    if S >= 8 and S % 2 == 0:
        half = _read(read, retraced(ctx, m, q_var, k_var, H, S // 2), H)
        if half is not None and not np.allclose(half, values, rtol=1e-5, atol=1e-9):
            fail(f"the {what} changes with the sequence's length")
    out = {H: tuple(values)}
    for heads in sorted({H // 2 ** i for i in range(1, 6) if H % 2 ** i == 0} | {1, 2}):
        if heads < H:
            got = _read(read, retraced(ctx, m, q_var, k_var, heads, min(S, 256)), heads)
            if got is not None:
                out[heads] = tuple(got)
    return out


def is_prefix(tables_: dict) -> bool:
    """True when every head count's values are the first heads of the largest count's."""
    top = tables_[max(tables_)]
    return all(np.allclose(v, top[:len(v)], rtol=1e-6, atol=1e-12) for v in tables_.values())


def module_text(name: str, tables_: dict, fmt=float) -> str:
    """`NAME = (...)` (a prefix table) or `NAME = {heads: (...), ...}`."""
    if is_prefix(tables_):
        return f"{name} = {tuple(fmt(x) for x in tables_[max(tables_)])!r}"
    rows = [f"    {h}: {tuple(fmt(x) for x in v)!r}," for h, v in sorted(tables_.items())]
    return "\n".join([f"{name} = {{", *rows, "}"])


def entry_lines(names: tuple, local: tuple, dtypes: tuple, prefix: bool) -> tuple:
    """The entry's lines that take this head count's values of each table in `names` into the
    arrays `local` (scalar-prefetched by the kernel)."""
    first = names[0]
    if prefix:
        lines = [f"if heads > len({first}):",
                 f"    raise ValueError(f\"{first} was read for {{len({first})}} heads, not {{heads}}\")"]
        lines += [f"{loc} = jnp.asarray({n}[:heads], {dt})" for n, loc, dt in zip(names, local, dtypes)]
    else:
        lines = [f"if heads not in {first}:",
                 f"    raise ValueError(f\"{first} was read for {{sorted({first})}} heads, not {{heads}}\")"]
        lines += [f"{loc} = jnp.asarray({n}[heads], {dt})" for n, loc, dt in zip(names, local, dtypes)]
    return tuple(lines)
