"""The GPU form (generate.gpu_form) of the attention template: a flash-attention kernel for Pallas on
GPU (Triton).

Kernel shape: grid (batch, heads, q_len / BLOCK_Q), all parallel. A program holds one q block
and the whole k and v of its kv head (BlockSpecs over the full kv length) and runs the online
softmax over BLOCK_K-long `pl.ds` slices of them in a `jax.lax.fori_loop`, with m, l and the
output accumulator as float32 loop carries (no scratch: Triton's grid has no sequential axis).
Causal: the loop stops at the last kv block the q block needs (a trip count from the program
id), and the diagonal blocks are masked with iotas. GQA maps q head h to kv head h // group (or
h % kv_heads) in the kv index_map, as in the TPU form. head_dim must be a power of two of at
least 16, like every block.
"""

from __future__ import annotations

from mkworker.generate import common as G
from mkworker.generate import gpu_form as GPU
from mkworker.generate.common import NoTemplate
from mkworker.generate.templates import attention as MA
from mkworker.generate.templates import attention_entry as AE

MAX_BLOCK = 128


def emit(ctx, matched: MA.Matched) -> G.Generated:
    matcher, m, causal, scale, q_var, k_var, v_var, out_var = matched
    if matcher.alibi:
        raise NoTemplate("GPU form: a position bias (ALiBi) on the scores is not covered")
    names = {v: n for v, n in zip(ctx.jaxpr.invars, ctx.arg_names)}
    qn, kn, vn = (AE.ident(names[v]) for v in (q_var, k_var, v_var))
    qdt, odt = q_var.aval.dtype, out_var.aval.dtype
    S, T, D, DV = (m[k] for k in ("S", "T", "D", "DV"))
    for what, dim in (("head_dim", D), ("v head_dim", DV)):
        if not GPU.is_pow2(dim) or dim < GPU.MIN_DOT:
            raise NoTemplate(f"GPU form: {what}={dim} is not a power of two of at least "
                             f"{GPU.MIN_DOT} (Triton computes on power-of-two blocks)")
    q_c = GPU.pow2_divisors(S, MAX_BLOCK, GPU.MIN_DOT)
    k_c = GPU.pow2_divisors(T, MAX_BLOCK, GPU.MIN_DOT)
    if not q_c or not k_c:
        raise NoTemplate(f"GPU form: the sequence lengths ({S} queries, {T} keys) have no "
                         f"power-of-two block of at least {GPU.MIN_DOT} dividing them")
    narrow = G.itemsize(qdt) <= 2
    bq = max(b for b in q_c if b <= (128 if narrow else 64)) if min(q_c) <= 64 else min(q_c)
    # One kv step stages a (BK, D) slice of k and a (BK, DV) slice of v in shared memory.
    plan = GPU.stages_and_depth(k_c, D * G.itemsize(k_var.aval.dtype)
                                + DV * G.itemsize(v_var.aval.dtype), 64)
    if plan is None:
        raise NoTemplate(f"GPU form: one kv step of head_dim {D} needs more than the "
                         f"{GPU.SMEM_BUDGET // 1024} KiB shared-memory budget")
    stages, bk = plan
    warps = 8 if bq * max(D, DV) >= 128 * 128 else 4
    scale_text, _ = matcher.scale_text(scale, D)
    views = {}
    for key, lay, dim in (("q", m["q"], D), ("k", m["k"], D), ("v", m["v"], DV)):
        # (batch, seq, heads*dim) is a free view of (batch, seq, heads, dim): a head's block is a
        # column block of it.
        views[key] = "bhsd" if lay == "bhsd" else "flat"
    out_view = "bhsd" if m["out"] == "bhsd" else "flat"
    kernel = _kernel_text(causal)
    entry = _entry_text(ctx, m, views, out_view, scale_text, (qn, kn, vn), odt)
    description = AE.describe(m, causal, qdt, bk) + " in a loop (GPU form)"
    constants = [("BLOCK_Q", bq, f"query rows per program; valid here: {q_c}"),
                 ("BLOCK_K", bk, f"kv rows per loop step; valid here: {k_c}")]
    constants += GPU.launch_constants(warps, stages)
    source, imports, body = G.write_module(
        description=description, ctx=ctx, kernel_class="attention", constants=constants,
        code=GPU.FIT_POW2_HELPER + "\n\n" + kernel + "\n\n\n" + entry, imports=GPU.IMPORTS)
    notes = [GPU.notes_for_form(), f"scale {scale:.6g} ({scale_text})",
             f"BLOCK_Q={bq}, BLOCK_K={bk}, {warps} warps, {stages} stages"]
    notes += AE.gqa_notes(m)
    if causal:
        notes.append("causal: the kv loop stops at the last block the q block needs; diagonal "
                     "blocks are masked")
    tunables = {"BLOCK_Q": G.around(q_c, bq), "BLOCK_K": G.around(k_c, bk)}
    tunables.update(GPU.launch_tunables(warps, stages))
    return G.Generated(kernel_class="attention", description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body, tunables=tunables,
                       notes=notes + matcher.notes)


