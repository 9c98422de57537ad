"""The TPU emitter (Mosaic) of the attention class (generate.templates.attention matches it): a
flash-attention kernel, online softmax over kv blocks, f32 m/l/acc in VMEM scratch, causal blocks
above the diagonal skipped (pl.when) and not fetched (the kv index_map clamped), GQA heads mapped
in the kv index_map.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mkworker.generate import common as G
from mkworker.generate.templates import attention as MA
from mkworker.generate.templates import attention_entry as AE
from mkworker.generate.templates import head_tables as HT


def _alibi_tables(ctx, matched: MA.Matched) -> dict | None:
    """ALiBi's slopes by head count (generate.templates.head_tables), or None without a bias."""
    matcher = matched.matcher
    if not matcher.alibi:
        return None

    def read(c):
        found = MA.match(c)
        if found is None or not found.matcher.alibi or found.matcher.alibi[1] != matcher.alibi[1]:
            return None
        return found.matcher.alibi[0]

    return HT.tables(ctx, matched.m, matched.q_var, matched.k_var, matcher.alibi[0], read,
                     "ALiBi slope", matcher.fail)


class TilePlan(NamedTuple):
    bq: int
    bk: int
    q_ok: list  # query blocks that fit with bk (the tunable's values)
    k_ok: list
    sub: int  # the q / output blocks' sublane multiple
    sub_k: int
    step: object  # (bq, bk) -> VMEM bytes a step


def tile_plan(ctx, matcher, m, dtypes, scratch, bias_dtype=None, long_kv=False) -> TilePlan:
    """The (q block, kv block) an attention-shaped kernel takes: the most MXU-friendly pair whose
    step fits the generation's VMEM budget, with the pairs around it that fit too. `scratch`
    lists the f32 temporaries besides the pipelined blocks: ((lanes,), n) is n (bq, lanes)
    arrays, (None, n) is n (bq, bk) arrays. `long_kv` (no causal block skipping to gain from
    short kv blocks) takes the longest kv block that fits: each kv step rescales the running
    output and statistics, and non-causal f32 attention at 2048 x 2048 read 0.76x of XLA's
    program with 512-long kv blocks, 1.43x with 2048 (v5e's compiler)."""
    qdt, kdt, vdt, odt = dtypes
    S, T, D, DV = (m[k] for k in ("S", "T", "D", "DV"))
    sub = max(G.sublane_multiple(qdt), G.sublane_multiple(odt),
              G.sublane_multiple(bias_dtype) if bias_dtype is not None else 1)
    sub_k = max(G.sublane_multiple(kdt), G.sublane_multiple(vdt))

    def step(bq, bk):
        io = [((bq, D), qdt), ((bk, D), kdt), ((bk, DV), vdt)]
        if bias_dtype is not None:
            io.append(((bq, bk), bias_dtype))
        temps = [((bq, bk if lanes is None else lanes[0]), np.float32)
                 for lanes, n in scratch for _ in range(n)]
        return G.step_vmem(io, [((bq, DV), odt)], temps)

    budget = ctx.vmem_budget
    q_cands = [b for b in G.ragged_candidates(S, sub) if b <= 2048]
    k_cands = [b for b in G.block_candidates(T, 128, cap=2048) if b % sub_k == 0 or b == T]
    # kv rows are summed over: with no 128-multiple dividing kv_len (4000), the whole of it
    # (what the entry's _fit_block gives too; the s / p temporaries are (bq, kv_len)).
    k_cands = k_cands or [T]
    pairs = [(a, b) for a in q_cands for b in k_cands if step(a, b) <= budget]
    if not pairs:
        matcher.fail(f"no (q block, kv block) pair fits the {G.mib(budget)} VMEM budget")
    pref = {512: 0, 256: 1, 1024: 2, 128: 3}
    if long_kv:
        bq, bk = min(pairs, key=lambda p: (pref.get(p[0], 9), -p[1], -p[0]))
    else:
        bq, bk = min(pairs, key=lambda p: (pref.get(p[0], 9), pref.get(p[1], 9), -p[0], -p[1]))
    q_ok = G.around(sorted({a for a, b in pairs if b == bk}), bq)
    k_ok = G.around(sorted({b for a, b in pairs if a == bq}), bk)
    return TilePlan(bq, bk, q_ok, k_ok, sub, sub_k, step)


def plan_limit(ctx, plan: TilePlan) -> int:
    """vmem_limit_bytes for the chosen step. Not the largest among the tunable choices: the limit
    is VMEM set aside for the kernel, and what is left must hold the compiler's own temporaries
    for the (bq, bk) f32 scores. On v5e a 512 x 2048 non-causal kernel compiled with 24 MiB set
    aside and was refused with 58 MiB (130.9 of 128 MiB used); a tunable choice that needs more
    is refused at its compile and ranked out."""
    return G.vmem_limit_for(plan.step(plan.bq, plan.bk), ctx.vmem_limit)


