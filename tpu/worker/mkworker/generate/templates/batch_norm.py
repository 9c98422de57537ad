"""Template `matmul_batch_norm`: a matmul whose output is normalised with statistics over the
batch (the rows), or over the trailing row axes per instance: BatchNorm in training form or
InstanceNorm after a linear layer, with elementwise work before (bias) and after (affine,
activation, residual).

    y = x @ w (+ b)                      (M, C), or (B, L, C) / (N, H, W, C): rows in axes
    mean = y.mean(0); var = y.var(0)     sums over ALL rows: no tile holds them
    mean = y.mean(1)  (or axis=(1, 2))   InstanceNorm: sums over the rows of each instance
    out = act((y - mean) / sqrt(var + eps) * gamma + beta)

Recognised on the jaxpr: one dot_general, and reductions over one axis set only: the lhs's
free (row) axes from some axis `s` to the last (s = 0: BatchNorm over every row; s > 0: one
instance per index of the axes before s, `rows` = the product of the axes from s); each of a
value computed from the matmul tile without a reduction (`t`), or of the square of `t` minus a
per-column value (`c`: the centred sum of squares in jnp.var). Statistics are then per
(instance, channel); BatchNorm is the one-instance case.

Two passes, two pallas_calls, the instance a leading grid axis of each (1 for BatchNorm):
- matmul + statistics: grid (B, rows/BM, C/BC, K/BK), an f32 accumulator; at the last K step the tile
  `y` is written and, for each `t`, its column sum and sum of squares over the tile's rows
  (a ragged last row tile masked) go to a small per-row-tile output;
- the entry adds the row tiles' partial sums (B x C-sized work) and re-states the reference's
  per-column equations on them, a centred sum of squares as sum(t^2) - 2c sum(t) + rows c^2;
- normalize: an elementwise kernel over (B, rows/BM, C/BC) applies the reference's own
  equations to `y` with the per-(instance, column) values as (1, BC) rows.
"""

from __future__ import annotations

import math

import numpy as np

from mkworker.generate import common as G
from mkworker.generate import expr as E
from mkworker.generate import fused as F
from mkworker.generate.common import NoTemplate
from mkworker.generate.templates import matmul as MM

KERNEL_CLASS = "matmul_batch_norm"
COVERED_PRIMITIVES = ()
_TABLES = (E.UNARY, E.BINARY_FLOAT, E.BINARY)
_ALIAS = ("reshape", "broadcast_in_dim", "squeeze", "expand_dims", "copy", "stop_gradient",
          "optimization_barrier")


