"""The pooling template: max / average / sum pooling over non-overlapping (kh, kw) windows of the
two spatial axes of a channels-last input (..., H, W, C), written either way JAX users write it:

    x.reshape(..., H // kh, kh, W // kw, kw, C).max(axis=(-5, -3))      (or .sum / .mean / .min)
    jax.lax.reduce_window(x, -inf, jax.lax.max, (1, kh, kw, 1), (1, kh, kw, 1), "VALID")

then at most a scaling by a constant (the mean's divisor) and dtype conversions.

Kernel: the input viewed, with no data movement, as (rows = N * H/kh, kh, W/kw, kw * C): a window
row is a leading axis and the kw columns of a window sit side by side in the lanes. One grid axis
over row tiles ("parallel", the last one ragged, its store clipped by Pallas); a step combines
the kh window rows (leading-axis loads) and then the kw lane slices of width C, in f32, and
writes a (rows, W/kw, C) tile. Nothing is re-laid out in VMEM.

Where XLA keeps the input with W in the lanes and C in the sublanes (C not a multiple of 128:
generate.device_layout), that form would make XLA copy the input into row-major and the output
back, at 2.4x the kernel's own cost. An average or sum pooling then reads the input transposed
to (rows, kh, C, W), which is XLA's layout and so a bitcast: window rows are combined on the
leading axis, and a window's columns (kw neighbouring lanes) by a matmul on the MXU with a
(kw * 128, 128) matrix of 0s and 1s per 128 output lanes, at full f32 precision (a bf16 input
one row at a time, which is exact at one pass). An inf or NaN in the input then spreads to the
other windows of its 128 output lanes (0 * inf).

Where XLA keeps the input row-major (C in the lanes, W in the sublanes), the first form's view
(W/kw, kw * C) still moves W into the lanes: XLA copies the input first (libtpu's profile: 2.5x
the kernel's own cycles for a 2x2 max pooling of 2x1024x1024x128 bf16). The input is then read
as (rows, kh, W, C), a bitcast, and a window's columns are neighbouring sublanes: a 32-bit input
with C = 128 takes them with sublane-strided loads (Mosaic's only shape for them); a bfloat16 input with 2-column windows (Mosaic has no
strided load of 16-bit data) reads each pair of rows as the one 32-bit word a bf16 tile packs
them into, whose two halves are the two bf16 values as f32 (exact).

Refused (NoTemplate), with the reason: windows that overlap or have strides other than the window,
padding, dilation, a spatial size the window does not divide, pooling over other axes than the two
before the last (NCHW: pool in NHWC, or transpose first), other work around the pooling.
"""

from __future__ import annotations

import math

import numpy as np

from mkworker.generate import common as G
from mkworker.generate import device_layout
from mkworker.generate import expr as E
from mkworker.generate.common import NoTemplate

KERNEL_CLASS = "pool"
WINDOW_REDUCTIONS = {"reduce_window_max": "max", "reduce_window_sum": "sum",
                     "reduce_window_min": "min"}
REDUCTIONS = {"reduce_max": "max", "reduce_sum": "sum", "reduce_min": "min"}
COVERED_PRIMITIVES = tuple(WINDOW_REDUCTIONS)
# A matmul, a conv, ... before the pooling belongs to (and is refused by) another class.
OTHER_CLASSES = ("dot_general", "conv_general_dilated", "ragged_dot", "pallas_call", "while",
                 "scan", "cond", "sort", "gather", "scatter", "scatter-add", "cumsum")
COMBINE = {"max": "jnp.maximum({}, {})", "min": "jnp.minimum({}, {})", "sum": "{} + {}"}
ROW_SIZES = (8, 16, 32, 64, 128, 256, 512, 1024)
# f32 values live in a step besides the pipelined blocks: a window row, the running combine.
LIVE_TEMPS = 2


def _shape(v):
    return tuple(int(d) for d in v.aval.shape)


def _source(v, producer, ctx):
    """The task input `v` is read from through dtype conversions only, else None."""
    while v not in ctx.jaxpr.invars:
        e = producer.get(id(v))
        if e is None or e.primitive.name != "convert_element_type":
            return None
        v = e.invars[0]
    return v


