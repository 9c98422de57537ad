"""Facts about the pallas_calls in a traced function.

Everything here reads the jaxpr that JAX builds when tracing (no lowering,
no execution), so the same facts come back on a CPU-only host and on a TPU.
"""

from __future__ import annotations

import math
import os

import numpy as np

from mkworker.cost import traffic

PALLAS_PRIMITIVE = "pallas_call"

# The VMEM model used for `vmem_bytes_per_step`; returned with every fact
# set so nobody has to guess.
VMEM_ASSUMPTIONS = (
    "Per grid step: every blocked operand (inputs and outputs) in the default/VMEM memory "
    "space holds buffer_count copies of its block (2 = double buffering, or the "
    "pipeline_mode=pl.Buffered(n) count), plus each VMEM scratch buffer once. Operands in "
    "ANY/HBM are not counted (the kernel DMAs them itself); SMEM operands and scratch are "
    "summed separately as smem_bytes; semaphores are not counted. 'padded' rounds the last "
    "two block dims up to the TPU tile (sublanes 8 for 32-bit, 16 for 16-bit, 32 for 8-bit "
    "types; 128 lanes); 'unpadded' is the plain product of the block shape. Mosaic's own "
    "internal scratch is not included."
)


# ---------------------------------------------------------------------------
# Walking nested jaxprs.

def is_closed_jaxpr(v) -> bool:
    return hasattr(v, "jaxpr") and hasattr(v, "consts") and hasattr(v.jaxpr, "eqns")


def _is_jaxpr(v) -> bool:
    return hasattr(v, "eqns") and hasattr(v, "invars") and hasattr(v, "outvars")


def sub_jaxprs(eqn):
    """(param name, Jaxpr) for each jaxpr nested in an equation's params
    (pjit's `jaxpr`, custom_jvp's `call_jaxpr`, scan's `jaxpr`, cond's
    `branches`, while's `cond_jaxpr`/`body_jaxpr`, ...).  The body of a
    pallas_call is not descended into."""
    if eqn.primitive.name == PALLAS_PRIMITIVE:
        return
    for name, v in eqn.params.items():
        vals = v if isinstance(v, (tuple, list)) else (v,)
        for x in vals:
            if is_closed_jaxpr(x):
                yield name, x.jaxpr
            elif _is_jaxpr(x):
                yield name, x


def walk_eqns(jaxpr, path=()):
    """Yields (eqn, path) for every equation, depth first; `path` is the
    chain of enclosing primitive names."""
    if is_closed_jaxpr(jaxpr):
        jaxpr = jaxpr.jaxpr
    for eqn in jaxpr.eqns:
        yield eqn, path
        for _, sub in sub_jaxprs(eqn):
            yield from walk_eqns(sub, path + (eqn.primitive.name,))


def pallas_eqns(jaxpr):
    return [(e, p) for e, p in walk_eqns(jaxpr) if e.primitive.name == PALLAS_PRIMITIVE]


def live_pallas_eqns(closed_jaxpr) -> set[int]:
    """ids of pallas_call equations whose results can reach the outputs.

    A plain backwards liveness pass; for call-like equations (pjit and
    friends with one sub-jaxpr whose outputs map 1:1 to the equation's
    outputs) liveness is propagated exactly, for everything else (scan,
    cond, while, custom rules) all nested equations of a live equation are
    taken as live.  Effectful equations are always live.
    """
    live: set[int] = set()

    def is_dropped(v):
        return type(v).__name__ == "DropVar"

    def visit(jaxpr, live_out: list[bool]):
        needed = set()
        for v, lv in zip(jaxpr.outvars, live_out):
            if lv and not hasattr(v, "val"):
                needed.add(v)
        for eqn in reversed(jaxpr.eqns):
            outs_live = [(not is_dropped(v)) and v in needed for v in eqn.outvars]
            effectful = bool(getattr(eqn, "effects", None))
            if not any(outs_live) and not effectful:
                continue
            if eqn.primitive.name == PALLAS_PRIMITIVE:
                live.add(id(eqn))
            subs = list(sub_jaxprs(eqn))
            if len(subs) == 1 and len(subs[0][1].outvars) == len(eqn.outvars) and \
                    len(subs[0][1].invars) == len(eqn.invars):
                sub = subs[0][1]
                sub_in_live = visit(sub, outs_live if not effectful else [True] * len(outs_live))
                for v, lv in zip(eqn.invars, sub_in_live):
                    if lv and not hasattr(v, "val"):
                        needed.add(v)
            else:
                for _, sub in subs:
                    visit(sub, [True] * len(sub.outvars))
                for v in eqn.invars:
                    if not hasattr(v, "val"):
                        needed.add(v)
        return [v in needed for v in jaxpr.invars]

    jaxpr = closed_jaxpr.jaxpr if is_closed_jaxpr(closed_jaxpr) else closed_jaxpr
    visit(jaxpr, [True] * len(jaxpr.outvars))
    return live