def _kernel_text(causal: bool) -> str:
    lines = [
        "def _flash_kernel(q_ref, k_ref, v_ref, o_ref, *, scale, bk):",
        "    bq = q_ref.shape[0]",
        "    kv_len = k_ref.shape[0]",
        "    qi = pl.program_id(2)",
        "    q = q_ref[...]",
        "",
        "    def _kv_step(ki, carry):",
        "        m_prev, l_prev, acc = carry",
        "        k = k_ref[pl.ds(ki * bk, bk), :]",
        "        v = v_ref[pl.ds(ki * bk, bk), :]",
        "        s = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())),",
        "                                preferred_element_type=jnp.float32) * scale",
    ]
    if causal:
        lines += [
            "        rows = qi * bq + jax.lax.broadcasted_iota(jnp.int32, s.shape, 0)",
            "        cols = ki * bk + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)",
            "        s = jnp.where(cols <= rows, s, -jnp.inf)",
        ]
    lines += [
        "        m_new = jnp.maximum(m_prev, jnp.max(s, axis=-1, keepdims=True))",
        "        alpha = jnp.exp(m_prev - m_new)",
        "        p = jnp.exp(s - m_new)",
        "        l_new = alpha * l_prev + jnp.sum(p, axis=-1, keepdims=True)",
        "        pv = jax.lax.dot_general(p.astype(v.dtype), v, (((1,), (0,)), ((), ())),",
        "                                 preferred_element_type=jnp.float32)",
        "        return m_new, l_new, alpha * acc + pv",
        "",
    ]
    if causal:
        lines += ["    # Causal: kv blocks past the q block's last row contribute nothing.",
                  "    num_kv = jnp.minimum(jax.lax.div((qi + 1) * bq + bk - 1, bk), kv_len // bk)"]
    else:
        lines += ["    num_kv = kv_len // bk"]
    lines += [
        "    carry = (jnp.full((bq, 1), -jnp.inf, jnp.float32), jnp.zeros((bq, 1), jnp.float32),",
        "             jnp.zeros((bq, v_ref.shape[1]), jnp.float32))",
        "    _, l, acc = jax.lax.fori_loop(0, num_kv, _kv_step, carry)",
        "    o_ref[...] = (acc / l).astype(o_ref.dtype)",
    ]
    return "\n".join(lines)


def _entry_text(ctx, m, views, out_view, scale_text, names, odt) -> str:
    # A program holds its kv head's whole k and v: the kv loop runs inside the kernel.
    form = AE.EntryForm(
        fits=("bq = _fit_pow2(BLOCK_Q, q_len)", "bk = _fit_pow2(BLOCK_K, kv_len)"),
        grid_ids="bi, hi, qi", kv_rows="kv_len", kv_block="0",
        kernel="functools.partial(_flash_kernel, scale=sm_scale, bk=bk)",
        grid="(batch, heads, q_len // bq)",
        options=(f"    compiler_params={GPU.params_code()},",))
    return AE.entry_text(ctx, m, views, out_view, scale_text, names, odt, form)