def emit(ctx, matched: MA.Matched) -> G.Generated:
    matcher, m, causal, scale, q_var, k_var, v_var, out_var = matched
    names = {v: n for v, n in zip(ctx.jaxpr.invars, ctx.arg_names)}
    qn, kn, vn = (AE.ident(names[v]) for v in (q_var, k_var, v_var))
    qdt, kdt, vdt, odt = (v.aval.dtype for v in (q_var, k_var, v_var, out_var))
    D, DV = m["D"], m["DV"]
    bias, mask = matcher.bias_input, matcher.mask_input
    if sum(map(bool, (bias, mask, matcher.alibi))) > 1:
        matcher.fail("the scores get more than one of ALiBi, a bias input and a mask input", ["add"])
    # A mask input is read as int8 (converted in the entry: Mosaic takes no bool blocks).
    tile_input = bias or mask
    plan = tile_plan(ctx, matcher, m, (qdt, kdt, vdt, odt),
                     [((128,), 1), ((128,), 1), ((DV,), 1), (None, 2)],
                     (bias[0].aval.dtype if bias else np.int8) if tile_input else None,
                     long_kv=not causal)
    bq, bk, q_ok, k_ok, sub, sub_k, step = plan
    scale_text, statics_used = matcher.scale_text(scale, D)
    # The (batch, seq, heads*dim) view gives a lane-dense block per head when head_dim is a
    # multiple of 128; otherwise a (batch, seq, heads, dim) array is transposed in the entry.
    views = {}
    for key, lay, dim in (("q", m["q"], D), ("k", m["k"], D), ("v", m["v"], DV)):
        views[key] = "bhsd" if lay == "bhsd" else ("flat" if dim % 128 == 0 else "transpose")
    out_lay = m["out"]
    out_view = "bhsd" if out_lay == "bhsd" else ("flat" if DV % 128 == 0 else "transpose")
    for key, vw in list(views.items()) + [("out", out_view)]:
        if vw == "transpose":
            matcher.notes.append(f"{key} is (batch, seq, heads, dim) with dim not a multiple of "
                              f"128: transposed to (batch, heads, seq, dim) in the entry (an "
                              f"extra pass over it in HBM)")
    fold_scale = G.dtype_name(qdt) == "float32"
    alibi = _alibi_tables(ctx, matched)
    kernel = _kernel_text(causal, fold_scale, matcher.precision_text(), matcher.alibi and matcher.alibi[1],
                          tile_input="bias" if bias else ("mask" if mask else None),
                          keep_value=mask[2] if mask else 1)
    limit = plan_limit(ctx, plan)
    extra = ()
    if tile_input:
        var, roles = tile_input[:2]
        where = {"b": (None, "bi"), "h": (None, "hi"), "s": ("bq", "qi"), "t": ("bk", kv_block_text(causal)),
                 None: (None, "0")}
        dims = ", ".join(str(where[r][0]) for r in roles)
        index = ", ".join(where[r][1] for r in roles)
        arg = AE.ident(names[var]) + (".astype(jnp.int8)" if mask else "")
        extra = ((arg, f"pl.BlockSpec(({dims}), lambda bi, hi, qi, ki: ({index}))"),)
        matcher.notes.append(f"the scores' {'mask' if mask else 'bias'} `{names[var]}` (axes "
                             f"{', '.join(r or '1' for r in roles)}) is read a (q block, kv block) "
                             f"tile a step" + (" (as int8)" if mask else ""))
    entry = _entry_text(ctx, m, views, out_view, causal, scale_text, statics_used,
                        (qn, kn, vn), odt, sub, sub_k, limit, alibi, extra)
    description = AE.describe(m, causal, qdt, bk) + (", a bias input on the scores" if bias else "") \
        + (", a mask input on the scores" if mask else "")
    constants = [("BLOCK_Q", bq, f"query rows per step; valid here: {q_ok}"),
                 ("BLOCK_K", bk, f"kv rows per step; valid here: {k_ok}")]
    code = G.block_helpers(entry) + "\n\n" + kernel + "\n\n\n" + entry
    if alibi:
        code = ("# ALiBi: per q head, the slope of the bias slope_h * (key - query) the reference adds\n"
                "# to the scores" + (" (as -slope_h * |key - query|)" if matcher.alibi[1] == "abs" else "")
                + ("." if HT.is_prefix(alibi) else "; by the number of q heads (spread over them).")
                + "\n" + HT.module_text("ALIBI_SLOPES", alibi) + "\n\n\n" + code)
        description += ", ALiBi bias from iotas"
    source, imports, body = G.write_module(description=description, ctx=ctx,
                                           kernel_class="attention", constants=constants,
                                           code=code)
    notes = [f"scale {scale:.6g} ({scale_text})",
             f"{G.mib(step(bq, bk))} VMEM per step at BLOCK_Q={bq}, BLOCK_K={bk}"]
    notes += AE.gqa_notes(m)
    if alibi:
        notes.append("ALiBi: the bias slope_h * (key - query) is computed in the kernel from "
                     "iotas (never read from HBM); the slopes are scalar-prefetched")
    if causal:
        notes.append("causal: kv blocks above the diagonal are skipped (pl.when) and not "
                     "fetched (the kv index_map is clamped)")
    return G.Generated(kernel_class="attention", description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body,
                       tunables={"BLOCK_Q": q_ok, "BLOCK_K": k_ok}, notes=notes + matcher.notes)



