"""HBM traffic of a pallas_call's pipelined (blocked) operands.

The grid is walked in Pallas's iteration order (row-major over the grid
axes, the last axis fastest) and every blocked operand's index map is
evaluated at each grid point.  The TPU pipeline copies an input block in
when its block index differs from the previous step's (the copy is skipped
when it is unchanged), and writes an output block back when the next step's
index differs, plus once after the last step.  So, per operand,

    fetches (or writebacks) = 1 + #{steps t > 0 : index(t) != index(t - 1)}

Index maps are evaluated for all the grid points at once: first by a
small numpy interpreter of the index-map jaxpr (integer arithmetic,
comparisons, select, nested jit calls, reads of scalar-prefetch operands),
which needs no compilation; if the map uses something it does not know, by
`jax.jit(jax.vmap(...))` of the map on the CPU; and as a last resort by a
Python loop of `jax.core.eval_jaxpr` over (at most LOOP_MAX_STEPS) points.

Scalar-prefetch operands are unknown when lowering (only their shapes are),
so they are taken to be all zeros; an operand whose index map reads one is
flagged `assumed_prefetch_zeros`.

Grids of up to MAX_STEPS steps are walked step by step.  Larger ones are
counted from the transitions between consecutive steps, grouped by the
grid axis that increments (see _Plan): with the grid axes each index map
reads, this stays exact as long as the combinations of read axes fit in
MAX_STEPS points; beyond that the largest groups are sampled (fixed seed),
the changes extrapolated, and the result says `traffic_estimated: true`.
"""

from __future__ import annotations

import math
import os

import numpy as np


def _env_int(name: str, default: int) -> int:
    try:
        v = int(os.environ.get(name, ""))
        return v if v >= 2 else default
    except ValueError:
        return default


MAX_STEPS = _env_int("MAXKERNEL_WORKER_TRAFFIC_MAX_STEPS", 1 << 20)
LOOP_MAX_STEPS = 4096

PIPELINED_MEMORY_SPACES = ("default", "vmem")


class _Unsupported(Exception):
    """The numpy interpreter does not handle this index map."""


# ---------------------------------------------------------------------------
# Which grid points to evaluate.

def grid_dependence(closed, ngrid: int) -> set[int]:
    """The grid axes an index map's results may depend on (a conservative
    forward pass: every result of an equation depends on all its operands)."""
    jaxpr = closed.jaxpr
    deps: dict = {v: {k} for k, v in enumerate(jaxpr.invars[:ngrid])}
    for eqn in jaxpr.eqns:
        d: set[int] = set()
        for v in eqn.invars:
            if not _is_literal(v):
                d |= deps.get(v, set())
        for v in eqn.outvars:
            deps[v] = d
        if getattr(eqn, "effects", None):  # a write into a Ref: its later reads see d
            for v in eqn.invars:
                if not _is_literal(v):
                    deps[v] = deps.get(v, set()) | d
    out: set[int] = set()
    for v in jaxpr.outvars:
        if not _is_literal(v):
            out |= deps.get(v, set())
    return out