def match(ctx: G.GenContext):
    eqns = E.live_eqns(ctx.jaxpr)
    names = [e.primitive.name for e in eqns]
    if any(n in OTHER_CLASSES for n in names):
        return None
    producer = {id(o): e for e in eqns for o in e.outvars}
    windows = [e for e in eqns if e.primitive.name in WINDOW_REDUCTIONS]
    pools = []  # (eqn, op, source var, kh, kw)
    for e in windows:
        p = e.params
        shape = _shape(e.invars[0])
        win, strides = tuple(p["window_dimensions"]), tuple(p["window_strides"])
        r = len(shape)
        if r < 3 or any(d != 1 for d in win[:r - 3]) or win[-1] != 1:
            raise NoTemplate(f"`{e.primitive.name}` with window {win} pools other axes than the "
                             "two before the last (channels-last H, W); not covered",
                             [e.primitive.name])
        if strides != win or any(tuple(q) != (0, 0) for q in p["padding"]) \
                or any(d != 1 for d in tuple(p["base_dilation"]) + tuple(p["window_dilation"])):
            raise NoTemplate(f"`{e.primitive.name}` with strides {strides}, padding or dilation: "
                             "the pooling template covers non-overlapping windows (strides = "
                             "window, no padding)", [e.primitive.name])
        kh, kw = win[-3], win[-2]
        if shape[-3] % kh or shape[-2] % kw:
            raise NoTemplate(f"a {kh}x{kw} window does not divide the {shape[-3]}x{shape[-2]} "
                             "spatial size; not covered", [e.primitive.name])
        pools.append((e, WINDOW_REDUCTIONS[e.primitive.name], e.invars[0], kh, kw))
    for e in eqns:
        if e.primitive.name not in REDUCTIONS:
            continue
        pe = producer.get(id(e.invars[0]))
        while pe is not None and pe.primitive.name == "convert_element_type":
            pe = producer.get(id(pe.invars[0]))  # jnp.mean of bf16 sums in f32
        if pe is None or pe.primitive.name != "reshape":
            continue
        src, split = _shape(pe.invars[0]), _shape(pe.outvars[0])
        r = len(src)
        if r < 3 or len(split) != r + 2 or split[:r - 3] != src[:r - 3] \
                or split[r - 3] * split[r - 2] != src[-3] or split[r - 1] * split[r] != src[-2] \
                or split[-1] != src[-1]:
            continue
        axes = tuple(e.params["axes"])
        if axes != (r - 2, r):
            raise NoTemplate(f"`{e.primitive.name}` over axes {axes} of a window split "
                             f"{G.shape_text(split)}: the pooling template reduces the two "
                             "window axes", [e.primitive.name])
        pools.append((e, REDUCTIONS[e.primitive.name], pe.invars[0], split[r - 2], split[r]))
    if not pools:
        return None
    if len(pools) > 1:
        raise NoTemplate(f"{len(pools)} poolings in one reference; the pooling template writes one",
                         [e.primitive.name for e, *_ in pools])
    e, op, src, kh, kw = pools[0]
    x = _source(src, producer, ctx)
    if x is None:
        raise NoTemplate("the pooled value is computed in the reference; work before the "
                         "pooling is not covered", [e.primitive.name])
    if not ctx.single_output:
        raise NoTemplate("the reference returns several outputs; the pooling template writes one",
                         [])
    # After the pooling: dtype conversions and a scaling by a constant scalar (a mean).
    v, scale = e.outvars[0], None
    users = {}
    for u in eqns:
        for i in u.invars:
            users.setdefault(id(i), []).append(u)
    out = ctx.jaxpr.outvars[0]
    while v is not out:
        us = users.get(id(v), [])
        if len(us) != 1:
            raise NoTemplate("the pooled value is used more than once; not covered", [])
        u = us[0]
        n = u.primitive.name
        if n == "convert_element_type":
            v = u.outvars[0]
            continue
        if n in ("mul", "div") and scale is None and u.invars[0] is v and E.is_literal(u.invars[1]):
            c = float(np.asarray(u.invars[1].val))
            scale = c if n == "mul" else 1.0 / c
            v = u.outvars[0]
            continue
        raise NoTemplate(f"`{n}` after the pooling is not covered by the pooling template", [n])
    return ctx.name_of_invar(x) or "x", x, out, _shape(x), op, kh, kw, scale


def _w_in_lanes(shape, out_shape) -> bool:
    """XLA lays out both the input and the pooled output with W in the lanes and C in the
    sublanes (the other axes above them in their order)."""
    def pattern(n):
        return tuple(range(n - 2)) + (n - 1, n - 2)
    return (device_layout.major_to_minor(shape) == pattern(len(shape))
            and device_layout.major_to_minor(out_shape) == pattern(len(out_shape)))


