"""The TPU emitter (Mosaic) of the matmul classes (generate.templates.matmul matches them): grid (batch?,
M/BM, N/BN, K/BK), K last and "arbitrary", an f32 accumulator in VMEM scratch, the epilogue
applied once at the last K step, extra epilogue operands (bias rows, residuals, scale columns)
as their own BlockSpecs. A row reduction either holds the whole row in the tile (BN = N) or,
when its epilogue splits into statistics, tiles the row over N with running statistics
(generate.templates.matmul_online), a full-row output in two calls (generate.templates.
matmul_two_phase; `_staged` picks); when none fits the VMEM budget the template refuses, never
a wrong kernel.
"""

from __future__ import annotations

from mkworker.generate import common as G
from mkworker.generate.common import NoTemplate
from mkworker.generate.templates import matmul as MM
from mkworker.generate.templates import matmul_online as ON
from mkworker.generate.templates import matmul_two_phase as TP

# f32 temporaries over the output tile the epilogue keeps live besides the accumulator.
EPILOGUE_TEMPS = 2
ROW_REDUCTION_TEMPS = 7


class _Plan:
    def __init__(self, bm, bn, bk, vmem, cost):
        self.bm, self.bn, self.bk, self.vmem, self.cost = bm, bn, bk, vmem, cost


def _vmem(ms, blocks, out_block, bm, bn, bk, reduction=False):
    x_blk = ((bm, bk), ms.lhs.var.aval.dtype)
    w_blk = (((bn, bk) if ms.w_transposed else (bk, bn)), ms.rhs.var.aval.dtype)
    ins = [x_blk, w_blk]
    for b in blocks:
        ins.append(((bm if b.rows_full else 1, bn if b.cols_full else 1), b.dtype))
    outs = [((bm, bn if out_block.cols_full else 1), out_block.dtype)]
    # Scratch: the f32 accumulator and the epilogue's f32 temporaries over the tile. A row
    # reduction keeps several whole-row temporaries live (v5e: linear_logsumexp at 512 x 8192 x
    # 256 used 147 MiB, about seven (512, 8192) f32 arrays beyond its blocks).
    temps = ROW_REDUCTION_TEMPS if reduction else EPILOGUE_TEMPS
    return G.step_vmem(ins, outs, [((bm, bn), ms.acc_dtype)] * (1 + temps))


# Terms fitted to libtpu's static cycles for v5e over 37 tilings of three GEMMs with epilogues
# (batched f32, square f32, bf16; bench/RESULTS.md): the modelled ranking went from a Spearman
# rho of 0.2-0.4 to 0.7-0.9, and the first plan of each is within 1 % of the compiler's best.
# - An f32 operand is rounded for the MXU in the kernel body on every step: the weight block's
#   cost is shared by the tile's rows, the input block's by its columns (relative cost
#   F32_WEIGHT_ROWS / bm + F32_INPUT_COLS / bn).
# - Fewer than MXU_FULL_COLS output columns leave some of the MXUs idle.
# - A K split pops the f32 partial products and adds them into the accumulator every step:
#   about 1.5 cycles per (8, 128) f32 tile of the output block per step at v5e's 1.5 GHz.
F32_WEIGHT_ROWS = 40.0
F32_INPUT_COLS = 10.0
MXU_FULL_COLS = 512
NARROW_COST = 0.1
ACC_SECONDS_PER_ELEMENT = 1.5 / 1024 / 1.5e9
# Tighter than MM.COST_SLACK: with the terms above, 3 % let in a K split 2 % slower compiled.
PLAN_SLACK = 0.01


