"""Running things: platform detection, interpret mode, input sets,
cloning and mutation checks, output comparison, timing."""

from __future__ import annotations

import contextlib
import inspect
import math
import os

import jax
import jax.numpy as jnp
import numpy as np

from mkworker import common as C
from mkworker.tasks import tasks

# ---------------------------------------------------------------------------
# Platform.

_TPU_GENERATIONS = (
    # (substring of device_kind, lower case) -> generation; first match wins.
    ("tpu7x", "v7"), ("tpu 7x", "v7"), ("tpu v7", "v7"), ("ironwood", "v7"),
    ("v6 lite", "v6e"), ("v6e", "v6e"), ("trillium", "v6e"),
    ("v5 lite", "v5e"), ("v5lite", "v5e"), ("v5e", "v5e"),
    ("v5p", "v5p"), ("tpu v5", "v5p"),
    ("v4 lite", "v4i"), ("v4", "v4"),
    ("v3", "v3"), ("v2", "v2"),
)


def tpu_generation(device_kind: str | None) -> str | None:
    if not device_kind:
        return None
    k = device_kind.lower()
    for sub, gen in _TPU_GENERATIONS:
        if sub in k:
            return gen
    return None


def platform() -> str:
    p = jax.devices()[0].platform.lower()
    if p in ("cuda", "rocm", "gpu"):
        return "gpu"
    return p


def device_info() -> dict:
    devs = jax.devices()
    plat = platform()
    kind = getattr(devs[0], "device_kind", None)
    return {
        "platform": plat,
        "device_kind": kind,
        "device_count": len(devs),
        "tpu_generation": tpu_generation(kind) if plat == "tpu" else None,
        "compute_capability": getattr(devs[0], "compute_capability", None) if plat == "gpu" else None,
        # Cores this worker may run on: the host sizes its cpu timing lane by it.
        "cpu_count": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
    }


# ---------------------------------------------------------------------------
# How a candidate runs here.

INTERPRET_MODES = ("auto", "tpu", "hlo", "none")


class RunMode:
    """`device` (native), or `interpret` with `interpret_kind`:
    'tpu' -> pltpu.InterpretParams (simulated TPU memories, DMAs and
             semaphores; fresh buffers filled with NaN; out-of-bounds reads
             raise), 'hlo' -> interpret=True (grid loop lowered to plain
             XLA ops; outputs start as NaN)."""

    def __init__(self, kind: str, interpret_kind: str | None = None, plat: str | None = None,
                 note: str | None = None):
        self.kind = kind
        self.interpret_kind = interpret_kind
        self.platform = plat
        self.note = note  # why a kernel on an accelerator is interpreted (shown with the mode)

    @property
    def time_kind(self) -> str:
        # Only a real accelerator gives kernel times; on a CPU host every
        # pallas_call goes through an interpreter, whatever the mode.
        if self.kind == "device" and self.platform in ("tpu", "gpu"):
            return "device"
        return "interpret"

    def context(self):
        if self.kind != "interpret":
            return contextlib.nullcontext()
        from jax.experimental.pallas import tpu as pltpu
        if self.interpret_kind == "hlo":
            return pltpu.force_tpu_interpret_mode(True)
        return pltpu.force_tpu_interpret_mode(pltpu.InterpretParams(uninitialized_memory="nan"))

    def reset(self):
        """TPU interpret mode keeps global state after a failed kernel."""
        if self.kind == "interpret" and self.interpret_kind == "tpu":
            try:
                from jax.experimental.pallas import tpu as pltpu
                pltpu.reset_tpu_interpret_mode_state()
            except Exception:  # noqa: BLE001, S110
                pass

    def to_json(self) -> dict:
        out = {"mode": self.kind, "interpret_kind": self.interpret_kind, "platform": self.platform}
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_json(cls, d: dict) -> RunMode:
        return cls(d["mode"], d.get("interpret_kind"), d.get("platform"), d.get("note"))


TPU_KERNEL_ON_GPU = ("a TPU kernel on a GPU host runs in the Pallas interpreter: its time is "
                     "not a kernel time")


