"""What the attention class's kernel forms share besides the matcher (generate.templates.attention):
the kernel described in words, the GQA note, and the entry's text (the dims read from q, k and v,
their views and BlockSpecs, the pallas_call and the output back in the reference's layout) for
the TPU emitter (attention_tpu), the GPU emitter (attention_gpu) and retention."""

from __future__ import annotations

import dataclasses

from mkworker.generate import common as G

# What both forms say about the kernel (generate.templates.attention_gpu appends its own words).

def describe(m, causal: bool, dtype, bk: int) -> str:
    """The attention in words: its mask, heads, sizes and layouts, and the kernel's kv blocks."""
    B, H, S, T, D, KVH = (m[k] for k in ("B", "H", "S", "T", "D", "KVH"))
    group = H // KVH
    kind = ("causal " if causal else "") + ("GQA " if group > 1 else "") + "attention"
    return (f"{kind} (batch {B}, {H} q heads" + (f" / {KVH} kv heads" if group > 1 else "")
            + f", seq {S}x{T}, head_dim {D}, {G.dtype_name(dtype)}, q/k/v {m['q']}/"
            f"{m['k']}/{m['v']} -> {m['out']}): flash kernel, online softmax over "
            f"{bk}-long kv blocks")


def gqa_notes(m) -> list[str]:
    """Which kv head each q head reads, when q heads share kv heads."""
    group = m["H"] // m["KVH"]
    if group <= 1:
        return []
    kv_head = f"h // {group}" if m["hmap"] == "repeat" else f"h % {m['KVH']}"
    return [f"GQA: q head h reads kv head {kv_head}"]


def ident(name: str) -> str:
    return f"{name}_arr" if name in ENTRY_LOCALS else name

# Locals of the generated entry; a reference parameter with one of these names is aliased.
ENTRY_LOCALS = ("batch", "heads", "q_len", "head_dim", "kv_heads", "kv_len", "v_dim", "group",
                "bq", "bk", "sm_scale", "out")



@dataclasses.dataclass(frozen=True)
class EntryForm:
    """What the entry's text takes from the kernel form (generate.templates.attention_gpu writes one too)."""
    fits: tuple  # the lines fitting bq and bk to q_len and kv_len
    grid_ids: str  # the parameters of the index_maps
    kv_rows: str  # rows of a k or v block
    kv_block: str  # a k or v block's index along kv_len
    kernel: str  # the pallas_call's kernel argument
    grid: str
    options: tuple  # the pallas_call's last keyword lines, as they stand in it
    # Scalar-prefetched operands (expressions, in order): the index maps and the kernel get
    # their refs first, and the blocks go in a PrefetchScalarGridSpec with `scratch`.
    prefetch: tuple = ()
    scratch: str = "[]"
    # Operands after q, k, v: (argument expression, BlockSpec text).
    extra: tuple = ()


def entry_text(ctx, m, views, out_view, scale_text, names, odt, form: EntryForm) -> str:
    """The entry, shared by both forms: the dims read from q, k and v, each viewed as (batch,
    heads, seq, dim) or as (batch, seq, heads*dim), its BlockSpec (a q block of head h; the
    kv head's k and v), the pallas_call and the output back in the reference's layout."""
    qn, kn, vn = names
    lines = [f"{ident(p)} = {p}" for p in ctx.params if ident(p) != p]
    lines.append(("batch, heads, q_len, head_dim = {q}.shape" if m["q"] == "bhsd" else
                  "batch, q_len, heads, head_dim = {q}.shape").format(q=qn))
    lines.append(("kv_heads, kv_len = {k}.shape[1], {k}.shape[2]" if m["k"] == "bhsd" else
                  "kv_len, kv_heads = {k}.shape[1], {k}.shape[2]").format(k=kn))
    lines.append(f"v_dim = {vn}.shape[-1]")
    lines.append("group = heads // kv_heads")
    lines += form.fits
    lines.append(f"sm_scale = {scale_text}")
    # Block indices are traced int32 scalars: lax.div/rem (floor division would need sign()).
    kv_head = "jax.lax.div(hi, group)" if m["hmap"] == "repeat" else "jax.lax.rem(hi, kv_heads)"
    ids = form.grid_ids
    args = []
    specs = []
    for key, nm, dim in (("q", qn, "head_dim"), ("k", kn, "head_dim"), ("v", vn, "v_dim")):
        view = views[key]
        head = "hi" if key == "q" else kv_head
        blk = "qi" if key == "q" else form.kv_block
        rows = "bq" if key == "q" else form.kv_rows
        if view == "flat":
            args.append(f"{nm}.reshape({nm}.shape[0], {nm}.shape[1], -1)")
            specs.append(f"pl.BlockSpec((None, {rows}, {dim}), lambda {ids}: (bi, {blk}, {head}))")
        else:
            args.append(f"jnp.swapaxes({nm}, 1, 2)" if view == "transpose" else nm)
            specs.append(f"pl.BlockSpec((None, None, {rows}, {dim}), "
                         f"lambda {ids}: (bi, {head}, {blk}, 0))")
    for arg, spec in form.extra:
        args.append(arg)
        specs.append(spec)
    odt_code = G.dtype_code(odt)
    if out_view == "flat":
        out_shape = f"jax.ShapeDtypeStruct((batch, q_len, heads * v_dim), {odt_code})"
        out_spec = f"pl.BlockSpec((None, bq, v_dim), lambda {ids}: (bi, qi, hi))"
        ret = "out" if m["out"] == "bs(hd)" else "out.reshape(batch, q_len, heads, v_dim)"
    else:
        out_shape = f"jax.ShapeDtypeStruct((batch, heads, q_len, v_dim), {odt_code})"
        out_spec = f"pl.BlockSpec((None, None, bq, v_dim), lambda {ids}: (bi, hi, qi, 0))"
        ret = {"bhsd": "out", "bshd": "jnp.swapaxes(out, 1, 2)",
               "bs(hd)": "jnp.swapaxes(out, 1, 2).reshape(batch, q_len, heads * v_dim)"}[m["out"]]
    if form.prefetch:
        lines += [
            "grid_spec = pltpu.PrefetchScalarGridSpec(",
            f"    num_scalar_prefetch={len(form.prefetch)},",
            f"    grid={form.grid},",
            "    in_specs=[" + ",\n              ".join(specs) + "],",
            f"    out_specs={out_spec},",
            f"    scratch_shapes={form.scratch},",
            ")",
            "out = pl.pallas_call(",
            f"    {form.kernel},",
            f"    out_shape={out_shape},",
            "    grid_spec=grid_spec,",
            *form.options,
            f")({', '.join(list(form.prefetch) + args)})",
        ]
    else:
        lines += [
            "out = pl.pallas_call(",
            f"    {form.kernel},",
            f"    out_shape={out_shape},",
            f"    grid={form.grid},",
            "    in_specs=[" + ",\n              ".join(specs) + "],",
            f"    out_specs={out_spec},",
            *form.options,
            f")({', '.join(args)})",
        ]
    lines.append(f"return {ret}")
    return f"def {ctx.entry}({ctx.signature}):\n" + G.indent("\n".join(lines)) + "\n"
