"""Row programs: a jaxpr slice that works row by row over the last axis, re-stated as jnp code on
one block of rows (used by the rowwise template and by the attention template's softmax check).

A row program sees the reference's arrays as `lead + (n,)` (lead = the leading dims, flattened to
rows in the kernel). Every value of the slice lives in one of four domains, and each domain has a
fixed 2-D shape inside the kernel:

  row     rank len(lead)+1: (lead or 1s, n or 1) -> (rows | 1, n | 1)
  red     rank len(lead), shape == lead: a per-row value after a reduction  -> (rows, 1)
  par     a weight/bias vector shaped (n,) or (1, ..., n)                    -> (1, n)
  scalar  rank 0, or a scalar broadcast ("splat") that adopts any domain     -> a scalar

Only reductions over the last axis, elementwise ops, the broadcasts/reshapes between these
domains and dtype converts are accepted; anything else raises Unsupported with the primitive, so a
caller never emits a kernel for a slice it did not fully understand. Floating values are computed
in float32 inside the kernel (converts between float types are dropped); the caller casts at the
store.
"""

from __future__ import annotations

import math

import jax.extend.core as jcore
import jax.numpy as jnp
import numpy as np

from mkworker.generate import common as G


class Unsupported(Exception):
    """A part of the slice is outside what row programs cover; `primitive` names it."""

    def __init__(self, message: str, primitive: str | None = None):
        super().__init__(message)
        self.message = message
        self.primitive = primitive


# Elementwise primitives and their jnp text ({0}, {1}, ... are the operands).
UNARY = {
    "neg": "-{0}", "exp": "jnp.exp({0})", "exp2": "jnp.exp2({0})", "log": "jnp.log({0})",
    "log1p": "jnp.log1p({0})", "expm1": "jnp.expm1({0})", "tanh": "jnp.tanh({0})",
    "logistic": "jax.nn.sigmoid({0})", "sqrt": "jnp.sqrt({0})", "rsqrt": "jax.lax.rsqrt({0})",
    "cbrt": "jnp.cbrt({0})", "abs": "jnp.abs({0})", "sign": "jnp.sign({0})",
    "floor": "jnp.floor({0})", "ceil": "jnp.ceil({0})", "erf": "jax.lax.erf({0})",
    "erfc": "jax.lax.erfc({0})", "sin": "jnp.sin({0})", "cos": "jnp.cos({0})",
    "tan": "jnp.tan({0})", "is_finite": "jnp.isfinite({0})", "not": "jnp.logical_not({0})",
    "square": "jnp.square({0})", "reciprocal": "1.0 / {0}",
}
BINARY = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "max": "jnp.maximum({0}, {1})",
    "min": "jnp.minimum({0}, {1})", "pow": "jnp.power({0}, {1})", "atan2": "jnp.arctan2({0}, {1})",
    "rem": "jax.lax.rem({0}, {1})", "ge": "{0} >= {1}", "gt": "{0} > {1}", "le": "{0} <= {1}",
    "lt": "{0} < {1}", "eq": "{0} == {1}", "ne": "{0} != {1}", "and": "{0} & {1}",
    "or": "{0} | {1}", "xor": "{0} ^ {1}", "nextafter": "jnp.nextafter({0}, {1})",
}
IDENTITY = ("stop_gradient", "copy", "copy_p", "reduce_precision", "optimization_barrier")
REDUCTIONS = {"reduce_sum": "jnp.sum", "reduce_max": "jnp.max", "reduce_min": "jnp.min",
              "reduce_prod": "jnp.prod", "argmax": "jnp.argmax", "argmin": "jnp.argmin"}
LAYOUT = ("broadcast_in_dim", "reshape", "squeeze", "expand_dims")
ROW_LENGTH_TEXTS = ("float(n)", "n", "(1.0 / n)")


def is_literal(v) -> bool:
    return isinstance(v, jcore.Literal)


class Value:
    """A jaxpr value inside the kernel: its domain, kernel shape (('rows'|1, 'n'|1) or None for
    a scalar) and the Python text that names it."""

    def __init__(self, domain: str, rep, text: str, dtype, perm=None):
        self.domain = domain
        self.rep = rep
        self.text = text
        self.dtype = dtype
        # Which of the program's leading axes each leading dim of the value runs along (only
        # tracked with lead_perm_free; None = in order).
        self.perm = perm


def kernel_dtype(dtype):
    """Floats are computed in float32 in the kernel; other dtypes stay."""
    dt = np.dtype(dtype)
    return np.dtype(np.float32) if jnp.issubdtype(dt, np.floating) else dt


