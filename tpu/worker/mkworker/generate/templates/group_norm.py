"""Template `matmul_group_norm`: a matmul whose output is normalised over groups of channels
(GroupNorm after a linear layer), with elementwise work before (bias) and after (affine,
activation, residual).

    y = x @ w (+ b ...)                       (M, C)
    g = y.reshape(M, G, C // G)               statistics over each group: the reference's own
    ... mean / var / normalise over axis -1   equations, re-stated
    out = act(g.reshape(M, C) * gamma + beta)

Recognised on the jaxpr: one dot_general, a reshape that splits the channels into (groups,
group size), reductions over the group-size axis only, and a reshape that merges them back.

Kernel: one pallas_call, grid (M/BM, C/BC, K/BK), K last and "arbitrary", an f32 accumulator
in VMEM scratch. The channel tile BC holds whole groups, so a group's statistics are complete
at the last K step: every value of the group program is held as a (BM, BC) tile, a per-group
value broadcast back over its channels. A group of a multiple of 128 channels is summed on its
own lanes (lane-aligned slices, no MXU work); a narrower group by MXU products with the tile's
same-group indicator matrix (`same_group`, a bf16 input read once, 1 where two channels share
a group: (128, 128) per 128-lane column when the groups tile the lanes, else (BC, BC)), three bf16 products of the value's high, middle and low parts (the
indicator is exact in bf16, so all 24 bits count; a HIGHEST product would split both sides, six
passes). The indicator products cost more than the matmul itself at BC = 1024 and made libtpu's
static profile of a 4096-cube kernel run past 18 GiB. No lane-splitting reshape is needed in the
kernel. Ragged rows and a
ragged edge of whole groups use cdiv grids; a ragged depth is zeroed past its end.
"""

from __future__ import annotations

import math

import numpy as np

from mkworker.generate import common as G
from mkworker.generate import expr as E
from mkworker.generate import fused as F
from mkworker.generate.common import NoTemplate
from mkworker.generate.templates import matmul as MM
from mkworker.generate.templates import matmul_tpu as MT

KERNEL_CLASS = "matmul_group_norm"
COVERED_PRIMITIVES = ()

_TABLES = (E.UNARY, E.BINARY_FLOAT, E.BINARY)
PLAN_BUDGET = 36 * G.MIB  # the largest step planned (see emit)