# ---------------------------------------------------------------------------
# One pallas_call.

def _enum_str(v):
    if v is None:
        return None
    val = getattr(v, "value", None)
    if isinstance(val, str):
        return val
    s = str(v)
    return s.split(".")[-1].lower() if "." in s else s


def _dtype_name(d) -> str:
    try:
        return np.dtype(d).name
    except Exception:  # noqa: BLE001 - extended dtypes (semaphores, keys)
        return str(d)


def _itemsize(d) -> int | None:
    try:
        return np.dtype(d).itemsize
    except Exception:  # noqa: BLE001
        return None


def _block_dim(bd):
    """(size used for memory accounting, json description)."""
    if bd is None:
        return 1, None
    if isinstance(bd, (int, np.integer)):
        return int(bd), int(bd)
    cls = type(bd).__name__
    if cls == "Squeezed":
        return 1, None
    if cls == "Blocked":
        return int(bd.block_size), int(bd.block_size)
    if cls == "Element":
        pad = getattr(bd, "padding", (0, 0)) or (0, 0)
        size = int(bd.block_size)
        return size + int(sum(pad)), {"element": size, "padding": list(pad)}
    if cls == "BoundedSlice":
        return int(bd.block_size), {"bounded_slice": int(bd.block_size)}
    size = getattr(bd, "block_size", None)
    if size is not None:
        return int(size), {cls.lower(): int(size)}
    return 1, str(bd)


