"""Index maps through a jaxpr, evaluated on samples of indices (numpy, vectorised).

The attention template must know, for an element of a score or output tensor, which element of
q, k and v it came from, whatever transposes, reshapes, head repeats (GQA) and converts the
reference put in between. Instead of an algebra of layouts, the maps are run backwards on
concrete index samples: `back(eqn, idx)` turns indices into an equation's result into indices into
its operand, and the template checks a candidate model (layout, head mapping) against the
reference on many samples. Constant-only values (causal masks built from iota, fill values) are
evaluated the same way, at the sampled indices only, so a (4096, 4096) mask broadcast to every
head is never materialised.
"""

from __future__ import annotations

import jax.extend.core as jcore
import numpy as np

# Ops that move or copy elements without changing them (the index map is exact).
LAYOUT_OPS = ("transpose", "reshape", "broadcast_in_dim", "squeeze", "expand_dims", "tile",
              "convert_element_type", "copy", "copy_p", "reduce_precision", "stop_gradient")
CONVERTS = ("convert_element_type", "copy", "copy_p", "reduce_precision", "stop_gradient")


class NotConstant(Exception):
    pass


def is_literal(v) -> bool:
    return isinstance(v, jcore.Literal)


def shape_of(v) -> tuple:
    return tuple(int(d) for d in v.aval.shape)


def back(eqn, idx: np.ndarray) -> np.ndarray:
    """Indices into operand 0 of a layout equation for indices `idx` (K x rank) into its
    result."""
    name = eqn.primitive.name
    src = shape_of(eqn.invars[0])
    if name in CONVERTS:
        return idx
    if name == "transpose":
        perm = tuple(int(p) for p in eqn.params["permutation"])
        out = np.empty_like(idx)
        for j, p in enumerate(perm):
            out[:, p] = idx[:, j]
        return out
    if name == "reshape":
        if eqn.params.get("dimensions") is not None:
            raise ValueError("reshape with dimensions")
        dst = shape_of(eqn.outvars[0])
        if idx.shape[1] == 0:
            lin = np.zeros(len(idx), dtype=np.int64)
        else:
            lin = np.ravel_multi_index(tuple(idx.T), dst)
        if not src:
            return np.zeros((len(idx), 0), dtype=np.int64)
        return np.stack(np.unravel_index(lin, src), axis=1).astype(np.int64)
    if name == "broadcast_in_dim":
        bd = tuple(int(d) for d in eqn.params["broadcast_dimensions"])
        out = np.zeros((len(idx), len(src)), dtype=np.int64)
        for k, d in enumerate(bd):
            if src[k] != 1:
                out[:, k] = idx[:, d]
        return out
    if name == "tile":
        return idx % np.array(src, dtype=np.int64)
    if name == "squeeze":
        dims = {int(d) % len(src) for d in eqn.params["dimensions"]}
        out = np.zeros((len(idx), len(src)), dtype=np.int64)
        j = 0
        for k in range(len(src)):
            if k in dims:
                continue
            out[:, k] = idx[:, j]
            j += 1
        return out
    if name == "expand_dims":
        dims = {int(d) for d in eqn.params["dimensions"]}
        keep = [j for j in range(idx.shape[1]) if j not in dims]
        return idx[:, keep]
    raise ValueError(f"{name} is not a layout op")


def operand_index(v, idx: np.ndarray) -> np.ndarray:
    """Indices into an elementwise operand that may broadcast size-1 dims (or be a scalar)."""
    shape = shape_of(v)
    if not shape:
        return np.zeros((len(idx), 0), dtype=np.int64)
    out = idx.copy()
    for k, s in enumerate(shape):
        if s == 1:
            out[:, k] = 0
    return out


