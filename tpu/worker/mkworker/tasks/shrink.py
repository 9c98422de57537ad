"""Small instances of a task: the same computation at shapes a CPU host can
run in interpret mode (JAXBench's 8192 x 8192 matmuls cannot).

Rule (docs/tasks.md, "Small instances"): with factor F, every input dim
size d with d % F == 0 and d // F >= min_dim (default 128) becomes d // F,
by value, so one size maps to one new size across all inputs (a matmul's K
stays equal on both sides, M = S * top_k stays proportional).  Static int
arguments equal to a shrunk size follow the same map (a reference reshaping
by `out_features` keeps working); other statics are kept.

Count axes (count_axes.py; off with {"counts": false}): axes the reference
never contracts, reduces or indexes (batch, heads, kv heads) shrink too,
however small, to d / gcd(d / rad(d), F) (count_axes.shrunk_count: divisibility
kept, never below 2).  A size stays whole where it is a lane dim or a feature
axis of a floating-point input; only integer (index) inputs may keep a size
their count axes shrink (a page table's pages per sequence next to its
batch), the data program then following per-axis targets (_targets).  Count
sizes never map statics, integer constants or index ranges.  A reference that
cannot run with its count axes shrunk falls back to the size rule, warned.

The data comes, when it can, from the task's own inputs function run at the
shrunk sizes: its jaxpr is re-evaluated with every shape parameter (random
bits, iota, broadcasts, reshapes, slices) and every integer constant equal to
a shrunk size mapped, so the distribution and any structure (masks from iota,
indices from randint(0, V)) carry over exactly and nothing is ever built at
full size.  When that is not possible (a loop, a captured array constant, a
size that does not map cleanly), each input's distribution is learnt from
one full-size call instead and drawn at the shrunk shapes: non-negative
floats uniform in [min, max], 0/1 floats Bernoulli with the same mean, other
floats normal with the same mean and standard deviation, constant floats
N(0, 1) (as for key-less inputs, judge.run), integers uniform in their range,
where indices or lengths into a shrunk size (values >= -1, max below or at d,
no longer fitting d // F) are drawn in the new range, bools Bernoulli.  The
reference must run at the shrunk shapes; one that cannot (a size hard-coded
in it) is a clear `task` error naming the instance.
"""

from __future__ import annotations

import collections
import hashlib

import jax
import jax.numpy as jnp
import numpy as np

from mkworker import common as C
from mkworker.cost import eqn as cost_eqn
from mkworker.judge import run as judge_run
from mkworker.tasks import count_axes

DEFAULT_MIN_DIM = 128
_STATS_CACHE: collections.OrderedDict = collections.OrderedDict()  # learnt stats per task text
_STATS_CACHE_SIZE = 16
_SOURCES: collections.OrderedDict = collections.OrderedDict()  # (task text, F, min_dim) -> _DataSource


class _DataSource:
    """Where a shrunk instance's data comes from: the jitted shrunk inputs program (and, without
    a key, its one output), or the learnt statistics."""

    def __init__(self):
        self.program = None
        self.base = None
        self.stats = None
        self.data = ""
        self.notes: list[str] = []


def _task_key(task) -> str:
    return hashlib.sha256("\0".join([task.form, task.inputs_name, task.ref_module.source,
                                     task.inputs_module.source, getattr(task, "cache_salt", "")]
                                    ).encode("utf-8", "surrogatepass")).hexdigest()


def parse_request(value):
    """(factor, min_dim, counts) from a request's `shrink` (an int, or {"factor": F,
    "min_dim": m, "counts": bool}); None when absent or 1 (the full instance)."""
    if value is None or value is False:
        return None
    if isinstance(value, dict):
        factor, min_dim = value.get("factor"), value.get("min_dim", DEFAULT_MIN_DIM)
        counts = value.get("counts", True)
    else:
        factor, min_dim, counts = value, DEFAULT_MIN_DIM, True
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise C.WorkerError(C.BAD_REQUEST, f"`shrink` must be an integer factor >= 1 (or "
                                           f"{{\"factor\": F, \"min_dim\": m, \"counts\": true}}), "
                                           f"got {value!r}")
    if isinstance(min_dim, bool) or not isinstance(min_dim, int) or min_dim < 1:
        raise C.WorkerError(C.BAD_REQUEST, f"shrink.min_dim must be a positive integer, got {min_dim!r}")
    if not isinstance(counts, bool):
        raise C.WorkerError(C.BAD_REQUEST, f"shrink.counts must be true or false, got {counts!r}")
    return None if factor == 1 else (factor, min_dim, counts)