class _Emitter:
    """The epilogue's equations as code on (BM, BC) tiles (see the module docstring).

    Each value is `full` (a (BM, BC) tile, per-group values broadcast over their channels),
    `col` (a (1, BC) per-channel operand row) or `scalar`."""

    def __init__(self, ctx, eqns, dot_out, m, c, groups, gsize):
        self.ctx, self.m, self.c, self.groups, self.gsize = ctx, m, c, groups, gsize
        self.names = {id(dot_out): "y"}
        self.kind = {id(dot_out): "full"}
        self.lines = []
        self.operands = []  # (var, name, kind)
        self.statics = []
        self.uses_group_size = False
        self.group_sums = 0
        self.prims = []
        self._seen = {}
        self._n = 0
        for e in eqns:
            self._one(e)

    def _new(self):
        self._n += 1
        return f"v{self._n}"

    def code(self, v):
        if E.is_literal(v):
            return self._literal(np.asarray(v.val).item(), v.aval.dtype)
        if id(v) in self.names:
            return self.names[id(v)]
        if v in self.ctx.jaxpr.invars:
            name = self.ctx.name_of_invar(v)
            shape = tuple(int(d) for d in v.aval.shape)
            if shape == ():
                kind = "scalar"
            elif math.prod(shape) == self.c and shape[-1] == self.c:
                kind = "col"
            elif shape == (self.m, self.c):
                kind = "full"
            else:
                raise NoTemplate(f"epilogue input `{name}` of shape {G.shape_text(shape)} is "
                                 "neither per channel nor per element; not covered", [])
            return G.load_operand(self, v, name, kind)
        consts = dict(zip(self.ctx.jaxpr.constvars, self.ctx.consts))
        if v in consts and np.asarray(consts[v]).shape == ():
            return self._literal(np.asarray(consts[v]).item(), v.aval.dtype)
        raise NoTemplate("the group-norm epilogue reads a value computed outside it", [])

    def _literal(self, value, dtype):
        if isinstance(value, float) and value in (float(self.gsize), float(self.gsize - 1)) \
                and self.gsize > 2:
            self.uses_group_size = True
            return "group_size" if value == self.gsize else "(group_size - 1)"
        return G.literal_code(self.ctx, value, dtype, self.statics)

    def _kind_of(self, v):
        if E.is_literal(v):
            return "scalar"
        self.code(v)
        return self.kind[id(v)]

    def _set(self, e, expr, kind):
        name = G.assign_once(expr, self._seen, self.lines, self._new)
        self.names[id(e.outvars[0])] = name
        self.kind[id(e.outvars[0])] = kind

    def _alias(self, e, src):
        self.names[id(e.outvars[0])] = self.code(src)
        self.kind[id(e.outvars[0])] = self._kind_of(src)

    def _one(self, e):
        p = e.primitive.name
        self.prims.append(p)
        ins = e.invars
        out_shape = tuple(int(d) for d in e.outvars[0].aval.shape)
        if p in ("reshape", "broadcast_in_dim", "squeeze", "expand_dims", "copy",
                 "stop_gradient", "optimization_barrier"):
            src = ins[0]
            k = self._kind_of(src)
            if p == "broadcast_in_dim" and k == "col":
                # a channel row (C,) broadcast over rows, or (G, gs) over rows: stays a row
                dims = tuple(e.params["broadcast_dimensions"])
                if dims and dims[-1] != len(out_shape) - 1:
                    raise NoTemplate("a per-channel value is broadcast along another axis than "
                                     "the channels; not covered", [p])
            return self._alias(e, src)
        if p == "reduce_sum":
            axes = tuple(e.params["axes"])
            src_shape = tuple(int(d) for d in ins[0].aval.shape)
            if len(src_shape) < 2 or axes != (len(src_shape) - 1,) or src_shape[-1] != self.gsize \
                    or src_shape[-2] != self.groups:
                raise NoTemplate("a reduction over other axes than one group's channels; the "
                                 "group-norm template sums over the group only", [p])
            if self._kind_of(ins[0]) != "full":
                raise NoTemplate("a group sum of a broadcast value; not covered", [p])
            self.group_sums += 1
            return self._set(e, f"_group_sum({self.code(ins[0])}, same_group, valid, group_size)", "full")
        if p == "convert_element_type":
            dt = e.params["new_dtype"]
            if G.dtype_name(dt).startswith(("float", "bfloat")):
                return self._alias(e, ins[0])  # float math runs in f32 inside
            return self._set(e, f"{self.code(ins[0])}.astype({G.dtype_code(dt)})",
                             self._kind_of(ins[0]))
        kinds = [self._kind_of(v) for v in ins]
        kind = "full" if "full" in kinds else ("col" if "col" in kinds else "scalar")
        if p == "integer_pow":
            return self._set(e, f"{self.code(ins[0])} ** {int(e.params['y'])}", kind)
        if p == "select_n" and len(ins) == 3:
            return self._set(e, f"jnp.where({self.code(ins[0])}, {self.code(ins[2])}, "
                                f"{self.code(ins[1])})", kind)
        if p == "clamp":
            return self._set(e, f"jnp.clip({self.code(ins[1])}, {self.code(ins[0])}, "
                                f"{self.code(ins[2])})", kind)
        for table in _TABLES:
            if p in table:
                return self._set(e, table[p].format(*[self.code(v) for v in ins]), kind)
        raise NoTemplate(f"`{p}` in the group-norm epilogue is not covered", [p])


def match(ctx):
    m = MM.match(ctx)
    if m is None:
        return None
    ms, epilogue = m
    splits = [e for e in epilogue if e.primitive.name == "reshape"
              and len(e.outvars[0].aval.shape) == len(e.invars[0].aval.shape) + 1
              and tuple(e.invars[0].aval.shape) == ms.out_shape]
    if len(splits) != 1 or ms.nbatch or len(ms.lead) != 1:
        return None
    split = splits[0]
    groups, gsize = (int(d) for d in split.outvars[0].aval.shape[-2:])
    if groups * gsize != ms.n or groups < 2 or gsize < 2:
        return None
    if not any(e.primitive.name == "reduce_sum" for e in epilogue):
        return None
    return ms, epilogue, groups, gsize


def _indicator_width(bc, gsize):
    """The same-group indicator's side (the module's `width`): 128 when groups tile the lanes."""
    return G.LANE if G.LANE % gsize == 0 and bc % G.LANE == 0 else bc