class Graph:
    """Producers, consumers and input dependence of one flat jaxpr."""

    def __init__(self, closed_jaxpr):
        self.jaxpr = closed_jaxpr.jaxpr
        self.consts = dict(zip(self.jaxpr.constvars, closed_jaxpr.consts))
        self.producer = {}
        self.consumers: dict = {}
        for e in self.jaxpr.eqns:
            for o in e.outvars:
                self.producer[o] = e
            for v in e.invars:
                if not is_literal(v):
                    self.consumers.setdefault(v, []).append(e)
        for v in self.jaxpr.outvars:
            if not is_literal(v):
                self.consumers.setdefault(v, []).append(None)  # "used as an output"
        self.depends = {}  # var -> frozenset of input vars it depends on
        for v in self.jaxpr.invars:
            self.depends[v] = frozenset([v])
        for v in self.jaxpr.constvars:
            self.depends[v] = frozenset()
        for e in self.jaxpr.eqns:
            dep = frozenset().union(*[self.deps(v) for v in e.invars]) if e.invars else frozenset()
            for o in e.outvars:
                self.depends[o] = dep

    def deps(self, v) -> frozenset:
        if is_literal(v):
            return frozenset()
        return self.depends.get(v, frozenset())

    def is_const(self, v) -> bool:
        return not self.deps(v)

    def depends_on_var(self, v, target) -> bool:
        """Whether `v` is computed from `target` (any var), by walking producers."""
        seen, stack = set(), [v]
        while stack:
            x = stack.pop()
            if x is target:
                return True
            if is_literal(x) or x in seen:
                continue
            seen.add(x)
            e = self.producer.get(x)
            if e is not None:
                stack.extend(e.invars)
        return False

    # -- constant values at sampled indices
    def value_at(self, v, idx: np.ndarray) -> np.ndarray:
        """The values of a constant-only var at indices `idx` (K x rank)."""
        if is_literal(v):
            return np.broadcast_to(np.asarray(v.val), (len(idx),))
        if v in self.consts:
            arr = np.asarray(self.consts[v])
            return arr[tuple(idx.T)] if arr.ndim else np.broadcast_to(arr, (len(idx),))
        e = self.producer.get(v)
        if e is None:
            raise NotConstant("an input")
        name = e.primitive.name
        if name == "iota":
            dim = int(e.params["dimension"])
            return idx[:, dim].astype(np.dtype(e.params["dtype"]))
        if name == "concatenate":  # jnp.linspace's endpoint, a table of constants
            dim = int(e.params["dimension"])
            out = np.zeros(len(idx), dtype=np.dtype(e.outvars[0].aval.dtype))
            start = 0
            for x in e.invars:
                size = shape_of(x)[dim]
                sel = (idx[:, dim] >= start) & (idx[:, dim] < start + size)
                if sel.any():
                    sub = idx[sel].copy()
                    sub[:, dim] -= start
                    out[sel] = self.value_at(x, sub)
                start += size
            return out
        if name in LAYOUT_OPS:
            vals = self.value_at(e.invars[0], back(e, idx))
            if name == "convert_element_type":
                vals = vals.astype(np.dtype(e.params["new_dtype"]))
            return vals
        fn = _ELEMENTWISE.get(name)
        if fn is None:
            raise NotConstant(name)
        args = [self.value_at(x, operand_index(x, idx)) for x in e.invars]
        return np.asarray(fn(e, *args))


def _select(e, pred, *cases):
    out = np.array(cases[0], copy=True)
    for k in range(1, len(cases)):
        out = np.where(np.asarray(pred).astype(np.int64) == k, cases[k], out)
    return out


_ELEMENTWISE = {
    "add": lambda e, a, b: a + b, "sub": lambda e, a, b: a - b, "mul": lambda e, a, b: a * b,
    "max": lambda e, a, b: np.maximum(a, b), "min": lambda e, a, b: np.minimum(a, b),
    "neg": lambda e, a: -a, "ge": lambda e, a, b: a >= b, "gt": lambda e, a, b: a > b,
    "le": lambda e, a, b: a <= b, "lt": lambda e, a, b: a < b, "eq": lambda e, a, b: a == b,
    "ne": lambda e, a, b: a != b, "and": lambda e, a, b: a & b, "or": lambda e, a, b: a | b,
    "not": lambda e, a: ~a, "select_n": _select,
    # Scalar constants computed in the reference (jnp.sqrt(head_dim), 1 / x, ...).
    "div": lambda e, a, b: (a / b) if np.issubdtype(np.asarray(a).dtype, np.inexact)
    else np.fix(a / b).astype(np.asarray(a).dtype),
    "sqrt": lambda e, a: np.sqrt(a), "rsqrt": lambda e, a: 1 / np.sqrt(a),
    "exp": lambda e, a: np.exp(a), "log": lambda e, a: np.log(a), "abs": lambda e, a: np.abs(a),
    "exp2": lambda e, a: np.exp2(a), "log1p": lambda e, a: np.log1p(a),
    "expm1": lambda e, a: np.expm1(a),
    "integer_pow": lambda e, a: a ** int(e.params["y"]), "pow": lambda e, a, b: a ** b,
}
