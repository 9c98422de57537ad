"""Warnings about a task whose reference is degenerate: a reduction over axes that all have
size 1 (an InstanceNorm over a (B, C, 1, 1) tensor). Normalising over one element gives
x - mean(x) = 0, so whatever came before (a whole matmul) does not reach the output, and a
kernel that skips that work passes the task; the warning keeps such a pass from being taken
as a kernel's achievement."""

from __future__ import annotations

import os

_REDUCTIONS = ("reduce_sum", "reduce_max", "reduce_min", "argmax", "argmin", "reduce_prod")


def warnings_for(ctx) -> list[str]:
    out = []
    seen = set()
    ref = os.path.abspath(ctx.reference_file) if ctx.reference_file else None
    jaxpr = ctx.raw_jaxpr.jaxpr if ctx.raw_jaxpr is not None else ctx.jaxpr
    for eqn, line in _walk(jaxpr, ref):
        if eqn.primitive.name not in _REDUCTIONS:
            continue
        axes = tuple(eqn.params.get("axes", ()))
        shape = tuple(int(d) for d in eqn.invars[0].aval.shape)
        if not axes or any(shape[a] != 1 for a in axes):
            continue
        key = (eqn.primitive.name, line)
        if key in seen:
            continue
        seen.add(key)
        where = f" (line {line})" if line else ""
        out.append(f"degenerate task: `{eqn.primitive.name}`{where} reduces only over size-1 axes "
                   f"{list(axes)} of a {'x'.join(map(str, shape))} value; a norm over them is "
                   "x - mean(x) = 0, so the work before it does not reach the output and a "
                   "kernel that skips it can pass")
    return out


def _walk(jaxpr, ref_file, outer=None):
    from jax._src import source_info_util
    for eqn in jaxpr.eqns:
        frame = source_info_util.user_frame(eqn.source_info.traceback)
        if frame is None or (ref_file and os.path.abspath(frame.file_name) != ref_file):
            line = outer
        else:
            line = frame.start_line
        yield eqn, line
        for p in eqn.params.values():
            for sub in (p if isinstance(p, (tuple, list)) else (p,)):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _walk(inner, ref_file, line)