class RowProgram:
    """Analyses and emits one row-local slice.

    lead, n      the logical leading dims and the row length
    inputs       {var: (domain, text)} for the slice's inputs (text = the loaded block's name)
    literal_text callable(value, dtype) -> text or None (a static argument's name, `n`, ...)
    """

    def __init__(self, lead, n: int, literal_text=None, lead_perm_free: bool = False):
        self.lead = tuple(int(d) for d in lead)
        # With lead_perm_free, transposes of the leading axes are accepted (the rows are
        # reordered, each row is still one row: jax.nn.dot_product_attention transposes mid-
        # softmax); each value's order of the leading axes is tracked, and values combined
        # elementwise must agree on it. The caller maps the result's rows back with `perm`.
        self.lead_perm_free = lead_perm_free
        self.n = int(n)
        self.values: dict = {}
        self.lines: list[str] = []
        self.literal_text = literal_text
        self.used_n = False
        self.used_rows = False
        self.reductions: list[str] = []
        self.primitives: list[str] = []
        self._counter = 0
        self._row_context = False

    # -- naming
    def fresh(self) -> str:
        self._counter += 1
        return f"t{self._counter}"

    def bind_input(self, var, domain: str, text: str):
        rep = self.rep_for(domain, tuple(var.aval.shape))
        perm = tuple(range(len(self.lead))) if self.lead_perm_free and domain == "row" else None
        self.values[var] = Value(domain, rep, text, var.aval.dtype, perm)

    # -- domains
    @property
    def rank(self) -> int:
        return len(self.lead) + 1

    def same_lead(self, lead) -> bool:
        lead = tuple(lead)
        if self.lead_perm_free:  # the order is checked through the tracked permutations
            return sorted(lead) == sorted(self.lead)
        return lead == self.lead

    def rep_for(self, domain: str, shape):
        if domain == "scalar":
            return None
        if domain == "red":
            return ("rows", 1)
        if domain == "par":
            return (1, "n") if shape and shape[-1] == self.n else (1, 1)
        lead, last = shape[:-1], shape[-1]
        rows = "rows" if self.same_lead(lead) else 1
        if rows == 1 and any(d != 1 for d in lead):
            raise Unsupported(f"a value of shape {shape} mixes per-row and broadcast leading dims")
        if last not in (self.n, 1):
            raise Unsupported(f"a value of shape {shape} does not have the row length {self.n}")
        return (rows, "n" if last == self.n and self.n != 1 else 1)

    def domains_for_shape(self, shape) -> list[str]:
        """The domains an input of this shape could be in (more than one = ambiguous)."""
        shape = tuple(int(d) for d in shape)
        out = []
        if not shape:
            return ["scalar"]
        if len(shape) == self.rank:
            try:
                rep = self.rep_for("row", shape)
                out.append("row" if rep[0] == "rows" else "par")
            except Unsupported:
                pass
        if self.same_lead(shape):
            out.append("red")
        if shape[-1] == self.n and all(d == 1 for d in shape[:-1]) and len(shape) < self.rank:
            out.append("par")
        return out

    # -- literals
    def lit(self, v) -> str:
        val = np.asarray(v.val)
        if val.shape != ():
            raise Unsupported("a non-scalar literal")
        py = val.item()
        if self.literal_text is not None:
            t = self.literal_text(py, val.dtype)
            if t in ROW_LENGTH_TEXTS and self._row_context:
                t = None  # next to whole rows a literal is a constant, not the row length
            if t is not None:
                if t in ROW_LENGTH_TEXTS:
                    self.used_n = True
                return t
        return G.literal(py)

    def operand(self, v) -> Value:
        if is_literal(v):
            return Value("scalar", None, self.lit(v), v.aval.dtype)
        if v not in self.values:
            raise Unsupported("the slice reads a value it was not given")
        return self.values[v]

    # -- emission
    def emit(self, eqn):
        name = eqn.primitive.name
        if name not in self.primitives:
            self.primitives.append(name)
        # The row length as a literal is only read as such next to per-row values (a mean's or
        # a variance's divisor), never next to values that span the row.
        self._row_context = any(not is_literal(v) and v in self.values
                                and self.values[v].rep is not None and self.values[v].rep[1] == "n"
                                for v in eqn.invars)
        ops = [self.operand(v) for v in eqn.invars]
        out = eqn.outvars[0]
        shape = tuple(int(d) for d in out.aval.shape)
        if name in IDENTITY:
            self.values[out] = ops[0]
            return
        if name == "convert_element_type":
            self._convert(ops[0], out)
            return
        if name in UNARY or name in BINARY or name in ("div", "integer_pow", "select_n", "clamp",
                                                        "round"):
            self._elementwise(name, eqn, ops, out, shape)
            return
        if name in REDUCTIONS:
            self._reduce(name, eqn, ops[0], out, shape)
            return
        if name in LAYOUT:
            self._layout(name, eqn, ops[0], out, shape)
            return
        if name == "transpose" and self.lead_perm_free and ops[0].perm is not None:
            perm = tuple(int(p) for p in eqn.params["permutation"])
            op = ops[0]
            if op.domain == "row":
                if perm[-1] != len(perm) - 1:
                    raise Unsupported("a transpose that moves the row axis", name)
                perm = perm[:-1]
            new = tuple(op.perm[p] for p in perm)
            self.values[out] = Value(op.domain, op.rep, op.text, out.aval.dtype, new)
            return
        raise Unsupported(f"`{name}` is not a row-wise operation", name)

    def _assign(self, out, domain, rep, expr, perm=None):
        t = self.fresh()
        self.lines.append(f"{t} = {expr}")
        self.values[out] = Value(domain, rep, t, out.aval.dtype, perm)

    def _convert(self, op: Value, out):
        new = kernel_dtype(out.aval.dtype)
        if kernel_dtype(op.dtype) == new:
            self.values[out] = Value(op.domain, op.rep, op.text, out.aval.dtype, op.perm)
            return
        if op.domain == "scalar" and op.rep is None and not op.text.isidentifier():
            expr = f"jnp.asarray({op.text}, {G.dtype_code(new)})"
        else:
            expr = f"({op.text}).astype({G.dtype_code(new)})"
        self._assign(out, op.domain, op.rep, expr, op.perm)

    def _elementwise(self, name, eqn, ops, out, shape):
        doms = {o.domain for o in ops if o.domain != "scalar"}
        if len(doms) > 1 and doms <= {"row", "par", "red"} and len(shape) == self.rank:
            # A per-row value with a parameter row (1, n) or a per-row statistic (rows, 1), as in
            # `x * rsqrt(ms + eps) * w` with w of shape (1, n): lax broadcasts the size-1 dims, and
            # so does jnp on the loaded blocks inside the kernel.
            doms = {"row"}
        if len(doms) > 1:
            raise Unsupported(f"`{name}` combines values of different kinds ({', '.join(sorted(doms))})",
                              name)
        # Only scalars (and splats: scalars broadcast to a shape) in: the result is a splat too,
        # which jnp broadcasting puts in whatever domain it meets.
        domain = doms.pop() if doms else "scalar"
        rep = self.rep_for(domain, shape) if domain != "scalar" else None
        perms = {o.perm for o in ops if o.domain in ("row", "red") and o.perm is not None}
        if len(perms) > 1:
            raise Unsupported(f"`{name}` combines rows taken in different orders", name)
        perm = perms.pop() if perms else None
        t = [o.text for o in ops]
        if name in UNARY:
            expr = UNARY[name].format(*t)
        elif name in BINARY:
            expr = BINARY[name].format(*t)
        elif name == "div":
            integer = not jnp.issubdtype(np.dtype(out.aval.dtype), np.inexact)
            expr = f"jax.lax.div({t[0]}, {t[1]})" if integer else f"{t[0]} / {t[1]}"
        elif name == "integer_pow":
            y = int(eqn.params["y"])
            expr = f"{t[0]} * {t[0]}" if y == 2 else f"jax.lax.integer_pow({t[0]}, {y})"
        elif name == "select_n":
            if len(t) != 3:
                raise Unsupported("select_n with more than two cases", name)
            expr = f"jnp.where({t[0]}, {t[2]}, {t[1]})"
        elif name == "clamp":
            expr = f"jnp.clip({t[1]}, {t[0]}, {t[2]})"
        else:  # round
            method = int(eqn.params.get("rounding_method", 0))
            expr = f"jax.lax.round({t[0]}, jax.lax.RoundingMethod({method}))"
        self._assign(out, domain, rep, f"({expr})" if domain == "scalar" else expr, perm)

    def _reduce(self, name, eqn, op: Value, out, shape):
        axes = tuple(int(a) for a in eqn.params.get("axes", ()))
        last = self.rank - 1
        if op.domain != "row" or axes != (last,):
            raise Unsupported(f"`{name}` over axes {axes} of a {op.domain} value: only reductions over "
                              f"the last axis of the rows are covered", name)
        if op.rep[0] != "rows" or not self.same_lead(shape):
            raise Unsupported(f"`{name}` of a value that is not per-row", name)
        fn = REDUCTIONS[name]
        self.reductions.append(name)
        src = op.text
        if op.rep[1] == 1 and self.n != 1:
            src = f"jnp.broadcast_to({src}, (rows, n))"
            self.used_rows = self.used_n = True
        expr = f"{fn}({src}, axis=-1, keepdims=True)"
        if name in ("argmax", "argmin"):
            expr += f".astype({G.dtype_code(out.aval.dtype)})"
        self._assign(out, "red", ("rows", 1), expr, op.perm)

    def _layout(self, name, eqn, op: Value, out, shape):
        if name == "broadcast_in_dim":
            bdims = tuple(int(d) for d in eqn.params["broadcast_dimensions"])
            in_shape = tuple(int(d) for d in eqn.invars[0].aval.shape)
            if op.domain == "scalar":
                if len(shape) == self.rank:
                    rep = self.rep_for("row", shape)
                    self._assign(out, "row", rep, f"jnp.full({self._shape_text(rep)}, {op.text})")
                else:
                    self.values[out] = op
                return
            if len(shape) != self.rank:
                raise Unsupported(f"broadcast_in_dim to rank {len(shape)}", name)
            if op.domain == "red":
                ok = bdims == tuple(range(len(self.lead)))
            elif op.domain == "par":
                ok = (bdims and bdims[-1] == self.rank - 1
                      and all(in_shape[i] == 1 for i in range(len(in_shape) - 1)))
            else:
                ok = bdims == tuple(range(self.rank))
            if not ok:
                raise Unsupported(f"broadcast_in_dim{bdims} of a {op.domain} value is not a row "
                                  f"broadcast", name)
        elif len(shape) not in (self.rank, len(self.lead)) and op.domain != "par":
            raise Unsupported(f"`{name}` to shape {shape}", name)
        domain = "row" if len(shape) == self.rank else self._lower_rank_domain(op, shape, name)
        rep = self.rep_for(domain, shape)
        if domain == "row" and rep[0] == 1 and op.domain in ("par", "row") and op.rep[0] == 1:
            pass
        elif domain == "row" and op.domain == "red" and rep[0] != "rows":
            raise Unsupported(f"`{name}` drops the rows of a per-row value", name)
        perm = op.perm if domain in ("row", "red") else None
        if rep == op.rep:
            self.values[out] = Value(domain, rep, op.text, out.aval.dtype, perm)
            return
        if name != "broadcast_in_dim" or not self._widens(op.rep, rep):
            raise Unsupported(f"`{name}` from shape {tuple(eqn.invars[0].aval.shape)} to {shape} "
                              f"changes the rows", name)
        self._assign(out, domain, rep, f"jnp.broadcast_to({op.text}, {self._shape_text(rep)})",
                     perm)

    def _lower_rank_domain(self, op: Value, shape, name):
        if self.same_lead(shape) and op.domain in ("red", "row") and op.rep[0] == "rows":
            return "red"
        if op.domain == "par" and shape and shape[-1] == self.n and all(d == 1 for d in shape[:-1]):
            return "par"
        raise Unsupported(f"`{name}` to shape {shape} leaves the row layout", name)

    @staticmethod
    def _widens(a, b) -> bool:
        return all(x == y or x == 1 for x, y in zip(a, b))

    def _shape_text(self, rep) -> str:
        if "rows" in rep:
            self.used_rows = True
        if "n" in rep:
            self.used_n = True
        return "(" + ", ".join(str(d) for d in rep) + ")"

    def store_text(self, v, out_rep) -> str:
        """Text of `v` shaped to the output block (rows, n|1)."""
        val = self.operand(v)
        if val.rep == out_rep:
            return val.text
        return f"jnp.broadcast_to({val.text}, {self._shape_text(out_rep)})"


