"""Count axes of a task: input axes that only multiply the work (batch, heads, kv heads,
independent queries), told apart from feature axes by the reference's jaxpr.

Every input axis is followed through the reference program (elementwise ops, broadcasts,
reshapes, transposes, squeezes, dot_general's batch and free dims, gathers).  An axis that some
operation contracts (dot_general), reduces (reduce_*, argmax, cumsum...) or indexes (a gather's
pool axis or index vector), or that reaches an operation not modelled here (sort, ragged_dot,
slices, a loop...), is a feature axis (a convolution's batch axis is a count axis, its others
features); so is every axis it meets (an elementwise op,
a dot's batch dims, a merge by reshape), since met axes must keep equal or proportional sizes.
The rest are count axes: each one's work is independent of the others' (a query's softmax, a
sequence's pages), so fewer of them is the same computation, less often.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

ELEMENTWISE = frozenset((
    "abs", "acos", "acosh", "add", "and", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil",
    "clamp", "convert_element_type", "copy", "copy_p", "cos", "cosh", "div", "eq", "erf", "erf_inv",
    "erfc", "exp", "exp2", "expm1", "floor", "ge", "gt", "imag", "integer_pow", "is_finite", "le",
    "lgamma", "digamma", "log", "log1p", "logistic", "lt", "max", "min", "mul", "ne", "neg",
    "nextafter", "not", "or", "pow", "real", "reduce_precision", "rem", "round", "rsqrt", "select_n",
    "shift_left", "shift_right_arithmetic", "shift_right_logical", "sign", "sin", "sinh", "sqrt",
    "square", "stop_gradient", "sub", "tan", "tanh", "xor"))
_REDUCE = frozenset(("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and",
                     "reduce_or", "reduce_xor", "argmax", "argmin"))
_CUMULATIVE = frozenset(("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"))
_CALLS = ("jaxpr", "call_jaxpr", "fun_jaxpr")


class _Flow:
    """Labels per axis of every value (sets of input-axis ids) and the ids found to be features."""

    def __init__(self, poison: int):
        self.poison = poison  # the label of every axis an unmodelled op produces
        self.feature: set[int] = {poison}
        self.met: set[frozenset] = set()  # label sets joined into one axis somewhere

    def mark(self, labels):
        for s in labels:
            self.feature |= s

    def join(self, sets):
        out = frozenset().union(*sets)
        if len(out) > 1:
            self.met.add(out)
        return out

    def run(self, jaxpr, args):
        from jax.extend import core as jcore

        env = {}

        def read(v):
            if isinstance(v, jcore.Literal):
                return [frozenset()] * np.ndim(v.val)
            return env.get(v, [frozenset()] * len(getattr(v.aval, "shape", ())))

        for v, a in zip(jaxpr.invars, args):
            env[v] = a
        for eqn in jaxpr.eqns:
            ins = [read(v) for v in eqn.invars]
            outs = self._eqn(eqn, ins)
            for v, o in zip(eqn.outvars, outs):
                env[v] = o
        return [read(v) for v in jaxpr.outvars]

    def _eqn(self, eqn, ins):
        name, p = eqn.primitive.name, eqn.params
        out_ranks = [len(getattr(v.aval, "shape", ())) for v in eqn.outvars]
        sub = next((p[k] for k in _CALLS if k in p), None)
        if sub is not None and hasattr(sub, "jaxpr") and hasattr(sub.jaxpr, "eqns") and \
                len(sub.jaxpr.invars) == len(ins):
            return self.run(sub.jaxpr, ins)
        if name in ELEMENTWISE:
            # An operand's size-1 axis stretched over a longer one (`y + b.reshape(1, -1, 1, 1)`
            # with no broadcast_in_dim) meets nothing: it is the same value for every index.
            r = out_ranks[0]
            out_shape = tuple(getattr(eqn.outvars[0].aval, "shape", ()))
            shapes = [tuple(getattr(v.aval, "shape", ())) for v in eqn.invars]
            return [[self.join([x[i] for x, sh in zip(ins, shapes) if len(x) == r
                                and not (sh[i] == 1 and out_shape[i] != 1)])
                     for i in range(r)]]
        if name == "broadcast_in_dim":
            out = [frozenset()] * out_ranks[0]
            in_shape = getattr(eqn.invars[0].aval, "shape", ())
            for j, d in enumerate(p["broadcast_dimensions"]):
                if in_shape[j] == p["shape"][d]:  # a size-1 dim stretched is a new axis
                    out[d] = ins[0][j]
            return [out]
        if name == "transpose":
            return [[ins[0][j] for j in p["permutation"]]]
        if name == "squeeze":
            dims = {d % len(ins[0]) for d in p["dimensions"]}
            return [[s for i, s in enumerate(ins[0]) if i not in dims]]
        if name == "reshape" and p.get("dimensions") is None:
            return [self._reshape(tuple(eqn.invars[0].aval.shape), tuple(p["new_sizes"]), ins[0])]
        if name in _REDUCE:
            axes = set(p["axes"])
            self.mark(ins[0][a] for a in axes)
            return [[s for i, s in enumerate(ins[0]) if i not in axes]]
        if name in _CUMULATIVE:
            self.mark([ins[0][p["axis"]]])
            return [list(ins[0])]
        if name == "dot_general":
            return [self._dot(p["dimension_numbers"], ins[0], ins[1])]
        if name == "gather":
            return [self._gather(p["dimension_numbers"], ins[0], ins[1])]
        if name == "iota":
            return [[frozenset()] * out_ranks[0]]
        if name == "conv_general_dilated" and p.get("batch_group_count", 1) == 1:
            return [self._conv(p["dimension_numbers"], ins[0], ins[1], out_ranks[0])]
        # Anything else (sort, ragged_dot, slices, loops...): every axis it touches is a
        # feature axis, and so is every axis its results meet (a conv's bias).
        for x in ins:
            self.mark(x)
        return [[frozenset((self.poison,))] * r for r in out_ranks]

    def _reshape(self, old, new, labels):
        """Groups of old axes and new axes with equal products: each new axis carries the union
        of its group's labels (a split passes the labels to every part, a merge unions them)."""
        out = [frozenset()] * len(new)
        i = j = 0
        while i < len(old) or j < len(new):
            gi, gj = [i] if i < len(old) else [], [j] if j < len(new) else []
            pi = old[i] if i < len(old) else 1
            pj = new[j] if j < len(new) else 1
            i, j = i + 1, j + 1
            while pi != pj:
                if pi < pj and i < len(old):
                    pi *= old[i]
                    gi.append(i)
                    i += 1
                elif j < len(new):
                    pj *= new[j]
                    gj.append(j)
                    j += 1
                else:
                    break
            union = self.join([labels[k] for k in gi])
            for k in gj:
                out[k] = union
        return out

    def _dot(self, dims, lhs, rhs):
        (lc, rc), (lb, rb) = dims
        self.mark([lhs[a] for a in lc] + [rhs[a] for a in rc])
        out = [self.join([lhs[a], rhs[b]]) for a, b in zip(lb, rb)]
        out += [s for i, s in enumerate(lhs) if i not in set(lc) | set(lb)]
        out += [s for i, s in enumerate(rhs) if i not in set(rc) | set(rb)]
        return out

    def _conv(self, dn, lhs, rhs, rank):
        """A convolution's images are independent: the input's batch axis is the output's, every
        other axis (channels, space, the whole kernel) a feature axis."""
        lb, ob = dn.lhs_spec[0], dn.out_spec[0]
        self.mark([s for i, s in enumerate(lhs) if i != lb] + list(rhs))
        out = [frozenset((self.poison,))] * rank
        out[ob] = lhs[lb]
        return out

    def _gather(self, dn, operand, indices):
        """The pool axes a gather indexes, and the index vector, are feature axes; the output's
        batch axes carry the indices' labels, its offset axes the operand's kept axes."""
        collapsed = set(dn.collapsed_slice_dims) | set(getattr(dn, "operand_batching_dims", ()))
        self.mark([operand[a] for a in dn.start_index_map] + [indices[-1]]
                  + [operand[a] for a in getattr(dn, "operand_batching_dims", ())])
        kept = [s for i, s in enumerate(operand) if i not in collapsed]
        batch = list(indices[:-1])
        rank = len(batch) + len(kept)
        out, ki, bi = [], 0, 0
        for d in range(rank):
            if d in dn.offset_dims:
                out.append(kept[ki])
                ki += 1
            else:
                out.append(batch[bi])
                bi += 1
        return out