def _cost(ctx, ms, out_block, bm, bn, bk):
    """Modelled seconds of a plan with no row reduction (gemm_seconds over the grid) against
    the HBM time of the blocks the pipeline fetches: a block is fetched again only when its
    index changes between consecutive steps (grid order batch, M, N, K), so with K in one step
    an input block stays for a whole row of tiles. The first step's loads and the last tile's
    write are not overlapped."""
    bw = G.target_roofline(ctx.target)[1]
    xs = G.itemsize(ms.lhs.var.aval.dtype)
    ws = G.itemsize(ms.rhs.var.aval.dtype)
    os_ = G.itemsize(out_block.dtype) * (bn if out_block.cols_full else 1)
    nb = max(1, ms.nbatch)
    gm, gn, gk = -(-ms.m // bm), -(-ms.n // bn), ms.k // bk  # a ragged last tile costs a whole step
    steps = nb * gm * gn * gk
    x_fetches = nb * gm if gk == 1 else steps
    w_fetches = nb if gk == 1 and gm == 1 and gn == 1 else steps
    traffic = x_fetches * bm * bk * xs + w_fetches * bk * bn * ws + nb * gm * gn * bm * os_
    exposed = (bm * bk * xs + bk * bn * ws + bm * os_) / bw
    return gemm_seconds(ctx, traffic, (nb * gm, gn, gk), (bm, bn, bk), ms.lhs.var.aval.dtype,
                        ms.rhs.var.aval.dtype) + exposed


def gemm_seconds(ctx, traffic: float, grid, tile, x_dtype, w_dtype, dots: int = 1) -> float:
    """Modelled seconds of a fused GEMM kernel (gated MLP, its down projection) with the terms
    above: `dots` products of the (bm, bn, bk) tile per step over the (gm, gn, gk) grid (a
    ragged last tile costs a whole one), against `traffic` bytes at HBM bandwidth."""
    peak, bw = G.target_roofline(ctx.target)
    (gm, gn, gk), (bm, bn, bk) = grid, tile
    body = 1.0 + NARROW_COST * max(0.0, MXU_FULL_COLS / bn - 1)
    if G.itemsize(x_dtype) == 4:
        body += F32_INPUT_COLS / bn
    if G.itemsize(w_dtype) == 4:
        body += F32_WEIGHT_ROWS / bm
    acc = dots * ACC_SECONDS_PER_ELEMENT * bm * bn if gk > 1 else 0.0
    step = dots * 2 * bm * bn * bk / peak * body + acc + MM.STEP_SECONDS
    return max(gm * gn * gk * step, traffic / bw)


def _row_cost(ctx, ms, out_block, bm, bn, bk):
    """Modelled seconds of a whole-row plan of a row reduction, in the same form as the tiled
    forms it is weighed against (generate.templates.matmul_online.cost, matmul_two_phase): each
    step the longer of its MXU work and its operand DMA plus the fixed step cost; the first
    step's loads and the last tile's write are not overlapped."""
    peak, bw = G.target_roofline(ctx.target)
    xs = G.itemsize(ms.lhs.var.aval.dtype)
    ws = G.itemsize(ms.rhs.var.aval.dtype)
    os_ = G.itemsize(out_block.dtype) * (bn if out_block.cols_full else 1)
    m, n, k = ms.m, ms.n, ms.k
    gm, gn, gk = -(-m // bm), -(-n // bn), k // bk
    load = bm * bk * xs + bk * bn * ws
    step = max(2 * bm * bn * bk / peak, (load + bm * os_ / gk) / bw) + MM.STEP_SECONDS
    return max(1, ms.nbatch) * gm * gn * gk * step + (load + bm * os_) / bw


def _row_align(ms, blocks, out_block) -> int:
    """Rows of a tile: a multiple of the sublane tile of every block that has BM rows."""
    return max(G.sublane_multiple(ms.lhs.var.aval.dtype), G.sublane_multiple(out_block.dtype),
               *[G.sublane_multiple(b.dtype) for b in blocks if b.rows_full])


def _choose(ctx, ms, blocks, out_block, reduction):
    sub = _row_align(ms, blocks, out_block)
    m_c = MM.candidates(ms.m, sub, ragged=True)
    n_c = [ms.n] if reduction else MM.candidates(ms.n, G.LANE, ragged=True)
    w_sub = G.sublane_multiple(ms.rhs.var.aval.dtype)
    # The whole K as one block too, past MM.MAX_BLOCK: one step per output tile, so no f32
    # partial products go through the accumulator (2-8 % of a GEMM's cycles on v5e).
    k_c = MM.candidates(ms.k, max(G.LANE, w_sub))
    if not reduction:
        k_c = sorted(set(k_c + [ms.k]))
    budget = ctx.vmem_budget
    cost = _row_cost if reduction else _cost
    plans = []
    for bm in m_c:
        for bn in n_c:
            for bk in k_c:
                v = _vmem(ms, blocks, out_block, bm, bn, bk, reduction)
                if v <= budget:
                    plans.append(_Plan(bm, bn, bk, v, cost(ctx, ms, out_block, bm, bn, bk)))
    best = None
    if plans:
        # Within PLAN_SLACK of the best modelled time, the plan with the least VMEM (headroom
        # for Mosaic's temporaries, and what an expert keeps: tiles just past the ridge).
        top = min(p.cost for p in plans) * (1 + (MM.COST_SLACK if reduction else PLAN_SLACK))
        best = (None, min((p for p in plans if p.cost <= top),
                          key=lambda p: (p.vmem, p.cost, -(p.bm * p.bn), -p.bk)))
    if best is None:
        smallest = _vmem(ms, blocks, out_block, m_c[0], n_c[0], k_c[0], reduction)
        what = (f"a full output row (N={ms.n}, needed by the row reduction)" if reduction
                else "the smallest valid tiles")
        raise NoTemplate(f"{what} does not fit the VMEM budget: {G.mib(smallest)} per step with "
                         f"{m_c[0]}x{n_c[0]} tiles, budget {G.mib(budget)} of the target's "
                         f"{G.mib(ctx.vmem_limit)}" + ("; a two-pass kernel (tiled matmul, then a "
                                                       "row kernel) is a later step"
                                                       if reduction else ""), ["dot_general"])
    plan = best[1]

    def fits(bm, bn, bk):
        return _vmem(ms, blocks, out_block, bm, bn, bk, reduction) <= budget

    tun = {"BLOCK_M": [b for b in m_c if fits(b, plan.bn, plan.bk)],
           "BLOCK_K": [b for b in k_c if fits(plan.bm, plan.bn, b)]}
    if not reduction:
        tun["BLOCK_N"] = [b for b in n_c if fits(plan.bm, b, plan.bk)]
    tun = {k: G.around(v, getattr(plan, "b" + k[-1].lower())) for k, v in tun.items()}
    # vmem_limit_bytes covers the largest plan of the tunable space (the autotuner varies one
    # constant at a time from the first plan).
    plan.limit_vmem = max([plan.vmem] + [
        _vmem(ms, blocks, out_block, *(b if name == "BLOCK_" + a.upper() else getattr(plan, "b" + a)
                                       for a in "mnk"), reduction)
        for name, vals in tun.items() for b in vals])
    return plan, tun



# ---------------------------------------------------------------------------
# Writing the module.


def emit(ctx, matched: MM.Matched) -> G.Generated:
    ms, region, out, store, reduction, blocks, out_block = matched
    x_name = ctx.name_of_invar(ms.lhs.var)
    w_name = ctx.name_of_invar(ms.rhs.var)
    batched = ms.nbatch > 0
    try:
        plan, tunables = _choose(ctx, ms, blocks, out_block, reduction)
    except NoTemplate:
        if not reduction:
            raise
        plan, tunables = None, None  # the whole row does not fit: only the tiled row can

    sub = _row_align(ms, blocks, out_block)  # the same rule at every size the entry meets
    k_align = max(G.LANE, G.sublane_multiple(ms.rhs.var.aval.dtype))
    gi = "b, i, j, kk" if batched else "i, j, kk"
    kaxis = 3 if batched else 2

    # --- kernel
    params = [f"{x_name}_ref", f"{w_name}_ref"] + [f"{b.name}_ref" for b in blocks] + \
        ["o_ref", "acc_ref"]
    statics = list(region.statics_used)
    sig = ", ".join(params) + ((", *, " + ", ".join(statics)) if statics else "")
    xv = f"{x_name}_ref[...]" + (f".astype({G.dtype_code(ms.lhs.convert)})" if ms.lhs.convert else "")
    wv = f"{w_name}_ref[...]" + (f".astype({G.dtype_code(ms.rhs.convert)})" if ms.rhs.convert else "")
    prec = ""
    prec_code = G.mosaic_precision_code([ms.precision])
    if prec_code is not None:
        prec = f", precision={prec_code}"
    if ms.w_transposed:
        dot = (f"jax.lax.dot_general(\n        {xv}, {wv}, (((1,), (1,)), ((), ())),\n"
               f"        preferred_element_type=jnp.{ms.acc_dtype}{prec})")
    else:
        dot = f"jnp.dot({xv}, {wv}, preferred_element_type=jnp.{ms.acc_dtype}{prec})"
    if reduction:
        staged = _staged(ctx, ms, region, out, blocks, out_block, plan, sub, k_align, dot)
        if staged is not None:
            return staged
    epi = [f"y = acc_ref[...].astype({G.dtype_code(ms.dot_dtype)})"]
    if region.uses_row_len:
        epi.append("row_len = y.shape[-1]  # the whole row is in the tile")
    epi += region.lines + store
    pos = []  # the tile's place in the output, read outside pl.when (for iota)
    if "rows" in region.tiles_used:
        pos.append(f"tile_rows = acc_ref.shape[0]\n    row0 = pl.program_id({kaxis - 2}) * tile_rows")
    if "cols" in region.tiles_used:
        pos.append(f"tile_cols = acc_ref.shape[1]\n    col0 = pl.program_id({kaxis - 1}) * tile_cols")
    pos_text = "".join("\n    " + p for p in pos)
    kernel = f'''

def _matmul_kernel({sig}):
    kk = pl.program_id({kaxis}){pos_text}

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += {dot}

    @pl.when(kk == pl.num_programs({kaxis}) - 1)
    def _epilogue():
{G.indent(chr(10).join(epi), 8)}
'''

    # --- entry
    # Output rows (and, without a row reduction, columns) are independent: their last tile may
    # be ragged (Pallas masks it). K is summed over: its tile divides K.
    fits = [f"bm = _ragged_block(BLOCK_M, m, {sub})",
            "bn = n  # the whole row: the epilogue reduces over it" if reduction
            else "bn = _ragged_block(BLOCK_N, n, 128)",
            f"bk = _fit_block(BLOCK_K, k, {k_align})"]
    lines, specs, args = MM.entry_inputs(ms, x_name, w_name, blocks, gi, fits, MM.operand_specs(ms, batched))
    view = MM.output_view(ms, out, out_block, gi)
    sem = ("parallel",) * len(view.grid) + ("arbitrary",)
    call = G.pallas_call_code(
        kernel=G.static_partial("_matmul_kernel", ctx, statics), out_shape=view.shape,
        grid=f"({', '.join(view.grid + ['k // bk'])})", in_specs=specs, out_spec=view.spec,
        options=[f"scratch_shapes=[pltpu.VMEM((bm, bn), jnp.{ms.acc_dtype})]",
                 f"compiler_params={MM.wrap_params(G.compiler_params_code(sem, ctx, plan.limit_vmem))}"],
        args=args, final=view.final)
    entry = MM.entry_code(ctx, lines, call, ragged=True)
    constants = [("BLOCK_M", plan.bm, "rows of the output tile")]
    if not reduction:
        constants.append(("BLOCK_N", plan.bn, "columns of the output tile"))
    constants.append(("BLOCK_K", plan.bk, "depth of one accumulation step"))
    kclass = "matmul_row_reduction" if reduction else "matmul_epilogue"
    description = MM.describe(ms, region, blocks)
    source, imports, body = G.write_module(description=description, ctx=ctx, kernel_class=kclass,
                                           constants=constants, code=G.block_helpers(kernel, entry) + kernel + entry)
    notes = [(f"tiles {plan.bm}x{plan.bn}x{plan.bk}: {G.mib(plan.vmem)} of VMEM per step "
              f"(budget {G.mib(ctx.vmem_budget)})")]
    if reduction:
        notes.append(f"N={ms.n} {G.dtype_name(out.aval.dtype)} row fits a {plan.bm}-row output "
                     "tile: the row reduction runs in the epilogue")
    notes += G.folded_statics_notes(ctx, statics)
    return G.Generated(kernel_class=kclass, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body, tunables=tunables, notes=notes)


def _staged(ctx, ms, region, out, blocks, out_block, whole, sub, k_align, dot):
    """The row tiled over N with running statistics (generate.templates.matmul_online) when the epilogue
    splits that way and, for a per-row output, the whole-row plan `whole` is not modelled
    clearly cheaper; a full-row output only where `whole` is None (the whole row does not fit).
    Else None (keep the whole row), or NoTemplate when neither fits."""
    sg = ON.analyse(region, out, out_block.cols_full)
    if out_block.cols_full:
        two = _two_phase(ctx, ms, region, out, blocks, out_block, whole, sub, k_align, dot, sg)
        if two is not None:
            return two
    if out_block.cols_full and whole is not None:
        # A full-row output stays whole where it fits: on v5e's compiler the tiled form lost
        # (log-softmax 7.8 % slower), tied (row L2 norm) or did not compile within 8-22 GB of
        # compiler memory (softmax with 2, 8 and 16 N tiles); see bench/RESULTS.md, issue 35.
        return None
    if sg is not None and out_block.cols_full and ms.nbatch and any(b.cols_full for b in blocks):
        sg = None  # a batched full-row output with column operands: not written tiled
    plan = tun = None
    if sg is not None:
        plan, tun = ON.choose(ctx, ms, blocks, out_block, len(sg.stats), sub)
    # Tiled unless the whole-row plan is clearly cheaper (equal when one N tile is the row).
    if plan is None or (whole is not None and whole.cost < plan.cost * (1 - MM.COST_SLACK)):
        if whole is None:
            raise NoTemplate(f"a full output row (N={ms.n}, needed by the row reduction) does "
                             f"not fit the VMEM budget {G.mib(ctx.vmem_budget)} with a useful M "
                             "block: whole, tiled over N with running statistics, or in two "
                             "phases (statistics, then each tile normalised; not batched)",
                             ["dot_general"])
        return None
    return ON.write(ctx, ms, region, out, blocks, out_block, sg, plan, tun, sub, k_align, dot)



def _two_phase(ctx, ms, region, out, blocks, out_block, whole, sub, k_align, dot, sg):
    """The full-row output in two phases (generate.templates.matmul_two_phase) when its
    statistics split that way (not batched) and its modelled cost is below the whole-row plan's;
    else None."""
    if sg is None or ms.nbatch:
        return None
    plan, tun = TP.choose(ctx, ms, blocks, out_block, len(sg.stats), sub)
    if plan is None or (whole is not None and whole.cost <= plan.cost):
        return None
    return TP.write(ctx, ms, region, out, blocks, out_block, sg, plan, tun, sub, k_align, dot)
