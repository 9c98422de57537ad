"""Matmul + a full-row output over the row's statistics (softmax, log-softmax, row norm) in two
pallas_calls, each over (M/BM, N/BN[, K/BK]) tiles, so that no step holds a whole row:

  phase 1  the matmul tiled over N with the row's running statistics (generate.templates.
           matmul_online: max, sum of exp(x - max) carried online, ...) written as lane-dense
           (M, 128) f32 arrays, the statistic blocks resident across a row block's N and K steps;
  phase 2  each output tile from its logits tile and the final statistics, either
           "recompute": the matmul again (the weight read twice, no logits in HBM), or
           "logits":    phase 1 also writes the f32 logits, and phase 2 normalises them
                        elementwise (in place when the output is f32).
Both phases use the same BM, BN, BK. The last N tile may run past the row's end (vocab 50257):
phase 1 masks it out of every statistic (matmul_online's `valid`), phase 2's extra columns are
dropped by the output block's bounds. `PHASES` (the form) is a tunable of the module.
"""

from __future__ import annotations

from mkworker.generate import common as G
from mkworker.generate.templates import matmul as MM
from mkworker.generate.templates import matmul_online as ON

FORMS = ("recompute", "logits")
# f32 temporaries over a (BM, BN) tile in phase 2 (the finish's values) besides its blocks.
FINISH_TEMPS = 3
# Seconds per output element of an elementwise pass over the tiles that runs beside the MXU
# rather than under a DMA: phase 1's statistics (both forms) and the recompute form's finish.
# Fitted to libtpu's static cycles on v5e (bench/RESULTS.md, issue 35, two phases): with it the
# model orders whole row, "logits" and "recompute" as the compiler does at 1024 x 512 @ 512 x
# 8192 (whole first) and 1024 x 4096 @ 4096 x 8192 ("logits" first).
ROW_PASS_SECONDS = 5e-12
# Seconds per element of the tile for each K step's accumulate (acc_ref += dot), fitted the same
# way (1024 x 2048 x 256 tiles were 6 % slower than 1024 x 1024 x 1024 at 1024 x 4096 @ 4096 x 8192).
ACC_STEP_SECONDS = 0.25e-12


# Elements of one strip of a tile's elementwise work: Mosaic's compile memory grows with the
# code a tile's values span (v5e, linear_softmax: a 1024 x 2048 f32 tile's epilogue and the
# 256 x 8192 whole row both went past 5 GiB of compiler memory), so each phase walks its tile
# in strips of rows in a loop.
STRIP_ELEMENTS = 64 * 1024

STRIP_HELPER = f'''

def _strip_rows(rows, cols):
    """Rows of one strip of a tile's elementwise work (about {STRIP_ELEMENTS} elements): the
    largest multiple of 8 that divides the tile's rows, else the whole tile."""
    target = max(8, {STRIP_ELEMENTS} // cols)
    if rows <= target:
        return rows
    for s in range(target - target % 8, 7, -8):
        if rows % s == 0:
            return s
    return rows
'''


def _in_strips(body: list, blocks, uses_rows: bool) -> list:
    """`body` (code over one strip: `rows` its row slice) run over the tile's strips in a loop;
    operand blocks with rows are read strip by strip; `uses_rows`: the body reads `row0`."""
    text = "\n".join(body)
    for b in blocks:
        if b.rows_full:
            text = text.replace(f"{b.name}_ref[...]", f"{b.name}_ref[rows, :]")
    return ["strip = _strip_rows(tile_rows, tile_cols)",
            "",
            "def _strip(t, carry):",
            "    r0 = pl.multiple_of(t * strip, 8) if strip % 8 == 0 else t * strip",
            "    rows = pl.ds(r0, strip)"] + \
        (["    row0 = pl.program_id(0) * tile_rows + r0"] if uses_rows else []) + [
            G.indent(text, 4).replace("tile_rows", "strip"),
            "    return carry",
            "",
            "jax.lax.fori_loop(0, tile_rows // strip, _strip, 0)"]


class Plan:
    def __init__(self, bm, bn, bk, form, vmem, cost):
        self.bm, self.bn, self.bk, self.form, self.vmem, self.cost = bm, bn, bk, form, vmem, cost
        self.limit_vmem = (vmem, vmem)


