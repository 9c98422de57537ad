"""The GPU form (mkw_gen_gpu) of the attention template: a flash-attention kernel for Pallas on
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

import mkw_gen_common as G
import mkw_gen_gpu as GPU
from mkw_gen_common import NoTemplate

MAX_BLOCK = 128


def emit(matcher, m, causal, scale, q_var, k_var, v_var, out_var, ident) -> G.Generated:
    ctx = matcher.ctx
    names = {v: n for v, n in zip(ctx.jaxpr.invars, ctx.arg_names)}
    qn, kn, vn = (ident(names[v]) for v in (q_var, k_var, v_var))
    qdt, odt = q_var.aval.dtype, out_var.aval.dtype
    B, H, S, T, D, DV, KVH = (m[k] for k in ("B", "H", "S", "T", "D", "DV", "KVH"))
    group = H // KVH
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
    scale_text, _ = matcher._scale_text(scale, D)
    views = {}
    for key, lay, dim in (("q", m["q"], D), ("k", m["k"], D), ("v", m["v"], DV)):
        # (batch, seq, heads*dim) is a free view of (batch, seq, heads, dim): a head's block is a
        # column block of it.
        views[key] = "bhsd" if lay == "bhsd" else "flat"
    out_view = "bhsd" if m["out"] == "bhsd" else "flat"
    kernel = _kernel_text(causal)
    entry = _entry_text(ctx, m, views, out_view, scale_text, (qn, kn, vn), odt, ident)
    kind = ("causal " if causal else "") + ("GQA " if group > 1 else "") + "attention"
    description = (f"{kind} (batch {B}, {H} q heads" + (f" / {KVH} kv heads" if group > 1 else "")
                   + f", seq {S}x{T}, head_dim {D}, {G.dtype_name(qdt)}, q/k/v {m['q']}/"
                   f"{m['k']}/{m['v']} -> {m['out']}): flash kernel, online softmax over "
                   f"{bk}-long kv blocks in a loop (GPU form)")
    constants = [("BLOCK_Q", bq, f"query rows per program; valid here: {q_c}"),
                 ("BLOCK_K", bk, f"kv rows per loop step; valid here: {k_c}")]
    constants += GPU.launch_constants(warps, stages)
    source, imports, body = G.write_module(
        description=description, ctx=ctx, kernel_class="attention", constants=constants,
        code=GPU.FIT_POW2_HELPER + "\n\n" + kernel + "\n\n\n" + entry, imports=GPU.IMPORTS)
    notes = [GPU.notes_for_form(), f"scale {scale:.6g} ({scale_text})",
             f"BLOCK_Q={bq}, BLOCK_K={bk}, {warps} warps, {stages} stages"]
    if group > 1:
        notes.append(f"GQA: q head h reads kv head "
                     f"{'h // ' + str(group) if m['hmap'] == 'repeat' else 'h % ' + str(KVH)}")
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


def _entry_text(ctx, m, views, out_view, scale_text, names, odt, ident) -> str:
    qn, kn, vn = names
    lines = [f"{ident(p)} = {p}" for p in ctx.params if ident(p) != p]
    lines.append(("batch, heads, q_len, head_dim = {q}.shape" if m["q"] == "bhsd" else
                  "batch, q_len, heads, head_dim = {q}.shape").format(q=qn))
    lines.append(("kv_heads, kv_len = {k}.shape[1], {k}.shape[2]" if m["k"] == "bhsd" else
                  "kv_len, kv_heads = {k}.shape[1], {k}.shape[2]").format(k=kn))
    lines.append(f"v_dim = {vn}.shape[-1]")
    lines.append("group = heads // kv_heads")
    lines.append("bq = _fit_pow2(BLOCK_Q, q_len)")
    lines.append("bk = _fit_pow2(BLOCK_K, kv_len)")
    lines.append(f"sm_scale = {scale_text}")
    kv_head = "jax.lax.div(hi, group)" if m["hmap"] == "repeat" else "jax.lax.rem(hi, kv_heads)"
    args, specs = [], []
    for key, nm, dim in (("q", qn, "head_dim"), ("k", kn, "head_dim"), ("v", vn, "v_dim")):
        head = "hi" if key == "q" else kv_head
        rows, blk = ("bq", "qi") if key == "q" else ("kv_len", "0")
        if views[key] == "flat":
            args.append(f"{nm}.reshape({nm}.shape[0], {nm}.shape[1], -1)")
            specs.append(f"pl.BlockSpec((None, {rows}, {dim}), lambda bi, hi, qi: (bi, {blk}, {head}))")
        else:
            args.append(nm)
            specs.append(f"pl.BlockSpec((None, None, {rows}, {dim}), "
                         f"lambda bi, hi, qi: (bi, {head}, {blk}, 0))")
    odt_code = G.dtype_code(odt)
    if out_view == "flat":
        out_shape = f"jax.ShapeDtypeStruct((batch, q_len, heads * v_dim), {odt_code})"
        out_spec = "pl.BlockSpec((None, bq, v_dim), lambda bi, hi, qi: (bi, qi, hi))"
        ret = "out" if m["out"] == "bs(hd)" else "out.reshape(batch, q_len, heads, v_dim)"
    else:
        out_shape = f"jax.ShapeDtypeStruct((batch, heads, q_len, v_dim), {odt_code})"
        out_spec = "pl.BlockSpec((None, None, bq, v_dim), lambda bi, hi, qi: (bi, hi, qi, 0))"
        ret = "out"
    lines += [
        "out = pl.pallas_call(",
        "    functools.partial(_flash_kernel, scale=sm_scale, bk=bk),",
        f"    out_shape={out_shape},",
        "    grid=(batch, heads, q_len // bq),",
        "    in_specs=[" + ",\n              ".join(specs) + "],",
        f"    out_specs={out_spec},",
        f"    compiler_params={GPU.params_code()},",
        f")({', '.join(args)})",
        f"return {ret}",
    ]
    return f"def {ctx.entry}({ctx.signature}):\n" + G.indent("\n".join(lines)) + "\n"