def choose_mode(plat: str, facts: list[dict], requested: str | None) -> RunMode:
    """tpu: native.  gpu: native, unless the kernel is a TPU kernel (then
    interpret, with a note saying so).  cpu: interpret; a GPU kernel (Triton
    compiler params) through interpret=True ('hlo'), which runs any backend's
    kernel, where the TPU interpreter takes TPU kernels only.  interpret_mode
    'none' never forces interpretation (for kernels that pass interpret=...
    themselves)."""
    requested = requested or "auto"
    if requested not in INTERPRET_MODES:
        raise C.WorkerError(C.BAD_REQUEST, f"interpret_mode must be one of {INTERPRET_MODES}")
    if requested == "none":
        return RunMode("device", None, plat)
    gpu_kernels = any(f.get("compiler_params") == "triton" for f in facts)
    ikind = ("hlo" if gpu_kernels else "tpu") if requested == "auto" else requested
    if plat == "tpu":
        return RunMode("device", None, plat)
    if plat == "gpu":
        if any(f.get("compiler_params") == "tpu" for f in facts):
            return RunMode("interpret", "tpu" if requested == "auto" else requested, plat,
                           TPU_KERNEL_ON_GPU)
        return RunMode("device", None, plat)
    return RunMode("interpret", ikind, plat)


def looks_unsupported(exc: BaseException) -> bool:
    if isinstance(exc, NotImplementedError):
        return True
    text = str(exc).lower()
    return any(s in text for s in ("not implemented", "unimplemented", "not supported",
                                   "unsupported"))


# ---------------------------------------------------------------------------
# Static arguments: inputs that hold no array (a Python number, a string, a
# tuple of ints...) are passed to the reference and the candidate as static
# arguments, never traced, so a reference may use them as shapes or as loop
# bounds (`max_expert_size = 16`), exactly as a plain Python call would.

def is_data(leaf) -> bool:
    """An array leaf that jit traces (jax/numpy arrays, abstract shapes, tracers)."""
    if isinstance(leaf, np.generic):
        return False
    return isinstance(leaf, (jax.Array, np.ndarray, jax.ShapeDtypeStruct, jax.core.Tracer)) or (
        hasattr(leaf, "shape") and hasattr(leaf, "dtype"))


def is_static_value(value) -> bool:
    """True when `value` holds no array anywhere (None, numbers, strings, dtypes, tuples of them)."""
    return not any(is_data(x) for x in jax.tree_util.tree_leaves(value))


def bind_static(fn, args, kwargs, force_static=()):
    """Splits a call's arguments into traced and static ones.

    Returns (bound_fn, dyn_args, dyn_kwargs, statics): `bound_fn(*dyn_args,
    **dyn_kwargs)` calls `fn` with the static values put back in their
    places, so it can be jitted, traced, lowered or exported with only the
    arrays as arguments.  `statics` maps a positional index (int) or a
    keyword name (str) to its value.  Positions in `force_static` are static
    whatever they hold (MaxKernel's `static_args`).  With no static argument
    `fn` itself comes back (an already-jitted function stays as it is).
    """
    args = tuple(args)
    kwargs = dict(kwargs or {})
    forced = set(force_static or ())
    statics: dict = {}
    for i, a in enumerate(args):
        if i in forced or is_static_value(a):
            statics[i] = a
    for k, v in kwargs.items():
        if k in forced or is_static_value(v):
            statics[k] = v
    if not statics:
        return fn, args, kwargs, {}
    n = len(args)
    static_pos = {i: v for i, v in statics.items() if isinstance(i, int)}
    static_kw = {k: v for k, v in statics.items() if isinstance(k, str)}
    dyn_args = tuple(a for i, a in enumerate(args) if i not in static_pos)
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_kw}

    def bound(*dyn, **dkw):
        if len(dyn) != n - len(static_pos):
            raise TypeError(f"expected {n - len(static_pos)} array argument(s), got {len(dyn)}")
        it = iter(dyn)
        full = [static_pos[i] if i in static_pos else next(it) for i in range(n)]
        return fn(*full, **dkw, **static_kw)

    bound.__name__ = getattr(fn, "__name__", "bound")
    bound.__qualname__ = getattr(fn, "__qualname__", bound.__name__)
    sig = _dynamic_signature(fn, n, static_pos, static_kw)
    if sig is not None:
        bound.__signature__ = sig  # readable argument names in jaxprs and errors
    return bound, dyn_args, dyn_kwargs, statics