def count_axes(reference, args, kwargs) -> list[list[bool]] | None:
    """For each array of (args, kwargs) (tree order), whether each of its axes is a count axis
    of reference(*args, **kwargs), its statics already bound (module docstring).  Axes that
    meet (an elementwise op, a dot's batch dims, a merge by reshape) share one fate.  None when
    the reference does not trace."""
    try:
        closed = jax.make_jaxpr(reference)(*args, **kwargs)
    except Exception:  # noqa: BLE001 - the reference check reports it
        return None
    arrays = jax.tree_util.tree_leaves((args, kwargs))
    if len(arrays) != len(closed.jaxpr.invars):
        return None
    labels, n = [], 0
    for x in arrays:
        labels.append([frozenset((n + i,)) for i in range(np.ndim(x))])
        n += np.ndim(x)
    flow = _Flow(poison=n)
    flow.run(closed.jaxpr, labels)
    parent = list(range(n + 1))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for group in flow.met:
        first = find(next(iter(group)))
        for i in group:
            parent[find(i)] = first
    feature = {find(i) for i in flow.feature}
    return [[find(next(iter(s))) not in feature for s in ax] for ax in labels]


def lane_sizes(arrays) -> set[int]:
    """Last (lane) dims of floating-point arrays: never shrunk as counts."""
    return {int(x.shape[-1]) for x in arrays
            if len(getattr(x, "shape", ())) and jnp.issubdtype(x.dtype, jnp.inexact)}


def shrunk_count(d: int, factor: int) -> int:
    """A count size divided by as much of the factor as it holds, never losing a prime factor
    entirely: d / gcd(d / rad(d), F) (32 -> 4, 8 -> 2, 2 -> 2 for F = 8).  The exponent of each
    prime only falls and stays monotone in the original, so a size that divides another still
    does after shrinking (query heads stay a multiple of kv heads)."""
    rad = 1
    n, p = d, 2
    while p * p <= n:
        if n % p == 0:
            rad *= p
            while n % p == 0:
                n //= p
        p += 1
    rad *= max(1, n)
    return d // math.gcd(d // rad, factor)