def _tile_options(c, gsize):
    """Channel tiles that hold whole groups and are lane-aligned (or the whole row)."""
    unit = gsize * 128 // math.gcd(gsize, 128)
    out = [b for b in range(unit, c, unit)]
    # Tiles that divide the channels, where there are some: a ragged last tile is all work and
    # traffic for part of it (768 of 4096 channels: 4608 computed).
    dividing = [b for b in out if c % b == 0]
    return (dividing or out) + [c]


def emit(ctx, m) -> G.Generated:
    """The TPU emitter (the class has no GPU form: generate.classes skips it there)."""
    ms, epilogue, groups, gsize = m
    if not ctx.single_output:
        raise NoTemplate("the reference returns several outputs; not covered", [])
    out = ctx.jaxpr.outvars[0]
    em = _Emitter(ctx, epilogue, ms.dot.outvars[0], ms.m, ms.n, groups, gsize)
    if em.group_sums == 0:
        return None
    if em.kind.get(id(out)) != "full":
        raise NoTemplate("the output is not per element of the matmul's output; not covered", [])
    x_name = ctx.name_of_invar(ms.lhs.var)
    w_name = ctx.name_of_invar(ms.rhs.var)
    x_dt, w_dt, out_dt = ms.lhs.var.aval.dtype, ms.rhs.var.aval.dtype, out.aval.dtype
    sub = max(G.sublane_multiple(x_dt), G.sublane_multiple(out_dt))
    k_align = max(G.LANE, G.sublane_multiple(w_dt))
    ops = em.operands

    lanes = gsize % G.LANE == 0  # group sums on lane-aligned slices, no indicator product
    # v5e refused this kernel with a 123 MiB limit: its 73 MiB of scoped VMEM plus 123 MiB of
    # "HLO temp" (the limit itself) over the 128 MiB. Under a 48 MiB limit it compiles: the plan
    # stays within that.
    budget = min(ctx.vmem_budget, PLAN_BUDGET)
    peak, _ = G.target_roofline(ctx.target)

    def vmem(bm, bc, bk):
        ins = [((bm, bk), x_dt), ((bk, bc), w_dt)]
        ins += [((16, G.LANE) if lanes else (_indicator_width(bc, gsize),) * 2, "bfloat16")]
        ins += [((1 if kind == "col" else bm, bc), v.aval.dtype) for v, _, kind in ops
                if kind != "scalar"]
        # the accumulator plus about four f32 tiles of the group program alive at once
        return G.step_vmem(ins, [((bm, bc), out_dt)], [((bm, bc), "float32")] * 5)

    def cost(bm, bc, bk):
        mb, cb, kb = -(-ms.m // bm), -(-ms.n // bc), -(-ms.k // bk)
        traffic = ms.m * ms.k * G.itemsize(x_dt) * cb + ms.k * ms.n * G.itemsize(w_dt) * mb
        seconds = MT.gemm_seconds(ctx, traffic, (mb, cb, kb), (bm, bc, bk), x_dt, w_dt)
        if not lanes:  # each group sum: three bf16 products with the indicator
            seconds += mb * cb * em.group_sums * 3 * 2 * bm * bc * _indicator_width(bc, gsize) / peak
        return seconds

    best = None
    for bc in _tile_options(ms.n, gsize):
        for bm in F.TILE_SIZES:
            if bm % sub and bm < ms.m:
                continue
            for bk in F.depth_options(ms.k, k_align):
                if bk % k_align and bk < ms.k:
                    continue
                tm, tk = F.fit_tile(bm, ms.m, sub), F.fit_tile(bk, ms.k, k_align)
                v = vmem(tm, bc, tk)
                if v > budget:
                    continue
                key = (cost(tm, bc, tk), -tm * bc, -tk)
                if best is None or key < best[0]:
                    best = (key, (tm, bc, tk, v))
    if best is None:
        raise NoTemplate("tiles of whole groups do not fit the VMEM budget", ["dot_general"])
    bm, bc, bk, plan_vmem = best[1]
    gpt = bc // gsize  # groups per channel tile
    constants = [("BLOCK_M", bm, "rows of a tile"),
                 ("GROUPS_PER_TILE", gpt, "whole groups of channels in a column tile"),
                 ("BLOCK_K", bk, "depth of one accumulation step"),
                 ("VMEM_LIMIT_BYTES", F.vmem_limit(plan_vmem, ctx),
                  "scoped VMEM the kernel may use (its plan plus headroom)")]
    tunables = {"BLOCK_M": F.tunable(ms.m, sub, bm), "BLOCK_K": F.tunable(ms.k, k_align, bk),
                "GROUPS_PER_TILE": sorted({max(1, gpt // 2), gpt, min(groups, gpt * 2)})}
    # The group count follows the reference: a static argument when one has its value.
    groups_code = ctx.static_name_for(groups) or str(groups)

    names = [n for _, n, _ in ops]
    statics = list(em.statics)
    kw = ["k", "c", "group_size"] + statics
    dot = F.dot_code("x_tile", "w_tile", ms.w_transposed, "float32")
    w_axis = 1 if ms.w_transposed else 0
    xv = "x_ref[...]" + (f".astype({G.dtype_code(ms.lhs.convert)})" if ms.lhs.convert else "")
    wv = "w_ref[...]" + (f".astype({G.dtype_code(ms.rhs.convert)})" if ms.rhs.convert else "")
    body = ["y = acc_ref[...]", "same_group = same_group_ref[...]",
            "bc = y.shape[1]",
            "valid = None",
            "if c % bc:  # a ragged edge of whole groups: channels past c hold garbage",
            "    valid = j * bc + jax.lax.broadcasted_iota(jnp.int32, y.shape, 1) < c"] + \
        em.lines + \
        [f"o_ref[...] = jnp.broadcast_to({em.code(out)}, o_ref.shape).astype(o_ref.dtype)"]
    refs = ", ".join(["x_ref", "w_ref", "same_group_ref"] + [f"{n}_ref" for n in names]
                     + ["o_ref", "acc_ref"])
    kernel = f'''

def _group_sum(v, same_group, valid, group_size):
    """Each channel's group total, broadcast back over the group. A group of whole 128-lane
    columns is summed on its own lane-aligned slice; a narrower one by MXU products with the
    same-group indicator (no lane-splitting reshape). `valid` masks an edge tile's channels past
    the end (garbage there would reach every sum)."""
    if valid is not None:
        v = jnp.where(valid, v, 0.0)
    if group_size % 128 == 0:
        rows = v.shape[0]
        return jnp.concatenate(
            [jnp.broadcast_to(jnp.sum(v[:, g:g + group_size], axis=1, keepdims=True),
                              (rows, group_size)) for g in range(0, v.shape[1], group_size)],
            axis=1)
    # Groups that tile 128 lanes never straddle a 128-lane column: each column is summed with a
    # (128, 128) indicator. The indicator is exact in bf16, so three bf16 products of the high,
    # middle and low 8 bits of the mantissa carry all 24: half the passes of a HIGHEST product.
    # Each part is cut with a bit mask, so its bf16 cast is exact and nothing is unpacked back
    # (libtpu 0.0.42's static profile aborts on unpacking packed bf16).
    width = same_group.shape[0]
    sums = []
    for g in range(0, v.shape[1], width):
        rest = v[:, g:g + width]
        total = jnp.zeros(rest.shape, jnp.float32)
        for _ in range(3):
            high = jax.lax.bitcast_convert_type(
                jax.lax.bitcast_convert_type(rest, jnp.uint32) & jnp.uint32(0xFFFF0000), jnp.float32)
            total = total + jnp.dot(high.astype(jnp.bfloat16), same_group,
                                    preferred_element_type=jnp.float32)
            rest = rest - high
        sums.append(total)
    return sums[0] if len(sums) == 1 else jnp.concatenate(sums, axis=1)


def _matmul_group_norm_kernel({refs},
                              *, {", ".join(kw)}):
    j, kk = pl.program_id(1), pl.program_id(2)

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    x_tile, w_tile = {xv}, {wv}
    bk = x_tile.shape[1]
    if k % bk:  # ragged depth: the last step reads past K; zero both sides of the product
        x_tile = _zero_past(x_tile, 1, kk * bk, k)
        w_tile = _zero_past(w_tile, {w_axis}, kk * bk, k)
    acc_ref[...] += {dot}

    @pl.when(kk == pl.num_programs(2) - 1)
    def _normalize():  # the tile holds whole groups: their statistics are complete here
{G.indent(chr(10).join(body), 8)}
'''
    specs = ["pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk))",
             "pl.BlockSpec((bc, bk), lambda i, j, kk: (j, kk))" if ms.w_transposed
             else "pl.BlockSpec((bk, bc), lambda i, j, kk: (kk, j))",
             "pl.BlockSpec(same_group.shape, lambda i, j, kk: (0, 0))  # fetched once"]
    ent = [f"lead = {x_name}.shape[:-1]",
           f"k = {x_name}.shape[-1]",
           f"c = {w_name}.shape[{0 if ms.w_transposed else 1}]",
           f"group_size = c // {groups_code}",
           f"x2 = {x_name}.reshape(-1, k)",
           "m = x2.shape[0]",
           f"bm = _fit_tile(BLOCK_M, m, {sub})",
           "bc = min(GROUPS_PER_TILE * group_size, c)",
           "if bc != c and bc % 128:  # a column tile must be lane-aligned: take whole rows",
           "    bc = c",
           f"bk = _fit_tile(BLOCK_K, k, {k_align})",
           "if group_size % 128 == 0:  # sums on lanes: a placeholder block, never read",
           "    same_group = jnp.zeros((16, 128), jnp.bfloat16)",
           "else:",
           "    width = 128 if 128 % group_size == 0 and bc % 128 == 0 else bc  # groups within 128 lanes",
           "    channel_group = jnp.arange(width, dtype=jnp.int32) // group_size",
           "    same_group = (channel_group[:, None] == channel_group[None, :]).astype(jnp.bfloat16)"]
    args = ["x2", w_name, "same_group"]
    for v, n, kind in ops:
        if kind == "col":
            ent.append(f"{n}_in = {n}.reshape(1, c)")
            specs.append("pl.BlockSpec((1, bc), lambda i, j, kk: (0, j))")
        elif kind == "full":
            ent.append(f"{n}_in = {n}.reshape(m, c)")
            specs.append("pl.BlockSpec((bm, bc), lambda i, j, kk: (i, j))")
        else:
            ent.append(f"{n}_in = {n}.reshape(1, 1)")
            specs.append("pl.BlockSpec((1, 1), lambda i, j, kk: (0, 0))")
        args.append(f"{n}_in")
    partial = "functools.partial(_matmul_group_norm_kernel, " + \
        ", ".join(f"{s}={s}" for s in kw) + ")"
    spec_text = G.indent("\n".join(s + "," if "#" not in s else s.replace("  #", ",  #")
                                   for s in specs), 8)
    ent.append(f'''out = pl.pallas_call(
    {partial},
    out_shape=jax.ShapeDtypeStruct((m, c), {G.dtype_code(out_dt)}),
    grid=(pl.cdiv(m, bm), pl.cdiv(c, bc), pl.cdiv(k, bk)),
    in_specs=[
{spec_text}
    ],
    out_specs=pl.BlockSpec((bm, bc), lambda i, j, kk: (i, j)),
    scratch_shapes=[pltpu.VMEM((bm, bc), jnp.float32)],
    compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary"),
                                         vmem_limit_bytes=VMEM_LIMIT_BYTES),
)({", ".join(args)})''')
    ent.append("return out.reshape(lead + (c,))")
    entry = f'''

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent), 4)}
'''
    after = [p for p in ("logistic", "tanh", "max", "erf", "exp") if p in em.prims]
    description = (f"{MM.dot_summary(ms)} + GroupNorm over {groups} groups of {gsize} "
                   f"channels" + (f" + {', '.join(after)}" if after else "")
                   + ", fused in one kernel")
    source, imports, body_text = G.write_module(
        description=description, ctx=ctx, kernel_class=KERNEL_CLASS, constants=constants,
        code=F.FIT_TILE_HELPER + F.ZERO_PAST_HELPER + kernel + entry)
    notes = [(f"tiles {bm}x{bc}x{bk} ({gpt} groups a tile): {G.mib(plan_vmem)} of VMEM per step "
             f"(budget {G.mib(budget)})"),
             (f"chosen: one matmul whose output is split into {groups} groups of {gsize} "
             "channels and reduced over each group")]
    notes += G.folded_statics_notes(ctx, statics)
    return G.Generated(kernel_class=KERNEL_CLASS, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body_text, tunables=tunables,
                       notes=notes)