def _dynamic_signature(fn, n_positional, static_pos, static_kw):
    """fn's signature without its static parameters, when it maps one to one."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    pos = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(pos) < n_positional or any(p.kind == p.VAR_POSITIONAL for p in params[:n_positional]):
        return None
    keep = [p for i, p in enumerate(pos) if i >= n_positional or i not in static_pos]
    keep = [p for p in keep if p.name not in static_kw]
    keep += [p for p in params if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
             and p.name not in static_kw]
    try:
        return sig.replace(parameters=keep)
    except ValueError:
        return None


def static_arg_names(fn, statics: dict) -> dict:
    """{parameter name: value} for `statics` (positions named from fn's signature; a position
    without a name is called `arg<i>`)."""
    names = []
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        pass
    out = {}
    for k, v in statics.items():
        if isinstance(k, int):
            out[names[k] if k < len(names) else f"arg{k}"] = v
        else:
            out[k] = v
    return out


# ---------------------------------------------------------------------------
# Inputs.

class InputSet:
    """One seed's inputs.  `args`/`kwargs` are the arrays only (what a compiled reference or
    candidate is called with); `statics` are the static arguments (see bind_static) and
    bind(fn) is fn with them put back."""

    def __init__(self, seed: int, args: tuple, kwargs: dict, warnings: list[str]):
        self.seed = seed
        self.full_args = tuple(args)
        self.full_kwargs = dict(kwargs)
        _, self.args, self.kwargs, self.statics = bind_static(None, args, kwargs)
        self.warnings = warnings
        self.pristine = None  # host copies, see snapshot()

    def bind(self, fn):
        """fn taking only this set's arrays (the static arguments bound)."""
        return bind_static(fn, self.full_args, self.full_kwargs)[0]

    def leaves(self):
        return jax.tree_util.tree_leaves((self.args, self.kwargs))

    def snapshot(self):
        self.pristine = [np.array(x, copy=True) if _is_array(x) else x for x in self.leaves()]

    def clone(self):
        def cp(x):
            return jnp.array(x, copy=True) if isinstance(x, jax.Array) else x
        args, kwargs = jax.tree_util.tree_map(cp, (self.args, self.kwargs))
        return args, kwargs


def _is_array(x) -> bool:
    return isinstance(x, (jax.Array, np.ndarray))


def split_inputs(value, task: tasks.Task | None = None) -> tuple[tuple, dict]:
    """The inputs function's return value as (positional args, keyword args).

    MaxKernel's get_inputs() returns `(dynamic_args, static_args)` (two lists;
    or a list of such pairs, of which the first is used), called as
    computation(*dynamic_args, *static_args); the static args are passed
    static, which bind_static does for any non-array value.  Any other value
    of a MaxKernel task is read like the other forms' (a tuple of arrays)."""
    if task is not None and task.inputs_convention == "dynamic_static" and (
            _is_pair(value) or (isinstance(value, list) and value and all(_is_pair(v) for v in value))):
        return _dynamic_static(value, task), {}
    if isinstance(value, dict):
        return (), dict(value)
    if isinstance(value, (tuple, list)):
        return tuple(value), {}
    return (value,), {}


def _dynamic_static(value, task):
    if isinstance(value, list) and value and all(_is_pair(v) for v in value):
        # A list of input configurations: the first one is the task's instance.
        if len(value) > 1 and not getattr(task, "_warned_configs", False):
            task._warned_configs = True
            task.load_warnings.append(f"`{task.inputs_name}` returned {len(value)} input configurations; "
                                      f"only the first is used")
        value = value[0]
    dyn, static = value
    return tuple(dyn) + tuple(static)


def _is_pair(v) -> bool:
    return isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(x, (tuple, list)) for x in v)


def call_inputs_fn(task: tasks.Task, seed: int):
    if task.inputs_takes_key:
        return task.inputs_fn(jax.random.key(seed))
    return task.inputs_fn()


def abstract_inputs(task: tasks.Task):
    """(args, kwargs) of the task's inputs without data: arrays as ShapeDtypeStructs
    (jax.eval_shape), static values (Python numbers...) as they are, so
    bind_static(fn, args, kwargs) splits them as in a real call."""
    return split_inputs(abstract_value(task), task)


def abstract_value(task: tasks.Task):
    """What the inputs function returns, without data: the same structure, arrays as
    ShapeDtypeStructs, static values as they are."""
    kept = {}

    def arrays_only():
        value = task.inputs_fn(jax.random.key(0)) if task.inputs_takes_key else task.inputs_fn()
        leaves, kept["tree"] = jax.tree_util.tree_flatten(value)
        kept["static"] = {i: x for i, x in enumerate(leaves) if not is_data(x)}
        return [x for x in leaves if is_data(x)]

    try:
        shapes = iter(jax.eval_shape(arrays_only))
        n = kept["tree"].num_leaves
        leaves = [kept["static"][i] if i in kept["static"] else next(shapes) for i in range(n)]
        return jax.tree_util.tree_unflatten(kept["tree"], leaves)
    except C.WorkerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise task.inputs_error(e) from None