class _Plan:
    """The grid points at which an index map is evaluated: `grid_args`, one
    int32 array of length `n` per grid axis.

    `walk` plan (grid_steps <= cap): every step, in iteration order.

    `pairs` plan: the count only needs the transitions between consecutive
    steps.  At a transition of level L, axis L increments and the later
    axes wrap from their last value to 0; there are prod(grid[:L]) *
    (grid[L] - 1) of them.  Whether the block index changes there depends
    only on the axes the map reads (`dep`): a level where neither axis L nor
    any later axis is read never changes the index, and the others need one
    evaluation per combination of the read axes before L (and of axis L,
    if read), each standing for trans / combinations transitions.  The
    points are [before of each evaluated transition (m), after of each (m),
    step 0, the last step].  When the combinations of all levels fit in the
    budget the count is exact; otherwise levels that fit are evaluated
    completely (smallest first) and the rest share the budget as a
    jittered sample (one random point per equal stratum, fixed seed), and
    `exact` is False."""

    def __init__(self, grid: tuple[int, ...], dep: set[int], cap: int, force_pairs: bool = False):
        self.total = math.prod(grid) if grid else 1
        self.axes: list[dict] = []
        if self.total <= cap and not force_pairs:
            self.kind = "walk"
            self.exact = True
            self.n = self.total
            self.m = 0
            pos = np.arange(self.total, dtype=np.int64)
            self.grid_args = [a.astype(np.int32) for a in np.unravel_index(pos, grid)] if grid else []
            return
        self.kind = "pairs"
        levels = []
        for ax, size in enumerate(grid):
            if size <= 1 or (ax not in dep and not any(s > ax for s in dep)):
                continue
            free = [s for s in sorted(dep) if s < ax]
            sizes = [grid[s] for s in free]
            if ax in dep:
                free.append(ax)
                sizes.append(size - 1)
            trans = math.prod(grid[:ax]) * (size - 1)
            levels.append((math.prod(sizes), ax, free, sizes, trans))
        levels.sort(key=lambda lv: (lv[0], lv[1]))
        budget = max(1, (cap - 2) // 2)
        rng = np.random.default_rng(0)
        befores = [[] for _ in grid]
        afters = [[] for _ in grid]
        weights = []
        self.exact = True
        for k, (pop, ax, free, sizes, trans) in enumerate(levels):
            take = max(1, min(pop, budget // (len(levels) - k)))
            budget = max(0, budget - take)
            if take >= pop:
                ids = np.arange(pop, dtype=np.int64)
            else:
                self.exact = False
                edges = np.floor(np.arange(take + 1, dtype=np.float64) * (pop / take)).astype(np.int64)
                edges[-1] = pop
                width = np.maximum(edges[1:] - edges[:-1], 1)
                ids = np.minimum(edges[:-1] + np.floor(rng.random(take) * width).astype(np.int64), pop - 1)
            sub = np.unravel_index(ids, tuple(sizes)) if sizes else ()
            cnt = ids.size
            for d in range(len(grid)):
                if d in free:
                    vals = sub[free.index(d)]
                    befores[d].append(vals)
                    afters[d].append(vals + 1 if d == ax else vals)
                elif d == ax:  # not read: any a -> a + 1
                    befores[d].append(np.zeros(cnt, dtype=np.int64))
                    afters[d].append(np.ones(cnt, dtype=np.int64))
                elif d > ax:  # wraps
                    befores[d].append(np.full(cnt, grid[d] - 1, dtype=np.int64))
                    afters[d].append(np.zeros(cnt, dtype=np.int64))
                else:  # an earlier axis that is not read: any value
                    befores[d].append(np.zeros(cnt, dtype=np.int64))
                    afters[d].append(np.zeros(cnt, dtype=np.int64))
            weights.append(np.full(cnt, trans / cnt))
            self.axes.append({"axis": ax, "transitions": int(trans), "evaluated": int(cnt),
                              "exact": bool(take >= pop)})
        self.axes.sort(key=lambda a: a["axis"])
        self.weights = np.concatenate(weights) if weights else np.zeros(0)
        self.m = int(self.weights.size)
        self.n = 2 * self.m + 2
        self.grid_args = []
        for d in range(len(grid)):
            ends = np.array([0, grid[d] - 1], dtype=np.int64)
            self.grid_args.append(np.concatenate(befores[d] + afters[d] + [ends]).astype(np.int32))


# ---------------------------------------------------------------------------
# Evaluating an index map.

class _Zero:
    """An array (a scalar-prefetch operand, or a slice read from one) that is
    all zeros."""

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = dtype


def _aval_of(v):
    return getattr(v, "aval", None)


def _scalar_aval(aval) -> bool:
    return aval is not None and tuple(getattr(aval, "shape", (None,))) == ()


def _np_dtype(d):
    return np.dtype(d)


def _zero_like(aval):
    inner = getattr(aval, "inner_aval", aval)
    shape = tuple(getattr(inner, "shape", ()))
    dtype = getattr(inner, "dtype", np.int32)
    if shape == ():
        return np.zeros((), dtype=_np_dtype(dtype))
    return _Zero(shape, dtype)


def _int_div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        if np.any(b == 0):
            raise _Unsupported("integer division by zero")
        q = np.floor_divide(a, b)
        fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        return (q + fix.astype(q.dtype)).astype(a.dtype)
    return np.true_divide(a, b).astype(a.dtype)


def _int_rem(a, b):
    if np.issubdtype(a.dtype, np.integer) and np.any(b == 0):
        raise _Unsupported("integer remainder by zero")
    return np.fmod(a, b).astype(a.dtype)


def _shift(kind):
    def f(a, b):
        bits = a.dtype.itemsize * 8
        if np.any((b < 0) | (b >= bits)):
            raise _Unsupported("shift out of range")
        if kind == "left":
            return np.left_shift(a, b).astype(a.dtype)
        if kind == "arith":
            return np.right_shift(a, b).astype(a.dtype)
        u = np.asarray(a).astype(np.dtype(f"uint{bits}"))
        return np.right_shift(u, b.astype(u.dtype)).astype(a.dtype)
    return f


_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "max": np.maximum, "min": np.minimum,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "div": _int_div, "rem": _int_rem,
    "shift_left": _shift("left"), "shift_right_arithmetic": _shift("arith"),
    "shift_right_logical": _shift("logical"),
}
_UNARY = {
    "neg": np.negative, "abs": np.abs, "sign": np.sign, "not": np.invert,
    "floor": np.floor, "ceil": np.ceil, "square": np.square,
    "copy": lambda x: x, "copy_p": lambda x: x,
}
# Primitives whose result, when their first operand is all zeros, is zeros.
_ZERO_READS = {"get", "dynamic_slice", "slice", "gather", "squeeze", "reshape", "broadcast_in_dim",
               "expand_dims", "convert_element_type", "copy", "copy_p", "transpose", "rev",
               "reduce_max", "reduce_min", "reduce_sum", "reduce_or", "reduce_and"}
_CALLS = {"pjit", "jit", "closed_call", "core_call", "remat", "checkpoint", "custom_jvp_call",
          "custom_vjp_call", "custom_vjp_call_jaxpr"}


def _sub_jaxpr(eqn):
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        v = eqn.params.get(key)
        if v is None:
            continue
        if hasattr(v, "jaxpr") and hasattr(v, "consts"):
            return v.jaxpr, list(v.consts)
        if hasattr(v, "eqns"):
            return v, []
    raise _Unsupported(f"no sub-jaxpr in {eqn.primitive.name}")


def _is_literal(v) -> bool:
    return type(v).__name__ == "Literal"


def _np_eval(jaxpr, consts, args):
    env = {}

    def read(v):
        if _is_literal(v):
            aval = _aval_of(v)
            dt = getattr(aval, "dtype", None)
            return np.asarray(v.val, dtype=_np_dtype(dt) if dt is not None else None)
        return env[v]

    for v, c in zip(jaxpr.constvars, consts):
        c = np.asarray(c)
        if c.shape != ():
            raise _Unsupported("non-scalar constant")
        env[v] = c
    for v, a in zip(jaxpr.invars, args):
        env[v] = a
    with np.errstate(all="ignore"):
        for eqn in jaxpr.eqns:
            outs = _np_apply(eqn, [read(v) for v in eqn.invars])
            for v, o in zip(eqn.outvars, outs):
                if type(v).__name__ != "DropVar":
                    env[v] = o
    return [read(v) for v in jaxpr.outvars]


def _np_apply(eqn, ins):
    name = eqn.primitive.name
    out_avals = [_aval_of(v) for v in eqn.outvars]
    if name in _CALLS:
        sub, consts = _sub_jaxpr(eqn)
        if len(sub.invars) != len(ins):
            raise _Unsupported(f"{name} with a different calling convention")
        return _np_eval(sub, consts, ins)
    if ins and isinstance(ins[0], _Zero):
        if name in _ZERO_READS and len(out_avals) == 1:
            return [_zero_like(out_avals[0])]
        raise _Unsupported(f"{name} on a scalar-prefetch array")
    if any(isinstance(x, _Zero) for x in ins):
        raise _Unsupported(f"{name} with a scalar-prefetch array operand")
    if not all(_scalar_aval(a) for a in out_avals):
        raise _Unsupported(f"{name} with a non-scalar result")
    out_dt = _np_dtype(out_avals[0].dtype)
    if name in _BINARY and len(ins) == 2:
        r = _BINARY[name](ins[0], ins[1])
    elif name in _UNARY and len(ins) == 1:
        r = _UNARY[name](ins[0])
    elif name == "select_n":
        pred, cases = ins[0], ins[1:]
        if len(cases) == 1:
            r = cases[0]
        elif pred.dtype == np.bool_ and len(cases) == 2:
            r = np.where(pred, cases[1], cases[0])
        else:
            r = np.choose(pred.astype(np.int64), np.broadcast_arrays(*cases))
    elif name == "clamp":
        lo, x, hi = ins
        r = np.minimum(np.maximum(x, lo), hi)
    elif name == "integer_pow":
        y = int(eqn.params["y"])
        if y < 0:
            raise _Unsupported("negative integer_pow")
        r = np.power(ins[0], y)
    elif name == "convert_element_type":
        x = ins[0]
        if np.issubdtype(out_dt, np.integer) and np.issubdtype(x.dtype, np.floating) and \
                not np.all(np.isfinite(x)):
            raise _Unsupported("non-finite float to int")
        r = x
    elif name in ("broadcast_in_dim", "reshape", "squeeze", "expand_dims") and \
            all(_scalar_aval(_aval_of(v)) for v in eqn.invars[:1]):
        r = ins[0]
    else:
        raise _Unsupported(name)
    return [np.asarray(r).astype(out_dt, copy=False)]


def _prefetch_zeros(prefetch_avals):
    out = []
    for aval in prefetch_avals:
        inner = getattr(aval, "inner_aval", aval)
        out.append(np.zeros(tuple(inner.shape), dtype=_np_dtype(inner.dtype)))
    return out


def _columns(outs, n, nout):
    """The block indices as one int array of length n per block dim."""
    if len(outs) < nout:
        raise ValueError(f"index map returned {len(outs)} values for {nout} block dims")
    cols = []
    for o in outs[:nout]:
        o = np.asarray(o)
        if not np.issubdtype(o.dtype, np.integer):
            o = o.astype(np.int64)
        cols.append(np.ascontiguousarray(np.broadcast_to(o, (n,))))
    return cols


def eval_numpy(closed, plan: _Plan, prefetch_avals, nout):
    args = list(plan.grid_args) + [_zero_like(a) for a in prefetch_avals]
    outs = _np_eval(closed.jaxpr, list(closed.consts), args)
    if any(isinstance(o, _Zero) for o in outs[:nout]):
        raise _Unsupported("non-scalar index")
    return _columns(outs, plan.n, nout)


def _pure(closed):
    """The index map with Ref inputs (scalar prefetch) discharged."""
    has_refs = any(hasattr(a, "inner_aval") for a in closed.in_avals)
    if not has_refs:
        return closed
    from jax._src.state import discharge as state_discharge
    return state_discharge.discharge_state(closed)


def _cpu_context():
    import contextlib

    import jax
    try:
        return jax.default_device(jax.devices("cpu")[0])
    except Exception:  # noqa: BLE001 - no CPU backend in this process
        return contextlib.nullcontext()


def _as_fun(closed):
    try:
        from jax.core import eval_jaxpr
    except ImportError:  # pragma: no cover - older/newer JAX
        from jax._src.core import eval_jaxpr
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)


def eval_vmap(closed, plan: _Plan, prefetch_avals, nout):
    import jax
    if not plan.grid_args:
        raise _Unsupported("no grid axes to vmap over")
    fn = _as_fun(_pure(closed))
    ng, npf = len(plan.grid_args), len(prefetch_avals)

    def f(*a):
        return tuple(fn(*a)[:nout])

    with _cpu_context():
        vf = jax.jit(jax.vmap(f, in_axes=(0,) * ng + (None,) * npf))
        outs = vf(*plan.grid_args, *_prefetch_zeros(prefetch_avals))
        outs = [np.asarray(o) for o in outs]
    return _columns(outs, plan.n, nout)


def eval_loop(closed, plan: _Plan, prefetch_avals, nout):
    fn = _as_fun(_pure(closed))
    pre = _prefetch_zeros(prefetch_avals)
    rows = np.zeros((plan.n, nout), dtype=np.int64)
    with _cpu_context():
        for t in range(plan.n):
            outs = fn(*[np.int32(a[t]) for a in plan.grid_args], *pre)
            rows[t] = [int(np.asarray(o)) for o in outs[:nout]]
    return [rows[:, k].copy() for k in range(nout)]


# ---------------------------------------------------------------------------
# Counting.

def _used_invars(jaxpr) -> set:
    used = set()
    for eqn in jaxpr.eqns:
        for v in eqn.invars:
            if not _is_literal(v):
                used.add(id(v))
    for v in jaxpr.outvars:
        used.add(id(v))
    return used


def _dims(bm):
    """Per block dim: (kind, size) with kind 'blocked', 'squeezed' or 'full'
    (Element / BoundedSlice / unknown: the whole window is counted)."""
    out = []
    for bd in bm.block_shape:
        cls = type(bd).__name__
        if bd is None or cls == "Squeezed":
            out.append(("squeezed", 1))
        elif isinstance(bd, (int, np.integer)):
            out.append(("blocked", int(bd)))
        elif cls == "Blocked":
            out.append(("blocked", int(bd.block_size)))
        elif cls == "Element":
            pad = getattr(bd, "padding", (0, 0)) or (0, 0)
            out.append(("full", int(bd.block_size) + int(sum(pad))))
        else:
            out.append(("full", int(getattr(bd, "block_size", 1) or 1)))
    return out


def _in_bounds_bytes(cols, n, dims, array_shape, itemsize):
    """Bytes of each block (given by its block index columns) that lie
    inside the array: the DMA of an edge block that sticks out of the array
    moves only the part inside."""
    elems = np.ones(n, dtype=np.int64)
    for k, ((kind, size), extent) in enumerate(zip(dims, array_shape)):
        if kind == "blocked":
            start = cols[k].astype(np.int64) * size
            inside = np.minimum(start + size, extent) - np.maximum(start, 0)
            elems *= np.clip(inside, 0, size)
        elif kind == "full":
            elems *= size
    return elems * itemsize


def _distinct(cols, n) -> int:
    if n == 0:
        return 0
    if not cols:
        return 1
    lo = [int(c.min()) for c in cols]
    span = [int(c.max()) - l + 1 for c, l in zip(cols, lo)]
    size = math.prod(span)
    if size < 2 ** 62:
        key = np.zeros(n, dtype=np.int64)
        for c, l, sp in zip(cols, lo, span):
            key = key * sp + (c.astype(np.int64) - l)
        if size <= max(1 << 16, 4 * n):
            seen = np.zeros(size, dtype=bool)
            seen[key] = True
            return int(np.count_nonzero(seen))
        key.sort()
        return 1 + int(np.count_nonzero(key[1:] != key[:-1]))
    return int(np.unique(np.stack(cols, axis=1), axis=0).shape[0])


def _count(cols, plan: _Plan, role: str):
    """(count, event indices, event weights).  For an input the events are
    the blocks fetched, for an output the blocks written back; each event
    stands for `weight` of them."""
    n = plan.n
    if plan.kind == "walk":
        changed = np.zeros(n, dtype=bool)
        changed[0] = True
        for c in cols:
            changed[1:] |= c[1:] != c[:-1]
        count = int(np.count_nonzero(changed))
        if role == "input":
            events = np.flatnonzero(changed)
        else:
            nxt = np.ones(n, dtype=bool)
            nxt[:-1] = changed[1:]
            events = np.flatnonzero(nxt)
        return count, events, np.ones(events.size)
    m = plan.m
    changed = np.zeros(m, dtype=bool)
    for c in cols:
        changed |= c[:m] != c[m:2 * m]
    hit = np.flatnonzero(changed)
    count = 1 + round(float(plan.weights[hit].sum()))
    if role == "input":  # the block after each change is fetched, and the first one
        events = np.concatenate([m + hit, [2 * m]])
    else:  # the block before each change is written back, and the last one
        events = np.concatenate([hit, [2 * m + 1]])
    weights = np.concatenate([plan.weights[hit], [1.0]])
    return count, events.astype(np.int64), weights


# ---------------------------------------------------------------------------
# One pallas_call.

_EVALUATORS = (("numpy", eval_numpy, None), ("vmap", eval_vmap, None), ("loop", eval_loop, LOOP_MAX_STEPS))


def pallas_call_traffic(grid_mapping, operands: list[dict], *, max_steps: int | None = None,
                        methods: tuple[str, ...] | None = None, force_pairs: bool = False) -> dict:
    """`operands` are the fact dicts of grid_mapping.block_mappings (same
    order; role, index, origin, memory_space and block_bytes are used).
    `max_steps` overrides MAX_STEPS; `methods` restricts the evaluators
    (numpy, vmap, loop) and `force_pairs` makes even small grids use the
    pairs plan, for tests."""
    evaluators = [e for e in _EVALUATORS if methods is None or e[0] in methods]
    gm = grid_mapping
    cap = int(max_steps or MAX_STEPS)
    raw_grid = tuple(getattr(gm, "grid", ()) or ())
    if not all(isinstance(g, (int, np.integer)) for g in raw_grid):
        return {"available": False, "reason": "the grid has dynamic bounds", "grid_steps": None}
    grid = tuple(int(g) for g in raw_grid)
    total = int(math.prod(grid)) if grid else 1
    if total >= 2 ** 62:
        return {"available": False, "reason": "the grid is too large to count", "grid_steps": total}
    prefetch_avals = tuple(getattr(gm, "index_map_avals", ()))[len(grid):]
    plans: dict = {}

    def plan_for(limit, dep):
        limit = min(cap, limit) if limit else cap
        key = (limit, frozenset(dep))
        if key not in plans:
            plans[key] = _Plan(grid, dep, limit, force_pairs)
        return plans[key]

    out_ops = []
    read = written = read_ib = written_ib = evaluated = 0
    estimated = any_prefetch = False
    errors = []
    for bm, op in zip(gm.block_mappings, operands):
        role = op["role"]
        entry = {"role": role, "index": op["index"], "origin": op.get("origin"),
                 "memory_space": op.get("memory_space")}
        out_ops.append(entry)
        if op.get("memory_space") not in PIPELINED_MEMORY_SPACES:
            entry["mode"] = "manual"
            continue
        entry["mode"] = "blocked"
        key = "fetches" if role == "input" else "writebacks"
        block_bytes = int(op.get("block_bytes") or 0)
        entry.update({key: None, "block_bytes": block_bytes, "hbm_bytes": None})
        closed = bm.index_map_jaxpr
        nout = len(bm.block_shape)
        used = _used_invars(closed.jaxpr)
        if any(id(v) in used for v in closed.jaxpr.invars[len(grid):]):
            entry["assumed_prefetch_zeros"] = True
            any_prefetch = True
        dep = grid_dependence(closed, len(grid))
        entry["grid_axes_read"] = sorted(dep)
        if total == 0:
            entry.update({key: 0, "hbm_bytes": 0, "hbm_bytes_in_bounds": 0, "distinct_blocks": 0,
                          "traffic_estimated": False, "evaluated_points": 0})
            continue
        cols = plan = method = None
        why = []
        for mname, fn, limit in evaluators:
            plan = plan_for(limit, dep)
            try:
                cols = fn(closed, plan, prefetch_avals, nout)
                method = mname
                break
            except Exception as e:  # noqa: BLE001 - try the next evaluator
                why.append(f"{mname}: {type(e).__name__}: {e}")
        if cols is None:
            entry["error"] = "could not evaluate the index map (" + "; ".join(why)[:500] + ")"
            errors.append(f"{role} {op['index']}: {entry['error']}")
            continue
        count, events, weights = _count(cols, plan, role)
        ev_cols = [c[events] for c in cols]
        dtype = getattr(bm.array_aval, "dtype", None)
        itemsize = np.dtype(dtype).itemsize if _is_np_dtype(dtype) else 0
        ib = _in_bounds_bytes(ev_cols, int(events.size), _dims(bm),
                              tuple(int(s) for s in bm.array_aval.shape), itemsize)
        in_bounds = round(float((ib * weights).sum()))
        distinct = _distinct(ev_cols, int(events.size)) if plan.exact else None
        evaluated += plan.n
        entry[key] = count
        entry["hbm_bytes"] = count * block_bytes
        entry["hbm_bytes_in_bounds"] = in_bounds
        entry["distinct_blocks"] = distinct
        entry["traffic_estimated"] = not plan.exact
        entry["method"] = method
        entry["evaluated_points"] = plan.n
        if not plan.exact:
            estimated = True
            entry["sampling"] = {"transitions": total - 1, "evaluated_transitions": plan.m,
                                 "axes": plan.axes}
        if role == "output" and _revisit_any(bm):
            # RevisitMode.ANY: a block visited again after another one was
            # written back is first read back from HBM.
            extra = count - distinct if distinct is not None else None
            entry["revisit_fetches"] = extra
            if extra:
                read += extra * block_bytes
                read_ib += extra * block_bytes
        if role == "input":
            read += entry["hbm_bytes"]
            read_ib += in_bounds
        else:
            written += entry["hbm_bytes"]
            written_ib += in_bounds
    result = {
        "available": True,
        "grid_steps": total,
        "evaluated_points": evaluated,
        "traffic_estimated": estimated,
        "assumed_prefetch_zeros": any_prefetch,
        "hbm_bytes_read": read,
        "hbm_bytes_written": written,
        "hbm_bytes_read_in_bounds": read_ib,
        "hbm_bytes_written_in_bounds": written_ib,
        "operands": out_ops,
    }
    if errors:
        result["errors"] = errors
    return result


def _is_np_dtype(d) -> bool:
    try:
        np.dtype(d)
        return True
    except Exception:  # noqa: BLE001
        return False


def _revisit_any(bm) -> bool:
    pm = getattr(bm, "pipeline_mode", None)
    rv = getattr(pm, "revisit", None)
    return rv is not None and str(getattr(rv, "value", rv)).lower() == "any"
