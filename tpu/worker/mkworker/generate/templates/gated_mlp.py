"""Template `gated_mlp`: a gated MLP block (SwiGLU / GeGLU / ReGLU...).

    h = act(x @ w_gate) * (x @ w_up)        (any elementwise gate, the reference's own ops)
    out = h @ w_down                          (optional: the two-matmul form returns h)

Recognised on the jaxpr: two dot_generals reading the same input `x` (through at most a
convert or a transposed weight), an elementwise region that combines their results, and
optionally a third dot_general whose left operand is that region's result.

Kernels (each a pallas_call in the module):
- gate+up: grid (M/BM, F/BF, K/BK), K last and "arbitrary"; both projections accumulate into
  their own f32 VMEM scratch from one load of the `x` tile (x is read once for both), and the
  gate is applied at the last K step, writing `h` in the reference's dtype;
- down: a tiled matmul over h, grid (M/BM, D/BD, F/BFK), an f32 accumulator.
Ragged sizes: M and the output columns use cdiv grids (Pallas clips the edge blocks' stores;
their garbage rows/columns never reach a kept output); a depth that no aligned tile divides
is masked to zero past its end on the last step (both operands, so garbage never enters the
accumulator).
"""

from __future__ import annotations

from mkworker.generate import common as G
from mkworker.generate import expr as E
from mkworker.generate import fused as F
from mkworker.generate.common import NoTemplate
from mkworker.generate.templates import matmul as MM
from mkworker.generate.templates import matmul_tpu as MT

KERNEL_CLASS = "gated_mlp"
COVERED_PRIMITIVES = ("dot_general",)


class _Dot:
    """A projection `x @ w` whose operands are task inputs: names, shape and layout."""

    def __init__(self, ctx, dot, users):
        lhs = MM.trace_operand(dot.invars[0], ctx, users)
        rhs = MM.trace_operand(dot.invars[1], ctx, users)
        self.eqn = dot
        self.lhs, self.rhs = lhs, rhs
        self.ok = lhs is not None and rhs is not None and lhs.var is not rhs.var
        if self.ok:
            self.ms = MM.MatmulShape(ctx, dot, lhs, rhs)
            self.ok = self.ms.nbatch == 0


def match(ctx):
    eqns = E.live_eqns(ctx.jaxpr)
    dots = [e for e in eqns if e.primitive.name == "dot_general"]
    if len(dots) not in (2, 3) or not ctx.single_output:
        return None
    users = MM.users_by_var(eqns)
    first = [_Dot(ctx, d, users) for d in dots[:2]]
    if not all(d.ok for d in first) or first[0].lhs.var is not first[1].lhs.var:
        return None
    a, b = first
    if a.ms.n != b.ms.n or a.ms.k != b.ms.k or a.rhs.var is b.rhs.var:
        return None
    out = ctx.jaxpr.outvars[0]
    down = None
    if len(dots) == 3:
        c = dots[2]
        rhs = MM.trace_operand(c.invars[1], ctx, users)
        if rhs is None:
            return None
        h = c.invars[0]
        # The output is the down projection itself (or a dtype conversion of it).
        tail = [e for e in eqns if eqns.index(e) > eqns.index(c)]
        if any(e.primitive.name != "convert_element_type" for e in tail):
            raise NoTemplate("work after the gated MLP's down projection is not covered",
                             [e.primitive.name for e in tail])
        down = (c, rhs)
    else:
        h = out
    prologue = {id(e) for d in first for e in d.lhs.chain + d.rhs.chain}
    region_eqns = [e for e in E.live_eqns(ctx.jaxpr, [h])
                   if e not in (a.eqn, b.eqn) and id(e) not in prologue]
    if not region_eqns or any(e.primitive.name not in E.ELEMENTWISE_PRIMITIVES + E.LAYOUT_PRIMITIVES
                              for e in region_eqns):
        return None
    return a, b, h, down, region_eqns, out


def _gate_first(a, b, region_eqns):
    """The projection that goes through a nonlinearity first is the gate (silu(x@wg) * x@wu)."""
    nonlinear = ("logistic", "tanh", "erf", "max", "exp")
    tainted = {id(a.eqn.outvars[0]): "a", id(b.eqn.outvars[0]): "b"}
    for e in region_eqns:
        srcs = {tainted[id(v)] for v in e.invars if not E.is_literal(v) and id(v) in tainted}
        if len(srcs) == 1 and e.primitive.name in nonlinear:
            return (a, b) if srcs == {"a"} else (b, a)
        for o in e.outvars:
            if len(srcs) == 1:
                tainted[id(o)] = next(iter(srcs))
    return a, b


