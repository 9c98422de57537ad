"""The GPU form (generate.gpu_form) of the matmul templates: matmul + epilogue and matmul + row
reduction, written for Pallas on GPU (Triton).

Kernel shape: grid (batch?, M/BM, N/BN), all parallel. Each program holds a (BM, K) block of
the left operand and a (K, BN) block of the weight (whole K: Triton has no sequential grid
axis) and accumulates over K in a `jax.lax.fori_loop` of BK-deep `pl.ds` slices, in float32
registers (int32 for integer matmuls); the reference's epilogue runs once on the result, with
its extra operands as their own BlockSpecs, as in the TPU form. The row-reduction class holds
whole rows (BN = N): N must be a power of two and BM x N must fit the register budget.
"""

from __future__ import annotations

from mkworker.generate import common as G
from mkworker.generate import gpu_form as GPU
from mkworker.generate.common import NoTemplate
from mkworker.generate.templates import matmul as MM

MAX_BLOCK_MN = 256
MAX_BLOCK_K = 128


def _pow2_blocks(dim: int, what: str, cap: int) -> list[int]:
    c = GPU.pow2_divisors(dim, cap, GPU.MIN_DOT)
    if not c:
        raise NoTemplate(f"GPU form: {what}={dim} has no power-of-two tile of at least "
                         f"{GPU.MIN_DOT} dividing it (Triton's dot needs one)", ["dot_general"])
    return c


def _pick(cands: list[int], want: int) -> int:
    below = [b for b in cands if b <= want]
    return max(below) if below else min(cands)


def _choose(ms, reduction: bool):
    m_c = _pow2_blocks(ms.m, "M", MAX_BLOCK_MN)
    k_c = _pow2_blocks(ms.k, "K", MAX_BLOCK_K)
    if reduction:
        if not GPU.is_pow2(ms.n) or ms.n < GPU.MIN_DOT:
            raise NoTemplate(f"GPU form: the row reduction holds whole rows, and N={ms.n} is not "
                             "a power of two of at least 16 (Triton computes on power-of-two "
                             "blocks)", ["dot_general"])
        m_c = [b for b in m_c if b * ms.n <= GPU.MAX_TILE_ELEMENTS]
        if not m_c:
            raise NoTemplate(f"GPU form: a full output row (N={ms.n}, needed by the row "
                             f"reduction) of {GPU.MIN_DOT} rows is over the "
                             f"{GPU.MAX_TILE_ELEMENTS}-value register budget of one program; a "
                             "two-pass kernel is a later step", ["dot_general"])
        n_c = [ms.n]
    else:
        n_c = _pow2_blocks(ms.n, "N", MAX_BLOCK_MN)
    bm = _pick(m_c, 128 if not reduction else max(m_c))
    bn = _pick(n_c, 128)
    xs, ws = G.itemsize(ms.lhs.var.aval.dtype), G.itemsize(ms.rhs.var.aval.dtype)
    # One K step stages a (BM, BK) slice of x and a (BK, BN) slice of w in shared memory.
    plan = GPU.stages_and_depth(k_c, bm * xs + bn * ws, 64 if max(xs, ws) <= 2 else 32)
    if plan is None:
        raise NoTemplate(f"GPU form: one K step of a {bm}x{bn} tile needs more than the "
                         f"{GPU.SMEM_BUDGET // 1024} KiB shared-memory budget", ["dot_general"])
    stages, bk = plan
    tun = {"BLOCK_M": G.around(m_c, bm), "BLOCK_K": G.around(k_c, bk)}
    if not reduction:
        tun["BLOCK_N"] = G.around(n_c, bn)
    return bm, bn, bk, stages, tun


