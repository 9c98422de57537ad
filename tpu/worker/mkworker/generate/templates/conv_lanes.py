"""The conv2d form for an image XLA keeps with W in the lanes (generate.device_layout): C not a
multiple of 128, so XLA lays (N, H, W, C) out as (N, H, C, W), W in the 128 lanes and the
channels in the sublanes. The implicit-GEMM form (conv.py) reads the image row-major, so XLA
copies it into that layout before the kernel and copies the output back, and the kernel pads
the image once more in HBM; with 32 channels its lanes are a quarter full. This form reads the
image as XLA keeps it (the transpose to (N, H, C, W) is a bitcast) and never pads it in HBM.

A grid step (image n, tile i of BLOCK_ROWS output rows) gathers the input rows its windows read
in a VMEM scratch: the tile's own rows and, as one-row blocks, the rows above and below it that
the window reaches; a row outside the image is written as zeros (the reference's padding).
Each output row is then, for each window column dw, one MXU product of the (Co, kh * Ci) weights
of that column with the kh input rows stacked as (kh * Ci, W); the products are shifted along
the lanes by a roll (a lane past the image's edge is masked to zero) and summed, and the
epilogue (bias, activation) runs on the (Co, Wo) row before it is stored.

Covered: 2-D, stride 1, no dilation, a window that reaches at most kh - 1 rows and kw - 1
columns past the image on each side, Ci and Co multiples of the sublane tile (8 for f32, 16
for bf16), and the input and output both in that layout; otherwise conv.py's form is used."""

from __future__ import annotations

from mkworker.generate import common as G
from mkworker.generate import device_layout
from mkworker.generate import fused as F

KERNEL_CLASS = "conv2d"
# Output rows of a tile: the rows of a step run in a loop, so the kernel's body stays one row.
ROW_OPTIONS = (32, 16, 8, 4, 2, 1)


def _view(spec) -> tuple[int, int, int, int]:
    """(N, H, C, W) as axes of an array whose dimension numbers are `spec` (N, C, H, W)."""
    return (spec[0], spec[2], spec[1], spec[3])


def applies(xs, ws, out_shape, lhs_spec, rhs_spec, out_spec, pad, strides, dilation, dtype) -> bool:
    if len(xs) != 4 or any(s != 1 for s in strides) or any(d != 1 for d in dilation):
        return False
    cin, cout = xs[lhs_spec[1]], ws[rhs_spec[0]]
    kh, kw = ws[rhs_spec[2]], ws[rhs_spec[3]]
    h, w = xs[lhs_spec[2]], xs[lhs_spec[3]]
    ho, wo = out_shape[out_spec[2]], out_shape[out_spec[3]]
    sub = G.sublane_multiple(dtype)
    return (cin % sub == 0 and cout % 8 == 0
            and all(0 <= a <= k - 1 for q, k in zip(pad, (kh, kw)) for a in q)
            and ho <= h and wo <= w
            and device_layout.major_to_minor(xs) == _view(lhs_spec)
            and device_layout.major_to_minor(out_shape) == _view(out_spec))