def synthesize(base, rng: np.random.Generator, warnings: list[str], index: int):
    """A fresh random array shaped like `base`, drawn from its value range."""
    if not _is_array(base):
        return base
    a = np.asarray(base)
    dt = a.dtype
    shape = a.shape
    if jnp.issubdtype(dt, jnp.floating):
        f = a.astype(np.float64)
        fin = f[np.isfinite(f)]
        if fin.size == 0 or float(fin.std()) == 0.0:
            warnings.append(f"input {index}: the task's own values are constant; drawing N(0, 1)")
            new = rng.standard_normal(shape)
        elif float(fin.min()) >= 0.0:
            new = rng.uniform(float(fin.min()), float(fin.max()), shape)
        else:
            new = rng.normal(float(fin.mean()), float(fin.std()), shape)
        return jnp.asarray(new, dtype=dt)
    if jnp.issubdtype(dt, jnp.complexfloating):
        new = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        return jnp.asarray(new, dtype=dt)
    if dt == np.bool_:
        return jnp.asarray(rng.random(shape) < 0.5)
    if jnp.issubdtype(dt, jnp.integer):
        lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 0)
        if lo == hi:
            warnings.append(f"input {index}: integer values are all {lo}; kept constant")
        new = rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
        return jnp.asarray(new.astype(dt))
    return base


def _degenerate_warnings(leaves, seed) -> list[str]:
    out = []
    for i, x in enumerate(leaves):
        if not _is_array(x) or getattr(x, "size", 0) < 2:
            continue
        if not jnp.issubdtype(x.dtype, jnp.floating):
            continue
        a = np.asarray(x).astype(np.float64)
        if np.all(a == 0):
            out.append(f"input {i} is all zeros for seed {seed}")
        elif np.all(a == a.flat[0]):
            out.append(f"input {i} is constant for seed {seed}")
    return out


def make_input_set(task: tasks.Task, seed: int, instance=None) -> InputSet:
    """One seed's inputs at the task's own shapes, or at `instance`'s (an tasks.shrink.Resized:
    an extra shape), or at the request's shrunk instance (task.shrink)."""
    warnings: list[str] = []
    instance = instance if instance is not None else task.shrink
    try:
        if instance is not None:
            # The task at other sizes (tasks.shrink): fresh data at the new shapes.
            value = instance.draw(seed, warnings)
        elif task.inputs_takes_key:
            value = task.inputs_fn(jax.random.key(seed))
        else:
            # The inputs function has no key parameter (JAXBench's
            # create_inputs()): draw fresh data shaped like its output, from
            # the range of its values, seeded by `seed`.
            if task._base_inputs is None:
                task._base_inputs = task.inputs_fn()
            rng = np.random.default_rng(seed)
            leaves, tdef = jax.tree_util.tree_flatten(task._base_inputs)
            value = jax.tree_util.tree_unflatten(
                tdef, [synthesize(x, rng, warnings, i) for i, x in enumerate(leaves)])
        args, kwargs = split_inputs(value, task)
        args, kwargs = jax.tree_util.tree_map(
            lambda x: jnp.asarray(x) if isinstance(x, np.ndarray) else x, (args, kwargs))
        jax.block_until_ready((args, kwargs))
    except C.WorkerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise task.inputs_error(e) from None
    s = InputSet(seed, args, kwargs, warnings)
    warnings.extend(_degenerate_warnings(s.leaves(), seed))
    s.snapshot()
    return s


def fresh_seeds(n: int) -> list[int]:
    import secrets
    return [secrets.randbelow(2 ** 31 - 1) for _ in range(n)]


def check_inputs_intact(cloned, pristine) -> list[str]:
    """Problems with the inputs a run was given: donated (deleted) or
    changed in place."""
    problems = []
    leaves = jax.tree_util.tree_leaves(cloned)
    for i, (x, p) in enumerate(zip(leaves, pristine)):
        if isinstance(x, jax.Array):
            if x.is_deleted():
                problems.append(f"input {i} was donated/deleted by the candidate")
                continue
            a = np.asarray(x)
            if a.shape != p.shape or a.dtype != p.dtype or \
                    a.tobytes() != np.ascontiguousarray(p).tobytes():
                problems.append(f"input {i} was modified in place by the candidate")
    return problems