def emit(ctx, m) -> G.Generated:
    """The TPU emitter (the class has no GPU form: generate.classes skips it there)."""
    a, b, h, down, region_eqns, out = m
    gate, up = _gate_first(a, b, region_eqns)
    ms = gate.ms
    consts = dict(zip(ctx.jaxpr.constvars, ctx.consts))
    region = E.Region(region_eqns, out_shape=ms.out_shape,
                      known={gate.eqn.outvars[0]: "g", up.eqn.outvars[0]: "u"},
                      operands={}, ctx=ctx, consts=consts)
    if region.operand_vars:
        raise NoTemplate("the gate reads other inputs than the two projections (a bias?); "
                         "not covered by the gated_mlp template", [])
    x_name = ctx.name_of_invar(gate.lhs.var)
    wg_name = ctx.name_of_invar(gate.rhs.var)
    wu_name = ctx.name_of_invar(up.rhs.var)
    x_dt = gate.lhs.var.aval.dtype
    w_dt = gate.rhs.var.aval.dtype
    h_dt = h.aval.dtype
    budget = ctx.vmem_budget
    sub = max(G.sublane_multiple(x_dt), G.sublane_multiple(h_dt))
    k_align = max(G.LANE, G.sublane_multiple(w_dt))

    # --- gate+up plan: x tile + two weight tiles double-buffered, h out, two f32 accumulators.
    def vmem1(bm, bf, bk):
        return G.step_vmem([((bm, bk), x_dt), ((bk, bf), w_dt), ((bk, bf), w_dt)],
                           [((bm, bf), h_dt)], [((bm, bf), "float32")] * 2)

    def cost1(bm, bf, bk):
        mb, fb, kb = (-(-ms.m // bm), -(-ms.n // bf), -(-ms.k // bk))
        traffic = ms.m * ms.k * G.itemsize(x_dt) * fb + 2 * ms.k * ms.n * G.itemsize(w_dt) * mb
        return MT.gemm_seconds(ctx, traffic, (mb, fb, kb), (bm, bf, bk), x_dt, w_dt, dots=2)

    p1 = F.choose_tiles(ms.m, ms.n, ms.k, sub, k_align, vmem1, cost1, budget, whole_k=True)
    if p1 is None:
        raise NoTemplate("the smallest gate+up tiles do not fit the VMEM budget", ["dot_general"])
    constants = [("BLOCK_M", p1[0], "rows (tokens) of a tile"),
                 ("BLOCK_F", p1[1], "hidden (gate/up output) columns of a tile"),
                 ("BLOCK_K", p1[2], "depth of one gate+up step over the model dim")]
    tunables = {"BLOCK_M": F.tunable(ms.m, sub, p1[0]), "BLOCK_F": F.tunable(ms.n, G.LANE, p1[1]),
                "BLOCK_K": F.tunable(ms.k, k_align, p1[2])}
    vmem_plan = p1[3]
    d_name = None
    if down is not None:
        c, crhs = down
        d_name = ctx.name_of_invar(crhs.var)
        c_transposed = c.params["dimension_numbers"][0][1][0] != 0
        if crhs.perm is not None:
            c_transposed = not c_transposed
        wd_dt = crhs.var.aval.dtype
        d_out = int(c.outvars[0].aval.shape[-1])
        out_dt = out.aval.dtype
        dk_align = max(G.LANE, G.sublane_multiple(wd_dt))

        def vmem2(bm, bd, bk):
            return G.step_vmem([((bm, bk), h_dt), ((bk, bd), wd_dt)], [((bm, bd), out_dt)],
                               [((bm, bd), "float32")])

        def cost2(bm, bd, bk):
            mb, db, kb = (-(-ms.m // bm), -(-d_out // bd), -(-ms.n // bk))
            traffic = ms.m * ms.n * G.itemsize(h_dt) * db + ms.n * d_out * G.itemsize(wd_dt) * mb
            return MT.gemm_seconds(ctx, traffic, (mb, db, kb), (bm, bd, bk), h_dt, wd_dt)

        sub2 = max(G.sublane_multiple(h_dt), G.sublane_multiple(out_dt))
        p2 = F.choose_tiles(ms.m, d_out, ms.n, sub2, dk_align, vmem2, cost2, budget, whole_k=True)
        if p2 is None:
            raise NoTemplate("the smallest down-projection tiles do not fit the VMEM budget",
                             ["dot_general"])
        constants += [("BLOCK_M_DOWN", p2[0], "rows of a down-projection tile"),
                      ("BLOCK_D", p2[1], "output (model dim) columns of a down-projection tile"),
                      ("BLOCK_FK", p2[2], "depth of one down-projection step over the hidden dim")]
        tunables.update({"BLOCK_M_DOWN": F.tunable(ms.m, sub2, p2[0]),
                         "BLOCK_D": F.tunable(d_out, G.LANE, p2[1]),
                         "BLOCK_FK": F.tunable(ms.n, dk_align, p2[2])})
        vmem_plan = max(vmem_plan, p2[3])
    constants.append(("VMEM_LIMIT_BYTES", F.vmem_limit(vmem_plan, ctx),
                      "scoped VMEM the kernels may use (their plan plus headroom)"))

    # --- the gate+up kernel
    statics = list(region.statics_used)
    kw = ", ".join(["k"] + statics)
    gdot = F.dot_code("x_tile", "wg_tile", gate.ms.w_transposed, "float32")
    udot = F.dot_code("x_tile", "wu_tile", up.ms.w_transposed, "float32")
    epi = [F.load_acc("g", "acc_g_ref", gate.ms.dot_dtype),
           F.load_acc("u", "acc_u_ref", up.ms.dot_dtype)]
    epi += region.lines + region.store_lines(h, "h_ref")
    wg_axis = 1 if gate.ms.w_transposed else 0
    wu_axis = 1 if up.ms.w_transposed else 0
    xv = "x_ref[...]" + (f".astype({G.dtype_code(gate.lhs.convert)})" if gate.lhs.convert else "")
    wgv = "wg_ref[...]" + (f".astype({G.dtype_code(gate.rhs.convert)})" if gate.rhs.convert else "")
    wuv = "wu_ref[...]" + (f".astype({G.dtype_code(up.rhs.convert)})" if up.rhs.convert else "")
    kernel1 = f'''

def _gate_up_kernel(x_ref, wg_ref, wu_ref, h_ref, acc_g_ref, acc_u_ref, *, {kw}):
    kk = pl.program_id(2)

    @pl.when(kk == 0)
    def _init():
        acc_g_ref[...] = jnp.zeros_like(acc_g_ref)
        acc_u_ref[...] = jnp.zeros_like(acc_u_ref)

    x_tile, wg_tile, wu_tile = {xv}, {wgv}, {wuv}
    bk = x_tile.shape[1]
    if k % bk:  # ragged depth: the last step reads past K; zero both sides of the product
        start = kk * bk
        x_tile = _zero_past(x_tile, 1, start, k)
        wg_tile = _zero_past(wg_tile, {wg_axis}, start, k)
        wu_tile = _zero_past(wu_tile, {wu_axis}, start, k)
    # One load of x feeds both projections.
    acc_g_ref[...] += {gdot}
    acc_u_ref[...] += {udot}

    @pl.when(kk == pl.num_programs(2) - 1)
    def _gate():
{G.indent(chr(10).join(epi), 8)}
'''
    wg_spec = ("pl.BlockSpec((bf, bk), lambda i, j, kk: (j, kk))" if gate.ms.w_transposed
               else "pl.BlockSpec((bk, bf), lambda i, j, kk: (kk, j))")
    wu_spec = ("pl.BlockSpec((bf, bk), lambda i, j, kk: (j, kk))" if up.ms.w_transposed
               else "pl.BlockSpec((bk, bf), lambda i, j, kk: (kk, j))")
    sem = '("parallel", "parallel", "arbitrary")'
    partial1 = "functools.partial(_gate_up_kernel, k=k" + "".join(f", {s}={s}" for s in statics) + ")"
    ent = [f"lead = {x_name}.shape[:-1]",
           f"k = {x_name}.shape[-1]",
           f"f = {wg_name}.shape[{0 if gate.ms.w_transposed else 1}]",
           f"x2 = {x_name}.reshape(-1, k)",
           "m = x2.shape[0]",
           f"bm = _fit_tile(BLOCK_M, m, {sub})",
           "bf = _fit_tile(BLOCK_F, f, 128)",
           f"bk = _fit_tile(BLOCK_K, k, {k_align})",
           f'''h = pl.pallas_call(
    {partial1},
    out_shape=jax.ShapeDtypeStruct((m, f), {G.dtype_code(h_dt)}),
    grid=(pl.cdiv(m, bm), pl.cdiv(f, bf), pl.cdiv(k, bk)),
    in_specs=[
        pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
        {wg_spec},
        {wu_spec},
    ],
    out_specs=pl.BlockSpec((bm, bf), lambda i, j, kk: (i, j)),
    scratch_shapes=[pltpu.VMEM((bm, bf), jnp.float32), pltpu.VMEM((bm, bf), jnp.float32)],
    compiler_params=pltpu.CompilerParams(dimension_semantics={sem},
                                         vmem_limit_bytes=VMEM_LIMIT_BYTES),
)(x2, {wg_name}, {wu_name})''']
    kernels = kernel1
    if down is None:
        ent.append("return h.reshape(lead + (f,))")
        what = "two projections"
    else:
        kernels += F.matmul_kernel_code("_down_kernel")
        wd_spec = ("pl.BlockSpec((bd, bfk), lambda i, j, kk: (j, kk))" if c_transposed
                   else "pl.BlockSpec((bfk, bd), lambda i, j, kk: (kk, j))")
        ent += [f"d = {d_name}.shape[{0 if c_transposed else 1}]",
                f"bm2 = _fit_tile(BLOCK_M_DOWN, m, {sub2})",
                "bd = _fit_tile(BLOCK_D, d, 128)",
                f"bfk = _fit_tile(BLOCK_FK, f, {dk_align})",
                f'''out = pl.pallas_call(
    functools.partial(_down_kernel, depth=f, w_depth_axis={1 if c_transposed else 0}),
    out_shape=jax.ShapeDtypeStruct((m, d), {G.dtype_code(out.aval.dtype)}),
    grid=(pl.cdiv(m, bm2), pl.cdiv(d, bd), pl.cdiv(f, bfk)),
    in_specs=[
        pl.BlockSpec((bm2, bfk), lambda i, j, kk: (i, kk)),
        {wd_spec},
    ],
    out_specs=pl.BlockSpec((bm2, bd), lambda i, j, kk: (i, j)),
    scratch_shapes=[pltpu.VMEM((bm2, bd), jnp.float32)],
    compiler_params=pltpu.CompilerParams(dimension_semantics={sem},
                                         vmem_limit_bytes=VMEM_LIMIT_BYTES),
)(h, {d_name})''',
                "return out.reshape(lead + (d,))"]
        what = "three projections"
    entry = f'''

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent), 4)}
'''
    gate_desc = " ".join(region.summary()) or "elementwise"
    x_shape = G.shape_text(gate.lhs.var.aval.shape)
    description = (f"gated MLP ({what}): {gate_desc} gate of {x_shape} @ `{wg_name}` times "
                   f"{x_shape} @ `{wu_name}` in one kernel ({G.dtype_name(x_dt)})"
                   + (f", then @ `{d_name}`" if down is not None else ""))
    source, imports, body = G.write_module(description=description, ctx=ctx,
                                           kernel_class=KERNEL_CLASS, constants=constants,
                                           code=F.FIT_TILE_HELPER + F.ZERO_PAST_HELPER + kernels
                                           + entry)
    notes = [(f"gate+up tiles {p1[0]}x{p1[1]}x{p1[2]}: {G.mib(p1[3])} of VMEM per step "
              f"(budget {G.mib(budget)})"),
             "chosen: two projections read the same input and an elementwise gate combines them"
             + ("; a third matmul reads the gated result" if down is not None else "")]
    if down is not None:
        notes.insert(1, f"down tiles {p2[0]}x{p2[1]}x{p2[2]}: {G.mib(p2[3])} of VMEM per step")
    notes += G.folded_statics_notes(ctx, statics)
    return G.Generated(kernel_class=KERNEL_CLASS, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body, tunables=tunables, notes=notes)