def configure(task, request_value) -> None:
    """Sets task.shrink to the shrunk instance a request asks for (or leaves the full one)."""
    parsed = parse_request(request_value)
    if parsed is None:
        task.shrink = None
        return
    task.shrink = Shrunk(task, *parsed)


def describe(task) -> dict:
    """The response's `instance` field."""
    if task.shrink is None:
        return {"kind": "full"}
    return task.shrink.describe()


def label(task) -> str:
    return "full" if task.shrink is None else "shrunk"


class CannotResize(Exception):
    """The task's inputs cannot be made at other sizes without guessing (an extra shape is then
    reported as not checked, with this reason)."""


class Resized:
    """One task at other input sizes: a by-value size map over its input dims (one size maps to
    one new size across all inputs), the data from the task's own inputs function at those sizes.

    `strict` (extra shapes, tasks.extra_shapes): when the inputs function cannot be re-run at the
    new sizes, or the reference cannot run at them, CannotResize says why; nothing is guessed.
    Not strict (shrink): the reference must run (a `task` error otherwise), and the data falls
    back to statistics learnt from one full-size call."""

    def __init__(self, task, size_map: dict, strict: bool, counts=None, shapes=None):
        """`counts` (shrink's count axes): {size: new size} of the sizes shrunk on count axes, and
        `shapes` the data inputs' new shapes, per axis where a size is shrunk on some axes only."""
        self.task = task
        self.strict = strict
        full = judge_run.abstract_value(task)
        leaves, self.tree = jax.tree_util.tree_flatten(full)
        self.full_leaves = leaves
        counts = {int(k): int(v) for k, v in (counts or {}).items() if int(k) != int(v)}
        self.size_map = {int(k): int(v) for k, v in {**size_map, **counts}.items() if int(k) != int(v)}
        # Count sizes are small: they map array shapes only, never a static argument, an
        # integer constant or an index range (a 4 there is rarely a head count).
        self.count_sizes = frozenset(counts)
        self.value_map = {d: v for d, v in self.size_map.items() if d not in counts}
        self._shapes = None if shapes is None else iter([tuple(int(d) for d in x) for x in shapes])
        self.leaves = [self._resize_leaf(x) for x in leaves]
        self._shapes = None
        # A size shrunk on some of its axes only is left to the per-axis targets in the inputs
        # program (module docstring); by value only where every axis of it changes alike.
        new_of = {}
        for x, y in zip(leaves, self.leaves):
            if judge_run.is_data(x):
                for d, e in zip(x.shape, y.shape):
                    new_of.setdefault(int(d), set()).add(int(e))
        self.shape_map = {d: v for d, v in self.size_map.items() if new_of.get(d, {v}) == {v}}
        data_shapes = tuple(tuple(x.shape) for x in self.leaves if judge_run.is_data(x))
        key = (_task_key(task), tuple(sorted(self.size_map.items())), data_shapes)
        self._check_reference()
        if key in _SOURCES:
            # One compile per task text and instance, whatever the request (a warm worker
            # evaluating many candidates of one task).
            _SOURCES.move_to_end(key)
            self.source = _SOURCES[key]
            return
        self.source = _DataSource()
        try:
            self.source.program = _shrunk_program(task, self.shape_map, self.value_map,
                                                  [x for x in self.leaves if judge_run.is_data(x)])
            self.source.data = f"the task's inputs function at the {self.adjective} sizes"
        except _CannotShrink as e:
            if strict:
                raise CannotResize(f"the inputs function `{task.inputs_name}` cannot run at other "
                                   f"sizes: {e}") from None
            self.source.stats = _learn_stats(task)
            self.source.data = "statistics of one full-size call of the task's inputs function"
            self.source.notes.append(f"the inputs function could not run at the {self.adjective} sizes "
                                     f"({e}); inputs are drawn from the statistics of its full-size values")
        _SOURCES[key] = self.source
        while len(_SOURCES) > _STATS_CACHE_SIZE:
            _SOURCES.popitem(last=False)

    adjective = "new"

    def __repr__(self):
        # Part of the frozen-reference cache key (judge.golden): the instance, not the object.
        return (f"Resized(sizes={sorted(self.size_map.items())}, "
                f"shapes={[tuple(x.shape) for x in self.leaves if judge_run.is_data(x)]})")

    # -- shapes -------------------------------------------------------------------------

    def _resize_leaf(self, x):
        if judge_run.is_data(x):
            if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
                why = "its inputs include a PRNG key array"
                if self.strict:
                    raise CannotResize(why)
                raise C.WorkerError(C.TASK, "cannot shrink a task whose inputs include a PRNG key array")
            if self._shapes is not None:
                return jax.ShapeDtypeStruct(next(self._shapes), x.dtype)
            return jax.ShapeDtypeStruct(tuple(self.size_map.get(int(d), int(d)) for d in x.shape), x.dtype)
        if isinstance(x, int) and not isinstance(x, bool) and x in self.value_map:
            return self.value_map[x]  # a size passed as a static argument
        return x

    def input_shapes(self, leaves=None) -> list:
        return [list(x.shape) if judge_run.is_data(x) else {"static": x if isinstance(x, (int, float, bool, str))
                                                          or x is None else repr(x)[:60]}
                for x in (self.leaves if leaves is None else leaves)]

    def _reference_failure_prefix(self, shapes: str) -> str:
        return (f"the reference `{self.task.reference_name}` cannot run at input shapes {shapes}; it "
                f"probably hard-codes a size instead of reading it from its inputs")

    def _check_reference(self):
        """The reference traced at the new shapes: a size hard-coded in it fails here, before
        any data is drawn, with a message that says what was changed."""
        task = self.task
        value = jax.tree_util.tree_unflatten(self.tree, self.leaves)
        args, kwargs = judge_run.split_inputs(value, task)
        ref, a, k, _ = judge_run.bind_static(task.reference_fn, args, kwargs)
        try:
            jax.eval_shape(ref, *a, **k)
        except Exception as e:  # noqa: BLE001
            shapes = ", ".join(str(tuple(x.shape)) for x in self.leaves if judge_run.is_data(x))
            if self.strict:
                raise CannotResize(f"{self._reference_failure_prefix(shapes)} "
                                   f"({type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''})"
                                   ) from None
            raise C.from_exception(
                C.TASK, e, task.ref_module.filename, source=task.ref_module.source,
                file=task.ref_module.filename, prefix=self._reference_failure_prefix(shapes)) from None


    # -- data ---------------------------------------------------------------------------

    def draw(self, seed: int, warnings: list[str]):
        warnings.extend(self.source.notes)
        if getattr(self, "count_note", None):
            warnings.append(self.count_note)
        rng = np.random.default_rng(seed)
        if self.source.program is not None:
            arrays = self._program_arrays(seed, rng, warnings)
        else:
            arrays = [self._draw_array(x, st, rng, warnings, i) for i, (x, st) in
                      enumerate(zip([x for x in self.leaves if judge_run.is_data(x)], self.source.stats))]
        it = iter(arrays)
        out = [next(it) if judge_run.is_data(x) else x for x in self.leaves]
        return jax.tree_util.tree_unflatten(self.tree, out)

    def _program_arrays(self, seed, rng, warnings):
        src = self.source
        if self.task.inputs_takes_key:
            return list(src.program(jax.random.key(seed)))
        # No key (JAXBench's create_inputs()): the function's own values at the shrunk sizes,
        # then fresh data from their ranges per seed, exactly as at full size (judge.run).
        if src.base is None:
            src.base = [np.array(x) for x in src.program(None)]
            for x in src.base:
                x.flags.writeable = False  # shared by later requests of this task
        return [judge_run.synthesize(x, rng, warnings, i) for i, x in enumerate(src.base)]

    def _draw_array(self, aval, st: dict, rng, warnings, index: int):
        shape, dt = tuple(aval.shape), aval.dtype
        kind = st["kind"]
        if kind == "bool":
            return jnp.asarray(rng.random(shape) < st["mean"])
        if kind == "int":
            lo, hi = self._int_range(st["min"], st["max"])
            if lo == hi:
                warnings.append(f"input {index}: integer values are all {lo}; kept constant")
            return jnp.asarray(rng.integers(lo, hi + 1, size=shape, dtype=np.int64).astype(dt))
        if kind == "complex":
            return jnp.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape), dtype=dt)
        if st["std"] == 0.0 or not np.isfinite(st["std"]):
            warnings.append(f"input {index}: the task's own values are constant; drawing N(0, 1)")
            new = rng.standard_normal(shape)
        elif st["binary"]:
            new = (rng.random(shape) < st["mean"]).astype(np.float64)
        elif st["min"] >= 0.0:
            new = rng.uniform(st["min"], st["max"], shape)
        else:
            new = rng.normal(st["mean"], st["std"], shape)
        return jnp.asarray(new, dtype=dt)

    def _int_range(self, lo: int, hi: int) -> tuple[int, int]:
        """Indices into a shrunk dim (values in [0, d), -1 allowed as padding) or lengths up to
        it (values <= d) follow the dim: the tightest shrunk size d >= max decides, and only
        when the values would no longer fit the new size.  Other integers (negative data,
        values below the new size already) keep their range."""
        fitting = [d for d in self.value_map if d >= hi]
        if lo < -1 or not fitting:
            return lo, hi
        d = min(fitting)
        new_hi = self.value_map[d] if d == hi else self.value_map[d] - 1
        if hi <= new_hi:
            return lo, hi
        new_lo = lo if lo <= 1 else max(1, lo // self.factor)
        return min(new_lo, new_hi), new_hi


class Shrunk(Resized):
    """One task's shrunk instance: every large size divided by the factor (module docstring)."""

    adjective = "shrunk"

    def __init__(self, task, factor: int, min_dim: int, counts: bool = True):
        self.factor = factor
        self.min_dim = min_dim
        self.counts = counts
        full = judge_run.abstract_value(task)
        leaves = jax.tree_util.tree_leaves(full)
        arrays = [x for x in leaves if judge_run.is_data(x)]
        sizes = sorted({int(d) for x in arrays for d in x.shape})
        smap = {d: d // factor for d in sizes if d % factor == 0 and d // factor >= min_dim}
        flags = self._count_flags(task, full, arrays) if counts else None
        shapes, counted = None, {}
        if flags is not None:
            # Not by axis alone: a query sequence is a count axis, the key sequence of the same
            # size is not, and both must stay equal.  Only integer (index) inputs may keep a
            # size that count axes shrink (a page table's pages per sequence next to its batch).
            kept = count_axes.lane_sizes(arrays) | {
                int(d) for x, fl in zip(arrays, flags) if jnp.issubdtype(x.dtype, jnp.inexact)
                for d, is_count in zip(x.shape, fl) if not is_count}
            shapes = []
            for x, fl in zip(arrays, flags):
                shape = []
                for d, is_count in zip((int(d) for d in x.shape), fl):
                    if d in smap:
                        shape.append(smap[d])
                    elif is_count and d not in kept and count_axes.shrunk_count(d, factor) < d:
                        counted[d] = count_axes.shrunk_count(d, factor)
                        shape.append(counted[d])
                    else:
                        shape.append(d)
                shapes.append(shape)
        self.count_note = None
        if counted:
            try:
                super().__init__(task, smap, strict=False, counts=counted, shapes=shapes)
                return
            except C.WorkerError as e:
                if e.kind != C.TASK:
                    raise
                # A reference that hard-codes a head or batch count: the large sizes alone.
                self.count_note = (f"the reference cannot run with its count axes shrunk "
                                   f"({e.message.splitlines()[0][:200]}); only the sizes >= "
                                   f"{min_dim * factor} are shrunk")
        super().__init__(task, smap, strict=False)

    @staticmethod
    def _count_flags(task, full, arrays):
        """Per data input, per axis: a count axis of the reference (count_axes)?  None when the
        reference's arrays cannot be matched to the inputs (the reference check reports why)."""
        try:
            args, kwargs = judge_run.split_inputs(full, task)
            ref, a, k, _ = judge_run.bind_static(task.reference_fn, args, kwargs)
        except Exception:  # noqa: BLE001 - the reference check reports it
            return None
        bound = jax.tree_util.tree_leaves((a, k))
        if [tuple(x.shape) for x in bound] != [tuple(x.shape) for x in arrays]:
            return None
        return count_axes.count_axes(ref, a, k)

    def __repr__(self):
        return f"Shrunk(factor={self.factor}, min_dim={self.min_dim}, counts={self.counts})"

    def describe(self) -> dict:
        return {"kind": "shrunk", "factor": self.factor, "min_dim": self.min_dim, "counts": self.counts,
                "count_sizes": {str(d): self.size_map[d] for d in sorted(self.count_sizes)},
                "input_shapes": self.input_shapes(self.leaves),
                "full_input_shapes": self.input_shapes(self.full_leaves),
                "sizes": {str(k): v for k, v in self.size_map.items()},
                "data": self.source.data}

    def _reference_failure_prefix(self, shapes: str) -> str:
        return (f"the reference `{self.task.reference_name}` cannot run at the shrunk instance "
                f"(shrink factor {self.factor}: input shapes {shapes}); it probably hard-codes "
                f"a size instead of reading it from its inputs. Evaluate it without `shrink`, or "
                f"with a factor that leaves that size alone")


# ---------------------------------------------------------------------------
# The inputs function itself at the shrunk sizes.

class _CannotShrink(Exception):
    pass


_CALL_PRIMITIVES = ("jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
                    "custom_vjp_call_jaxpr", "remat", "checkpoint")
_SUBJAXPR_PARAMS = ("jaxpr", "call_jaxpr", "fun_jaxpr")
# Parameters that hold sizes (mapped); axis numbers (`dimensions`, `axis`) are not sizes.
_SIZE_PARAMS = ("shape", "new_sizes", "slice_sizes", "sizes", "limit_indices")


def _map_size(v, smap):
    if isinstance(v, (tuple, list)):
        return type(v)(_map_size(x, smap) for x in v)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and int(v) in smap:
        return smap[int(v)]
    return v


def _map_constant(val, vmap, smap):
    """A scalar signed-integer constant equal to a shrunk size of `vmap` (randint's maxval, a
    length) follows it; an array constant that has a dim shrunk by `smap` cannot be shrunk."""
    shape = np.shape(val)
    if shape == ():
        dt = getattr(val, "dtype", None)
        if (isinstance(val, int) and not isinstance(val, bool)) or (
                dt is not None and np.issubdtype(dt, np.signedinteger)):
            iv = int(val)
            if iv in vmap:
                return np.asarray(vmap[iv], dtype=dt) if dt is not None else vmap[iv]
        return val
    if any(int(d) in smap for d in shape):
        raise _CannotShrink(f"it captures a constant array of shape {tuple(shape)}")
    return val


def _targets(jaxpr, outs) -> dict:
    """The shape each value must have for the program's results to come out at `outs` (None
    where free), followed back through calls, elementwise ops and broadcasts: a size shrunk on
    some axes only (a paged task's batch 32 next to its pages per sequence 32) is told apart
    here, where the by-value map cannot."""
    from jax.extend import core as jcore

    want = {}

    def put(v, shape):
        if shape is None or isinstance(v, jcore.Literal) or len(getattr(v.aval, "shape", ())) != len(shape):
            return
        if want.get(v, shape) != shape:
            raise _CannotShrink("a value is needed at two different shapes")
        want[v] = shape

    for v, t in zip(jaxpr.outvars, outs):
        put(v, None if t is None else tuple(t))
    for eqn in reversed(jaxpr.eqns):
        got = [want.get(o) for o in eqn.outvars]
        if all(g is None for g in got):
            continue
        name = eqn.primitive.name
        sub = next((eqn.params[k] for k in _SUBJAXPR_PARAMS if k in eqn.params), None)
        if name in _CALL_PRIMITIVES and sub is not None and hasattr(sub, "jaxpr"):
            inner = _targets(sub.jaxpr, got)
            for v, iv in zip(eqn.invars, sub.jaxpr.invars):
                put(v, inner.get(iv))
        elif name == "broadcast_in_dim":
            shape = tuple(eqn.invars[0].aval.shape)
            put(eqn.invars[0], tuple(1 if shape[j] == 1 else got[0][d]
                                     for j, d in enumerate(eqn.params["broadcast_dimensions"])))
        elif name in count_axes.ELEMENTWISE or name == "bitcast_convert_type":
            for v in eqn.invars:
                if tuple(getattr(v.aval, "shape", ())) == tuple(eqn.outvars[0].aval.shape):
                    put(v, got[0])
    return want


def _eval_shrunk(jaxpr, consts, args, smap, vmap, outs=None):
    """`smap` maps array shapes by value where no per-axis target (`outs`, _targets) says
    otherwise; `vmap` (smap less the count sizes) also maps integer constants.  Key arrays
    (jax.random.split's keys, slices of them) keep their count-sized shapes."""
    from jax.extend import core as jcore

    env = {}
    want = _targets(jaxpr, outs) if outs is not None else {}

    def read(v):
        if isinstance(v, jcore.Literal):
            return _map_constant(v.val, vmap, smap)
        return env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = _map_constant(c, vmap, smap)
    for v, a in zip(jaxpr.invars, args):
        env[v] = a
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        name = eqn.primitive.name
        sub = next((eqn.params[k] for k in _SUBJAXPR_PARAMS if k in eqn.params), None)
        if name in _CALL_PRIMITIVES and sub is not None and hasattr(sub, "jaxpr"):
            outs = _eval_shrunk(sub.jaxpr, sub.consts, invals, smap, vmap,
                                [want.get(o) for o in eqn.outvars])
        elif any(isinstance(v, (jcore.ClosedJaxpr, jcore.Jaxpr)) for v in eqn.params.values()):
            raise _CannotShrink(f"it uses `{name}`, a primitive with a nested program")
        else:
            keys = any(jnp.issubdtype(getattr(o.aval, "dtype", np.float32), jax.dtypes.prng_key)
                       for o in eqn.outvars)
            shapes = vmap if keys else smap
            params = {k: (_map_size(v, shapes) if k in _SIZE_PARAMS else v) for k, v in eqn.params.items()}
            target = want.get(eqn.outvars[0]) if len(eqn.outvars) == 1 else None
            for k in ("shape", "new_sizes"):
                if target is not None and k in params:
                    params[k] = target
            outs = cost_eqn.bind(eqn, invals, params)
        cost_eqn.store_results(env, eqn, outs)
    return [read(v) for v in jaxpr.outvars]


def _shrunk_program(task, smap, vmap, expected):
    """A jitted function (key or None) -> the task's input arrays at the shrunk sizes, checked
    against the expected shapes once; raises _CannotShrink when that cannot work."""
    if not smap and all(tuple(x.shape) == tuple(y.shape) for x, y in zip(expected, _full_arrays(task))):
        raise _CannotShrink("no input size is shrunk")

    def arrays(key):
        value = task.inputs_fn(key) if task.inputs_takes_key else task.inputs_fn()
        return _arrays(value)

    key0 = jax.random.key(0)
    try:
        closed = jax.make_jaxpr(arrays)(key0) if task.inputs_takes_key else jax.make_jaxpr(lambda: arrays(None))()
    except Exception as e:  # noqa: BLE001
        raise _CannotShrink(f"it does not trace: {type(e).__name__}: {str(e)[:160]}") from None

    def run(key):
        args = [key] if task.inputs_takes_key else []
        return _eval_shrunk(closed.jaxpr, closed.consts, args, smap, vmap,
                            [tuple(x.shape) for x in expected])

    jitted = jax.jit(run) if task.inputs_takes_key else jax.jit(lambda: run(None))
    try:
        got = jax.eval_shape(jitted, key0) if task.inputs_takes_key else jax.eval_shape(jitted)
    except _CannotShrink:
        raise
    except Exception as e:  # noqa: BLE001
        raise _CannotShrink(f"{type(e).__name__}: {str(e)[:160]}") from None
    want = [(tuple(x.shape), np.dtype(x.dtype)) for x in expected]
    have = [(tuple(x.shape), np.dtype(x.dtype)) for x in got]
    if have != want:
        raise _CannotShrink(f"it produced shapes {[h[0] for h in have]}, expected {[w[0] for w in want]}")
    return (lambda key: jitted(key)) if task.inputs_takes_key else (lambda _key: jitted())


# ---------------------------------------------------------------------------
# Learning each input's statistics from one full-size call (the fallback).

def _kind(dt) -> str:
    if dt == np.bool_:
        return "bool"
    if jnp.issubdtype(dt, jnp.integer):
        return "int"
    if jnp.issubdtype(dt, jnp.complexfloating):
        return "complex"
    return "float"


def _leaf_stats(x) -> dict:
    """A few numbers describing one array's values (jax or numpy arrays; only numbers, so it
    can be jitted)."""
    xp = jnp if isinstance(x, (jax.Array, jax.core.Tracer)) else np
    kind = _kind(x.dtype)
    if kind == "bool":
        return {"mean": xp.mean(x.astype(np.float32))}
    if kind == "int":
        return {"min": xp.min(x), "max": xp.max(x)}
    if kind == "complex":
        return {}
    f = x.astype(np.float32)
    fin = xp.isfinite(f)
    n = xp.maximum(xp.sum(fin), 1)
    z = xp.where(fin, f, 0.0)
    mean = xp.sum(z) / n
    var = xp.sum(xp.where(fin, (f - mean) ** 2, 0.0)) / n
    return {"mean": mean, "std": xp.sqrt(var),
            "min": xp.min(xp.where(fin, f, xp.inf)), "max": xp.max(xp.where(fin, f, -xp.inf)),
            "binary": xp.all(~fin | (f == 0.0) | (f == 1.0))}


def _full_arrays(task):
    return [x for x in jax.tree_util.tree_leaves(judge_run.abstract_value(task)) if judge_run.is_data(x)]


def _arrays(value):
    return [x for x in jax.tree_util.tree_leaves(value) if judge_run.is_data(x)]


def _learn_stats(task) -> list[dict]:
    key = _task_key(task)
    if key in _STATS_CACHE:
        _STATS_CACHE.move_to_end(key)
        return _STATS_CACHE[key]

    def call():
        return judge_run.call_inputs_fn(task, 0)

    try:
        try:
            # Traced and compiled as one program: the full-size arrays never reach the host,
            # and one compile is much faster than running every jax.random op eagerly.
            kinds = [_kind(x.dtype) for x in _arrays(jax.eval_shape(call))]
            raw = jax.jit(lambda: [_leaf_stats(x) for x in _arrays(call())])()
        except Exception:  # noqa: BLE001 - an inputs function that needs concrete values
            arrays = [np.asarray(x) for x in _arrays(call())]
            kinds = [_kind(x.dtype) for x in arrays]
            raw = [_leaf_stats(x) for x in arrays]
    except C.WorkerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise task.inputs_error(e) from None
    stats = []
    for kind, st in zip(kinds, raw):
        st = {k: np.asarray(v).item() for k, v in st.items()}
        st["kind"] = kind
        if kind == "int":
            st["min"], st["max"] = int(st["min"]), int(st["max"])
        stats.append(st)
    _STATS_CACHE[key] = stats
    while len(_STATS_CACHE) > _STATS_CACHE_SIZE:
        _STATS_CACHE.popitem(last=False)
    return stats