def vmem(ms, blocks, out_block, nstats, bm, bn, bk, form) -> tuple[int, int]:
    """Each phase's step (each block double-buffered, scratch once). The plan fits their sum
    in the budget and each call's limit covers its own phase: with 97 MiB set on both calls,
    v5e refused linear_softmax at 1024 rows (134 MiB of 128 used: 36 MiB scoped beside 98 MiB
    of "HLO temp"), with the limits per phase it compiled."""
    tiles = [((bm if b.rows_full else 1, bn if b.cols_full else 1), b.dtype) for b in blocks]
    x_w = [((bm, bk), ms.lhs.var.aval.dtype),
           (((bn, bk) if ms.w_transposed else (bk, bn)), ms.rhs.var.aval.dtype)]
    stats = [((bm, G.LANE), "float32")] * nstats
    acc = [((bm, bn), "float32")]
    # The elementwise temporaries span one strip of rows (see STRIP_ELEMENTS), not the tile.
    strip = [((max(8, min(bm, STRIP_ELEMENTS // bn)), bn), "float32")]
    logits = [((bm, bn), "float32")] if form == "logits" else []
    p1 = G.step_vmem(x_w + tiles, stats + logits, acc + strip * ON.TILE_TEMPS)
    out = [((bm, bn), out_block.dtype)]
    if form == "recompute":
        p2 = G.step_vmem(x_w + tiles + stats, out, acc + strip * FINISH_TEMPS)
    else:
        p2 = G.step_vmem(logits + tiles + stats, out, strip * FINISH_TEMPS)
    return p1, p2


def cost(ctx, ms, out_block, bm, bn, bk, form) -> float:
    """Modelled seconds: phase 1 as a per-row matmul_online plan; phase 2 the same matmul with
    the output tile written ("recompute"), or one read of the logits and one write of the
    output at HBM bandwidth ("logits", whose phase 1 also writes the logits); plus
    ROW_PASS_SECONDS an element for each elementwise pass beside the MXU."""
    peak, bw = G.target_roofline(ctx.target)
    m, n = ms.m, ms.n
    gm, gn = -(-m // bm), -(-n // bn)
    nb = max(1, ms.nbatch)
    xs, ws = G.itemsize(ms.lhs.var.aval.dtype), G.itemsize(ms.rhs.var.aval.dtype)
    osz = G.itemsize(out_block.dtype)
    gk = ms.k // bk

    def matmul(out_tile_bytes):
        load = bm * bk * xs / (gn if gk == 1 else 1) + bk * bn * ws + out_tile_bytes / gk
        step = max(2 * bm * bn * bk / peak, load / bw) + MM.STEP_SECONDS + \
            bm * bn * ACC_STEP_SECONDS
        return nb * gm * gn * gk * step + (bm * bk * xs + bk * bn * ws) / bw

    elements = nb * gm * bm * gn * bn
    if form == "recompute":
        return matmul(0) + matmul(bm * bn * osz) + 2 * elements * ROW_PASS_SECONDS
    return (matmul(bm * bn * 4) + elements * ROW_PASS_SECONDS + elements * (4 + osz) / bw +
            nb * gm * gn * MM.STEP_SECONDS)


def choose(ctx, ms, blocks, out_block, nstats, sub):
    """The least modelled cost (within COST_SLACK, the least VMEM) over tiles and forms whose
    steps fit the VMEM budget, or (None, None); with the tunable lists around it."""
    m_c = MM.candidates(ms.m, sub, ragged=True)
    n_c = MM.candidates(ms.n, G.LANE, ragged=True)
    k_align = max(G.LANE, G.sublane_multiple(ms.rhs.var.aval.dtype))
    k_c = [b for b in MM.candidates(ms.k, k_align) if b <= ON.MAX_DEPTH] or \
        MM.candidates(ms.k, k_align)[:1]
    budget = ctx.vmem_budget

    def v(bm, bn, bk, form):
        return sum(vmem(ms, blocks, out_block, nstats, bm, bn, bk, form))

    plans = [Plan(bm, bn, bk, f, v(bm, bn, bk, f), cost(ctx, ms, out_block, bm, bn, bk, f))
             for f in FORMS for bm in m_c for bn in n_c for bk in k_c if v(bm, bn, bk, f) <= budget]
    if not plans:
        return None, None
    top = min(p.cost for p in plans) * (1 + MM.COST_SLACK)
    plan = min((p for p in plans if p.cost <= top),
               key=lambda p: (p.vmem, p.cost, -(p.bm * p.bn), -p.bk))
    f = plan.form
    tun = {"BLOCK_M": [b for b in m_c if v(b, plan.bn, plan.bk, f) <= budget],
           "BLOCK_N": [b for b in n_c if v(plan.bm, b, plan.bk, f) <= budget],
           "BLOCK_K": [b for b in k_c if v(plan.bm, plan.bn, b, f) <= budget]}
    tun = {name: G.around(vals, getattr(plan, "b" + name[-1].lower())) for name, vals in tun.items()}
    tun["PHASES"] = [x for x in FORMS if v(plan.bm, plan.bn, plan.bk, x) <= budget]
    # Each call's vmem_limit_bytes covers its own phase over the tunable space (the autotuner
    # varies one constant at a time from the first plan).
    points = [(plan.bm, plan.bn, plan.bk, x) for x in tun["PHASES"]] + [
        tuple(b if name == "BLOCK_" + a.upper() else getattr(plan, "b" + a) for a in "mnk") + (f,)
        for name, vals in tun.items() if name != "PHASES" for b in vals]
    need = [vmem(ms, blocks, out_block, nstats, *p) for p in points]
    plan.limit_vmem = (max(n[0] for n in need), max(n[1] for n in need))
    return plan, tun


def write(ctx, ms, region, out, blocks, out_block, sg: ON.Staged, plan, tunables, sub, k_align,
          dot) -> G.Generated:
    """The module: both phases' kernels and the entry that calls them in turn (not batched)."""
    x_name = ctx.name_of_invar(ms.lhs.var)
    w_name = ctx.name_of_invar(ms.rhs.var)
    gi = "i, j, kk"
    statics = list(region.statics_used)
    stat_refs = [s.ref for s in sg.stats]
    old = {s.index: f"st{s.index}" for s in sg.stats}
    new = {s.index: f"st{s.index}_new" for s in sg.stats}
    upd, _ = ON.tile_update_lines(sg, old, new)
    y_line = f"y = acc_ref[rows, :].astype({G.dtype_code(ms.dot_dtype)})"
    loads = [f"st{s.index} = {s.ref}[rows, :1]" for s in sg.stats]
    pos = ["tile_rows, tile_cols = acc_ref.shape", "col0 = pl.program_id(1) * tile_cols"]
    uses_rows = "rows" in region.tiles_used
    pos_text = "\n    ".join(pos)
    extra = ", row_len" + "".join(", " + s for s in statics)
    ins = [f"{x_name}_ref", f"{w_name}_ref"] + [f"{b.name}_ref" for b in blocks]

    # --- phase 1: the statistics (and, for "logits", the raw tiles)
    init = [f"{s.ref}[...] = jnp.full_like({s.ref}, {s.identity()})" for s in sg.stats]
    stores = [f"{s.ref}[rows, :] = jnp.broadcast_to(st{s.index}_new, (strip, {G.LANE}))"
              for s in sg.stats]
    tile_body = [y_line,
                 "valid = col0 + jax.lax.broadcasted_iota(jnp.int32, (1, tile_cols), 1) < row_len"]
    tile_body += loads + upd + stores + [
        "if logits_ref:  # the raw tile, for phase 2 to normalise",
        "    logits_ref[0][rows, :] = y.astype(logits_ref[0].dtype)"]
    sig1 = ", ".join(ins + stat_refs + ["*rest"]) + extra
    # The statistics are outputs resident across the row block's N and K steps (their block
    # index is the row block's), written back when the row block changes.
    kernel1 = f'''

def _stats_kernel({sig1}):
    *logits_ref, acc_ref = rest  # the logits output ("logits" form only), the accumulator
    j = pl.program_id(1)
    kk = pl.program_id(2)
    {pos_text}
    ragged = row_len % tile_cols != 0  # the last N tile runs past the row's end

    @pl.when((j == 0) & (kk == 0))
    def _init_stats():
{G.indent(chr(10).join(init), 8)}

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += {dot}

    @pl.when(kk == pl.num_programs(2) - 1)
    def _tile():
{G.indent(chr(10).join(_in_strips(tile_body, blocks, uses_rows)), 8)}
'''

    # --- phase 2: each output tile from its logits tile and the final statistics
    flines, code = ON.finish_lines(sg, old, {id(v): "y" for v in region.known})
    store = f"o_ref[rows, :] = jnp.broadcast_to({code}, y.shape).astype(o_ref.dtype)"
    blk = [f"{b.name}_ref" for b in blocks]
    sig_r = ", ".join(ins + stat_refs + ["o_ref", "acc_ref"]) + extra
    kernel_r = f'''

def _recompute_kernel({sig_r}):
    kk = pl.program_id(2)
    {pos_text}

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += {dot}

    @pl.when(kk == pl.num_programs(2) - 1)
    def _out():
{G.indent(chr(10).join(_in_strips([y_line] + loads + flines + [store], blocks, uses_rows)), 8)}
'''
    pos_l = "\n    ".join(p.replace("acc_ref", "o_ref") for p in pos)
    sig_l = ", ".join(["logits_ref"] + blk + stat_refs + ["o_ref"]) + extra
    kernel_l = f'''

def _normalise_kernel({sig_l}):
    {pos_l}
{G.indent(chr(10).join(_in_strips(["y = logits_ref[rows, :]"] + loads + flines + [store], blocks, uses_rows)), 4)}
'''

    # --- entry
    fits = [f"bm = _ragged_block(BLOCK_M, m, {sub})",
            "bn = _ragged_block(BLOCK_N, n, 128)",
            f"bk = _fit_block(BLOCK_K, k, {k_align})"]
    lines, specs, args = MM.entry_inputs(ms, x_name, w_name, blocks, gi, fits,
                                         MM.operand_specs(ms, False))
    block_args = args[2:]
    block_specs = [s.replace(f"lambda {gi}:", "lambda i, j:") for s in specs[2:]]
    stat_spec = "pl.BlockSpec((bm, 128), lambda i, j, *_: (i, 0))"
    tile_spec = "pl.BlockSpec((bm, bn), lambda i, j, *_: (i, j))"
    stat_shapes = [f"jax.ShapeDtypeStruct((m, 128), jnp.{s.dtype})" for s in sg.stats]
    kw = "row_len=n" + "".join(f", {s}={s}" for s in statics)
    out_dt = G.dtype_code(out.aval.dtype)
    in_place = G.dtype_name(out.aval.dtype) == "float32"
    n_st = len(sg.stats)
    # In place over the logits where the output is f32 and the tiles divide it (the interpreter
    # returns a ragged aliased buffer padded to whole tiles).
    aliases = ("\n        input_output_aliases={0: 0} if m % bm == 0 and n % bn == 0 else {},"
               if in_place else "")
    lim1, lim2 = plan.limit_vmem
    p1_params = G.compiler_params_code(("parallel", "arbitrary", "arbitrary"), ctx, lim1)
    p2_params = G.compiler_params_code(("parallel", "parallel", "arbitrary"), ctx, lim2)
    pe_params = G.compiler_params_code(("parallel", "parallel"), ctx, lim2)
    body = f'''logits = PHASES == "logits"
grid = (pl.cdiv(m, bm), pl.cdiv(n, bn), k // bk)
outs = pl.pallas_call(
    functools.partial(_stats_kernel, {kw}),
    out_shape=[{", ".join(stat_shapes)}]
    + ([jax.ShapeDtypeStruct((m, n), jnp.float32)] if logits else []),
    grid=grid,
    in_specs=[{", ".join(specs)}],
    out_specs=[{", ".join([stat_spec] * n_st)}] + ([{tile_spec}] if logits else []),
    scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
    compiler_params={p1_params},
)({", ".join(args)})
stats = outs[:{n_st}]
if logits:
    out = pl.pallas_call(
        functools.partial(_normalise_kernel, {kw}),
        out_shape=jax.ShapeDtypeStruct((m, n), {out_dt}),
        grid=grid[:2],
        in_specs=[{", ".join([tile_spec] + block_specs + [stat_spec] * n_st)}],
        out_specs={tile_spec},{aliases}
        compiler_params={pe_params},
    )(outs[{n_st}], {"".join(a + ", " for a in block_args)}*stats)
else:
    out = pl.pallas_call(
        functools.partial(_recompute_kernel, {kw}),
        out_shape=jax.ShapeDtypeStruct((m, n), {out_dt}),
        grid=grid,
        in_specs=[{", ".join(specs + [stat_spec] * n_st)}],
        out_specs={tile_spec},
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params={p2_params},
    )({", ".join(args)}, *stats)
return out.reshape(lead + (n,))'''
    entry = MM.entry_code(ctx, lines, body, ragged=True)
    kernel = STRIP_HELPER + kernel1 + kernel_r + kernel_l
    constants = [("BLOCK_M", plan.bm, "rows of the output tile"),
                 ("BLOCK_N", plan.bn, "columns of one step's tile of the row"),
                 ("BLOCK_K", plan.bk, "depth of one accumulation step"),
                 ("PHASES", plan.form, 'phase 2: "recompute" the logits or read those phase 1 wrote')]
    description = MM.describe(ms, region, blocks)
    source, imports, mbody = G.write_module(
        description=description, ctx=ctx, kernel_class="matmul_row_reduction",
        constants=constants, code=G.block_helpers(kernel, entry) + kernel + entry)
    notes = [(f"tiles {plan.bm}x{plan.bn}x{plan.bk}: {G.mib(plan.vmem)} of VMEM for a step of "
              f"each phase (budget {G.mib(ctx.vmem_budget)})"),
             (f"two phases over the row (N={ms.n}): {n_st} running statistic(s) across the N "
              f"tiles, then each tile normalised ({plan.form})")]
    notes += G.folded_statics_notes(ctx, statics)
    return G.Generated(kernel_class="matmul_row_reduction", description=description,
                       source=source, entry=ctx.entry, imports=imports, body=mbody,
                       tunables=tunables, notes=notes)
