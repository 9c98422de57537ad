"""The conv2d form for an image XLA keeps with W in the lanes (generate.device_layout): C not a
multiple of 128, so XLA lays (N, H, W, C) out as (N, H, C, W), W in the 128 lanes and the
channels in the sublanes. The implicit-GEMM form (conv.py) reads the image row-major, so XLA
copies it into that layout before the kernel and copies the output back, and the kernel pads
the image once more in HBM; with 32 channels its lanes are a quarter full. This form reads the
image as XLA keeps it (the transpose to (N, H, C, W) is a bitcast) and never pads it in HBM.
Where XLA keeps W in the lanes but the channels above H (PyTorch's NCHW), the entry transposes
into that view and out of it, and XLA copies: the implicit GEMM pays those copies too, and its
narrow-channel patches on top (they took libtpu's profile past 15 GiB).

A grid step (image n, tile i of BLOCK_ROWS output rows) gathers the input rows its windows read
in a VMEM scratch: the tile's own rows and, as one-row blocks, the rows above and below it that
the window reaches; a row outside the image is written as zeros (the reference's padding).
Each output row is then, for each window column dw, one MXU product of the (Co, kh * Ci) weights
of that column with the kh input rows stacked as (kh * Ci, W); the products are shifted along
the lanes by a roll (a lane past the image's edge is masked to zero) and summed, and the
epilogue (bias, activation) runs on the (Co, Wo) row before it is stored.

A stride sh along H only changes which rows a tile reads (sh * BLOCK_ROWS of its own, the
window's output row r stacks rows sh * r ...). A stride sw along W would need a lane-strided
read, which Mosaic has not: instead, when a step gathers its rows, each row's columns are split
into their sw phases (column sw * q + p goes to phase p, lane q) by a transpose (W in the
sublanes), a sublane-strided read per phase and a transpose back, g rows at a time so the
transposes are 128 lanes wide. A window column dw then reads phase (dw - pw) mod sw, shifted by
(dw - pw) // sw lanes: each output row is still kw products, each Wo wide (the stride-1 width
divided by sw: no product is computed for a column the stride skips).

A transposed convolution (input dilation s, conv.py with conv_transpose.py) comes here as its
phase form: one stride-1 convolution of the undilated image whose output rows are the s_h * s_w
output phases' channels (`Interleave`); the entry interleaves the phases, y = s * u + r, after
the kernel (an XLA copy), so neither the dilated image's zeros nor the narrow-channel patches of
the implicit GEMM are ever read.

Covered: 2-D, no dilation (or a transposed convolution's phase form), a window that reaches
at most kh - 1 rows and kw - 1 columns past the image on each side, Ci and Co multiples of the sublane tile (8 for f32, 16 for bf16), any
stride (along W: W a multiple of 128 * sw), and the input and output both in that layout;
otherwise conv.py's form is used."""

from __future__ import annotations

from typing import NamedTuple

from mkworker.generate import common as G
from mkworker.generate import device_layout
from mkworker.generate import fused as F

KERNEL_CLASS = "conv2d"
# Output rows of a tile: the rows of a step run in a loop, so the kernel's body stays one row.
ROW_OPTIONS = (32, 16, 8, 4, 2, 1)
STEP_OUTPUT = 1 << 18  # output elements of a step the default tile stays within (see emit)


class Interleave(NamedTuple):
    """A transposed convolution in this form (conv.py): the kernel is the stride-1 convolution
    whose output channels are (phase row, phase column, channel), and the entry interleaves the
    phases into y = s * u + r after it."""
    phases: tuple  # the input dilation (sh, sw): the transposed convolution's stride
    extents: tuple  # the output's (H, W) as code on the entry's `h` and `wd`


def _view(spec) -> tuple[int, int, int, int]:
    """(N, H, C, W) as axes of an array whose dimension numbers are `spec` (N, C, H, W)."""
    return (spec[0], spec[2], spec[1], spec[3])