def reachable_eqns(jaxpr, outvars=None) -> list:
    """Equations the outputs depend on, in program order (dead code, such as the unused `sign`
    of logsumexp, is left out)."""
    producer = {}
    for e in jaxpr.eqns:
        for o in e.outvars:
            producer[o] = e
    need = set()
    stack = [v for v in (outvars if outvars is not None else jaxpr.outvars) if not is_literal(v)]
    seen = set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        e = producer.get(v)
        if e is None:
            continue
        need.add(id(e))
        stack.extend(x for x in e.invars if not is_literal(x))
    return [e for e in jaxpr.eqns if id(e) in need]


def f32_equal(a, b) -> bool:
    try:
        return bool(np.float32(a) == np.float32(b))
    except (TypeError, ValueError, OverflowError):
        return False


def shape_literal_text(value, dtype, n: int, statics: dict):
    """Text for a scalar literal: the row length `n` (or 1 / n) when it equals it (jnp.mean
    divides by the row length: the module must follow a smaller instance), a static argument's
    name when it equals that value, else None (the literal itself)."""
    if isinstance(value, bool):
        return None
    floating = jnp.issubdtype(np.dtype(dtype), np.floating)
    if n > 2 and isinstance(value, (int, float)) and not math.isnan(value) and value == n:
        return "float(n)" if floating else "n"
    if n > 2 and floating and isinstance(value, float) and f32_equal(value, 1.0 / n):
        return "(1.0 / n)"
    for name, sv in statics.items():
        if isinstance(sv, bool) or not isinstance(sv, (int, float)):
            continue
        if sv in (0, 1, 2, -1, 0.5, -0.5):
            continue
        if floating and f32_equal(value, sv) or (not floating and value == sv):
            return name
    return None
