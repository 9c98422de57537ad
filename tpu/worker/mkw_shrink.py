"""Small instances of a task: the same computation at shapes a CPU host can
run in interpret mode (JAXBench's 8192 x 8192 matmuls cannot).

Rule (docs/tasks.md, "Small instances"): with factor F, every input dim
size d with d % F == 0 and d // F >= min_dim (default 128) becomes d // F,
by value, so one size maps to one new size across all inputs (a matmul's K
stays equal on both sides, M = S * top_k stays proportional).  Static int
arguments equal to a shrunk size follow the same map (a reference reshaping
by `out_features` keeps working); other statics are kept.

The data is drawn fresh at the shrunk shapes from each input's own
distribution, learnt from one call of the task's inputs function at full
size (jitted down to a few numbers per input when it traces; called eagerly
otherwise): non-negative floats uniform in [min, max], 0/1 floats Bernoulli
with the same mean, other floats normal with the same mean and standard
deviation, constant floats N(0, 1) (as for key-less inputs, mkw_run),
integers uniform in their range, where indices or lengths into a shrunk
size (values >= -1, max below or at d, no longer fitting d // F) are drawn
in the new range, bools Bernoulli.  The reference must run at the shrunk shapes; one that cannot
(a size hard-coded in it) is a clear `task` error naming the instance.
"""

from __future__ import annotations

import collections
import hashlib

import jax
import jax.numpy as jnp
import mkw_common as C
import mkw_run
import numpy as np

DEFAULT_MIN_DIM = 128
_STATS_CACHE: collections.OrderedDict = collections.OrderedDict()  # learnt stats per task text
_STATS_CACHE_SIZE = 16


def parse_request(value):
    """(factor, min_dim) from a request's `shrink` (an int, or {"factor": F, "min_dim": m});
    None when absent or 1 (the full instance)."""
    if value is None or value is False:
        return None
    if isinstance(value, dict):
        factor, min_dim = value.get("factor"), value.get("min_dim", DEFAULT_MIN_DIM)
    else:
        factor, min_dim = value, DEFAULT_MIN_DIM
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise C.WorkerError(C.BAD_REQUEST, f"`shrink` must be an integer factor >= 1 (or "
                                           f"{{\"factor\": F, \"min_dim\": m}}), got {value!r}")
    if isinstance(min_dim, bool) or not isinstance(min_dim, int) or min_dim < 1:
        raise C.WorkerError(C.BAD_REQUEST, f"shrink.min_dim must be a positive integer, got {min_dim!r}")
    return None if factor == 1 else (factor, min_dim)


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


class Shrunk:
    """One task's shrunk instance: shapes, the size map, and the learnt input statistics."""

    def __init__(self, task, factor: int, min_dim: int):
        self.task = task
        self.factor = factor
        self.min_dim = min_dim
        full = mkw_run.abstract_value(task)
        leaves, self.tree = jax.tree_util.tree_flatten(full)
        self.full_leaves = leaves
        sizes = sorted({int(d) for x in leaves if mkw_run.is_data(x) for d in x.shape})
        self.size_map = {d: d // factor for d in sizes if d % factor == 0 and d // factor >= min_dim}
        self.leaves = [self._shrink_leaf(x) for x in leaves]
        self.stats = _learn_stats(task)
        self._check_reference()

    # -- shapes -------------------------------------------------------------------------

    def _shrink_leaf(self, x):
        if mkw_run.is_data(x):
            if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
                raise C.WorkerError(C.TASK, "cannot shrink a task whose inputs include a PRNG key array")
            return jax.ShapeDtypeStruct(tuple(self.size_map.get(int(d), int(d)) for d in x.shape), x.dtype)
        if isinstance(x, int) and not isinstance(x, bool) and x in self.size_map:
            return self.size_map[x]  # a size passed as a static argument
        return x

    def input_shapes(self, leaves) -> list:
        return [list(x.shape) if mkw_run.is_data(x) else {"static": x if isinstance(x, (int, float, bool, str))
                                                          or x is None else repr(x)[:60]}
                for x in leaves]

    def describe(self) -> dict:
        return {"kind": "shrunk", "factor": self.factor, "min_dim": self.min_dim,
                "input_shapes": self.input_shapes(self.leaves),
                "full_input_shapes": self.input_shapes(self.full_leaves),
                "sizes": {str(k): v for k, v in self.size_map.items()}}

    def _check_reference(self):
        """The reference traced at the shrunk shapes: a size hard-coded in it fails here, before
        any data is drawn, with a message that says what was shrunk."""
        task = self.task
        value = jax.tree_util.tree_unflatten(self.tree, self.leaves)
        args, kwargs = mkw_run.split_inputs(value, task)
        ref, a, k, _ = mkw_run.bind_static(task.reference_fn, args, kwargs)
        try:
            jax.eval_shape(ref, *a, **k)
        except Exception as e:  # noqa: BLE001
            shapes = ", ".join(str(tuple(x.shape)) for x in self.leaves if mkw_run.is_data(x))
            raise C.from_exception(
                C.TASK, e, task.ref_module.filename, source=task.ref_module.source,
                file=task.ref_module.filename,
                prefix=(f"the reference `{task.reference_name}` cannot run at the shrunk instance "
                        f"(shrink factor {self.factor}: input shapes {shapes}); it probably hard-codes "
                        f"a size instead of reading it from its inputs. Evaluate it without `shrink`, or "
                        f"with a factor that leaves that size alone")) from None

    # -- data ---------------------------------------------------------------------------

    def draw(self, seed: int, warnings: list[str]):
        rng = np.random.default_rng(seed)
        out = []
        array_index = 0
        for i, x in enumerate(self.leaves):
            if not mkw_run.is_data(x):
                out.append(x)
                continue
            out.append(self._draw_array(x, self.stats[array_index], rng, warnings, i))
            array_index += 1
        return jax.tree_util.tree_unflatten(self.tree, out)

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
        fitting = [d for d in self.size_map if d >= hi]
        if lo < -1 or not fitting:
            return lo, hi
        d = min(fitting)
        new_hi = self.size_map[d] if d == hi else self.size_map[d] - 1
        if hi <= new_hi:
            return lo, hi
        new_lo = lo if lo <= 1 else max(1, lo // self.factor)
        return min(new_lo, new_hi), new_hi


# ---------------------------------------------------------------------------
# Learning each input's statistics from one full-size call.

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


def _arrays(value):
    return [x for x in jax.tree_util.tree_leaves(value) if mkw_run.is_data(x)]


def _learn_stats(task) -> list[dict]:
    key = hashlib.sha256("\0".join([task.form, task.inputs_name, task.ref_module.source,
                                    getattr(task, "cache_salt", "")]).encode("utf-8", "surrogatepass")
                         ).hexdigest()
    if key in _STATS_CACHE:
        _STATS_CACHE.move_to_end(key)
        return _STATS_CACHE[key]

    def call():
        return mkw_run.call_inputs_fn(task, 0)

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
        raise C.from_exception(C.TASK, e, task.inputs_module.filename,
                               prefix=f"the task's inputs function `{task.inputs_name}` failed",
                               source=task.inputs_module.source, file=task.inputs_module.filename) from None
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
