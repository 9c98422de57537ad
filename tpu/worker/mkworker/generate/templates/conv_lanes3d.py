"""The conv3d form for a volume whose channels are not a multiple of 128: XLA puts a spatial
axis in the 128 lanes and the channels in the sublanes (f32[1, 1024, 32, 32, 16] NDHWC lives as
(N, H, W, C, D), the depth in the lanes). The implicit-GEMM form (conv.py) puts the channels in
the lanes, a quarter full at 32 channels, and its (pixels, 16) patches need relayouts that took
libtpu's profile of a 1024-deep volume past 15 GiB. This form is conv_lanes.py's one dimension
up: the volume is read as (N, R1, R2, C, L), L the lane axis and R1, R2 the other two spatial
axes in the reference's order.

A grid step (volume n, tile i of BLOCK_ROWS output rows along R1) gathers the input rows its
windows read in a VMEM scratch: the tile's own rows, the rows above and below it as one-row
blocks, and zero columns on either side along R2 (the reference's padding). Each output line
(r, c) of R1 x R2 is then, for each window tap along L, one MXU product of the (Co, k1 * k2 *
Ci) weights of that tap with the k1 x k2 input lines stacked as (k1 * k2 * Ci, L); the products
are shifted along the lanes by a roll (a lane past the edge masked to zero) and summed, and the
epilogue runs on the (Co, Lo) line before it is stored.

Where XLA keeps the input or the output in another order (NCDHW: the channels above the
spatial axes), the entry transposes into and out of that view, and XLA copies; the form is
still used, since the implicit GEMM over narrow channels pays the same copies and the patch
relayouts on top. Covered: 3-D, stride 1, no dilation, a window reaching at most k - 1 past
each edge, Ci and Co multiples of the sublane tile; otherwise conv.py's form is used."""

from __future__ import annotations

from mkworker.generate import common as G
from mkworker.generate import device_layout
from mkworker.generate import fused as F
from mkworker.generate.templates import conv_lanes

KERNEL_CLASS = "conv3d"
ROW_OPTIONS = (8, 4, 2, 1)  # output rows along R1 a tile; each is R2 lines of the loop
# The largest step planned: a 1024-lane plane of 32 x 32 lines is already 4 MiB, and v5e
# refuses a scoped limit near its 128 MiB (a step that big buys nothing here).
PLAN_BUDGET = 40 * G.MIB


def roles(xs, lhs_spec):
    """(r1, r2, l): the spatial axes (0..2, in the reference's order) for the rows, the columns
    and the lanes, or None when XLA keeps no spatial axis of the input in the lanes."""
    order = device_layout.major_to_minor(xs)
    spatial = list(lhs_spec[2:])
    if order[-1] not in spatial:
        return None
    lane = spatial.index(order[-1])
    r1, r2 = [a for a in range(3) if a != lane]
    return r1, r2, lane


def view(spec, r):
    """The (N, R1, R2, C, L) axes of an array whose dimension numbers are `spec`."""
    r1, r2, lane = r
    return (spec[0], spec[2 + r1], spec[2 + r2], spec[1], spec[2 + lane])


def applies(xs, ws, lhs_spec, rhs_spec, pad, strides, dilation, dtype) -> bool:
    if len(xs) != 5 or any(s != 1 for s in strides) or any(d != 1 for d in dilation):
        return False
    cin, cout = xs[lhs_spec[1]], ws[rhs_spec[0]]
    win = [ws[a] for a in rhs_spec[2:]]
    return (roles(xs, lhs_spec) is not None and cin % G.sublane_multiple(dtype) == 0
            and cout % 8 == 0 and cin % 128 != 0
            and all(0 <= a <= k - 1 for q, k in zip(pad, win) for a in q))