def emit(ctx, matched: MM.Matched) -> G.Generated:
    ms, region, out, store, reduction, blocks, out_block = matched
    x_name = ctx.name_of_invar(ms.lhs.var)
    w_name = ctx.name_of_invar(ms.rhs.var)
    batched = ms.nbatch > 0
    bm, bn, bk, stages, tunables = _choose(ms, reduction)
    warps = 8 if bm * bn >= 128 * 128 else 4
    tunables.update(GPU.launch_tunables(warps, stages))
    raxis, caxis = (1, 2) if batched else (0, 1)

    # --- kernel
    params = [f"{x_name}_ref", f"{w_name}_ref"] + [f"{b.name}_ref" for b in blocks] + ["o_ref"]
    statics = list(region.statics_used)
    sig = ", ".join(params) + ", *, " + ", ".join(["bk"] + statics)
    xv = "x_tile" + (f".astype({G.dtype_code(ms.lhs.convert)})" if ms.lhs.convert else "")
    wv = "w_tile" + (f".astype({G.dtype_code(ms.rhs.convert)})" if ms.rhs.convert else "")
    prec = f", precision={MM.precision_code(ms.precision)}" if ms.precision is not None else ""
    if ms.w_transposed:
        w_slice = f"{w_name}_ref[:, pl.ds(kk * bk, bk)]"
        dot = (f"jax.lax.dot_general({xv}, {wv}, (((1,), (1,)), ((), ())),\n"
               f"                                 preferred_element_type=jnp.{ms.acc_dtype}{prec})")
        bn_code = f"{w_name}_ref.shape[0]"
    else:
        w_slice = f"{w_name}_ref[pl.ds(kk * bk, bk), :]"
        dot = f"jnp.dot({xv}, {wv}, preferred_element_type=jnp.{ms.acc_dtype}{prec})"
        bn_code = f"{w_name}_ref.shape[1]"
    head = [f"bm, k = {x_name}_ref.shape", f"bn = {bn_code}"]
    if "rows" in region.tiles_used:
        head += ["tile_rows = bm", f"row0 = pl.program_id({raxis}) * tile_rows"]
    if "cols" in region.tiles_used:
        head += ["tile_cols = bn", f"col0 = pl.program_id({caxis}) * tile_cols"]
    epi = [f"y = acc.astype({G.dtype_code(ms.dot_dtype)})"]
    if region.uses_row_len:
        epi.append("row_len = bn  # the whole row is in the tile")
    epi += region.lines + store
    kernel = f'''

def _matmul_kernel({sig}):
{G.indent(chr(10).join(head), 4)}

    def _k_step(kk, acc):
        x_tile = {x_name}_ref[:, pl.ds(kk * bk, bk)]
        w_tile = {w_slice}
        return acc + {dot}

    # K is a loop inside the program (Triton's grid has no sequential axis).
    acc = jax.lax.fori_loop(0, k // bk, _k_step, jnp.zeros((bm, bn), jnp.{ms.acc_dtype}))
{G.indent(chr(10).join(epi), 4)}
'''

    # --- entry
    fits = ["bm = _fit_pow2(BLOCK_M, m)",
            "bn = n  # the whole row: the epilogue reduces over it" if reduction
            else "bn = _fit_pow2(BLOCK_N, n)",
            "bk = _fit_pow2(BLOCK_K, k)"]
    gi = "b, i, j" if batched else "i, j"
    if batched:
        operand_specs = ["pl.BlockSpec((None, bm, k), lambda b, i, j: (b, i, 0))",
                         "pl.BlockSpec((None, bn, k), lambda b, i, j: (b, j, 0))" if ms.w_transposed
                         else "pl.BlockSpec((None, k, bn), lambda b, i, j: (b, 0, j))"]
    else:
        operand_specs = ["pl.BlockSpec((bm, k), lambda i, j: (i, 0))",
                         "pl.BlockSpec((bn, k), lambda i, j: (j, 0))" if ms.w_transposed
                         else "pl.BlockSpec((k, bn), lambda i, j: (0, j))"]
    lines, specs, args = MM.entry_inputs(ms, x_name, w_name, blocks, gi, fits, operand_specs)
    view = MM.output_view(ms, out, out_block, gi)
    kw = ", ".join(["bk=bk"] + [f"{s}={s}" for s in statics])
    call = G.pallas_call_code(
        kernel=f"functools.partial(_matmul_kernel, {kw})", out_shape=view.shape,
        grid=f"({', '.join(view.grid)})", in_specs=specs, out_spec=view.spec,
        options=[f"compiler_params={GPU.params_code()}"], args=args, final=view.final)
    entry = MM.entry_code(ctx, lines, call)
    constants = [("BLOCK_M", bm, "rows of the output tile")]
    if not reduction:
        constants.append(("BLOCK_N", bn, "columns of the output tile"))
    constants.append(("BLOCK_K", bk, "depth of one step of the K loop"))
    constants += GPU.launch_constants(warps, stages)
    kclass = "matmul_row_reduction" if reduction else "matmul_epilogue"
    description = MM.describe(ms, region, blocks) + " (GPU form)"
    source, imports, body = G.write_module(description=description, ctx=ctx, kernel_class=kclass,
                                           constants=constants,
                                           code=GPU.FIT_POW2_HELPER + GPU.helpers_code(region.helpers)
                                           + kernel + entry,
                                           imports=GPU.IMPORTS)
    smem = stages * bk * (bm * G.itemsize(ms.lhs.var.aval.dtype)
                          + bn * G.itemsize(ms.rhs.var.aval.dtype))
    notes = [GPU.notes_for_form(),
             (f"tiles {bm}x{bn}, K in steps of {bk}; {warps} warps, {stages} stages "
              f"({smem // 1024} KiB of shared memory)")]
    if reduction:
        notes.append(f"N={ms.n} row in a {bm}-row tile: the row reduction runs after the K loop")
    notes += G.folded_statics_notes(ctx, statics)
    return G.Generated(kernel_class=kclass, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body, tunables=tunables, notes=notes)
