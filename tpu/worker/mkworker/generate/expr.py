"""Re-stating a reference's elementwise jaxpr equations as jnp code on loaded block values.

The fused epilogue of a matmul and the body of an elementwise kernel are the reference's own
equations, written out again on the values a kernel holds: the tile of the matmul result, the
tiles of extra operands (bias rows, residuals, scale columns) and scalars.

Every value is seen in its *expanded* form: the output's rank, each dim either the full size or
1 (a bias (N,) broadcast along rows is (1, N); a row statistic is (M, 1)). In a kernel such a
value is a block whose full dims are tiled and whose size-1 dims stay 1, so numpy broadcasting in
the emitted jnp code does exactly what the reference's broadcast_in_dim did. Row reductions
(over the last axis only, with keepdims) are emitted when the caller allows them (the whole row
is then in the tile).

Used by generate.templates.matmul and generate.templates.elementwise; usable by other templates.
"""

from __future__ import annotations

import math

import numpy as np

from mkworker.generate import common as G
from mkworker.generate.common import NoTemplate

# primitive -> format string on operand code ({0}, {1}, ...). Float-only forms are marked so that
# integer operands use lax's exact semantics instead.
UNARY = {
    "neg": "-{0}",
    "exp": "jnp.exp({0})",
    "exp2": "jnp.exp2({0})",
    "log": "jnp.log({0})",
    "log1p": "jnp.log1p({0})",
    # Mosaic has no expm1/erfc/cbrt/sign lowering (JAX 0.10): they are re-stated with ops it has.
    "expm1": "(jnp.exp({0}) - 1.0)",
    "tanh": "jnp.tanh({0})",
    "logistic": "jax.nn.sigmoid({0})",
    "sqrt": "jnp.sqrt({0})",
    "rsqrt": "jax.lax.rsqrt({0})",
    "cbrt": "(jnp.where({0} < 0, -1.0, 1.0) * jnp.power(jnp.abs({0}), 1.0 / 3.0))",
    "abs": "jnp.abs({0})",
    "sign": "jnp.where({0} > 0, 1, jnp.where({0} < 0, -1, {0}))",
    "floor": "jnp.floor({0})",
    "ceil": "jnp.ceil({0})",
    "sin": "jnp.sin({0})",
    "cos": "jnp.cos({0})",
    "tan": "jnp.tan({0})",
    "erf": "jax.lax.erf({0})",
    "erfc": "(1.0 - jax.lax.erf({0}))",
    "square": "jnp.square({0})",
    "is_finite": "jnp.isfinite({0})",
    "not": "~{0}",
    "reciprocal": "1.0 / {0}",
}
BINARY_FLOAT = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "div": "{0} / {1}",
    "pow": "jnp.power({0}, {1})",
}
BINARY = {
    "max": "jnp.maximum({0}, {1})",
    "min": "jnp.minimum({0}, {1})",
    "eq": "{0} == {1}",
    "ne": "{0} != {1}",
    "lt": "{0} < {1}",
    "le": "{0} <= {1}",
    "gt": "{0} > {1}",
    "ge": "{0} >= {1}",
    "and": "{0} & {1}",
    "or": "{0} | {1}",
    "xor": "{0} ^ {1}",
    "atan2": "jnp.arctan2({0}, {1})",
}
# Integer forms with lax semantics (truncating division, C remainder).
_BINARY_INT = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "div": "jax.lax.div({0}, {1})",
    "rem": "jax.lax.rem({0}, {1})",
}
_IDENTITY = ("copy", "copy_p", "stop_gradient", "optimization_barrier", "reduce_precision")
_LAYOUT = ("broadcast_in_dim", "reshape", "squeeze", "expand_dims")
_ROW_REDUCTIONS = {"reduce_sum": "jnp.sum", "reduce_max": "jnp.max", "reduce_min": "jnp.min"}

ELEMENTWISE_PRIMITIVES = tuple(sorted(
    set(UNARY) | set(BINARY_FLOAT) | set(BINARY) | set(_BINARY_INT) | set(_IDENTITY)
    | {"integer_pow", "select_n", "clamp", "convert_element_type"}))