def emit(ctx, *, x, prologue_lines, w_expr, epi, out, xs, ws, lhs_spec, rhs_spec, out_spec,
         pad, description_tail, chan_ops, scal_ops) -> G.Generated | None:
    """The module. `w_expr` is the weight as (k0, k1, k2, Ci, Co), spatial axes in the input's
    order (`prologue_lines` compute it); `epi` is conv.py's epilogue writer."""
    x_dt, out_dt = x.aval.dtype, out.aval.dtype
    r1, r2, ln = r = roles(xs, lhs_spec)
    cin, cout = xs[lhs_spec[1]], ws[rhs_spec[0]]
    win = [ws[a] for a in rhs_spec[2:]]
    size = [xs[a] for a in lhs_spec[2:]]
    out_shape = tuple(int(d) for d in out.aval.shape)
    outs = [out_shape[a] for a in out_spec[2:]]
    kh, kw, kl = win[r1], win[r2], win[ln]
    rows, cols, lanes = size[r1], size[r2], size[ln]
    cols_o, lanes_o = outs[r2], outs[ln]
    (pt, _), (pc, pe), (pq, _) = pad[r1], pad[r2], pad[ln]
    if outs[r1] > rows or cols_o > cols or lanes_o > lanes:
        return None
    above, below = pt, kh - 1 - pt
    cols_s = cols + pc + pe  # the scratch's columns: the padding zeros on either side

    def vmem(bh):
        ins = [((bh, cols, cin, lanes), x_dt)] + [((1, cols, cin, lanes), x_dt)] * (kh - 1)
        ins.append(((kl, cout, kh * kw * cin), x_dt))
        ins += [((cout, 1), v.aval.dtype) for v, _ in chan_ops]
        scratch = [((bh + kh - 1, cols_s, cin, lanes), x_dt), ((bh, cols, cin, lanes), x_dt)]
        scratch += [((kh * kw * cin, lanes), "float32")] + [((cout, lanes), "float32")] * (kl + 2)
        return G.step_vmem(ins, [((bh, cols_o, cout, lanes_o), out_dt)], scratch)

    budget = min(ctx.vmem_budget, PLAN_BUDGET)
    fitting = [b for b in ROW_OPTIONS if (b <= outs[r1] or b == 1) and vmem(b) <= budget]
    if not fitting:
        return None
    # As conv_lanes: the largest tile whose output is at most STEP_OUTPUT elements, else one
    # row. More rows a step cost no fewer cycles (libtpu's estimate is flat from 1 to 4 rows of a
    # 32 x 32 plane) and make libtpu's profile larger (3.7 GiB at one row, 7.8 GiB at four, for
    # a 256-deep volume).
    bh = next((b for b in fitting if b * cols_o * cout * lanes_o <= conv_lanes.STEP_OUTPUT),
              fitting[-1])
    x_name = ctx.name_of_invar(x)
    halo_refs = [f"up{a}_ref" for a in range(above)] + [f"down{b}_ref" for b in range(below)]
    chan_refs = [f"{nm}_ref" for _, nm in chan_ops + scal_ops]
    refs = ", ".join(["x_ref"] + halo_refs + ["w_ref"] + chan_refs + ["o_ref", "s_ref"])
    own = f"{pc}:{pc} + c" if pc else ":c"
    fill = []
    if pc:
        fill.append(f"s_ref[:, :{pc}] = jnp.zeros_like(s_ref[:, :{pc}])  # the padding columns")
    if pe:
        fill.append(f"s_ref[:, {pc} + c:] = jnp.zeros_like(s_ref[:, {pc} + c:])")
    fill.append(f"lines = x_ref[0]  # this tile's {bh} input rows (those past the volume are "
                "zeroed)")
    fill += conv_lanes.halo_row_fill(above, below, "bh", "lines", f", {own}")
    terms, _ = conv_lanes.lane_taps(kl, pq, 1, "w")
    # lax.div / lax.rem: `//` on a traced int lowers through sign(), which Mosaic lowers only
    # for a known device
    body = ["row, col = jax.lax.div(t, co), jax.lax.rem(t, co)",
            "stack = s_ref[pl.ds(row, kh), pl.ds(col, kw)].reshape(kh * kw * cin, w)"] + terms
    body.append("y = acc" + ("" if lanes_o == lanes else "[:, :o_ref.shape[4]]"))
    body += epi.lines
    body.append(f"o_ref[0, row, col] = jnp.broadcast_to({epi.code(out)}, y.shape).astype(o_ref.dtype)")
    body.append("return carry")
    kwargs = ["kh", "kw", "h"] + epi.statics
    kernel = f"""

def _conv_kernel({refs}, *, {", ".join(kwargs)}):
    # x_ref: (1, bh, c, cin, w), rows x columns of lines as XLA keeps them (a spatial axis in the
    # lanes); o_ref: (1, bh, co, cout, wo)
    i = pl.program_id(1)
    bh, c, cin, w = x_ref.shape[1:]
    co = o_ref.shape[2]
{G.indent(chr(10).join(fill), 4)}
    lane = jax.lax.broadcasted_iota(jnp.int32, (o_ref.shape[3], w), 1)

    def one_line(t, carry):
        # kh x kw input lines stacked along K: one (cout, kh * kw * cin) x (kh * kw * cin, w)
        # product a window tap along the lanes, shifted into place
{G.indent(chr(10).join(body), 8)}

    jax.lax.fori_loop(0, bh * co, one_line, 0)
"""
    xv = "x_v"
    perm_in = view(lhs_spec, r)
    laid_out = device_layout.major_to_minor(xs) == perm_in
    ent = [f"{xv} = {x_name}.transpose({', '.join(map(str, perm_in))})  # (N, R1, R2, C, L): "
           + ("XLA's own layout of the volume, a bitcast" if laid_out else
              "XLA keeps it in another order, so this is a copy")]
    ent += prologue_lines
    sp = "".join("dhw"[a] for a in (r1, r2, ln))
    ent += [f"n, h, c, cin, wd = {xv}.shape",
            f"kh, kw, kl = {kh}, {kw}, {kl}  # the window along R1, R2, L ({sp} of the reference)",
            f"cout = {w_expr}.shape[-1]",
            (f"ho, co, wo = h + {sum(pad[r1])} - kh + 1, c + {sum(pad[r2])} - kw + 1, "
             f"wd + {sum(pad[ln])} - kl + 1"),
            "bh = max(1, min(BLOCK_ROWS, h))",
            "# per window tap along L: the (cout, kh * kw * cin) weights, K ordered as the lines",
            (f"w_taps = jnp.transpose({w_expr}, ({ln}, 4, {r1}, {r2}, 3)).reshape(kl, cout, "
             f"kh * kw * cin).astype({xv}.dtype)")]
    specs = ["pl.BlockSpec((1, bh, c, cin, wd), lambda img, i: (img, i, 0, 0, 0))"]
    args = [xv]
    conv_lanes.halo_specs(specs, args, xv, above, below, "bh", "c, cin, wd")
    specs.append("pl.BlockSpec((kl, cout, kh * kw * cin), lambda img, i: (0, 0, 0))")
    args.append("w_taps")
    conv_lanes.epilogue_operands(ent, specs, args, chan_ops, scal_ops)
    spec_text = G.indent("\n".join(s + "," for s in specs), 8)
    binds = ["kh=kh", "kw=kw", "h=h"] + [f"{a}={a}" for a in epi.statics]
    perm_out = view(out_spec, r)
    back = [0] * 5
    for pos, axis in enumerate(perm_out):
        back[axis] = pos
    out_laid = device_layout.major_to_minor(out_shape) == perm_out
    params = G.compiler_params_code(("parallel", "parallel"), ctx, vmem(bh))
    out_dims = "(n, ho, co, cout, wo)"
    ent.append(f"""out = pl.pallas_call(
    functools.partial(_conv_kernel, {", ".join(binds)}),
    out_shape=jax.ShapeDtypeStruct({out_dims}, {G.dtype_code(out_dt)}),
    grid=(n, pl.cdiv(ho, bh)),
    in_specs=[
{spec_text}
    ],
    out_specs=pl.BlockSpec((1, bh, co, cout, wo), lambda img, i: (img, i, 0, 0, 0)),
    scratch_shapes=[pltpu.VMEM((bh + kh - 1, c + {pc + pe}, cin, wd), {xv}.dtype)],
    compiler_params={params},
)({", ".join(args)})""")
    ent.append(f"return out.transpose({', '.join(map(str, back))})  # the reference's order: "
               + ("XLA's layout of the output, a bitcast" if out_laid else "a copy"))
    entry = f"""

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent), 4)}
"""
    description = (f"3-D convolution ({G.shape_text(xs)} * {'x'.join(map(str, win))} window, "
                   f"{cin}->{cout} channels, {G.dtype_name(x_dt)}) on the volume as XLA keeps it "
                   f"({'dhw'[ln].upper()} in the lanes, channels in the sublanes), one MXU product "
                   f"per window tap along the lanes a line" + description_tail)
    constants = [("BLOCK_ROWS", bh, "output rows of a tile (each a plane of lines)")]
    source, imports, body_text = G.write_module(description=description, ctx=ctx,
                                                kernel_class=KERNEL_CLASS, constants=constants,
                                                code=kernel + entry)
    copies = [nm for nm, ok in (("the input", laid_out), ("the output", out_laid)) if not ok]
    notes = [(f"tiles of {bh} output rows: {G.mib(vmem(bh))} of VMEM per step (budget "
              f"{G.mib(budget)}); limit {G.mib(F.vmem_limit(vmem(bh), ctx))}"),
             ("no padded copy of the volume; " + (f"XLA copies {' and '.join(copies)} into the "
                                                  "kernel's order" if copies else
                                                  "no copy before or after the kernel"))]
    return G.Generated(kernel_class=KERNEL_CLASS, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body_text,
                       tunables={"BLOCK_ROWS": sorted(set(fitting[-3:] + [bh]))}, notes=notes)