def _kernel_text(causal: bool, fold_scale: bool, precision: str | None, alibi: str | None = None,
                 tile_input: str | None = None, keep_value: int = 1) -> str:
    """The flash kernel: lane-dense (bq, 128) m/l statistics, a large finite negative as the
    mask value (a fully masked row gives no NaN), the scale folded into q (f32 q: exact to
    rounding; a bf16 q keeps the scale on the f32 scores), and, when causal, the mask built only
    on the blocks that cross the diagonal (blocks wholly below it run unmasked, wholly above it
    are skipped)."""
    prec = f", precision={precision}" if precision else ""
    lines = [
        "# Masked scores: a large finite negative, not -inf (exp(-inf - -inf) is NaN when a row",
        "# of a block is fully masked; this gives exp(0) there, wiped by the next real maximum).",
        "MASK_VALUE = -0.7 * float(jnp.finfo(jnp.float32).max)",
        "STAT_LANES = 128  # m and l kept lane-dense: (bq, 128), every lane equal",
        "",
        "",
        "def _online_softmax_step(q, k_ref, v_ref, m_ref, l_ref, acc_ref, *, scale, keep=None,",
        "                         bias=None):",
        '    """One kv block of the online softmax; `keep` (bool, (bq, bk)) masks scores, `bias`',
        '    (f32, (bq, bk)) is added to them."""',
        "    s = jax.lax.dot_general(q, k_ref[...], (((1,), (1,)), ((), ())),",
        f"                            preferred_element_type=jnp.float32{prec})",
    ]
    if not fold_scale:
        lines.append("    s = s * scale")
    lines += [
        "    if bias is not None:",
        "        s = s + bias",
        "    if keep is not None:",
        "        s = jnp.where(keep, s, MASK_VALUE)",
        "    m_prev = m_ref[...]",
        "    m_new = jnp.maximum(m_prev, jnp.max(s, axis=-1, keepdims=True))",
        "    alpha = jnp.exp(m_prev - m_new)",
        "    p = jnp.exp(s - m_new[:, :1])",
        "    l_ref[...] = alpha * l_ref[...] + jnp.sum(p, axis=-1, keepdims=True)",
        "    pv = jax.lax.dot_general(p.astype(v_ref.dtype), v_ref[...], (((1,), (0,)), ((), ())),",
        f"                             preferred_element_type=jnp.float32{prec})",
        "    acc_ref[...] = alpha[:, :1] * acc_ref[...] + pv",
        "    m_ref[...] = m_new",
        "",
        "",
        ("def _flash_kernel(slope_ref, q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, *, scale):"
         if alibi else
         f"def _flash_kernel(q_ref, k_ref, v_ref, {tile_input}_ref, o_ref, m_ref, l_ref, acc_ref, *, scale):"
         if tile_input else
         "def _flash_kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, *, scale):"),
        "    bq, bk = q_ref.shape[0], k_ref.shape[0]",
        "    qi, ki = pl.program_id(2), pl.program_id(3)",
        "",
        "    @pl.when(ki == 0)",
        "    def _init():",
        "        m_ref[...] = jnp.full(m_ref.shape, MASK_VALUE, jnp.float32)",
        "        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)",
        "        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)",
        "",
    ]
    if fold_scale:
        lines.append("    q = q_ref[...] * scale  # the scale on q: bq x d multiplies, not bq x bk")
    else:
        lines.append("    q = q_ref[...]")
    step = "_online_softmax_step(q, k_ref, v_ref, m_ref, l_ref, acc_ref, scale=scale"
    if alibi:
        dist = "(cols - rows)" if alibi == "signed" else "-jnp.abs(cols - rows)"
        lines += [
            "    first_row, first_col = qi * bq, ki * bk",
            "    rows = first_row + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 0)",
            "    cols = first_col + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 1)",
            "    # ALiBi's bias from iotas: the slope of this q head times the distance.",
            f"    bias = slope_ref[pl.program_id(1)] * {dist}.astype(jnp.float32)",
        ]
        step += ", bias=bias"
    tile_keep = None
    if tile_input == "bias":
        step += ", bias=bias_ref[...].astype(jnp.float32)"
    if tile_input == "mask":
        tile_keep = "mask_ref[...] " + ("!= 0" if keep_value else "== 0")
    if causal:
        lines += [
            *([] if alibi else ["    first_row, first_col = qi * bq, ki * bk"]),
            "",
            "    # Wholly below the diagonal: every score kept, no mask built.",
            "    @pl.when(first_col + bk - 1 <= first_row)",
            "    def _below():",
            f"        {step}" + (f", keep={tile_keep})" if tile_keep else ")"),
            "",
            "    # Crossing the diagonal: the causal mask. Wholly above it: skipped (and not fetched).",
            "    @pl.when(jnp.logical_and(first_col + bk - 1 > first_row,",
            "                             first_col <= first_row + bq - 1))",
            "    def _diagonal():",
            *([] if alibi else [
                "        rows = first_row + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 0)",
                "        cols = first_col + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 1)"]),
            f"        {step}, keep=" + (f"jnp.logical_and({tile_keep}, cols <= rows))" if tile_keep
                                      else "cols <= rows)"),
        ]
    else:
        lines.append(f"    {step}" + (f", keep={tile_keep})" if tile_keep else ")"))
    lines += [
        "",
        "    @pl.when(ki == pl.num_programs(3) - 1)",
        "    def _finish():",
        "        inv_l = 1.0 / l_ref[...][:, :1]  # one divide per row, then multiplies",
        "        o_ref[...] = (acc_ref[...] * inv_l).astype(o_ref.dtype)",
    ]
    return "\n".join(lines)