def _sublanes(itemsize: int) -> int:
    if itemsize >= 4:
        return 8
    return 8 * (4 // max(itemsize, 1))


def _padded_elems(shape, itemsize) -> int:
    if not shape:
        return 1
    dims = list(shape)
    dims[-1] = -(-dims[-1] // 128) * 128
    if len(dims) >= 2:
        s = _sublanes(itemsize)
        dims[-2] = -(-dims[-2] // s) * s
    return int(math.prod(dims))


def _memory_space_of(aval) -> str:
    ms = getattr(aval, "memory_space", None)
    s = _enum_str(ms)
    return s or "default"


def user_location(eqn, filename: str | None):
    """Deepest frame of the equation's creation stack in the user's file."""
    tb = getattr(getattr(eqn, "source_info", None), "traceback", None)
    if tb is None:
        return None
    try:
        frames = list(tb.frames)
    except Exception:  # noqa: BLE001
        return None
    best = None
    for fr in frames:  # innermost first
        fname = getattr(fr, "file_name", None)
        if filename and fname and (fname == filename or
                                   os.path.abspath(fname) == os.path.abspath(filename)):
            best = {"line": int(fr.line_num), "function": fr.function_name}
            break
    return best


def kernel_name(eqn) -> str:
    name = eqn.params.get("name")
    if name:
        return str(name)
    nsi = eqn.params.get("name_and_src_info")
    if nsi is not None and getattr(nsi, "name", None):
        return str(nsi.name)
    body = eqn.params.get("jaxpr")
    dbg = getattr(body, "debug_info", None)
    src = getattr(dbg, "func_src_info", None) or getattr(dbg, "func_name", None)
    if src:
        return str(src).split(" at ")[0].strip() or "kernel"
    return "kernel"


def kernel_src(eqn) -> str | None:
    body = eqn.params.get("jaxpr")
    dbg = getattr(body, "debug_info", None)
    src = getattr(dbg, "func_src_info", None)
    if src and " at " in str(src):
        return str(src).split(" at ", 1)[1]
    return None


def pallas_call_facts(eqn, *, filename: str | None = None, path=()) -> dict:
    p = eqn.params
    gm = p["grid_mapping"]
    grid = []
    for g in getattr(gm, "grid", ()) or ():
        grid.append(int(g) if isinstance(g, (int, np.integer)) else str(g))
    n_in = int(getattr(gm, "num_inputs", 0))
    n_idx = int(getattr(gm, "num_index_operands", 0))
    operands = []
    vmem_padded = vmem_unpadded = smem_bytes = 0
    for i, bm in enumerate(getattr(gm, "block_mappings", ())):
        role = "input" if i < n_in else "output"
        idx = i if i < n_in else i - n_in
        block_aval = getattr(bm, "transformed_block_aval", None) or getattr(bm, "block_aval", None)
        arr = bm.array_aval
        dtype = getattr(arr, "dtype", None)
        isz = _itemsize(dtype) or 0
        sizes, desc = [], []
        for bd in bm.block_shape:
            s, d = _block_dim(bd)
            sizes.append(s)
            desc.append(d)
        kernel_shape = [int(x) for x in getattr(block_aval, "shape", ())] if block_aval is not None else None
        ms = _memory_space_of(block_aval) if block_aval is not None else "default"
        pm = getattr(bm, "pipeline_mode", None)
        buffers = getattr(pm, "buffer_count", None) if pm is not None else None
        buffers = int(buffers) if buffers else 2
        block_elems = int(math.prod(sizes)) if sizes else 1
        in_vmem = ms in ("default", "vmem")
        op = {
            "role": role,
            "index": idx,
            "origin": str(getattr(bm, "origin", "")),
            "array_shape": [int(x) for x in getattr(arr, "shape", ())],
            "dtype": _dtype_name(dtype),
            "block_shape": desc,
            "kernel_block_shape": kernel_shape,
            "memory_space": ms,
            "buffer_count": buffers if in_vmem else None,
            "block_bytes": block_elems * isz,
        }
        operands.append(op)
        if in_vmem:
            vmem_unpadded += buffers * block_elems * isz
            vmem_padded += buffers * _padded_elems(sizes, isz) * isz
        elif ms == "smem":
            smem_bytes += block_elems * isz
    scratch = []
    scratch_vmem_padded = scratch_vmem = 0
    for s in getattr(gm, "scratch_avals", ()) or ():
        inner = getattr(s, "inner_aval", s)
        shape = [int(x) for x in getattr(inner, "shape", ())]
        dtype = getattr(inner, "dtype", None)
        ms = _memory_space_of(s)
        isz = _itemsize(dtype)
        entry = {"shape": shape, "dtype": _dtype_name(dtype), "memory_space": ms}
        if isz is not None and "semaphore" not in ms and "sem" not in _dtype_name(dtype):
            nbytes = int(math.prod(shape)) * isz if shape else isz
            entry["bytes"] = nbytes
            if ms in ("vmem", "default"):
                scratch_vmem += nbytes
                scratch_vmem_padded += _padded_elems(shape, isz) * isz
            elif ms == "smem":
                smem_bytes += nbytes
        scratch.append(entry)
    cp = p.get("compiler_params")
    dim_sem = vmem_limit = None
    if cp is not None:
        # Mosaic TPU CompilerParams; older code may still pass a dict.
        if isinstance(cp, dict):
            cp = cp.get("mosaic", cp.get("mosaic_tpu", cp))
            dim_sem = cp.get("dimension_semantics") if isinstance(cp, dict) else None
            vmem_limit = cp.get("vmem_limit_bytes") if isinstance(cp, dict) else None
        else:
            dim_sem = getattr(cp, "dimension_semantics", None)
            vmem_limit = getattr(cp, "vmem_limit_bytes", None)
    if dim_sem is not None:
        dim_sem = [_enum_str(d) for d in dim_sem]
    ce = p.get("cost_estimate")
    cost = None
    if ce is not None:
        cost = {
            "flops": num(getattr(ce, "flops", None)),
            "transcendentals": num(getattr(ce, "transcendentals", None)),
            "bytes_accessed": num(getattr(ce, "bytes_accessed", None)),
            "source": "pallas_call cost_estimate",
        }
        cost["arithmetic_intensity"] = intensity(cost["flops"], cost["bytes_accessed"])
    aliases = p.get("input_output_aliases") or ()
    facts = {
        "kernel": kernel_name(eqn),
        "kernel_defined_at": kernel_src(eqn),
        "location": user_location(eqn, filename),
        "nesting": list(path),
        "grid": grid,
        "num_scalar_prefetch": n_idx,
        "operands": operands,
        "scratch": scratch,
        "dimension_semantics": dim_sem,
        "vmem_limit_bytes": int(vmem_limit) if vmem_limit is not None else None,
        "vmem_bytes_per_step": vmem_padded + scratch_vmem_padded,
        "vmem_bytes_per_step_unpadded": vmem_unpadded + scratch_vmem,
        "smem_bytes": smem_bytes,
        "input_output_aliases": {str(k): int(v) for k, v in dict(aliases).items()},
        "cost": cost,
        "compiler_params": type(cp).__module__.split(".")[-2] if cp is not None and not isinstance(cp, dict)
        else None,
    }
    if facts["compiler_params"] == "mosaic":
        facts["compiler_params"] = "tpu"
    interp = p.get("interpret")
    facts["interpret"] = bool(interp)
    facts["traffic"] = _traffic(gm, operands)
    return facts


def _traffic(gm, operands) -> dict:
    """HBM traffic of the blocked operands (cost.traffic); never raises."""
    try:
        return traffic.pallas_call_traffic(gm, operands)
    except Exception as e:  # noqa: BLE001 - facts must come back regardless
        return {"available": False, "reason": f"traffic walk failed: {type(e).__name__}: {e}",
                "grid_steps": None}


def num(v):
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if f.is_integer() else f


def intensity(flops, nbytes):
    if flops is None or not nbytes or nbytes <= 0 or flops < 0:
        return None
    return round(float(flops) / float(nbytes), 4)


def all_facts(closed_jaxpr, *, filename: str | None = None) -> list[dict]:
    live = live_pallas_eqns(closed_jaxpr)
    out = []
    for eqn, path in pallas_eqns(closed_jaxpr):
        f = pallas_call_facts(eqn, filename=filename, path=path)
        f["live"] = id(eqn) in live
        out.append(f)
    return out