LAYOUT_PRIMITIVES = _LAYOUT
# gather: only jnp.take_along_axis(v, idx[:, None], axis=-1) on an (M, N) value, one element
# per row (cross-entropy's target logit), re-stated as a masked row sum.
ROW_REDUCTION_PRIMITIVES = tuple(_ROW_REDUCTIONS) + ("gather",)
INDEX_PRIMITIVES = ("iota",)  # positions within the output (one-hot labels, masks)
COVERED_PRIMITIVES = (ELEMENTWISE_PRIMITIVES + LAYOUT_PRIMITIVES + ROW_REDUCTION_PRIMITIVES
                      + INDEX_PRIMITIVES)


def is_literal(v) -> bool:
    return type(v).__name__ == "Literal"


def live_eqns(jaxpr, outvars=None) -> list:
    """The equations the outputs depend on (dead code dropped), in order."""
    needed = {id(v) for v in (outvars if outvars is not None else jaxpr.outvars) if not is_literal(v)}
    keep = []
    for e in reversed(jaxpr.eqns):
        if any(id(o) in needed for o in e.outvars):
            keep.append(e)
            for v in e.invars:
                if not is_literal(v):
                    needed.add(id(v))
    return list(reversed(keep))


class Region:
    """The analysis and code of a run of elementwise equations.

    Arguments:
      eqns        the equations to re-state, in jaxpr order
      out_shape   the logical full shape every value is expanded against (e.g. (M, N))
      known       {var: code} for values the kernel already has (the matmul tile `y`)
      operands    {var: name} for jaxpr inputs that become kernel operands (loaded from refs)
      ctx         the GenContext (static argument names, constants)
      row_reduce  allow reduce_sum/max/min over the last axis (the tile holds whole rows)
    After construction: `lines` (code), `code(var)`, `expanded(var)`, `operand_vars` (the
    operands actually read, in first-use order), `statics_used`, `primitives`.
    """

    def __init__(self, eqns, *, out_shape, known, operands, ctx, row_reduce=False, consts=None,
                 tiles=None):
        self.eqns = list(eqns)
        # Where the kernel's tile sits, for iota: {"cols": (tile width, first column), "rows":
        # (tile height, first row)} as code; an axis not given cannot carry an iota.
        self.tiles = dict(tiles or {})
        self.tiles_used: set = set()
        self.out_shape = tuple(int(d) for d in out_shape)
        self.rank = len(self.out_shape)
        self.known = dict(known)
        self.operands = dict(operands)
        self.ctx = ctx
        self.row_reduce = row_reduce
        self.consts = dict(consts or {})  # constvar -> numpy value (scalars only are usable)
        self.align: dict = {}
        self.lines: list[str] = []
        self.names: dict = {}
        self.operand_vars: list = []
        self.statics_used: list[str] = []
        self.primitives: list[str] = []
        self.reduced: set = set()  # ids of vars that derive from a row reduction
        self.helpers: set = set()  # module-level helpers the code calls ("erf": _erf, GPU form)
        self._held = {}
        self._counter = 0
        self._take_along_rows()
        self._check_primitives()
        self._propagate()
        self._emit()

    # -- analysis -------------------------------------------------------------------------
    def _take_along_rows(self):
        """Recognises take_along_axis over the row: gather(v (M, N), reshape(idx (M, 1)) ->
        (M, 1, 1)) with batching dim 0 and index dim 1. The reshape becomes an alias of the
        (M, 1) index, and the gather a row operation (see _emit_gather)."""
        self.gathers = {}
        producers = {id(o): e for e in self.eqns for o in e.outvars}
        drop = set()
        for e in self.eqns:
            if e.primitive.name != "gather":
                continue
            if not self.row_reduce or self.rank != 2:
                continue  # _check_primitives refuses it
            src, idx = e.invars
            dn = e.params["dimension_numbers"]
            ok = (tuple(dn.offset_dims) == () and tuple(dn.collapsed_slice_dims) == (1,)
                  and tuple(dn.start_index_map) == (1,)
                  and tuple(getattr(dn, "operand_batching_dims", ())) == (0,)
                  and tuple(getattr(dn, "start_indices_batching_dims", ())) == (0,)
                  and tuple(e.params["slice_sizes"]) == (1, 1)
                  and len(src.aval.shape) == 2 and tuple(src.aval.shape) == self.out_shape
                  and tuple(idx.aval.shape) == (self.out_shape[0], 1, 1)
                  and tuple(e.outvars[0].aval.shape) == (self.out_shape[0], 1))
            prod = producers.get(id(idx)) if not is_literal(idx) else None
            if not ok or prod is None or prod.primitive.name != "reshape" or \
                    tuple(prod.invars[0].aval.shape) != (self.out_shape[0], 1):
                raise NoTemplate("a gather that is not take_along_axis over the output row is "
                                 "not covered", ["gather"])
            mode = str(e.params.get("mode", ""))
            self.gathers[id(e)] = (prod.invars[0], "FILL" in mode.upper())
            drop.add(id(prod))
        if drop:
            users = [x for x in self.eqns if id(x) not in drop
                     for v in x.invars if not is_literal(v)
                     and any(id(v) == id(p.outvars[0]) for p in self.eqns if id(p) in drop)]
            if any(x.primitive.name != "gather" for x in users):
                raise NoTemplate("a gather index is used elsewhere; not covered", ["gather"])
            self.eqns = [x for x in self.eqns if id(x) not in drop]

    def _emit_gather(self, e):
        """One element per row, where the row's index points: a masked sum over the whole row
        (the tile holds it). FILL_OR_DROP gives NaN for an index outside the row, as XLA does."""
        src = e.invars[0]
        idx_var, fill = self.gathers[id(e)]
        v = self._widened(src)
        idx = self.code(idx_var)
        self.uses_row_len = True
        hit = self._new("hit")
        self.lines.append(f"{hit} = jax.lax.broadcasted_iota(jnp.int32, ({v}.shape[0], row_len), 1)"
                          f" == {idx}")
        expr = f"jnp.sum(jnp.where({hit}, {v}, 0), axis=-1, keepdims=True)"
        if fill:
            picked = self._new()
            self.lines.append(f"{picked} = {expr}")
            expr = f"jnp.where(({idx} >= 0) & ({idx} < row_len), {picked}, jnp.nan)"
        h = self.held(src)
        self._assign(e, expr, (h[0], False))
        self.reduced.add(id(e.outvars[0]))

    def _widened(self, v) -> str:
        """Code for `v` spanning the whole row (a narrow broadcast is widened)."""
        c = self.code(v)
        h = self.held(v)
        if self.expanded(v)[-1] > 1 and not h[-1]:
            rows = f"{c}.shape[0]" if self.rank >= 2 and h[-2] else "1"
            self.uses_row_len = True
            return f"jnp.broadcast_to({c}, ({rows}, row_len))"
        return c

    def _check_primitives(self):
        missing = []
        for e in self.eqns:
            name = e.primitive.name
            if name not in self.primitives:
                self.primitives.append(name)
            ok = name in ELEMENTWISE_PRIMITIVES or name in _LAYOUT or name == "iota" or (
                self.row_reduce and name in _ROW_REDUCTIONS) or id(e) in self.gathers
            if not ok and name not in missing:
                missing.append(name)
        if missing:
            raise NoTemplate(f"the fused stage uses {', '.join(missing)}, which the elementwise "
                             "emitter does not cover", missing)

    def _rank(self, v) -> int:
        return len(getattr(v.aval, "shape", ()))

    def _set(self, v, a, eqn) -> bool:
        if is_literal(v) or self._rank(v) == 0:
            return False
        a = tuple(a)
        old = self.align.get(id(v))
        if old is None:
            self.align[id(v)] = a
            return True
        # Only dims of size > 1 have a place; a size-1 dim may sit on any axis.
        shape = v.aval.shape
        if [x for x, s in zip(old, shape) if s != 1] != [x for x, s in zip(a, shape) if s != 1]:
            raise NoTemplate(f"{eqn.primitive.name}: a value is broadcast along two different axes "
                             f"({old} and {a}); the emitter cannot place it in one tile",
                             [eqn.primitive.name])
        return False

    def _propagate(self):
        """Which output axes each dim of each value runs along (its alignment).
        Values of the output's rank run along the output's axes; lower-rank values get theirs
        from the broadcast_in_dim that widens them, from the row reduction that made them, or
        from an elementwise sibling."""
        ident = tuple(range(self.rank))
        for v in list(self.known) + list(self.operands):
            if self._rank(v) == self.rank:
                self.align[id(v)] = ident
        for e in self.eqns:
            for v in list(e.invars) + list(e.outvars):
                if not is_literal(v) and self._rank(v) == self.rank:
                    self.align[id(v)] = ident
        changed = True
        rounds = 0
        while changed and rounds < 4 * len(self.eqns) + 4:
            changed = False
            rounds += 1
            for e in self.eqns:
                changed |= self._propagate_one(e)
        for e in self.eqns:
            vals = list(e.invars) + list(e.outvars)
            if id(e) in self.gathers:
                vals = [e.invars[0], self.gathers[id(e)][0], e.outvars[0]]
            for v in vals:
                if is_literal(v) or self._rank(v) == 0:
                    continue
                if id(v) not in self.align:
                    raise NoTemplate(f"{e.primitive.name}: cannot tell which output axes a "
                                     f"{G.shape_text(v.aval.shape)} value runs along",
                                     [e.primitive.name])
                self._check_expanded(v, e)

    def _propagate_one(self, e) -> bool:
        name = e.primitive.name
        if id(e) in self.gathers:
            return False  # its row value and (M, 1) index run along the output's own axes
        out = e.outvars[0]
        changed = False
        if name == "broadcast_in_dim":
            src = e.invars[0]
            dims = tuple(e.params["broadcast_dimensions"])
            oa = self.align.get(id(out))
            if oa is not None and not is_literal(src) and self._rank(src) > 0:
                changed |= self._set(src, [oa[d] for d in dims], e)
            return changed
        if name in ("reshape", "squeeze", "expand_dims"):
            src = e.invars[0]
            mapping = _size_one_mapping(src.aval.shape, out.aval.shape)
            if mapping is None:
                raise NoTemplate(f"{name} {G.shape_text(src.aval.shape)} -> "
                                 f"{G.shape_text(out.aval.shape)} changes more than size-1 dims; "
                                 "the emitter cannot re-state it on tiles", [name])
            oa = self.align.get(id(out))
            sa = self.align.get(id(src))
            if oa is not None and self._rank(src) > 0:
                placed = [oa[mapping[i]] for i in range(len(mapping)) if mapping[i] is not None]
                spare = [ax for ax in range(self.rank) if ax not in placed] or [0]
                changed |= self._set(src, [oa[mapping[i]] if mapping[i] is not None else spare[0]
                                           for i in range(len(mapping))], e)
            elif sa is not None and self._rank(out) > 0:
                inv = {j: i for i, j in mapping.items() if j is not None}
                if all(j in inv for j in range(self._rank(out)) if out.aval.shape[j] != 1):
                    # size-1 dims of the output that did not come from the source run nowhere:
                    # place them on an output axis the source does not use.
                    free = [ax for ax in range(self.rank) if ax not in sa]
                    a = []
                    for j in range(self._rank(out)):
                        a.append(sa[inv[j]] if j in inv else (free.pop() if free else None))
                    if None not in a:
                        changed |= self._set(out, a, e)
            return changed
        if name in _ROW_REDUCTIONS:
            src = e.invars[0]
            axes = tuple(e.params["axes"])
            sa = self.align.get(id(src))
            if sa is not None:
                last = self.rank - 1
                if len(axes) != 1 or sa[axes[0]] != last:
                    raise NoTemplate(f"{name} over axes {axes} is not a reduction over the "
                                     "output row (the last axis)", [name])
                changed |= self._set(out, [a for i, a in enumerate(sa) if i != axes[0]], e)
            return changed
        # Elementwise: every non-scalar operand and the result share one alignment.
        vals = [v for v in list(e.invars) + [out] if not is_literal(v) and self._rank(v) > 0]
        known = [self.align[id(v)] for v in vals if id(v) in self.align]
        if known:
            for v in vals:
                changed |= self._set(v, known[0], e)
        return changed

    def _check_expanded(self, v, e):
        exp = self.expanded(v)
        for d, (have, full) in enumerate(zip(exp, self.out_shape)):
            if have not in (1, full):
                raise NoTemplate(f"{e.primitive.name}: a {G.shape_text(v.aval.shape)} value is "
                                 f"neither full nor broadcast along output axis {d} "
                                 f"(size {have} of {full})", [e.primitive.name])

    def expanded(self, v) -> tuple:
        """The value's shape at the output's rank (1 where it is broadcast)."""
        if is_literal(v) or self._rank(v) == 0:
            return (1,) * self.rank
        a = self.align[id(v)]
        out = [1] * self.rank
        for size, ax in zip(v.aval.shape, a):
            if size != 1:
                out[ax] = int(size)
        return tuple(out)

    # -- emission -------------------------------------------------------------------------
    def _new(self, prefix="v") -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def code(self, v) -> str:
        if is_literal(v):
            return self._literal(v.val, v.aval.dtype)
        if id(v) in self.names:
            return self.names[id(v)]
        if v in self.known:
            return self.known[v]
        if v in self.operands:
            name = self.operands[v]
            self.operand_vars.append(v)
            self.names[id(v)] = name
            self.lines.append(f"{name} = {name}_ref[...]")
            return name
        if v in self.consts:
            value = np.asarray(self.consts[v])
            if value.shape != ():
                raise NoTemplate("the reference closes over a non-scalar array constant; "
                                 "the emitter only inlines scalars", ["constant"])
            return self._literal(value.item(), value.dtype)
        raise NoTemplate("the fused stage reads a value computed outside it", [])

    def _literal(self, value, dtype) -> str:
        value = np.asarray(value).item() if hasattr(value, "shape") else value
        name = self._static_name(value, dtype)
        if name is not None:
            if name not in self.statics_used:
                self.statics_used.append(name)
            return name
        text = G.literal(value)
        if text.startswith("-"):
            text = f"({text})"
        return text

    def _static_name(self, value, dtype):
        for n, sv in self.ctx.static_args.items() if self.ctx is not None else ():
            if isinstance(sv, bool) or not isinstance(sv, (int, float)):
                continue
            if sv in (0, 1, 2, -1, 0.5, -0.5):
                continue
            try:
                same = np.asarray(sv).astype(G.dtype_name(dtype)) == np.asarray(value).astype(
                    G.dtype_name(dtype))
            except (TypeError, ValueError):
                same = False
            if bool(same):
                return n
        return None

    def _emit(self):
        for e in self.eqns:
            self._emit_one(e)

    # -- which output axes a kernel value really spans: broadcast_in_dim is an alias (numpy
    # broadcasting does the rest), so a value can be narrower than its jaxpr shape; a sum over
    # the row must then widen it first.
    def held(self, v) -> tuple:
        if is_literal(v) or self._rank(v) == 0 or v in self.consts:
            return (False,) * self.rank
        if id(v) in self._held:
            return self._held[id(v)]
        return tuple(d != 1 for d in self.expanded(v))  # the matmul tile, a loaded block

    def _note_held(self, e, out_held=None):
        out = e.outvars[0]
        if out_held is None:
            hs = [self.held(v) for v in e.invars]
            out_held = tuple(any(h[a] for h in hs) for a in range(self.rank)) if hs else \
                (False,) * self.rank
        self._held[id(out)] = tuple(out_held)

    _held: dict = None

    def _assign(self, e, expr: str, out_held=None):
        out = e.outvars[0]
        name = self._new()
        self.names[id(out)] = name
        self.lines.append(f"{name} = {expr}")
        self._note_held(e, out_held)
        if any(id(v) in self.reduced for v in e.invars if not is_literal(v)) or \
                e.primitive.name in _ROW_REDUCTIONS:
            self.reduced.add(id(out))

    def _alias(self, e, src):
        out = e.outvars[0]
        self.names[id(out)] = self.code(src)
        self._held[id(out)] = self.held(src)
        if not is_literal(src) and id(src) in self.reduced:
            self.reduced.add(id(out))

    def _emit_one(self, e):
        name = e.primitive.name
        ins = e.invars
        out = e.outvars[0]
        if name in _IDENTITY or name in _LAYOUT:
            self._alias(e, ins[0])
            return
        if name == "iota":
            expr, axis = self._iota(e)
            self._assign(e, expr, tuple(a == axis for a in range(self.rank)))
            return
        if name == "convert_element_type":
            new = e.params["new_dtype"]
            self._assign(e, f"{self.code(ins[0])}.astype({G.dtype_code(new)})")
            return
        if name == "gather":
            self._emit_gather(e)
            return
        if name in _ROW_REDUCTIONS:
            h = self.held(ins[0])
            # The reference may sum a broadcast value along the row: widen it first.
            src = self._widened(ins[0]) if name == "reduce_sum" else self.code(ins[0])
            self._assign(e, f"{_ROW_REDUCTIONS[name]}({src}, axis=-1, keepdims=True)",
                         h[:-1] + (False,))
            return
        if name == "integer_pow":
            self._assign(e, f"jax.lax.integer_pow({self.code(ins[0])}, {int(e.params['y'])})")
            return
        if name == "select_n":
            if len(ins) != 3 or G.dtype_name(ins[0].aval.dtype) != "bool":
                raise NoTemplate("select_n with an integer selector or more than two cases is not "
                                 "covered by the emitter", ["select_n"])
            # select_n(pred, on_false, on_true)
            self._assign(e, f"jnp.where({self.code(ins[0])}, {self.code(ins[2])}, {self.code(ins[1])})")
            return
        if name == "clamp":
            lo, x, hi = ins
            self._assign(e, f"jnp.clip({self.code(x)}, {self.code(lo)}, {self.code(hi)})")
            return
        if name == "is_finite" and G.itemsize(ins[0].aval.dtype) < 4:
            # Mosaic verifies is_finite on 32-bit floats only.
            self._assign(e, f"jnp.isfinite({self.code(ins[0])}.astype(jnp.float32))")
            return
        if name in ("erf", "erfc") and getattr(self.ctx, "form", "tpu") == "gpu":
            # Pallas' Triton lowering has no erf (JAX 0.10): the module carries its own.
            self.helpers.add("erf")
            x = self.code(ins[0])
            self._assign(e, f"_erf({x})" if name == "erf" else f"(1.0 - _erf({x}))")
            return
        if name in UNARY:
            self._assign(e, UNARY[name].format(self.code(ins[0])))
            return
        is_float = _float_dtype(out.aval.dtype)
        table = None
        if name in BINARY:
            table = BINARY
        elif is_float and name in BINARY_FLOAT:
            table = BINARY_FLOAT
        elif not is_float and name in _BINARY_INT:
            table = _BINARY_INT
        if table is None:
            raise NoTemplate(f"{name} on {G.dtype_name(out.aval.dtype)} is not covered by the "
                             "elementwise emitter", [name])
        a, b = self._binary_operands(e)
        if name == "sub" and all(is_literal(v) for v in ins) and self._is_row_len(ins[0]) and \
                float(np.asarray(ins[1].val).item()) in (0.0, 1.0):
            # jnp.var's divisor `N - ddof`: the row length of the tile, not a baked-in N.
            a = "row_len"
            self.uses_row_len = True
        expr = table[name].format(a, b)
        if name == "div" and _float_dtype(out.aval.dtype) and not is_literal(ins[1]) and \
                self.rank and self.held(ins[0])[-1] and not self.held(ins[1])[-1]:
            # A row divided by a per-row value (softmax's sum, a norm): one reciprocal per row,
            # then multiplies, not a divide per element.
            expr = f"{a} * (1.0 / {b})"
        if all(is_literal(v) for v in ins):
            expr = f"jnp.asarray({expr}, {G.dtype_code(out.aval.dtype)})"
        self._assign(e, expr)

    def _iota(self, e) -> tuple[str, int]:
        out = e.outvars[0]
        dim = int(e.params["dimension"])
        a = self.align.get(id(out), tuple(range(self.rank)))
        axis = a[dim]
        which = "cols" if axis == self.rank - 1 else "rows" if axis == self.rank - 2 else None
        if which is None or which not in self.tiles:
            raise NoTemplate("an iota along an axis the kernel's tiles do not index directly "
                             "(flattened or batch dims); not covered", ["iota"])
        size, start = self.tiles[which]
        self.tiles_used.add(which)
        shape = f"(1, {size})" if which == "cols" else f"({size}, 1)"
        kdim = 1 if which == "cols" else 0
        return (f"jax.lax.broadcasted_iota({G.dtype_code(e.params['dtype'])}, {shape}, {kdim}) "
                f"+ {start}"), axis

    def _is_row_len(self, v) -> bool:
        row = self.out_shape[-1]
        if not self.row_reduce or row <= 1 or not is_literal(v):
            return False
        dt = G.dtype_name(v.aval.dtype)
        return float(np.asarray(row).astype(dt)) == float(np.asarray(v.val).astype(dt))

    def _binary_operands(self, e):
        """Operand code of a binary op; a literal equal to the row length that divides (or, as
        its reciprocal, multiplies) a row statistic is written as the tile's row length, so a
        mean stays a mean when the module runs at another size."""
        a, b = e.invars[:2]
        ca, cb = self.code(a), self.code(b)
        name = e.primitive.name
        row = self.out_shape[-1]
        if name == "add" and self.gathers and not _float_dtype(e.outvars[0].aval.dtype) and \
                is_literal(b) and not is_literal(a) and self._is_row_len(b):
            # jnp's index normalisation `idx + N` (negative indices count from the row's end).
            self.uses_row_len = True
            return ca, "row_len"
        if self.row_reduce and row > 1 and name in ("div", "mul"):
            for lit, other, pos in ((b, a, 1), (a, b, 0)):
                if not is_literal(lit) or is_literal(other) or id(other) not in self.reduced:
                    continue
                val = float(np.asarray(lit.val).item())
                dt = G.dtype_name(lit.aval.dtype)
                target = float(row) if name == "div" else 1.0 / row
                if name == "div" and pos == 0:
                    continue
                if float(np.asarray(target).astype(dt)) == float(np.asarray(val).astype(dt)):
                    text = "row_len" if name == "div" else "(1.0 / row_len)"
                    if pos == 1:
                        cb = text
                    else:
                        ca = text
                    self.uses_row_len = True
        return ca, cb

    uses_row_len = False

    def summary(self) -> list[str]:
        """Readable names of what the stage does (for descriptions): "gelu", "softmax"..."""
        prims = self.primitives
        has = set(prims)
        out = []
        red = has & set(_ROW_REDUCTIONS)
        if {"reduce_max", "exp", "reduce_sum"} <= has:
            out.append("log-softmax/logsumexp" if "log" in has else "softmax")
        elif "reduce_sum" in has and has & {"sqrt", "rsqrt"}:
            out.append("row norm")
        elif red:
            out.append("row " + "/".join(sorted(r.split("_")[1] for r in red)))
        if ({"integer_pow", "tanh"} <= has and self._has_literal(0.044715)) or (
                has & {"erf", "erfc"} and self._has_literal(0.7071067811865476)):
            out.append("gelu")
        elif has & {"erf", "erfc"}:
            out.append("erf")
        elif "tanh" in has:
            out.append("tanh")
        if "logistic" in has:
            out.append("sigmoid")
        if "clamp" in has or ({"max", "min"} <= has and "gelu" not in out):
            out.append("clamp")
        elif "max" in has and not red and self._max_with_zero():
            out.append("relu")
        if "select_n" in has and not red:
            out.append("select")
        for name in ("exp", "log", "sqrt", "rsqrt", "abs"):
            if name in has and not out:
                out.append(name)
        return out

    def _has_literal(self, value, rel=1e-6) -> bool:
        for e in self.eqns:
            for v in e.invars:
                if is_literal(v) and np.asarray(v.val).dtype.kind == "f" and \
                        abs(float(np.asarray(v.val).item()) - value) <= rel * abs(value):
                    return True
        return False

    def _max_with_zero(self) -> bool:
        for e in self.eqns:
            if e.primitive.name == "max" and any(
                    is_literal(v) and float(np.asarray(v.val).item()) == 0.0 for v in e.invars):
                return True
        return False

    def store_lines(self, v, ref: str) -> list[str]:
        """`ref[...] = value` with the value widened to the block (a broadcast output)."""
        c = self.code(v)
        return [f"{ref}[...] = jnp.broadcast_to({c}, {ref}.shape).astype({ref}.dtype)"]


def _float_dtype(dtype) -> bool:
    name = G.dtype_name(dtype)
    return name.startswith(("float", "bfloat", "complex"))


def _size_one_mapping(src_shape, dst_shape):
    """For a reshape that only inserts or removes size-1 dims: {src dim: dst dim} for the src
    dims of size != 1 (and size-1 src dims matched to size-1 dst dims where they line up).
    None for any other reshape."""
    src = [int(d) for d in src_shape]
    dst = [int(d) for d in dst_shape]
    if math.prod(src) != math.prod(dst):
        return None
    src_big = [(i, d) for i, d in enumerate(src) if d != 1]
    dst_big = [(j, d) for j, d in enumerate(dst) if d != 1]
    if [d for _, d in src_big] != [d for _, d in dst_big]:
        return None
    mapping = {i: j for (i, _), (j, _) in zip(src_big, dst_big)}
    # size-1 src dims: map to an unused size-1 dst dim, in order
    used = set(mapping.values())
    free = [j for j, d in enumerate(dst) if d == 1 and j not in used]
    for i, d in enumerate(src):
        if d == 1:
            mapping[i] = free.pop(0) if free else None  # None: a size-1 dim squeezed away
    return mapping