def kv_block_text(causal: bool) -> str:
    """The kv block index of a step: causal, a block above the diagonal is never fetched (its
    index repeats the last one needed)."""
    return "jnp.minimum(ki, jax.lax.div((qi + 1) * bq - 1, bk))" if causal else "ki"


def compiler_params_lines(vmem_limit: int) -> tuple:
    """The pallas_call's compiler_params lines of a (batch, heads, q blocks, kv blocks) grid."""
    return ("    compiler_params=pltpu.CompilerParams(",
            "        dimension_semantics=(\"parallel\", \"parallel\", \"parallel\", \"arbitrary\"),",
            f"        vmem_limit_bytes={vmem_limit // G.MIB} * 1024 * 1024),")


def _entry_text(ctx, m, views, out_view, causal, scale_text, statics_used, names, odt,
                sub, sub_k, vmem_limit: int, alibi: dict | None = None, extra: tuple = ()) -> str:
    kv_blk = kv_block_text(causal)
    scratch = ("[pltpu.VMEM((bq, STAT_LANES), jnp.float32), pltpu.VMEM((bq, STAT_LANES), jnp.float32),\n"
               "                    pltpu.VMEM((bq, v_dim), jnp.float32)]")
    params = compiler_params_lines(vmem_limit)
    if alibi:
        form = AE.EntryForm(
            fits=(f"bq = _ragged_block(BLOCK_Q, q_len, {sub})", "bk = _fit_block(BLOCK_K, kv_len, 128)",
                  *HT.entry_lines(("ALIBI_SLOPES",), ("alibi_slopes",), ("jnp.float32",),
                                  HT.is_prefix(alibi))),
            grid_ids="bi, hi, qi, ki, slope_ref", kv_rows="bk", kv_block=kv_blk,
            kernel="functools.partial(_flash_kernel, scale=sm_scale)",
            grid="(batch, heads, pl.cdiv(q_len, bq), kv_len // bk)",
            options=params, prefetch=("alibi_slopes",), scratch=scratch)
        return AE.entry_text(ctx, m, views, out_view, scale_text, names, odt, form)
    form = AE.EntryForm(
        # Query rows are independent: the last q tile may be ragged (Pallas masks it); kv rows
        # are summed over, so the kv tile divides kv_len (or is all of it).
        fits=(f"bq = _ragged_block(BLOCK_Q, q_len, {sub})", "bk = _fit_block(BLOCK_K, kv_len, 128)"),
        grid_ids="bi, hi, qi, ki", kv_rows="bk", kv_block=kv_blk,
        kernel="functools.partial(_flash_kernel, scale=sm_scale)",
        grid="(batch, heads, pl.cdiv(q_len, bq), kv_len // bk)",
        options=(
            "    scratch_shapes=[pltpu.VMEM((bq, STAT_LANES), jnp.float32),",
            "                    pltpu.VMEM((bq, STAT_LANES), jnp.float32),",
            "                    pltpu.VMEM((bq, v_dim), jnp.float32)],",
            *params),
        extra=extra)
    return AE.entry_text(ctx, m, views, out_view, scale_text, names, odt, form)