def applies(xs, ws, out_shape, lhs_spec, rhs_spec, out_spec, pad, strides, dilation, dtype) -> bool:
    if len(xs) != 4 or any(s < 1 for s in strides) or any(d != 1 for d in dilation):
        return False
    cin, cout = xs[lhs_spec[1]], ws[rhs_spec[0]]
    kh, kw = ws[rhs_spec[2]], ws[rhs_spec[3]]
    h, w = xs[lhs_spec[2]], xs[lhs_spec[3]]
    ho, wo = out_shape[out_spec[2]], out_shape[out_spec[3]]
    sh, sw = strides
    sub = G.sublane_multiple(dtype)
    # along W a stride splits the columns into sw phases of W / sw lanes each, whole lane tiles
    if sw > 1 and (w % sw or (w // sw) % 128):
        return False
    return (cin % sub == 0 and cout % 8 == 0
            and all(0 <= a <= k - 1 for q, k in zip(pad, (kh, kw)) for a in q)
            # every row tile's own rows start inside the image; every output column is a lane
            # of the (phase) products
            and sh * (ho - 1) < h and wo <= w // sw
            and device_layout.major_to_minor(xs)[-1] == lhs_spec[3]
            and device_layout.major_to_minor(out_shape)[-1] == out_spec[3])


def epilogue_operands(ent, specs, args, chan_ops, scal_ops, phases=1):
    """The epilogue's per-channel operands as (Co, 1) sublane columns and its scalars as (1, 1)
    blocks: their entry lines, BlockSpecs (a two-axis grid) and arguments, appended. With
    `phases` > 1 the kernel's channels are (phase, channel): a column repeats per phase."""
    for _, nm in chan_ops:
        if phases > 1:
            ent.append(f"{nm}_in = jnp.tile({nm}.reshape(1, -1), ({phases}, 1)).reshape(cout, 1)"
                       "  # per (phase, channel) row")
        else:
            ent.append(f"{nm}_in = {nm}.reshape(cout, 1)  # per output channel: a sublane column")
        specs.append("pl.BlockSpec((cout, 1), lambda img, i: (0, 0))")
        args.append(f"{nm}_in")
    for _, nm in scal_ops:
        ent.append(f"{nm}_in = jnp.reshape({nm}, (1, 1))")
        specs.append("pl.BlockSpec((1, 1), lambda img, i: (0, 0))")
        args.append(f"{nm}_in")


def halo_row_fill(above, below, rin, value, cols="") -> list[str]:
    """Kernel lines that copy a tile's `rin` own input rows (the value `value`) and its one-row
    halo blocks up{a}_ref / down{b}_ref into s_ref, a row outside the image written as zeros
    (the reference's padding). `cols` indexes s_ref past the row (", 1:1 + c" in 3-D)."""
    lines = [f"for j in range({rin}):",
             (f"    s_ref[{above} + j{cols}] = jnp.where(i * {rin} + j < h, {value}[j], 0)"
              ".astype(s_ref.dtype)")]
    for a in range(above):
        lines.append(f"s_ref[{a}{cols}] = jnp.where(i * {rin} - {above - a} >= 0, up{a}_ref[0, 0], "
                     "0).astype(s_ref.dtype)")
    for b in range(below):
        lines.append(f"s_ref[{above} + {rin} + {b}{cols}] = jnp.where(i * {rin} + {rin} + {b} < h, "
                     f"down{b}_ref[0, 0], 0).astype(s_ref.dtype)")
    return lines


def halo_specs(specs, args, xv, above, below, tile, block) -> None:
    """The one-row halo blocks of the input `xv` (block `(1, 1, block...)`, index maps clamped at
    the image's ends) for the rows above and below a tile of `tile` rows: specs and args,
    appended."""
    zeros = ", 0" * len(block.split(", "))
    for a in range(above):
        specs.append(f"pl.BlockSpec((1, 1, {block}), lambda img, i: (img, jnp.maximum(i * {tile} - "
                     f"{above - a}, 0){zeros}))")
        args.append(xv)
    for b in range(below):
        specs.append(f"pl.BlockSpec((1, 1, {block}), lambda img, i: (img, jnp.minimum(i * {tile} + "
                     f"{tile} + {b}, h - 1){zeros}))")
        args.append(xv)


def lane_taps(kw, pw, sw, width) -> tuple[list[str], list[int]]:
    """Kernel lines summing into `acc` one MXU product per window tap along the lanes: tap dw
    reads phase (dw - pw) mod sw (the stack `stack`, or `stack{p}` when sw > 1), rolled by
    (dw - pw) // sw lanes, a lane past the edge masked to zero; and the phases read."""
    lines, phases = [], []
    for dw in range(kw):
        # output column c reads input column sw * c + dw - pw: phase p, shifted by q lanes
        p, q = (dw - pw) % sw, (dw - pw) // sw
        stack = "stack" if sw == 1 else f"stack{p}"
        if p not in phases:
            phases.append(p)
        prod = f"jnp.dot(w_ref[{dw}], {stack}, preferred_element_type=jnp.float32)"
        if q == 0:
            lines.append(f"acc = acc + {prod}" if lines else f"acc = {prod}")
            continue
        # the shift in the kernel's own width: a shrunk instance has another one
        rolled = f"pltpu.roll({prod}, {-q}, 1)" if q < 0 else f"pltpu.roll({prod}, {width} - {q}, 1)"
        keep = f"(lane >= {-q})" if q < 0 else f"(lane < {width} + ({-q}))"
        term = f"jnp.where({keep}, {rolled}, 0.0)"
        lines.append(f"acc = acc + {term}" if lines else f"acc = {term}")
    return lines, phases


def _plus(*terms) -> str:
    """`a + b + ...` without the zero terms."""
    kept = [str(t) for t in terms if t != 0]
    return " + ".join(kept) if kept else "0"


def emit(ctx, *, x, w_input, prologue_lines, w_expr, epi, out, xs, ws, lhs_spec, rhs_spec,
         out_spec, pad, strides, description_tail, chan_ops, scal_ops, interleave=None,
         imports=None) -> G.Generated:
    """The module. `w_expr` is the weight as (kh, kw, Ci, Co) after the reference's own flips
    and transposes (`prologue_lines` compute it); `epi` is conv.py's epilogue writer. With
    `interleave` (an Interleave) the convolution is a transposed one's phase form and `ws` the
    phase weight's shape (OIHW); `imports` are the module's own where it needs more."""
    x_dt, out_dt = x.aval.dtype, out.aval.dtype
    cin, cout = xs[lhs_spec[1]], ws[rhs_spec[0]]
    kh, kw = ws[rhs_spec[2]], ws[rhs_spec[3]]
    w = xs[lhs_spec[3]]
    out_shape = tuple(int(d) for d in out.aval.shape)
    (pt, pb), (pw, pe) = pad
    sh, sw = strides
    (rh, rw) = interleave.phases if interleave else (1, 1)  # a transposed one's output phases
    n_phases = rh * rw
    if interleave:  # the kernel's rows and columns are the output's u = y // s and v = x // s
        ho = xs[lhs_spec[2]] + pt + pb - kh + 1
        wo = w + pw + pe - kw + 1
    else:
        ho, wo = out_shape[out_spec[2]], out_shape[out_spec[3]]
    wp = w // sw  # lanes of a phase (the whole row at sw = 1)
    # the rows a tile reads: pt above its own sh * bh, and below them what the last window reaches
    above, below = pt, max(0, kh - sh - pt)
    # sw > 1: rows are split into phases g at a time, g * cin lanes in the transposes
    group = 128 // cin if 128 % cin == 0 else 1
    t_lanes = -(-(group * cin) // 128) * 128

    def vmem(bh):
        ins = [((sh * bh, cin, w), x_dt)] + [((1, cin, w), x_dt)] * (above + below)
        ins.append(((kw, cout, kh * cin), x_dt))
        ins += [((cout, 1), v.aval.dtype) for v, _ in chan_ops]
        rows = above + sh * bh + below
        if sw == 1:
            scratch = [((rows, cin, w), x_dt)]
        else:
            scratch = [((rows, sw, cin, wp), "float32"), ((w, t_lanes), "float32"),
                       ((w, t_lanes), "float32")]  # the transposed rows, also as a value
        # a row's live f32 values: the stacked rows (a stack per phase), kw products, their sum
        scratch += [((kh * cin, wp), "float32")] * sw + [((cout, wp), "float32")] * (kw + 2)
        return G.step_vmem(ins, [((bh, cout, wo), out_dt)], scratch)

    fitting = [b for b in ROW_OPTIONS if (b <= ho or b == 1) and vmem(b) <= ctx.vmem_budget]
    if not fitting:
        return None
    # The largest tile up to 8 rows whose output is at most STEP_OUTPUT elements: more rows a
    # step make a longer body for few cycles less, and libtpu's profile of the program grows
    # with the step (a 1024 x 1024 image of 32 -> 64 channels, one image: 5.9 GiB at 4 rows a
    # step, over 8 GiB at 8; 32 -> 32 channels at 8 rows: 5.7 GiB).
    bh = next((b for b in fitting if b <= 8 and b * cout * wo <= STEP_OUTPUT), fitting[-1])
    x_name = ctx.name_of_invar(x)
    halo_refs = [f"up{a}_ref" for a in range(above)] + [f"down{b}_ref" for b in range(below)]
    chan_refs = [f"{nm}_ref" for _, nm in chan_ops + scal_ops]
    refs = ["x_ref"] + halo_refs + ["w_ref"] + chan_refs + ["o_ref", "s_ref"]
    refs += ["t_ref"] if sw > 1 else []
    rin = "bh" if sh == 1 else "rows_in"  # the tile's own input rows, in the kernel
    fill = []
    if sw == 1:
        fill.append(f"rows = x_ref[0]  # this tile's {sh * bh} input rows (those past the image "
                    "are zeroed)")
        fill += halo_row_fill(above, below, rin, "rows")
    else:
        fill.append(f"# this tile's {sh * bh} input rows, {group} at a time, split into phases "
                    "(rows past the image are zeroed)")
        fill.append(f"for j in range(0, {rin}, {group}):")
        fill.append(f"    g = min({group}, {rin} - j)")
        fill.append("    row = jax.lax.broadcasted_iota(jnp.int32, (g, cin, w), 0) + i * "
                    f"{rin} + j")
        fill.append(f"    _phase_split(s_ref, t_ref, {_plus(above, 'j')}, "
                    "jnp.where(row < h, x_ref[0, j:j + g], 0))")
        for a in range(above):
            fill.append(f"_phase_split(s_ref, t_ref, {a}, jnp.where(i * {rin} - {above - a} >= 0, "
                        f"up{a}_ref[0], 0))")
        for b in range(below):
            fill.append(f"_phase_split(s_ref, t_ref, {_plus(above, rin, b)}, jnp.where("
                        f"{_plus(f'i * {rin}', rin, b)} < h, down{b}_ref[0], 0))")
    width = "w" if sw == 1 else "wp"  # the kernel's name for the products' lanes
    start = "r" if sh == 1 else f"{sh} * r"
    shifts, phases_read = lane_taps(kw, pw, sw, width)
    if sw == 1:
        body = [f"stack = s_ref[pl.ds({start}, kh)].reshape(kh * cin, w)"]
    else:
        cast = "" if G.itemsize(x_dt) == 4 else ".astype(w_ref.dtype)"
        body = [f"stack{p} = s_ref[pl.ds({start}, kh), {p}].reshape(kh * cin, wp){cast}"
                for p in sorted(phases_read)]
    body += shifts
    body.append("y = acc" + ("" if wo == wp else "[:, :o_ref.shape[3]]"))
    body += epi.lines
    body.append(f"o_ref[0, r] = jnp.broadcast_to({epi.code(out)}, y.shape).astype(o_ref.dtype)")
    body.append("return carry")
    kwargs = ["kh", "h"] + epi.statics
    if sh == 1:
        shapes = "    bh, cin, w = x_ref.shape[1:]"
    else:
        shapes = "    rows_in, cin, w = x_ref.shape[1:]\n    bh = o_ref.shape[1]"
    if sw > 1:
        shapes += f"\n    wp = w // {sw}  # lanes of a phase"
    splitter = "" if sw == 1 else f"""

def _phase_split(s_ref, t_ref, at, rows):
    # rows (g, cin, w) -> s_ref[at:at + g] as (g, {sw}, cin, w // {sw}): column {sw} * q + p goes to
    # phase p, lane q. Lanes cannot be read with a stride: the rows are transposed (W in the
    # sublanes), each phase read with a sublane stride and transposed back.
    g, cin, w = rows.shape
    t_ref[:, :g * cin] = rows.astype(jnp.float32).reshape(g * cin, w).T
    for p in range({sw}):
        phase = t_ref[pl.ds(p, w // {sw}, stride={sw}), :].T[:g * cin]
        s_ref[pl.ds(at, g), p] = phase.reshape(g, cin, w // {sw})
"""
    layout = ("(1, bh, cin, w)" if sh == 1 else f"(1, {sh} * bh, cin, w)")
    kernel = f"""{splitter}

def _conv_kernel({", ".join(refs)}, *, {", ".join(kwargs)}):
    # x_ref: {layout}, the image as XLA keeps it (W in the lanes); o_ref: (1, bh, cout, wo)
    i = pl.program_id(1)
{shapes}
{G.indent(chr(10).join(fill), 4)}
    lane = jax.lax.broadcasted_iota(jnp.int32, (o_ref.shape[2], {width}), 1)

    def one_row(r, carry):
        # kh input rows stacked along K: one (cout, kh * cin) x (kh * cin, {width}) product a window
        # column, shifted into place along the lanes
{G.indent(chr(10).join(body), 8)}

    jax.lax.fori_loop(0, bh, one_row, 0)
"""
    xv = "x_hcw"
    perm = _view(lhs_spec)
    laid_out = device_layout.major_to_minor(xs) == perm
    ent = [(f"{xv} = {x_name}.transpose({', '.join(map(str, perm))})  # (N, H, C, W): "
            + ("XLA's own layout of the image, a bitcast" if laid_out else
               "XLA keeps the channels above H, so this is a copy"))]
    ent += prologue_lines
    ent += [f"n, h, cin, wd = {xv}.shape",
            f"kh, kw, _, cout = {w_expr}.shape"]
    if sh == 1 and sw == 1:
        ent.append(f"ho, wo = h + {pt + pb} - kh + 1, wd + {pw + pe} - kw + 1")
    else:
        ent.append(f"ho, wo = (h + {pt + pb} - kh) // {sh} + 1, (wd + {pw + pe} - kw) // {sw} + 1"
                   f"  # stride {sh}x{sw}")
    ent += ["bh = max(1, min(BLOCK_ROWS, ho))",
            ("# per window column dw: the (cout, kh * cin) weights, K ordered (dh, cin) as the "
             "stacked rows"),
            (f"w_cols = jnp.transpose({w_expr}, (1, 3, 0, 2)).reshape(kw, cout, kh * cin)"
             f".astype({xv}.dtype)")]
    tile = "bh" if sh == 1 else f"{sh} * bh"
    specs = [f"pl.BlockSpec((1, {tile}, cin, wd), lambda img, i: (img, i, 0, 0))"]
    args = [xv]
    halo_specs(specs, args, xv, above, below, tile, "cin, wd")
    specs.append("pl.BlockSpec((kw, cout, kh * cin), lambda img, i: (0, 0, 0))")
    args.append("w_cols")
    epilogue_operands(ent, specs, args, chan_ops, scal_ops, n_phases)
    spec_text = G.indent("\n".join(s + "," for s in specs), 8)
    binds = ["kh=kh", "h=h"] + [f"{a}={a}" for a in epi.statics]
    back = [0] * 4
    for role, axis in zip((0, 2, 1, 3), out_spec):  # the kernel's (N, H, C, W) -> the reference's
        back[axis] = role
    params = G.compiler_params_code(("parallel", "parallel"), ctx, vmem(bh))
    if sw == 1:
        rows_text = "bh + kh - 1" if sh == 1 else f"{sh} * bh + {above + below}"
        scratch = f"pltpu.VMEM(({rows_text}, cin, wd), {xv}.dtype)"
    else:
        scratch = (f"pltpu.VMEM(({tile} + {above + below}, {sw}, cin, wd // {sw}), jnp.float32), "
                   f"pltpu.VMEM((wd, {t_lanes}), jnp.float32)")
    ent.append(f"""out = pl.pallas_call(
    functools.partial(_conv_kernel, {", ".join(binds)}),
    out_shape=jax.ShapeDtypeStruct((n, ho, cout, wo), {G.dtype_code(out_dt)}),
    grid=(n, pl.cdiv(ho, bh)),
    in_specs=[
{spec_text}
    ],
    out_specs=pl.BlockSpec((1, bh, cout, wo), lambda img, i: (img, i, 0, 0)),
    scratch_shapes=[{scratch}],
    compiler_params={params},
)({", ".join(args)})""")
    out_laid = device_layout.major_to_minor(out_shape) == _view(out_spec)
    if interleave:
        # (n, u, (r_h, r_w, co), v) -> the reference's order with y = s * u + r: one transpose
        hf, wf = interleave.extents
        role_at = dict(zip(out_spec, "NCHW"))
        roles = [role_at[a] for a in range(4)]
        groups = {"N": [0], "H": [1, 2], "C": [4], "W": [5, 3]}
        sizes = {"N": "n", "H": f"ho * {rh}", "C": "co", "W": f"wo * {rw}"}
        cuts = {"N": ":", "H": ":hf", "C": ":", "W": ":wf"}
        perm = [a for r in roles for a in groups[r]]
        out_laid = False  # the interleave is a copy whatever the layout
        ent += [f"hf, wf = {hf}, {wf}  # the output's extents",
                ("# The phases into place, y = s * u + r, in the reference's order (the last ones "
                 "past the end cut off): one XLA copy"),
                (f"out = out.reshape(n, ho, {rh}, {rw}, co, wo).transpose({', '.join(map(str, perm))})"
                 f".reshape({', '.join(sizes[r] for r in roles)})"),
                f"return out[{', '.join(cuts[r] for r in roles)}]"]
    else:
        ent.append(f"return out.transpose({', '.join(map(str, back))})  # "
                   + ("XLA's layout of the output: a bitcast" if out_laid else
                      "the reference's order: a copy"))
    entry = f"""

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent), 4)}
"""
    stride_text = "" if sh == sw == 1 else f", stride {sh}x{sw}"
    if interleave:
        co = cout // n_phases
        description = (f"transposed 2-D convolution ({G.shape_text(xs)}, stride {rh}x{rw}, "
                       f"{cin}->{co} channels, {G.dtype_name(x_dt)}) as one stride-1 convolution "
                       f"of the undilated image ({kh}x{kw} window, {cout} (phase, channel) rows) "
                       "on the image as XLA keeps it (W in the lanes), one MXU product per window "
                       "column a row" + description_tail)
    else:
        description = (f"2-D convolution ({G.shape_text(xs)} * {kh}x{kw} window, {cin}->{cout} "
                       f"channels{stride_text}, {G.dtype_name(x_dt)}) on the image as XLA keeps "
                       f"it (W in the lanes, channels in the sublanes), one MXU product per window "
                       f"column a row" + description_tail)
    kernel_class = "conv_transpose2d" if interleave else KERNEL_CLASS
    constants = [("BLOCK_ROWS", bh, "output rows of a tile")]
    source, imports, body_text = G.write_module(description=description, ctx=ctx,
                                                kernel_class=kernel_class, constants=constants,
                                                code=kernel + entry, imports=imports)
    notes = [(f"tiles of {bh} output rows: {G.mib(vmem(bh))} of VMEM per step (budget "
              f"{G.mib(ctx.vmem_budget)}); limit {G.mib(F.vmem_limit(vmem(bh), ctx))}"),
             ("the image read in XLA's layout (W in the lanes): no copy before or after the "
              "kernel and no padded copy of the image" if laid_out and out_laid else
              "W in the lanes as XLA keeps it, no padded copy of the image; XLA copies "
              + " and ".join(nm for nm, ok in (("the input", laid_out), ("the output", out_laid))
                             if not ok) + " into the kernel's order")]
    if interleave:
        notes.append(f"transposed: the {n_phases} output phases are the kernel's (phase, channel) "
                     "rows, interleaved by XLA after it (the dilated image's zeros are never read)")
    if sw > 1:
        notes.append(f"stride {sw} along W: each row's columns split into {sw} phases in VMEM "
                     f"({group} rows a transpose), so no product is computed for a skipped column")
    # the autotuner tries the next larger tile too
    larger = [b for b in fitting if b > bh][-1:]
    return G.Generated(kernel_class=kernel_class, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body_text,
                       tunables={"BLOCK_ROWS": sorted(set(fitting[-4:] + [bh] + larger))},
                       notes=notes)