def emit(ctx, *, x, w_input, prologue_lines, w_expr, epi, out, xs, ws, lhs_spec, rhs_spec,
         out_spec, pad, description_tail, chan_ops, scal_ops) -> G.Generated:
    """The module. `w_expr` is the weight as (kh, kw, Ci, Co) after the reference's own flips
    and transposes (`prologue_lines` compute it); `epi` is conv.py's epilogue writer."""
    x_dt, out_dt = x.aval.dtype, out.aval.dtype
    cin, cout = xs[lhs_spec[1]], ws[rhs_spec[0]]
    kh, kw = ws[rhs_spec[2]], ws[rhs_spec[3]]
    w = xs[lhs_spec[3]]
    out_shape = tuple(int(d) for d in out.aval.shape)
    ho, wo = out_shape[out_spec[2]], out_shape[out_spec[3]]
    (pt, pb), (pw, pe) = pad

    def vmem(bh):
        ins = [((bh, cin, w), x_dt)] + [((1, cin, w), x_dt)] * (kh - 1)
        ins.append(((kw, cout, kh * cin), x_dt))
        ins += [((cout, 1), v.aval.dtype) for v, _ in chan_ops]
        scratch = [((bh + kh - 1, cin, w), x_dt)]
        # a row's live f32 values: the stacked rows, kw products, their sum
        scratch += [((kh * cin, w), "float32")] + [((cout, w), "float32")] * (kw + 2)
        return G.step_vmem(ins, [((bh, cout, wo), out_dt)], scratch)

    fitting = [b for b in ROW_OPTIONS if (b <= ho or b == 1) and vmem(b) <= ctx.vmem_budget]
    if not fitting:
        return None
    # the largest tile up to 8 rows: more rows a step make a longer body for no fewer bytes
    bh = next((b for b in fitting if b <= 8), fitting[-1])
    above, below = pt, kh - 1 - pt
    x_name = ctx.name_of_invar(x)
    halo_refs = [f"up{a}_ref" for a in range(above)] + [f"down{b}_ref" for b in range(below)]
    chan_refs = [f"{nm}_ref" for _, nm in chan_ops + scal_ops]
    refs = ", ".join(["x_ref"] + halo_refs + ["w_ref"] + chan_refs + ["o_ref", "s_ref"])
    fill = [f"rows = x_ref[0]  # this tile's {bh} input rows (those past the image are zeroed)"]
    fill.append("for j in range(bh):")
    fill.append(f"    s_ref[{above} + j] = jnp.where(i * bh + j < h, rows[j], 0).astype(s_ref.dtype)")
    for a in range(above):
        fill.append(f"s_ref[{a}] = jnp.where(i * bh - {above - a} >= 0, up{a}_ref[0, 0], 0)"
                    ".astype(s_ref.dtype)")
    for b in range(below):
        fill.append(f"s_ref[{above} + bh + {b}] = jnp.where(i * bh + bh + {b} < h, "
                    f"down{b}_ref[0, 0], 0).astype(s_ref.dtype)")
    shifts = []
    for dw in range(kw):
        s = pw - dw  # output column c reads input column c + dw - pw
        prod = f"jnp.dot(w_ref[{dw}], stack, preferred_element_type=jnp.float32)"
        if s == 0:
            shifts.append(f"acc = acc + {prod}" if shifts else f"acc = {prod}")
            continue
        rolled = f"pltpu.roll({prod}, {s % w}, 1)"
        keep = f"(lane >= {s})" if s > 0 else f"(lane < w + ({s}))"
        term = f"jnp.where({keep}, {rolled}, 0.0)"
        shifts.append(f"acc = acc + {term}" if shifts else f"acc = {term}")
    body = ["stack = s_ref[pl.ds(r, kh)].reshape(kh * cin, w)"] + shifts
    body.append("y = acc" + ("" if wo == w else f"[:, :{wo}]"))
    body += epi.lines
    body.append(f"o_ref[0, r] = jnp.broadcast_to({epi.code(out)}, y.shape).astype(o_ref.dtype)")
    body.append("return carry")
    kwargs = ["kh", "h"] + epi.statics
    kernel = f'''

def _conv_kernel({refs}, *, {", ".join(kwargs)}):
    # x_ref: (1, bh, cin, w), the image as XLA keeps it (W in the lanes); o_ref: (1, bh, cout, wo)
    i = pl.program_id(1)
    bh, cin, w = x_ref.shape[1:]
{G.indent(chr(10).join(fill), 4)}
    lane = jax.lax.broadcasted_iota(jnp.int32, (o_ref.shape[2], w), 1)

    def one_row(r, carry):
        # kh input rows stacked along K: one (cout, kh * cin) x (kh * cin, w) product a window
        # column, shifted into place along the lanes
{G.indent(chr(10).join(body), 8)}

    jax.lax.fori_loop(0, bh, one_row, 0)
'''
    xv = "x_hcw"
    perm = _view(lhs_spec)
    ent = [(f"{xv} = {x_name}.transpose({', '.join(map(str, perm))})  # (N, H, C, W): XLA's "
            "own layout of the image, a bitcast")]
    ent += prologue_lines
    ent += [f"n, h, cin, wd = {xv}.shape",
            f"kh, kw, _, cout = {w_expr}.shape",
            f"ho, wo = h + {pt + pb} - kh + 1, wd + {pw + pe} - kw + 1",
            "bh = max(1, min(BLOCK_ROWS, ho))",
            ("# per window column dw: the (cout, kh * cin) weights, K ordered (dh, cin) as the "
             "stacked rows"),
            (f"w_cols = jnp.transpose({w_expr}, (1, 3, 0, 2)).reshape(kw, cout, kh * cin)"
             f".astype({xv}.dtype)")]
    specs = ["pl.BlockSpec((1, bh, cin, wd), lambda img, i: (img, i, 0, 0))"]
    args = [xv]
    for a in range(above):
        specs.append(f"pl.BlockSpec((1, 1, cin, wd), lambda img, i: (img, jnp.maximum(i * bh - "
                     f"{above - a}, 0), 0, 0))")
        args.append(xv)
    for b in range(below):
        specs.append(f"pl.BlockSpec((1, 1, cin, wd), lambda img, i: (img, jnp.minimum(i * bh + bh "
                     f"+ {b}, h - 1), 0, 0))")
        args.append(xv)
    specs.append("pl.BlockSpec((kw, cout, kh * cin), lambda img, i: (0, 0, 0))")
    args.append("w_cols")
    for _, nm in chan_ops:
        ent.append(f"{nm}_in = {nm}.reshape(cout, 1)  # per output channel: a sublane column")
        specs.append("pl.BlockSpec((cout, 1), lambda img, i: (0, 0))")
        args.append(f"{nm}_in")
    for _, nm in scal_ops:
        ent.append(f"{nm}_in = jnp.reshape({nm}, (1, 1))")
        specs.append("pl.BlockSpec((1, 1), lambda img, i: (0, 0))")
        args.append(f"{nm}_in")
    spec_text = G.indent("\n".join(s + "," for s in specs), 8)
    binds = ["kh=kh", "h=h"] + [f"{a}={a}" for a in epi.statics]
    back = [0] * 4
    for role, axis in zip((0, 2, 1, 3), out_spec):  # the kernel's (N, H, C, W) -> the reference's
        back[axis] = role
    params = G.compiler_params_code(("parallel", "parallel"), ctx, vmem(bh))
    ent.append(f'''out = pl.pallas_call(
    functools.partial(_conv_kernel, {", ".join(binds)}),
    out_shape=jax.ShapeDtypeStruct((n, ho, cout, wo), {G.dtype_code(out_dt)}),
    grid=(n, pl.cdiv(ho, bh)),
    in_specs=[
{spec_text}
    ],
    out_specs=pl.BlockSpec((1, bh, cout, wo), lambda img, i: (img, i, 0, 0)),
    scratch_shapes=[pltpu.VMEM((bh + kh - 1, cin, wd), {xv}.dtype)],
    compiler_params={params},
)({", ".join(args)})''')
    ent.append(f"return out.transpose({', '.join(map(str, back))})  # XLA's layout of the output: "
               "a bitcast")
    entry = f'''

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent), 4)}
'''
    description = (f"2-D convolution ({G.shape_text(xs)} * {kh}x{kw} window, {cin}->{cout} "
                   f"channels, {G.dtype_name(x_dt)}) on the image as XLA keeps it (W in the lanes, "
                   f"channels in the sublanes), one MXU product per window column a row"
                   + description_tail)
    constants = [("BLOCK_ROWS", bh, "output rows of a tile")]
    source, imports, body_text = G.write_module(description=description, ctx=ctx,
                                                kernel_class=KERNEL_CLASS, constants=constants,
                                                code=kernel + entry)
    notes = [(f"tiles of {bh} output rows: {G.mib(vmem(bh))} of VMEM per step (budget "
              f"{G.mib(ctx.vmem_budget)}); limit {G.mib(F.vmem_limit(vmem(bh), ctx))}"),
             ("the image read in XLA's layout (W in the lanes): no copy before or after the "
              "kernel and no padded copy of the image")]
    return G.Generated(kernel_class=KERNEL_CLASS, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body_text,
                       tunables={"BLOCK_ROWS": sorted(set(fitting[-4:] + [bh]))}, notes=notes)