def poison_allocator(out_avals):
    """Best effort on a device: fill and free buffers shaped like the
    outputs so a kernel that leaves output elements unwritten reads NaN
    (the allocator tends to hand the freed buffers straight back).  In
    interpret mode the interpreter already fills fresh buffers with NaN."""
    try:
        bufs = []
        for a in out_avals:
            dt = a.dtype
            if jnp.issubdtype(dt, jnp.inexact):
                bufs.append(jnp.full(a.shape, jnp.nan, dt))
            elif jnp.issubdtype(dt, jnp.integer):
                bufs.append(jnp.full(a.shape, jnp.iinfo(dt).max, dt))
        jax.block_until_ready(bufs)
        for b in bufs:
            b.delete()
    except Exception:  # noqa: BLE001, S110
        pass


# ---------------------------------------------------------------------------
# Comparison.

def tolerances_for(dtype, task_tol: dict | None, plat: str) -> tuple[float, float]:
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if name.startswith("float8"):
        rtol, atol = tasks.FP8_TOLERANCE
    elif name == "float32" and plat == "tpu":
        rtol, atol = tasks.TPU_FLOAT32_TOLERANCE
    else:
        rtol, atol = tasks.DEFAULT_TOLERANCES.get(name, (0.0, 0.0))
    if task_tol:
        rtol = task_tol.get("rtol", rtol)
        atol = task_tol.get("atol", atol)
    return float(rtol), float(atol)