class _Analysis:
    """Kinds of the epilogue's values: `full` (per element of y), `col` (per column), `scalar`;
    which full values depend on a reduction; the reductions and what they sum."""

    def __init__(self, ctx, ms, epilogue, axes):
        self.ctx, self.ms, self.axes = ctx, ms, axes
        self.c = ms.n
        self.instances = math.prod(ms.lead[:axes[0]])
        self.m = math.prod(ms.lead[axes[0]:])  # rows summed per statistic
        self.producer = {id(o): e for e in epilogue for o in e.outvars}
        self.kind = {id(ms.dot.outvars[0]): "full"}
        self.reduced = set()  # ids of values that depend on a batch reduction
        self.reductions = {}  # id(reduce out) -> ("sum", t) or ("centred_sq", t, c)
        self.stats = []  # the `t` values whose column sums the first pass writes
        for e in epilogue:
            self._one(e)

    def kind_of(self, v):
        if E.is_literal(v):
            return "scalar"
        if id(v) in self.kind:
            return self.kind[id(v)]
        shape = tuple(int(d) for d in v.aval.shape)
        if v in self.ctx.jaxpr.invars or v in self.ctx.jaxpr.constvars:
            if shape == () or all(d == 1 for d in shape):
                k = "scalar"
            elif shape[-1] == self.c and int(np.prod(shape)) == self.c:
                k = "col"
            elif shape == self.ms.out_shape:
                k = "full"
            else:
                raise NoTemplate(f"an epilogue input of shape {G.shape_text(shape)} is neither "
                                 "per column nor per element; not covered", [])
            if v in self.ctx.jaxpr.constvars and k != "scalar":
                raise NoTemplate("the reference closes over an array constant; not covered", [])
            self.kind[id(v)] = k
            return k
        raise NoTemplate("the epilogue reads a value computed outside it", [])

    def root(self, v):
        """The value through layout aliases (broadcasts, unit reshapes, float converts)."""
        while not E.is_literal(v) and id(v) in self.producer:
            e = self.producer[id(v)]
            if e.primitive.name in _ALIAS or (e.primitive.name == "convert_element_type" and
                                              _is_float(e.params["new_dtype"])
                                              and _is_float(e.invars[0].aval.dtype)):
                v = e.invars[0]
            else:
                break
        return v

    def _one(self, e):
        p = e.primitive.name
        out = e.outvars[0]
        ins = [v for v in e.invars]
        if p == "reduce_sum":
            src = ins[0]
            if self.kind_of(src) != "full" or tuple(e.params["axes"]) != self.axes or \
                    len(src.aval.shape) != len(self.ms.out_shape):
                raise NoTemplate("reductions over different axis sets; the batch-norm template "
                                 "sums over one set of row axes", [p])
            self.kind[id(out)] = "col"
            self.reduced.add(id(out))
            self.reductions[id(out)] = self._what_is_summed(src)
            return
        if p in ("reduce_max", "reduce_min", "argmax", "argmin", "cumsum", "gather"):
            raise NoTemplate(f"`{p}` after the matmul is not covered by the batch-norm template",
                             [p])
        kinds = [self.kind_of(v) for v in ins]
        if p in _ALIAS and kinds[0] == "col" and p == "broadcast_in_dim":
            dims = tuple(e.params["broadcast_dimensions"])
            if not dims or dims[-1] != len(out.aval.shape) - 1:
                raise NoTemplate("a per-column value broadcast along the rows' axis; "
                                 "not covered", [p])
        kind = "full" if "full" in kinds else ("col" if "col" in kinds else "scalar")
        if p in _ALIAS:
            kind = kinds[0]
        self.kind[id(out)] = kind
        if any(not E.is_literal(v) and id(v) in self.reduced for v in ins):
            self.reduced.add(id(out))

    def _what_is_summed(self, src):
        src = self.root(src)
        if id(src) not in self.reduced:
            return self._stat(("sum", src))
        e = self.producer.get(id(src))
        d = None
        if e is not None and _is_square(e, self.root):
            d = e.invars[0]
        if d is not None:
            de = self.producer.get(id(self.root(d)))
            if de is not None and de.primitive.name == "sub":
                t, c = self.root(de.invars[0]), de.invars[1]
                if id(t) not in self.reduced and self.kind_of(t) == "full" and \
                        self.kind_of(c) in ("col", "scalar"):
                    return self._stat(("centred_sq", t, c))
        raise NoTemplate("a batch reduction of a value that is neither computed from the matmul "
                         "alone nor a centred square (x - mean)^2; not covered", ["reduce_sum"])

    def _stat(self, what):
        t = what[1]
        if not any(s is t for s in self.stats):
            self.stats.append(t)
        return what


# The program around the two pallas_calls: the TPU compiler may hold BOTH calls' scoped limits
# at once in its own VMEM ("HLO temp") and the running call's windows beside them (libtpu
# 0.0.42.1, v5e: two calls at a 62 MiB limit were refused at 126 MiB of HLO temp + 9-30 MiB of
# windows, of 128; at 48 MiB or 16 MiB they compiled), plus XLA's small fusions between them.
_CALLS = 2
_XLA_SLACK = 4 * G.MIB
# The normalize pass streams y once (HBM-bound): a tile of this many elements already makes the
# per-step overhead small; a larger one only made the compile heavier (v5e, static profile:
# 512x2048 gave 0.7 % fewer cycles for 5.1 GiB and 436 s of compile, 128x2048 3.9 GiB and 70 s).
NORM_TILE_ELEMENTS = 256 * 1024