def emit(ctx: G.GenContext, matched) -> G.Generated:
    """The TPU form (the class has no GPU emitter)."""
    name, x, out, shape, op, kh, kw, scale = matched
    out_shape = shape[:-3] + (shape[-3] // kh, shape[-2] // kw, shape[-1])
    if op == "sum" and _w_in_lanes(shape, out_shape) \
            and shape[-1] % G.sublane_multiple(x.aval.dtype) == 0 \
            and -(-out_shape[-2] // LANE_CHUNK) <= MAX_CHUNKS:
        return _emit_w_in_lanes(ctx, matched)
    if _columns_in_sublanes(shape, out_shape, x.aval.dtype, kw):
        return _emit_columns_in_sublanes(ctx, matched)
    in_dt, out_dt = x.aval.dtype, out.aval.dtype
    w, c = shape[-2:]
    wo = w // kw

    def vmem(br):
        temps = LIVE_TEMPS * br * wo * kw * c * 4
        return G.step_vmem([((br * kh * wo, kw * c), in_dt)], [((br * wo, c), out_dt)], []) + temps

    br, fitting, params = _row_tiles(ctx, shape, kh, kw, vmem, kh * w * c * G.itemsize(in_dt))
    post = "" if scale is None else f" * {scale!r}"
    kernel = f'''

def _pool_kernel(x_ref, o_ref):
    # x_ref: (rows, {kh}, W/{kw}, {kw} * C), the window rows a leading axis and a window's {kw}
    # columns side by side in the lanes.
    c = o_ref.shape[-1]
    acc = x_ref[:, 0].astype(jnp.float32)
    for a in range(1, {kh}):
        acc = {COMBINE[op].format("acc", "x_ref[:, a].astype(jnp.float32)")}
    out = acc[..., 0:c]
    for b in range(1, {kw}):
        out = {COMBINE[op].format("out", "acc[..., b * c:(b + 1) * c]")}
    o_ref[...] = (out{post}).astype(o_ref.dtype)
'''
    entry = _entry(ctx, name, shape, kh, kw, out_dt, params,
                   [f"x_in = jnp.reshape({name}, (rows, {kh}, wo, {kw} * c))"],
                             f"(br, {kh}, wo, {kw} * c)")
    kind = "average" if op == "sum" and scale is not None else op
    description = (f"{kind} pooling over {kh}x{kw} windows of {G.shape_text(shape)} "
                   f"{G.dtype_name(in_dt)} (channels last) in tiles of {br} window rows: the "
                   "input viewed as (rows, kh, W/kw, kw*C), window rows combined on a leading "
                   "axis, window columns as lane slices")
    return _module(ctx, description, kernel + entry, br, fitting, vmem(br), [])


# Output lanes per MXU product: each takes kw * 128 input lanes.
LANE_CHUNK = 128
# Chunks per step are unrolled in the kernel: past this many, the first form is kept.
MAX_CHUNKS = 64


def _emit_w_in_lanes(ctx: G.GenContext, matched) -> G.Generated:
    """Sum / average pooling of an input XLA keeps with W in the lanes (see the module doc)."""
    name, x, out, shape, _op, kh, kw, scale = matched
    in_dt, out_dt = x.aval.dtype, out.aval.dtype
    w, c = shape[-2:]
    wo = w // kw
    exact_bf16 = G.itemsize(in_dt) == 2 and np.dtype(in_dt).kind == "f"

    def vmem(br):
        # live f32 values in a step: the combined window rows of one chunk and its product
        temps = br * c * (LANE_CHUNK * kw + LANE_CHUNK) * 4 * 2
        return G.step_vmem([((br * kh * c, w), in_dt)], [((br * c, wo), out_dt)], []) + temps

    br, fitting, params = _row_tiles(ctx, shape, kh, kw, vmem, kh * w * c * G.itemsize(in_dt))
    post = "" if scale is None else f" * {scale!r}"
    if exact_bf16:
        # a bf16 row times a matrix of 0s and 1s is exact at one MXU pass; rows summed in f32
        product = f"""        part = None
        for a in range({kh}):
            seg = x_ref[:, a, :, lo * {kw}:lo * {kw} + n_in].reshape(br * c, n_in)
            p = jnp.dot(seg, sel.astype(seg.dtype), preferred_element_type=jnp.float32)
            part = p if part is None else part + p"""
    else:
        product = f"""        seg = x_ref[:, 0, :, lo * {kw}:lo * {kw} + n_in].astype(jnp.float32)
        for a in range(1, {kh}):
            seg = seg + x_ref[:, a, :, lo * {kw}:lo * {kw} + n_in].astype(jnp.float32)
        part = jnp.dot(seg.reshape(br * c, n_in), sel, precision=jax.lax.Precision.HIGHEST,
                       preferred_element_type=jnp.float32)"""
    kernel = f'''

def _window_matrix(n_in, n_out):
    # (n_in, n_out): 1 where input lane i falls in output lane j's window of {kw} lanes
    i = jax.lax.broadcasted_iota(jnp.int32, (n_in, n_out), 0)
    j = jax.lax.broadcasted_iota(jnp.int32, (n_in, n_out), 1)
    return jnp.where((i >= j * {kw}) & (i < j * {kw} + {kw}), 1.0, 0.0).astype(jnp.float32)


def _pool_kernel(x_ref, o_ref):
    # x_ref: (rows, {kh}, C, W), XLA's own layout of the input (W in the lanes); o_ref: (rows, C, W/{kw})
    br, c, wo = o_ref.shape
    for lo in range(0, wo, {LANE_CHUNK}):
        n_out = min({LANE_CHUNK}, wo - lo)
        n_in = n_out * {kw}
        sel = _window_matrix(n_in, n_out)
{product}
        o_ref[:, :, lo:lo + n_out] = (part{post}).reshape(br, c, n_out).astype(o_ref.dtype)
'''
    entry = _entry(ctx, name, shape, kh, kw, out_dt, params,
                   ["# XLA keeps the input with W in the lanes: this transpose is a bitcast, no copy",
                    f"x_in = jnp.reshape(jnp.swapaxes({name}, -1, -2), (rows, {kh}, c, w))"],
                   f"(br, {kh}, c, w)", out_dims="c, wo",
                   # back to (..., H/kh, W/kw, C): XLA's layout of the output, a bitcast again
                   result="jnp.swapaxes({}, -1, -2)")
    kind = "average" if scale is not None else "sum"
    description = (f"{kind} pooling over {kh}x{kw} windows of {G.shape_text(shape)} "
                   f"{G.dtype_name(in_dt)} (channels last, C in the sublanes and W in the lanes as "
                   f"XLA lays it out) in tiles of {br} window rows: window rows combined on a "
                   f"leading axis, window columns by an MXU product per {LANE_CHUNK} output lanes")
    return _module(ctx, description, kernel + entry, br, fitting, vmem(br),
                   ["the input read in XLA's layout (W in the lanes): no copy before or after the kernel"])


def _columns_in_sublanes(shape, out_shape, dtype, kw: int) -> bool:
    """XLA keeps input and output row-major (C in the lanes), and a window's columns can be read
    from the sublanes: strided (32-bit data) or as the packed halves of a word (bf16, kw = 2)."""
    if not (device_layout.is_row_major(shape) and device_layout.is_row_major(out_shape)):
        return False
    w, c = shape[-2:]
    if np.dtype(dtype).itemsize == 4:
        # Mosaic's strided load wants the operand's last dimension at exactly 128
        return w % 8 == 0 and c == 128
    return np.dtype(dtype).name == "bfloat16" and kw == 2 and w % 16 == 0


def _emit_columns_in_sublanes(ctx: G.GenContext, matched) -> G.Generated:
    """Pooling of a row-major input read as (rows, kh, W, C), a window's columns in the
    sublanes (see the module doc)."""
    name, x, out, shape, op, kh, kw, scale = matched
    in_dt, out_dt = x.aval.dtype, out.aval.dtype
    w, c = shape[-2:]
    wo = w // kw
    packed = G.itemsize(in_dt) == 2

    def vmem(br):
        # live f32 values in a step: a window row's columns (or its two halves) and the combine
        temps = (LIVE_TEMPS + 1) * br * wo * c * 4
        return G.step_vmem([((br * kh * w, c), in_dt)], [((br * wo, c), out_dt)], []) + temps

    br, fitting, params = _row_tiles(ctx, shape, kh, kw, vmem, kh * w * c * G.itemsize(in_dt))
    post = "" if scale is None else f" * {scale!r}"
    if packed:
        columns = f"""        # a bf16 tile packs rows 2j and 2j+1 into one 32-bit word: its halves, as f32
        u = pltpu.bitcast(x_ref[:, a], jnp.uint32)
        lo = pltpu.bitcast(u << 16, jnp.float32)
        hi = pltpu.bitcast(u & jnp.uint32(0xFFFF0000), jnp.float32)
        v = {COMBINE[op].format("lo", "hi")}"""
        how = "a window's two columns as the halves of the 32-bit word a bf16 tile packs them in"
    else:
        columns = f"""        v = None
        for b in range({kw}):
            col = x_ref[:, pl.ds(a, 1), pl.ds(b, wo, stride={kw}), :][:, 0].astype(jnp.float32)
            v = col if v is None else {COMBINE[op].format("v", "col")}"""
        how = "a window's columns by sublane-strided loads"
    kernel = f'''

def _pool_kernel(x_ref, o_ref):
    # x_ref: (rows, {kh}, W, C), XLA's own layout of the input (C in the lanes, W in the sublanes)
    wo = o_ref.shape[1]
    out = None
    for a in range({kh}):
{columns}
        out = v if out is None else {COMBINE[op].format("out", "v")}
    o_ref[...] = (out{post}).astype(o_ref.dtype)
'''
    entry = _entry(ctx, name, shape, kh, kw, out_dt, params,
                             ["# H split into (H/kh, kh): a bitcast of XLA's row-major layout, no copy",
                              f"x_in = jnp.reshape({name}, (rows, {kh}, w, c))"],
                             f"(br, {kh}, w, c)")
    kind = "average" if op == "sum" and scale is not None else op
    description = (f"{kind} pooling over {kh}x{kw} windows of {G.shape_text(shape)} "
                   f"{G.dtype_name(in_dt)} (channels last, row-major as XLA lays it out) in tiles "
                   f"of {br} window rows: window rows combined on a leading axis, {how}")
    return _module(ctx, description, kernel + entry, br, fitting, vmem(br),
                   ["the input read in XLA's layout (C in the lanes): no copy before the kernel"])


def _row_tiles(ctx, shape, kh: int, kw: int, vmem, row_bytes: int):
    """(BLOCK_ROWS, the row tiles that fit the VMEM budget, the compiler params code): the
    largest tile up to ~4 MiB of input (`row_bytes` a window row), each step's fixed cost spread
    over more rows."""
    rows = math.prod(shape[:-3]) * (shape[-3] // kh)
    fitting = [b for b in ROW_SIZES if b <= max(rows, ROW_SIZES[0]) and vmem(b) <= ctx.vmem_budget]
    if not fitting:
        raise NoTemplate(f"one row of {kh}x{kw} windows of {G.shape_text(shape)} does not fit the "
                         f"VMEM budget ({G.mib(vmem(1))} per step)", [])
    small = [b for b in fitting if b * row_bytes <= 4 * G.MIB]
    br = max(small) if small else fitting[0]
    return br, fitting, G.compiler_params_code(("parallel",), ctx, max(vmem(b) for b in fitting))


def _entry(ctx, name, shape, kh, kw, out_dt, params, view_lines, in_block, out_dims="wo, c",
           result="{}") -> str:
    """The entry of every form: the input's view (`view_lines` define `x_in`), an `in_block`
    block of window rows a step, a (rows, `out_dims`) output, returned through `result`."""
    ent = _entry_sizes(name, len(shape), kh, kw) + list(view_lines)
    call = G.pallas_call_code(
        kernel="_pool_kernel",
        out_shape=f"jax.ShapeDtypeStruct((rows, {out_dims}), {G.dtype_code(out_dt)})",
        grid="(pl.cdiv(rows, br),)",
        in_specs=[f"pl.BlockSpec({in_block}, lambda i: (i, 0, 0, 0))"],
        out_spec=f"pl.BlockSpec((br, {out_dims}), lambda i: (i, 0, 0))",
        options=[f"compiler_params={params}"],
        args=["x_in"], final=f"lead + (h // {kh}, {out_dims})", result=result)
    return f'''

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent) + chr(10) + call, 4)}
'''


def _entry_sizes(name: str, rank: int, kh: int, kw: int) -> list[str]:
    """The entry's first lines, alike in both forms: the sizes and the row tile."""
    dims = ", ".join(f"{name}.shape[{i}]" for i in range(rank))
    return [f"shape = ({dims},)",
            "lead, (h, w, c) = shape[:-3], shape[-3:]",
            f"rows, wo = h // {kh}, w // {kw}",
            "for d in lead:",
            "    rows *= d",
            "br = min(BLOCK_ROWS, rows)"]


def _module(ctx, description: str, code: str, br: int, fitting, step_vmem: int, notes) -> G.Generated:
    """The module and the reply, alike in both forms: BLOCK_ROWS tuned over the row tiles that fit."""
    constants = [("BLOCK_ROWS", br, "window rows (output rows) of one tile")]
    source, imports, body = G.write_module(description=description, ctx=ctx,
                                           kernel_class=KERNEL_CLASS, constants=constants, code=code)
    notes = [(f"{br} window rows a tile: {G.mib(step_vmem)} of VMEM per step (budget "
              f"{G.mib(ctx.vmem_budget)})")] + list(notes) + G.folded_statics_notes(ctx, [])
    return G.Generated(kernel_class=KERNEL_CLASS, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body,
                       tunables={"BLOCK_ROWS": G.around(fitting, br)}, notes=notes)