def to_host(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def _numeric(dt) -> bool:
    return dt != np.bool_ and (np.issubdtype(dt, np.number) or jnp.issubdtype(dt, jnp.floating))


def compare(cand_tree, ref_leaves: list[np.ndarray], task_tol, plat: str,
            accept_dtype_difference: bool = False) -> dict:
    """Checks a candidate's outputs against reference outputs (host arrays).

    Every element must be finite where the reference is finite, match the
    reference's NaN/Inf where it is not, and satisfy
    |c - r| <= atol * max(1, max|r|) + rtol * |r|.  Integer and bool
    outputs must match exactly.  An output dtype different from the
    reference's is refused, unless `accept_dtype_difference` (a suite
    convention, tasks.tasks.CONVENTIONS): then both are compared in float32.
    """
    cand = jax.tree_util.tree_leaves(cand_tree)
    res = {"ok": True, "outputs": []}
    if len(cand) != len(ref_leaves):
        return {"ok": False, "kind": "shape_mismatch",
                "message": f"candidate returned {len(cand)} arrays, reference {len(ref_leaves)}",
                "outputs": []}
    for i, (c_raw, r) in enumerate(zip(cand, ref_leaves)):
        c = np.asarray(c_raw)
        o = {"index": i, "shape": list(r.shape), "dtype": r.dtype.name}
        res["outputs"].append(o)
        if c.shape != r.shape:
            o["ok"] = False
            res.update(ok=False, kind="shape_mismatch",
                       message=f"output {i}: candidate shape {list(c.shape)} != reference {list(r.shape)}")
            return res
        if c.dtype != r.dtype:
            if not (accept_dtype_difference and _numeric(c.dtype) and _numeric(r.dtype)):
                o["ok"] = False
                res.update(ok=False, kind="dtype_mismatch",
                           message=f"output {i}: candidate dtype {c.dtype.name} != reference {r.dtype.name}")
                return res
            if np.issubdtype(c.dtype, np.integer) and np.issubdtype(r.dtype, np.integer):
                both = np.int64  # integers stay exact whatever their width
            elif np.iscomplexobj(c) or np.iscomplexobj(r):
                both = np.complex64
            else:
                both = np.float32
            o.update(candidate_dtype=c.dtype.name, compared_in=np.dtype(both).name)
            c, r = c.astype(both), r.astype(both)
        if c.dtype == np.bool_ or np.issubdtype(c.dtype, np.integer):
            bad = c != r
            n_bad = int(bad.sum())
            o.update(ok=n_bad == 0, mismatches=n_bad, exact=True)
            if n_bad:
                idx = np.unravel_index(int(np.argmax(bad)), bad.shape)
                o["first_mismatch"] = {"index": [int(k) for k in idx],
                                       "candidate": c[idx].item(), "reference": r[idx].item()}
                if res["ok"]:
                    res.update(ok=False, kind="mismatch",
                               message=f"output {i}: {n_bad} of {c.size} elements differ (exact compare)")
            continue
        rtol, atol = tolerances_for(r.dtype, task_tol, plat)
        cdt = np.complex128 if np.iscomplexobj(r) else np.float64
        cf = c.astype(cdt)
        rf = r.astype(cdt)
        rfin = np.isfinite(rf)
        cfin = np.isfinite(cf)
        scale = max(1.0, float(np.max(np.abs(rf[rfin])))) if rfin.any() else 1.0
        atol_eff = atol * scale
        nonfinite = rfin & ~cfin
        special_bad = ~rfin & ~((np.isnan(rf) & np.isnan(cf)) | (rf == cf))
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(cf - rf)
            both = rfin & cfin
            tol_bad = both & (err > atol_eff + rtol * np.abs(rf))
        max_abs = float(np.max(err[both])) if both.any() else 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = err[both] / np.maximum(np.abs(rf[both]), atol_eff if atol_eff > 0 else 1e-30)
        max_rel = float(np.max(rel)) if rel.size else 0.0
        n_nonfinite = int(nonfinite.sum())
        n_bad = int(tol_bad.sum()) + int(special_bad.sum())
        o.update(ok=(n_bad + n_nonfinite) == 0, rtol=rtol, atol=atol, atol_effective=atol_eff,
                 max_abs_error=_finite_or_none(max_abs), max_rel_error=_finite_or_none(max_rel),
                 mismatches=n_bad, nonfinite=n_nonfinite)
        bad = nonfinite | tol_bad | special_bad
        if bad.any():
            idx = np.unravel_index(int(np.argmax(bad)), bad.shape)
            o["first_mismatch"] = {"index": [int(k) for k in idx],
                                   "candidate": _num(c[idx]), "reference": _num(r[idx])}
        if c.size > 1 and r.size > 1:
            cc = cf[cfin]
            if cc.size == c.size and np.all(cc == cc.flat[0]) and not np.all(rf[rfin] == rf[rfin].flat[0]):
                o["candidate_constant"] = True
        if res["ok"] and n_nonfinite:
            res.update(ok=False, kind="nonfinite",
                       message=(f"output {i}: {n_nonfinite} of {c.size} elements are NaN/Inf where the "
                                f"reference is finite (unwritten or poisoned output?)"))
        elif res["ok"] and n_bad:
            res.update(ok=False, kind="mismatch",
                       message=(f"output {i}: {n_bad} of {c.size} elements outside rtol={rtol:g}, "
                                f"atol={atol:g} (x{scale:.3g} output scale); max abs error {max_abs:.4g}"))
    return res


def _finite_or_none(x: float):
    return x if math.isfinite(x) else None


def _num(v):
    v = np.asarray(v).item()
    if isinstance(v, complex):
        return [v.real, v.imag]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


# ---------------------------------------------------------------------------
# Timing.

DEVICE_TIMING = {"warmup": 3, "min_runs": 20, "min_seconds": 1.0, "max_runs": 10000, "max_seconds": 10.0}
INTERPRET_TIMING = {"warmup": 1, "min_runs": 5, "min_seconds": 0.1, "max_runs": 200, "max_seconds": 3.0}


def timing_config(req_cfg, mode: RunMode) -> dict:
    base = dict(DEVICE_TIMING if mode.time_kind == "device" else INTERPRET_TIMING)
    if isinstance(req_cfg, dict):
        for k, default in list(base.items()):
            if req_cfg.get(k) is not None:
                base[k] = type(default)(req_cfg[k])
    base["min_runs"] = max(1, base["min_runs"])
    base["max_runs"] = max(base["min_runs"], base["max_runs"])
    return base


def percentile(sorted_vals, q: float) -> float:
    if not sorted_vals:
        return float("nan")
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    pos = (len(sorted_vals) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def time_fn(fn, arg_sets: list[tuple[tuple, dict]], cfg: dict, cancel: C.CancelToken) -> dict:
    """Median and spread of fn over rotating input sets; every run is
    bracketed by blocking on its outputs, compile is excluded (fn is compiled).
    The loop is judge.clock's: its clock and blocking were bound when the worker
    started, out of a candidate's reach."""
    from mkworker.judge import clock
    return clock.time_fn(fn, arg_sets, cfg, cancel)