def program_vmem_split(capacity: int) -> tuple[int, int]:
    """(the limit each call sets at most, the per-step plan budget of each pass) so that the
    two calls' limits and one call's windows fit the capacity together with XLA's temporaries:
    (calls + 1) x limit + slack <= capacity. The plan leaves the limit's headroom (a third of
    the plan, F.vmem_limit) for Mosaic's own temporaries. The limit is never under the default
    scoped limit (16 MiB), which the compiler always grants."""
    limit = max((capacity - _XLA_SLACK) // (_CALLS + 1) // G.MIB * G.MIB, min(16 * G.MIB, capacity))
    return limit, limit * 3 // 4 - G.MIB


def _is_square(e, root) -> bool:
    """square(d), d ** 2, or d * d."""
    p = e.primitive.name
    return p == "square" or (p == "integer_pow" and e.params["y"] == 2) or (
        p == "mul" and root(e.invars[0]) is root(e.invars[1]))


def _is_float(dt):
    return G.dtype_name(dt).startswith(("float", "bfloat"))


class _Writer:
    """Code for the values one context needs: `kernel_a` (pre-reduction values on the tile),
    `entry` (per-column values as (1, C) arrays) or `kernel_b` (the normalize kernel)."""

    def __init__(self, an, where, ctx, leaves):
        self.an, self.where, self.ctx = an, where, ctx
        self.names = dict(leaves)  # id(var) -> code
        self.lines = []
        self.loads = []  # input vars loaded from refs (kernels) / reshaped (entry)
        self.statics = []
        self._seen = {}
        self._n = 0
        self._prefix = {"kernel_a": "a", "entry": "c", "kernel_b": "v"}[where]

    def literal(self, value, dtype):
        if isinstance(value, float) and value == float(self.an.m) and self.an.m > 2:
            return "float(m)"
        return G.literal_code(self.ctx, value, dtype, self.statics)

    def code(self, v):
        if E.is_literal(v):
            return self.literal(np.asarray(v.val).item(), v.aval.dtype)
        if id(v) in self.names:
            return self.names[id(v)]
        if v in self.ctx.jaxpr.constvars:
            value = np.asarray(dict(zip(self.ctx.jaxpr.constvars, self.ctx.consts))[v])
            return self.literal(value.item(), value.dtype)
        if v in self.ctx.jaxpr.invars:
            name = self.ctx.name_of_invar(v)
            kind = self.an.kind_of(v)
            if self.where == "entry":
                if kind == "full":
                    raise NoTemplate("a per-column statistic reads a per-element input", [])
                code = f"{name}.reshape(1, 1, c).astype(jnp.float32)" if kind == "col" else name
            else:
                code = f"{name}_ref[...].astype(jnp.float32)"
                self.loads.append(v)
            self._n += 1
            local = f"{name}_{self._prefix}" if self.where == "entry" else name
            self.lines.append(f"{local} = {code}")
            self.names[id(v)] = local
            return local
        e = self.an.producer[id(v)]
        return self.eqn(e)

    def _new(self):
        self._n += 1
        return f"{self._prefix}{self._n}"

    def _set(self, e, expr):
        name = G.assign_once(expr, self._seen, self.lines, self._new)
        self.names[id(e.outvars[0])] = name
        return name

    def eqn(self, e):
        p = e.primitive.name
        out = e.outvars[0]
        ins = e.invars
        if p == "reduce_sum":
            if self.where != "entry":
                raise AssertionError("a reduction outside the entry")
            what = self.an.reductions[id(out)]
            i = next(j for j, s in enumerate(self.an.stats) if s is what[1])
            if what[0] == "sum":
                return self._set(e, f"stats[:, {2 * i}:{2 * i + 1}]")
            cc = self.code(what[2])
            return self._set(e, f"stats[:, {2 * i + 1}:{2 * i + 2}] - 2.0 * {cc} * stats[:, "
                                f"{2 * i}:{2 * i + 1}] + float(m) * {cc} * {cc}")
        if p in _ALIAS:
            self.names[id(out)] = self.code(ins[0])
            return self.names[id(out)]
        if p == "convert_element_type":
            if _is_float(e.params["new_dtype"]):
                self.names[id(out)] = self.code(ins[0])  # float math runs in f32 inside
                return self.names[id(out)]
            return self._set(e, f"{self.code(ins[0])}.astype({G.dtype_code(e.params['new_dtype'])})")
        if p == "integer_pow":
            return self._set(e, f"{self.code(ins[0])} ** {int(e.params['y'])}")
        if p == "select_n" and len(ins) == 3:
            return self._set(e, f"jnp.where({self.code(ins[0])}, {self.code(ins[2])}, "
                                f"{self.code(ins[1])})")
        if p == "clamp":
            return self._set(e, f"jnp.clip({self.code(ins[1])}, {self.code(ins[0])}, "
                                f"{self.code(ins[2])})")
        for table in _TABLES:
            if p in table:
                return self._set(e, table[p].format(*[self.code(v) for v in ins]))
        raise NoTemplate(f"`{p}` in the batch-norm epilogue is not covered", [p])


def match(ctx):
    m = MM.match(ctx)
    if m is None:
        return None
    ms, epilogue = m
    if ms.nbatch:
        return None
    red = [e for e in epilogue if e.primitive.name == "reduce_sum"]
    if not red:
        return None
    axes = tuple(red[0].params["axes"])
    rank = len(ms.lead) + 1
    # The row axes from some s to the last: every row (s = 0) or each instance's rows.
    if not axes or axes != tuple(range(axes[0], rank - 1)) \
            or any(len(e.invars[0].aval.shape) != rank for e in red):
        return None
    return ms, epilogue, axes


def emit(ctx, mt) -> G.Generated:
    """The TPU emitter (the class has no GPU form: generate.classes skips it there)."""
    ms, epilogue, axes = mt
    if not ctx.single_output:
        raise NoTemplate("the reference returns several outputs; not covered", [])
    out = ctx.jaxpr.outvars[0]
    an = _Analysis(ctx, ms, epilogue, axes)
    rows, nb = an.m, an.instances
    if an.kind_of(out) != "full":
        raise NoTemplate("the output is not per element of the matmul's output; not covered", [])
    if len(an.stats) > 4:
        raise NoTemplate("more than four batch statistics; not covered", ["reduce_sum"])

    dot_out = ms.dot.outvars[0]
    # Pass A: the pre-reduction values `t` on the tile, their column sums and squares.
    wa = _Writer(an, "kernel_a", ctx, {id(dot_out): "y"})
    stat_lines = []
    for i, t in enumerate(an.stats):
        tc = wa.code(t)
        stat_lines.append(f"t{i} = jnp.where(row_ok, {tc}, 0.0)")
        stat_lines.append(f"stats_ref[{2 * i}:{2 * i + 1}, :] = jnp.sum(t{i}, axis=0, "
                          "keepdims=True)")
        stat_lines.append(f"stats_ref[{2 * i + 1}:{2 * i + 2}, :] = jnp.sum(t{i} * t{i}, axis=0, "
                          "keepdims=True)")
    # Pass B: the output from y; every per-column value it reads is a (1, BC) input.
    wb = _Writer(an, "kernel_b", ctx, {id(dot_out): "y"})
    col_inputs = []  # (var, name) computed in the entry

    def col_leaf(v):
        if E.is_literal(v) or id(v) in wb.names:
            return
        if an.kind_of(v) == "col" and id(an.root(v)) in an.reduced:
            v = an.root(v)
            name = f"col{len(col_inputs)}"
            col_inputs.append((v, name))
            wb.names[id(v)] = name
            wb.lines.append(f"{name} = {name}_ref[...]")

    def visit(v, seen):
        if E.is_literal(v) or id(v) in seen:
            return
        seen.add(id(v))
        if an.kind_of(v) == "col" and id(an.root(v)) in an.reduced:
            return col_leaf(v)
        e = an.producer.get(id(v))
        if e is not None:
            for u in e.invars:
                visit(u, seen)

    visit(out, set())
    out_code = wb.code(out)
    # The entry: per-column values from the summed statistics.
    we = _Writer(an, "entry", ctx, {})
    entry_cols = [(we.code(v), name) for v, name in col_inputs]

    x_name = ctx.name_of_invar(ms.lhs.var)
    w_name = ctx.name_of_invar(ms.rhs.var)
    x_dt, w_dt, out_dt = ms.lhs.var.aval.dtype, ms.rhs.var.aval.dtype, out.aval.dtype
    y_dt = ms.dot_dtype
    sub = max(G.sublane_multiple(x_dt), G.sublane_multiple(y_dt), G.sublane_multiple(out_dt))
    k_align = max(G.LANE, G.sublane_multiple(w_dt))
    a_loads = [v for v in wa.loads]
    b_loads = [v for v in wb.loads]
    nstat = 2 * len(an.stats)

    def blk(v, bm, bc):
        return ((1 if an.kind_of(v) == "col" else bm, bc), v.aval.dtype)

    def vmem_a(bm, bc, bk):
        ins = [((bm, bk), x_dt), ((bk, bc), w_dt)] + [blk(v, bm, bc) for v in a_loads]
        return G.step_vmem(ins, [((bm, bc), y_dt), ((max(nstat, 1), bc), "float32")],
                           [((bm, bc), "float32")] * (2 + len(an.stats)))

    def cost_a(bm, bc, bk):
        mb, cb, kb = nb * -(-rows // bm), -(-ms.n // bc), -(-ms.k // bk)
        return (ms.m * ms.k * G.itemsize(x_dt) * cb + ms.k * ms.n * G.itemsize(w_dt) * mb
                + mb * cb * kb * F.STEP_OVERHEAD_BYTES)

    limit_cap, budget = program_vmem_split(ctx.vmem_limit)
    pa = F.choose_tiles(rows, ms.n, ms.k, sub, k_align, vmem_a, cost_a, budget)
    if pa is None:
        raise NoTemplate("the smallest matmul tiles do not fit the VMEM budget", ["dot_general"])

    def vmem_b(bm, bc):
        ins = [((bm, bc), y_dt)] + [((1, bc), "float32")] * len(col_inputs) + \
            [blk(v, bm, bc) for v in b_loads]
        return G.step_vmem(ins, [((bm, bc), out_dt)], [((bm, bc), "float32")] * 3)

    # The largest normalize tile of at most NORM_TILE_ELEMENTS (the smallest aligned one always
    # counts) that fits the budget, the widest first.
    rows_b = [b for b in (1024, 512, 256, 128, 64, 32, 16, 8) if b % sub == 0]
    pb = None
    for bc in (2048, 1024, 512, 256, 128):
        for bm in rows_b:
            tm, tc = F.fit_tile(bm, rows, sub), F.fit_tile(bc, ms.n, G.LANE)
            if tm * tc > NORM_TILE_ELEMENTS and (tm > sub or tc > G.LANE):
                continue
            v = vmem_b(tm, tc)
            if v <= budget and (pb is None or tm * tc > pb[3]):
                pb = (bm, bc, v, tm * tc)
    if pb is None:
        raise NoTemplate("the normalize pass's smallest tiles do not fit the VMEM budget", [])
    constants = [("BLOCK_M", pa[0], "rows of a matmul tile"),
                 ("BLOCK_C", pa[1], "columns (channels) of a matmul tile"),
                 ("BLOCK_K", pa[2], "depth of one accumulation step"),
                 ("NORM_BLOCK_M", pb[0], "rows of a normalize tile"),
                 ("NORM_BLOCK_C", pb[1], "columns of a normalize tile"),
                 ("VMEM_LIMIT_BYTES", min(F.vmem_limit(max(pa[3], pb[2]), ctx), limit_cap),
                  "scoped VMEM the kernels may use (their plan plus headroom)")]
    tunables = {"BLOCK_M": F.tunable(rows, sub, pa[0]), "BLOCK_C": F.tunable(ms.n, 128, pa[1]),
                "BLOCK_K": F.tunable(ms.k, k_align, pa[2]),
                "NORM_BLOCK_M": F.tunable(rows, sub, pb[0]),
                "NORM_BLOCK_C": F.tunable(ms.n, 128, pb[1])}

    a_names = [ctx.name_of_invar(v) for v in a_loads]
    b_names = [ctx.name_of_invar(v) for v in b_loads]
    statics_a = list(wa.statics)
    statics_b = list(wb.statics)
    w_axis = 1 if ms.w_transposed else 0
    dot = F.dot_code("x_tile", "w_tile", ms.w_transposed, "float32")
    y_line = F.load_acc("y", "acc_ref", y_dt)
    a_refs = ", ".join(["x_ref", "w_ref"] + [f"{n}_ref" for n in a_names]
                       + ["y_ref", "stats_ref", "acc_ref"])
    a_kw = ", ".join(["k", "m"] + statics_a)
    kernel_a = f'''

def _matmul_stats_kernel({a_refs},
                         *, {a_kw}):
    i, kk = pl.program_id(1), pl.program_id(3)

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    x_tile, w_tile = x_ref[...], w_ref[...]
    bk = x_tile.shape[1]
    if k % bk:  # ragged depth: the last step reads past K; zero both sides of the product
        x_tile = _zero_past(x_tile, 1, kk * bk, k)
        w_tile = _zero_past(w_tile, {w_axis}, kk * bk, k)
    acc_ref[...] += {dot}

    @pl.when(kk == pl.num_programs(3) - 1)
    def _store_and_sum():
        {y_line}
        y_ref[...] = y.astype(y_ref.dtype)
        # Column sums over this tile's rows; rows past m (a ragged last tile of the
        # instance's rows) do not count.
        row_ok = i * y.shape[0] + jax.lax.broadcasted_iota(jnp.int32, y.shape, 0) < m
{G.indent(chr(10).join(wa.lines + stat_lines), 8)}
'''
    b_refs = ", ".join(["y_ref"] + [f"{n}_ref" for _, n in col_inputs]
                       + [f"{n}_ref" for n in b_names] + ["o_ref"])
    b_kw = ["m"] + statics_b
    kernel_b = f'''

def _normalize_kernel({b_refs},
                      *, {", ".join(b_kw)}):
    y = y_ref[...].astype(jnp.float32)
{G.indent(chr(10).join(wb.lines + [f"o_ref[...] = jnp.broadcast_to({out_code}, o_ref.shape).astype(o_ref.dtype)"]), 4)}
'''
    def spec_for(v, three):
        if an.kind_of(v) == "col":
            return ("pl.BlockSpec((1, bc), lambda b, i, j, kk: (0, j))" if three
                    else "pl.BlockSpec((1, bc2), lambda b, i, j: (0, j))")
        return ("pl.BlockSpec((None, bm, bc), lambda b, i, j, kk: (b, i, j))" if three
                else "pl.BlockSpec((None, bm2, bc2), lambda b, i, j: (b, i, j))")

    def arg_for(v):
        n = ctx.name_of_invar(v)
        return f"{n}.reshape(1, c)" if an.kind_of(v) == "col" else f"{n}.reshape(nb, m, c)"

    a_specs = ["pl.BlockSpec((None, bm, bk), lambda b, i, j, kk: (b, i, kk))",
               "pl.BlockSpec((bc, bk), lambda b, i, j, kk: (j, kk))" if ms.w_transposed
               else "pl.BlockSpec((bk, bc), lambda b, i, j, kk: (kk, j))"] + \
        [spec_for(v, True) for v in a_loads]
    b_specs = ["pl.BlockSpec((None, bm2, bc2), lambda b, i, j: (b, i, j))"] + \
        ["pl.BlockSpec((None, 1, bc2), lambda b, i, j: (b, 0, j))"] * len(col_inputs) + \
        [spec_for(v, False) for v in b_loads]
    stat_rows = max(nstat, 1)
    pa_kw = ", ".join(f"{s}={s}" for s in ["k", "m"] + statics_a)
    pb_kw = ", ".join(f"{s}={s}" for s in b_kw)
    sem4 = '("parallel", "parallel", "parallel", "arbitrary")'
    ent = [f"lead = {x_name}.shape[:-1]",
           f"k = {x_name}.shape[-1]",
           f"c = {w_name}.shape[{0 if ms.w_transposed else 1}]",
           # From the input's shape, not the task's: a smaller batch is the same task.
           f"nb = functools.reduce(lambda p, n: p * n, lead[:{an.axes[0]}], 1)  # instances",
           f"x3 = {x_name}.reshape(nb, -1, k)",
           "m = x3.shape[1]  # rows summed per statistic",
           f"bm = _fit_tile(BLOCK_M, m, {sub})",
           "bc = _fit_tile(BLOCK_C, c, 128)",
           f"bk = _fit_tile(BLOCK_K, k, {k_align})",
           "row_tiles = pl.cdiv(m, bm)",
           "# Pass 1: y, and per row tile the column sums (and sums of squares) of the",
           "# values the reference's batch statistics are taken over.",
           f'''y, stats = pl.pallas_call(
    functools.partial(_matmul_stats_kernel, {pa_kw}),
    out_shape=(jax.ShapeDtypeStruct((nb, m, c), {G.dtype_code(y_dt)}),
               jax.ShapeDtypeStruct((nb, row_tiles, {stat_rows}, c), jnp.float32)),
    grid=(nb, row_tiles, pl.cdiv(c, bc), pl.cdiv(k, bk)),
    in_specs=[
{G.indent(chr(10).join(s + "," for s in a_specs), 8)}
    ],
    out_specs=(pl.BlockSpec((None, bm, bc), lambda b, i, j, kk: (b, i, j)),
               pl.BlockSpec((None, None, {stat_rows}, bc), lambda b, i, j, kk: (b, i, 0, j))),
    scratch_shapes=[pltpu.VMEM((bm, bc), jnp.float32)],
    compiler_params=pltpu.CompilerParams(dimension_semantics={sem4},
                                         vmem_limit_bytes=VMEM_LIMIT_BYTES),
)({", ".join(["x3", w_name] + [arg_for(v) for v in a_loads])})''',
           "# The statistics: the row tiles' partial sums added (B x C-sized work), then the",
           "# reference's per-column equations on (instances, 1, C) values.",
           "stats = jnp.sum(stats, axis=1)"] + we.lines + \
        [f"{name} = jnp.broadcast_to({code}, (nb, 1, c)).astype(jnp.float32)"
         for code, name in entry_cols] + \
        [f"bm2 = _fit_tile(NORM_BLOCK_M, m, {sub})",
         "bc2 = _fit_tile(NORM_BLOCK_C, c, 128)",
         "# Pass 2: normalize y with the per-column values.",
         f'''out = pl.pallas_call(
    functools.partial(_normalize_kernel, {pb_kw}),
    out_shape=jax.ShapeDtypeStruct((nb, m, c), {G.dtype_code(out_dt)}),
    grid=(nb, pl.cdiv(m, bm2), pl.cdiv(c, bc2)),
    in_specs=[
{G.indent(chr(10).join(s + "," for s in b_specs), 8)}
    ],
    out_specs=pl.BlockSpec((None, bm2, bc2), lambda b, i, j: (b, i, j)),
    compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "parallel"),
                                         vmem_limit_bytes=VMEM_LIMIT_BYTES),
)({", ".join(["y"] + [n for _, n in col_inputs] + [arg_for(v) for v in b_loads])})''',
         "return out.reshape(lead + (c,))"]
    entry = f'''

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent), 4)}
'''
    over = (f"batch statistics over all {rows} rows" if nb == 1 else
            f"instance statistics over axes {axes} ({rows} rows) for each of {nb} instances")
    description = (f"{MM.dot_summary(ms)} + {over} "
                   f"({len(an.stats)} summed value{'s' if len(an.stats) != 1 else ''}) + "
                   "normalize: matmul+statistics pass, then a normalize pass")
    source, imports, body = G.write_module(
        description=description, ctx=ctx, kernel_class=KERNEL_CLASS, constants=constants,
        code=F.FIT_TILE_HELPER + F.ZERO_PAST_HELPER + kernel_a + kernel_b + entry)
    used = sorted(set(statics_a) | set(statics_b) | set(we.statics))
    notes = [(f"matmul tiles {pa[0]}x{pa[1]}x{pa[2]}: {G.mib(pa[3])} of VMEM per step; "
              f"normalize tiles {pb[0]}x{pb[1]}: {G.mib(pb[2])} (budget {G.mib(budget)} each)"),
             (f"chosen: one matmul followed by reductions over the row axes {axes}: the "
              "statistics need every row tile, so they are summed in a first pass")]
    notes += G.folded_statics_notes(ctx, used)
    return G.Generated(kernel_class=KERNEL_CLASS, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body, tunables=tunables, notes=notes)
