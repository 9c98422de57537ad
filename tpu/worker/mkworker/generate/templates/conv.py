"""Template family `conv` (classes `conv1d`, `conv2d`, `conv3d`): a direct convolution over 1,
2 or 3 spatial dims (any padding, any layout, any stride) with the reference's elementwise
epilogue (bias, activation, scale) fused, as an implicit GEMM over (kernel window x channels).

Recognised on the jaxpr: one conv_general_dilated of two task inputs (no dilation, no feature
groups), followed by elementwise equations whose other operands are per output channel (a bias
`(C,)` or `(1, C, 1, 1)`) or scalars.

Kernel: the entry views the input as channels-last (NWC / NHWC / NZHWC, z the depth) and the
weight as (window..., Cin, Cout) (transposes only when the reference's layout differs) and pads
the image once (the reference's padding, plus rows so the last row tile's window stays inside);
a 1-D stride-1 convolution is not padded in HBM: its tiles read a halo block on either side and
zero what lies outside the input in VMEM.
Grid (N, rows/BR, Co/BCO), all "parallel": a tile is BR whole output rows along the first
spatial axis (all of the inner spatial axes), BR = BLOCK_PIXELS // (pixels of a row). One step
reads a window of BR + K0 - 1 input rows (`pl.Element` rows: windows of consecutive tiles overlap
by K0 - 1 rows) and, for each tap of the window, adds the shifted (BR * row pixels, Cin) patch
times the tap's (Cin, BCO) weight into an f32 VMEM accumulator; the epilogue runs once on it. A
ragged last row tile writes only the rows that exist (the output's cdiv grid clips it).

A stride s > 1 is rewritten in the entry as a stride-1 convolution over space-to-depth phase
images (tap d = s*q + r reads phase r at offset q): the window shrinks to ceil(K / s), the
channels grow by the s^k phases, the weight gets zero taps where s*q + r >= K; the kernel is
the same stride-1 kernel (no strided loads in it).
"""

from __future__ import annotations

import math

import numpy as np

from mkworker.generate import common as G
from mkworker.generate import device_layout
from mkworker.generate import expr as E
from mkworker.generate import fused as F
from mkworker.generate.common import NoTemplate
from mkworker.generate.templates import conv_lanes, conv_lanes3d
from mkworker.generate.templates import conv_transpose as CT

KERNEL_CLASS = "conv"  # the family; a kernel's class names its dims (conv1d, conv2d, conv3d)
# 1-D: the rows past a tile that its window reaches come as a second block of the input, a
# multiple of 16 rows (whole sublane tiles, bf16's packed ones too); windows up to 17 taps.
_HALO = 16
_LETTERS = {1: ("w",), 2: ("h", "w"), 3: ("z", "h", "w")}  # spatial axes, z the depth
COVERED_PRIMITIVES = ("conv_general_dilated",)
_TABLES = (E.UNARY, E.BINARY_FLOAT, E.BINARY)
_ALIAS = ("reshape", "broadcast_in_dim", "squeeze", "expand_dims", "copy", "stop_gradient",
          "optimization_barrier")


class _Epilogue:
    """The equations after the convolution as code on the (BH*Wo, BCO) accumulator tile: values
    are `full` (per output element), `chan` (per output channel: a (1, BCO) row) or `scalar`."""

    def __init__(self, ctx, eqns, conv_out, chan_axis):
        self.ctx = ctx
        self.out_shape = tuple(int(d) for d in conv_out.aval.shape)
        self.chan_axis = chan_axis
        self.cout = self.out_shape[chan_axis]
        self.names = {id(conv_out): "y"}
        self.kind = {id(conv_out): "full"}
        self.lines, self.operands, self.statics, self.prims = [], [], [], []
        self._n = 0
        for e in eqns:
            self._one(e)

    def _input(self, v):
        name = self.ctx.name_of_invar(v)
        shape = tuple(int(d) for d in v.aval.shape)
        if shape == () or math.prod(shape) == 1:
            kind = "scalar"
        elif math.prod(shape) == self.cout and (
                len(shape) == 1 or (len(shape) == len(self.out_shape)
                                    and shape[self.chan_axis] == self.cout)):
            kind = "chan"
        else:
            raise NoTemplate(f"epilogue input `{name}` of shape {G.shape_text(shape)} is neither "
                             "per output channel nor a scalar; not covered", [])
        return G.load_operand(self, v, name, kind)

    def code(self, v):
        if E.is_literal(v):
            return self._literal(np.asarray(v.val).item(), v.aval.dtype)
        if id(v) in self.names:
            return self.names[id(v)]
        if v in self.ctx.jaxpr.invars:
            return self._input(v)
        consts = dict(zip(self.ctx.jaxpr.constvars, self.ctx.consts))
        if v in consts and np.asarray(consts[v]).shape == ():
            return self._literal(np.asarray(consts[v]).item(), v.aval.dtype)
        raise NoTemplate("the convolution's epilogue reads a value computed outside it", [])

    def _literal(self, value, dtype):
        return G.literal_code(self.ctx, value, dtype, self.statics)

    def kind_of(self, v):
        if E.is_literal(v):
            return "scalar"
        self.code(v)
        return self.kind[id(v)]

    def _set(self, e, expr, kind):
        self._n += 1
        name = f"v{self._n}"
        self.lines.append(f"{name} = {expr}")
        self.names[id(e.outvars[0])] = name
        self.kind[id(e.outvars[0])] = kind

    def _one(self, e):
        p = e.primitive.name
        self.prims.append(p)
        ins, out = e.invars, e.outvars[0]
        if p in _ALIAS:
            k = self.kind_of(ins[0])
            out_shape = tuple(int(d) for d in out.aval.shape)
            if k == "full" and out_shape != self.out_shape:
                raise NoTemplate("a reshape of the convolution's output; not covered", [p])
            if k == "chan" and p == "broadcast_in_dim" and len(out_shape) == len(self.out_shape):
                dims = tuple(e.params["broadcast_dimensions"])
                src = tuple(int(d) for d in ins[0].aval.shape)
                chan_dims = [d for s, d in zip(src, dims) if s != 1]
                if chan_dims != [self.chan_axis]:
                    raise NoTemplate("a per-channel value broadcast along another axis than the "
                                     "output channels; not covered", [p])
            self.names[id(out)] = self.code(ins[0])
            self.kind[id(out)] = k
            return
        if p == "convert_element_type" and \
                G.dtype_name(e.params["new_dtype"]).startswith(("float", "bfloat")):
            self.names[id(out)] = self.code(ins[0])  # float math runs in f32 inside
            self.kind[id(out)] = self.kind_of(ins[0])
            return
        if p in E.ROW_REDUCTION_PRIMITIVES or p.startswith(("reduce_", "cum", "arg")):
            raise NoTemplate(f"a reduction (`{p}`) after the convolution (a norm or pooling) is "
                             "not covered by the conv template yet", [p])
        kinds = [self.kind_of(v) for v in ins]
        kind = "full" if "full" in kinds else ("chan" if "chan" in kinds else "scalar")
        c = [self.code(v) for v in ins]
        if p == "integer_pow":
            return self._set(e, f"{c[0]} ** {int(e.params['y'])}", kind)
        if p == "select_n" and len(ins) == 3:
            return self._set(e, f"jnp.where({c[0]}, {c[2]}, {c[1]})", kind)
        if p == "clamp":
            return self._set(e, f"jnp.clip({c[1]}, {c[0]}, {c[2]})", kind)
        if p == "convert_element_type":
            return self._set(e, f"{c[0]}.astype({G.dtype_code(e.params['new_dtype'])})", kind)
        for table in _TABLES:
            if p in table:
                return self._set(e, table[p].format(*c), kind)
        raise NoTemplate(f"`{p}` after the convolution is not covered", [p])


_WEIGHT_PROLOGUE = ("rev", "transpose", "convert_element_type", "copy")


def _weight_prologue(ctx, eqns, w):
    """The equations before the convolution when they only flip, transpose or cast the weight
    (a transposed convolution's kernel flip), ending at the convolution's rhs `w`, and the task
    input they start from; refused otherwise."""
    chain, v = [], w
    for e in reversed(eqns):
        if e.primitive.name not in _WEIGHT_PROLOGUE or e.outvars[0] is not v:
            raise NoTemplate("work before the convolution (its operands are not plain inputs) "
                             "is not covered", ["conv_general_dilated", e.primitive.name])
        chain.append(e)
        v = e.invars[0]
    if v not in ctx.jaxpr.invars:
        raise NoTemplate("the convolution's operands are not two task inputs",
                         ["conv_general_dilated"])
    return list(reversed(chain)), v


def match(ctx):
    eqns = E.live_eqns(ctx.jaxpr)
    convs = [e for e in eqns if e.primitive.name == "conv_general_dilated"]
    if len(convs) != 1:
        return None
    conv = convs[0]
    x, w = conv.invars
    at = eqns.index(conv)
    prologue, w_input = _weight_prologue(ctx, eqns[:at], w) if at else ([], w)
    if x not in ctx.jaxpr.invars or w_input not in ctx.jaxpr.invars or x is w_input:
        raise NoTemplate("the convolution's operands are not two task inputs",
                         ["conv_general_dilated"])
    p = conv.params
    k = len(x.aval.shape) - 2
    if k not in _LETTERS:
        raise NoTemplate(f"conv_general_dilated over {k} spatial dims; the conv template covers "
                         "1-D, 2-D and 3-D", ["conv_general_dilated"])
    strides = tuple(int(s) for s in p["window_strides"])
    dilation = tuple(int(d) for d in p["lhs_dilation"])
    if any(d != 1 for d in p["rhs_dilation"]):
        raise NoTemplate(f"conv_general_dilated with kernel dilation {tuple(p['rhs_dilation'])}: "
                         f"the conv{k}d template covers no kernel dilation",
                         ["conv_general_dilated"])
    if any(d != 1 for d in dilation) and any(s != 1 for s in strides):
        raise NoTemplate(f"conv_general_dilated with both input dilation {dilation} and window "
                         f"strides {strides}; not covered", ["conv_general_dilated"])
    if p["feature_group_count"] != 1 or p["batch_group_count"] != 1:
        raise NoTemplate("conv_general_dilated with feature groups (grouped or depthwise); not "
                         "covered",
                         ["conv_general_dilated"])
    pad = [tuple(int(a) for a in q) for q in p["padding"]]
    if any(a < 0 for q in pad for a in q):
        raise NoTemplate("negative convolution padding; not covered", ["conv_general_dilated"])
    return conv, eqns[at + 1:], pad, strides, dilation, prologue, w_input


def _weight_step(e, w: str) -> str | None:
    """One weight prologue equation applied to `w`, as code (`copy`: None)."""
    p = e.primitive.name
    if p == "rev":
        return f"jnp.flip({w}, axis={_tup(int(d) for d in e.params['dimensions'])})"
    if p == "transpose":
        return f"{w}.transpose{_perm_code(e.params['permutation'])}"
    if p == "convert_element_type":
        return f"{w}.astype({G.dtype_code(e.params['new_dtype'])})"
    return None


def _imports_with_itertools() -> list[str]:
    return G.STANDARD_IMPORTS[:1] + ["import itertools"] + G.STANDARD_IMPORTS[1:]


def _perm_code(perm) -> str:
    return "(" + ", ".join(str(int(a)) for a in perm) + ")"


def _tup(items) -> str:
    items = [str(i) for i in items]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _row_options(k, rows, row_pixels):
    """Candidate output rows of a tile (along the first spatial axis), largest first: whole
    inner rows of at most 8192 pixels (the GEMM tile's rows: enough for the MXU, no more); in
    1-D the rows are the sublane dim of the tiles, so a multiple of the halo (16 rows)."""
    if k == 1:
        whole = -(-rows // _HALO) * _HALO
        return sorted({min(c, whole) for c in (4096, 2048, 1024, 512, 256, 128, 64, 32, 16)},
                      reverse=True)
    return [b for b in (64, 32, 16, 8, 4, 2, 1)
            if (b <= rows or b == 1) and (b * row_pixels <= 8192 or b == 1)]


def emit(ctx, m) -> G.Generated:
    """The TPU emitter (the class has no GPU form: generate.classes skips it there)."""
    conv, epilogue, pad, strides, dilation, prologue, w_input = m
    if not ctx.single_output:
        raise NoTemplate("the reference returns several outputs; not covered", [])
    dn = conv.params["dimension_numbers"]
    lhs_spec, rhs_spec, out_spec = (tuple(int(a) for a in s) for s in
                                    (dn.lhs_spec, dn.rhs_spec, dn.out_spec))
    out = ctx.jaxpr.outvars[0]
    conv_out = conv.outvars[0]
    epi = _Epilogue(ctx, epilogue, conv_out, out_spec[1])
    if epi.kind.get(id(out)) != "full":
        raise NoTemplate("the output is not per element of the convolution's output", [])
    x, w = conv.invars
    xs = tuple(int(d) for d in x.aval.shape)
    ws = tuple(int(d) for d in w.aval.shape)
    k = len(xs) - 2
    transposed = any(d != 1 for d in dilation)
    kc = f"conv_transpose{k}d" if transposed else f"conv{k}d"
    L = _LETTERS[k]
    cin, cout = xs[lhs_spec[1]], ws[rhs_spec[0]]
    size = [xs[a] for a in lhs_spec[2:]]
    win = [ws[a] for a in rhs_spec[2:]]
    strided = any(s != 1 for s in strides)
    if transposed:
        # The kernel sees a stride-1 window over the undilated input and writes every output
        # phase as its own channels (conv_transpose.py); its rows are the output's u = y // s.
        axes = [CT.axis_phases(dilation[i], win[i], pad[i][0]) for i in range(k)]
        full = [(size[i] - 1) * dilation[i] + pad[i][0] + pad[i][1] + 2 - win[i] for i in range(k)]
        outs = [-(-full[i] // dilation[i]) for i in range(k)]
        qwin = [a.window for a in axes]
    else:
        outs = [(size[i] + pad[i][0] + pad[i][1] - win[i]) // strides[i] + 1 for i in range(k)]
        # What the kernel sees: a stride-1 window over the (phase) images, (phase x) channels.
        qwin = [-(-win[i] // strides[i]) for i in range(k)]
    if any(o < 1 for o in outs):
        raise NoTemplate("the convolution's window is larger than its padded input", [])
    phases = math.prod(strides)
    out_phases = math.prod(dilation)  # a transposed convolution's (phase, channel) columns
    kin = [outs[i] + qwin[i] - 1 for i in range(k)]  # input extent a full row reads, per dim
    row_pixels = math.prod(outs[1:])
    x_dt, w_dt, out_dt = x.aval.dtype, w.aval.dtype, out.aval.dtype
    chan_ops = [(v, nm) for v, nm, kd in epi.operands if kd == "chan"]
    scal_ops = [(v, nm) for v, nm, kd in epi.operands if kd == "scalar"]

    conv_out_shape = tuple(int(d) for d in conv_out.aval.shape)
    lanes2d = not transposed and conv_lanes.applies(xs, ws, conv_out_shape, lhs_spec, rhs_spec,
                                                    out_spec, pad, strides, dilation, x_dt)
    lanes3d = not transposed and conv_lanes3d.applies(xs, ws, lhs_spec, rhs_spec, pad, strides,
                                                      dilation, x_dt)
    interleave = None
    if transposed and k == 2 and not strided:
        # W in the lanes, transposed: the (phase, channel) stride-1 convolution below is a
        # lanes-form convolution of the undilated image with a qh x qw window, whose padding
        # makes its output rows the output's u = y // s; the phases are interleaved after it.
        t_pad = tuple((-a.base, outs[i] - size[i] + a.window - 1 + a.base)
                      for i, a in enumerate(axes))
        t_ws = (out_phases * cout, cin, *qwin)  # as OIHW
        t_out = [0] * 4
        for role, extent in zip(out_spec, (xs[lhs_spec[0]], out_phases * cout, *outs)):
            t_out[role] = extent
        if (conv_lanes.applies(xs, t_ws, tuple(t_out), lhs_spec, (0, 1, 2, 3), out_spec, t_pad,
                               (1, 1), (1, 1), x_dt)
                and device_layout.major_to_minor(conv_out_shape)[-1] == out_spec[3]):
            lanes2d = True
            extents = [f"({nm} - 1) * {dilation[i]} + {pad[i][0] + pad[i][1] + 2 - win[i]}"
                       for i, nm in enumerate(("h", "wd"))]
            interleave = conv_lanes.Interleave(tuple(dilation), tuple(extents))
    if lanes2d or lanes3d:
        # The image as XLA keeps it (a spatial axis in the lanes), the weight as (window...,
        # cin, cout) in the input's spatial order.
        w_name, lines = ctx.name_of_invar(w_input), []
        for e in prologue:
            step = _weight_step(e, w_name)
            if step:
                lines.append(f"w_rhs = {step}")
                w_name = "w_rhs"
        rhs_hwio = (*rhs_spec[2:], rhs_spec[1], rhs_spec[0])
        if rhs_hwio != tuple(range(k + 2)):
            lines.append(f"w_hwio = {w_name}.transpose{_perm_code(rhs_hwio)}  # as (window..., "
                         "cin, cout)")
            w_name = "w_hwio"
        after = [q for q in ("max", "logistic", "tanh", "erf", "min") if q in epi.prims]
        tail = ((" + " + " + ".join([f"`{nm}`" for _, nm in chan_ops + scal_ops] + after) + " fused")
                if chan_ops or scal_ops or after else "")
        if interleave:
            lines += [(f"cin, co = {w_name}.shape[2:]  # the output's channels; the kernel's are "
                      "(phase, channel)")]
            lines.append(f"qh, qw = {qwin[0]}, {qwin[1]}  # every phase's window")
            lines += CT.weight_lines(w_name, axes, ["qh", "qw"])
            lanes = conv_lanes.emit(ctx, x=x, w_input=w_input, prologue_lines=lines,
                                    w_expr="w_phases", epi=epi, out=out, xs=xs, ws=t_ws,
                                    lhs_spec=lhs_spec, rhs_spec=(0, 1, 2, 3), out_spec=out_spec,
                                    pad=t_pad, strides=(1, 1), description_tail=tail,
                                    chan_ops=chan_ops, scal_ops=scal_ops, interleave=interleave,
                                    imports=_imports_with_itertools())
        elif lanes2d:
            lanes = conv_lanes.emit(ctx, x=x, w_input=w_input, prologue_lines=lines, w_expr=w_name,
                                    epi=epi, out=out, xs=xs, ws=ws, lhs_spec=lhs_spec,
                                    rhs_spec=rhs_spec, out_spec=out_spec, pad=pad,
                                    strides=strides, description_tail=tail, chan_ops=chan_ops,
                                    scal_ops=scal_ops)
        else:
            lanes = conv_lanes3d.emit(ctx, x=x, prologue_lines=lines, w_expr=w_name, epi=epi,
                                      out=out, xs=xs, ws=ws, lhs_spec=lhs_spec, rhs_spec=rhs_spec,
                                      out_spec=out_spec, pad=pad, description_tail=tail,
                                      chan_ops=chan_ops, scal_ops=scal_ops)
        if lanes is not None:
            return lanes

    # 1-D, stride 1: the input is read as it lies, with a halo block before and after each
    # tile, and the reference's padding is zeros written in VMEM (no padded copy in HBM: it
    # cost a whole extra read and write of the input, conv1d_gelu 0.85x of XLA).
    halos = (k == 1 and not strided and not transposed and 0 <= pad[0][0] <= win[0] - 1
             and pad[0][1] >= 0)

    def vmem(bt, bco):
        rows_in = [(bt + qwin[0] - 1,)] if k > 1 else [(bt,), (_HALO,)] + [(_HALO,)] * halos
        ins = [((*r, *kin[1:], phases * cin), x_dt) for r in rows_in]
        ins.append(((*qwin, phases * cin, bco), w_dt))
        ins += [((1, bco), v.aval.dtype) for v, _ in chan_ops]
        # the accumulator, and about two more f32 tiles (a patch, the epilogue's temporaries)
        return G.step_vmem(ins, [((bt, *outs[1:], bco), out_dt)],
                           [((bt * row_pixels, bco), "float32")] * 3)

    cols = out_phases * cout
    bco_opts = [cols] if cols <= 512 else [b for b in (512, 256, 128) if cols % 128 == 0] or [cols]
    plan = None
    for bco in bco_opts:
        for bt in _row_options(k, outs[0], row_pixels):
            v = vmem(bt, bco)
            if v <= ctx.vmem_budget:
                plan = (bt, bco, v)
                break
        if plan:
            break
    if plan is None:
        raise NoTemplate(f"one output row ({G.shape_text(outs[1:] or [1])}, window "
                         f"{'x'.join(map(str, win))}x{cin}) does not fit the VMEM budget",
                         ["conv_general_dilated"])
    bt, bco, plan_vmem = plan
    row, inner = L[0], L[1:]
    b_row = f"b{row}"  # output rows of a tile
    o_names = [f"{ch}o" for ch in L]
    k_names = [f"k{ch}" for ch in L]
    q_names = [f"q{ch}" for ch in L] if strided or transposed else k_names  # the kernel's window
    pix_text = " * ".join(o_names[1:])
    pix_text = f"({pix_text})" if k > 2 else pix_text
    constants = [("BLOCK_PIXELS", bt * row_pixels,
                  "output pixels of a tile" + (f": BLOCK_PIXELS // {pix_text} rows" if k > 1 else "")),
                 ("BLOCK_CO", bco, "output channels of a tile"),
                 ("VMEM_LIMIT_BYTES", F.vmem_limit(plan_vmem, ctx),
                  "scoped VMEM the kernel may use (its plan plus headroom)")]
    if k == 1:
        opts = _row_options(k, outs[0], 1)
        at = opts.index(bt)
        tunables = {"BLOCK_PIXELS": sorted(set(opts[max(0, at - 1):at + 2]))}
    else:
        tunables = {"BLOCK_PIXELS": sorted({max(1, bt // 2) * row_pixels, bt * row_pixels,
                                            bt * 2 * row_pixels})}
    tunables["BLOCK_CO"] = sorted(set(bco_opts))

    x_name, w_name = ctx.name_of_invar(x), ctx.name_of_invar(w_input)
    x_refs = ["before_ref", "x_ref", "after_ref"] if halos else \
        ["x_ref"] + (["halo_ref"] if k == 1 else [])
    refs = ", ".join(x_refs + ["w_ref"] + [f"{nm}_ref" for _, nm in chan_ops + scal_ops]
                     + ["o_ref", "acc_ref"])
    kw_args = k_names + epi.statics + (["length"] if halos else [])
    body = ["y = acc_ref[...]"] + epi.lines + \
        [(f"o_ref[...] = jnp.broadcast_to({epi.code(out)}, acc_ref.shape).reshape(o_ref.shape)"
         ".astype(o_ref.dtype)")]
    taps = []
    for depth, (ch, kn) in enumerate(zip(L, k_names)):
        taps.append("    " * depth + f"for d{ch} in range({kn}):")
    sl = [f"d{row}:d{row} + {b_row}"] + [f"d{ch}:d{ch} + {ch}o" for ch in inner]
    gemm_rows = " * ".join([b_row] + o_names[1:])
    if halos:
        lo = f"halo - {pad[0][0]} + " if pad[0][0] else "halo + "
        # A 16-bit input is masked in f32: libtpu 0.0.42's static profile aborts on the select
        # of packed bf16 rows ("Expected vector-int16, got vector-int32"); each patch is cast
        # back for the MXU.
        packed = G.itemsize(x_dt) < 4
        blocks = ", ".join(f"{r}[...]" + (".astype(jnp.float32)" if packed else "")
                           for r in ("before_ref", "x_ref", "after_ref"))
        taps[:0] = ["# This tile's input rows with `halo` rows before and after it; rows outside the",
                    "# input are the reference's zero padding.",
                    f"rows = jnp.concatenate([{blocks}], axis=0)",
                    "halo = before_ref.shape[0]",
                    "pos = pl.program_id(1) * bw - halo + jax.lax.broadcasted_iota(jnp.int32, rows.shape, 0)",
                    "rows = jnp.where((pos >= 0) & (pos < length), rows, jnp.zeros_like(rows))"]
        patch = f"rows[{lo}dw:{lo}dw + bw, :]" + (".astype(x_ref.dtype)" if packed else "")
    elif k == 1:
        taps.insert(0, "# This tile's input rows and the rows past it that its window reaches.")
        taps.insert(1, "rows = jnp.concatenate([x_ref[...], halo_ref[...]], axis=0)")
        patch = f"rows[{sl[0]}, :]"
    else:
        patch = f"x_ref[0, {', '.join(sl)}, :].reshape({gemm_rows}, cin)"
    taps.append("    " * k + f"patch = {patch}")
    taps.append("    " * k + "acc_ref[...] += jnp.dot(patch, w_ref[" + ", ".join(f"d{ch}" for ch in L)
                + "], preferred_element_type=jnp.float32)")
    kernel = f'''

def _conv_kernel({refs}, *, {", ".join(kw_args)}):
    {", ".join([b_row] + o_names[1:] + ["bco"])} = o_ref.shape
    cin = x_ref.shape[-1]
    acc_ref[...] = jnp.zeros_like(acc_ref)
    # Implicit GEMM: each tap of the window is a shifted ({gemm_rows}, cin) patch of the input
    # rows times the tap's (cin, bco) weight.
{G.indent(chr(10).join(taps), 4)}
{G.indent(chr(10).join(body), 4)}
'''
    lay = "n" + "".join(L) + "c"
    lhs_cl = (lhs_spec[0], *lhs_spec[2:], lhs_spec[1])
    rhs_cl = (*rhs_spec[2:], rhs_spec[1], rhs_spec[0])
    ident = tuple(range(k + 2))
    back = [0] * (k + 2)
    for role, axis in zip((0, k + 1, *range(1, k + 1)), out_spec):  # out_spec: (N, C, spatial)
        back[axis] = role
    xv, wv = f"x_{lay}", f"w_{lay[1:-1]}io"
    ent = []
    if lhs_cl != ident:
        ent.append(f"{xv} = {x_name}.transpose{_perm_code(lhs_cl)}  # the reference's layout, as "
                   f"{lay.upper()}")
    else:
        ent.append(f"{xv} = {x_name}")
    for e in prologue:  # the reference's own flip / transpose / cast of the weight
        step = _weight_step(e, w_name)
        if step:
            ent.append(f"w_rhs = {step}")
            w_name = "w_rhs"
    if rhs_cl != ident:
        ent.append(f"{wv} = {w_name}.transpose{_perm_code(rhs_cl)}  # as "
                   f"({', '.join(k_names)}, cin, cout)")
    else:
        ent.append(f"{wv} = {w_name}")
    in_names = [f"{ch}_in" for ch in L]
    ent += [f"n, {', '.join(in_names)}, cin = {xv}.shape",
            f"{', '.join(k_names)}, _, cout = {wv}.shape"]
    pad_sum = [pad[i][0] + pad[i][1] for i in range(k)]
    if strided:
        ent.append(", ".join(o_names) + " = " + ", ".join(
            f"({in_names[i]} + {pad_sum[i]} - {k_names[i]}) // {strides[i]} + 1" for i in range(k)))
        ent += [(f"# Stride {_tup(strides)} as a stride-1 convolution over space-to-depth phase "
                "images: tap"),
                "# d = s*q + r of the window reads phase r at offset q, so the window shrinks to",
                (f"# ceil(k / s) and the channels grow by the {phases} phases (zero weight taps "
                "where s*q + r >= k)."),
                f"{', '.join(q_names)} = " + ", ".join(f"-(-{k_names[i]} // {strides[i]})"
                                                    for i in range(k))]
    elif transposed:
        full_names = [f"{ch}f" for ch in L]
        ent += [", ".join(full_names) + " = " + ", ".join(
                    f"({in_names[i]} - 1) * {dilation[i]} + {pad_sum[i] + 2} - {k_names[i]}"
                    for i in range(k)) + "  # the output's extents",
                ", ".join(o_names) + " = " + ", ".join(
                    f"pl.cdiv({full_names[i]}, {dilation[i]})" for i in range(k))
                + "  # the kernel's rows: u = y // s",
                f"{', '.join(q_names)} = {', '.join(str(q) for q in qwin)}  # every phase's window",
                "co = cout  # the output's channels; the kernel's are (phase, channel)",
                f"cout = {out_phases} * co"]
    else:
        ent.append(", ".join(o_names) + " = " + ", ".join(
            f"{in_names[i]} + {pad_sum[i]} - {k_names[i]} + 1" for i in range(k)))
    if k == 1:
        ent += [(f"halo = pl.cdiv(max({q_names[0]} - 1, 1), {_HALO}) * {_HALO}  # rows past a tile "
                "its window reaches"),
                (f"{b_row} = max(halo, min(BLOCK_PIXELS, pl.cdiv({o_names[0]}, halo) * halo) "
                "// halo * halo)  # output positions of a tile")]
        reach = "halo"  # input rows past the last tile that its window reads
    else:
        ent.append(f"{b_row} = max(1, min(BLOCK_PIXELS // {pix_text}, {o_names[0]}))  # output "
                   "rows of a tile")
        reach = f"{q_names[0]} - 1"
    ent += ["bco = BLOCK_CO if cout % BLOCK_CO == 0 else cout",
            f"row_tiles = pl.cdiv({o_names[0]}, {b_row})"]
    # What the (phase) images need along each axis: the last row tile's window stays inside.
    extents = (f"{', '.join(f'{ch}p' for ch in L)} = "
               + ", ".join([f"row_tiles * {b_row} + {reach}"]
                           + [f"{o_names[i]} + {q_names[i]} - 1" for i in range(1, k)]))

    def lax_pad(cfg):
        return f"x_pad = jax.lax.pad({xv}, jnp.zeros((), {xv}.dtype), ({', '.join(cfg)}))"

    if strided:
        ent += ["# The extent each phase image needs (the last row tile's window stays inside);",
                "# inputs past it are unused and cut off (a negative pad).", extents]
        cfg = ["(0, 0, 0)"] + [f"({pad[i][0]}, {strides[i]} * {L[i]}p - {in_names[i]} - {pad[i][0]}, 0)"
                               for i in range(k)] + ["(0, 0, 0)"]
        ent.append(lax_pad(cfg))
        split = ", ".join([f"{ch}p, {strides[i]}" for i, ch in enumerate(L)])
        perm = [0] + [1 + 2 * i for i in range(k)] + [2 + 2 * i for i in range(k)] + [2 * k + 1]
        perm_text = f".transpose{_perm_code(perm)}" if perm != list(range(2 * k + 2)) else ""
        split_text = f".reshape(n, {split}, cin){perm_text}" if perm_text else ""
        ent.append(f"x_pad = x_pad{split_text}.reshape(n, {', '.join(f'{ch}p' for ch in L)}, "
                   f"{phases} * cin)  # phases into channels")
        wpad = ", ".join(f"(0, {strides[i]} * {q_names[i]} - {k_names[i]})" for i in range(k))
        wsplit = ", ".join(f"{q_names[i]}, {strides[i]}" for i in range(k))
        wperm = [2 * i for i in range(k)] + [2 * i + 1 for i in range(k)] + [2 * k, 2 * k + 1]
        wperm_text = f".transpose{_perm_code(wperm)}" if wperm != list(range(2 * k + 2)) else ""
        ent.append(f"w_phases = jnp.pad({wv}, ({wpad}, (0, 0), (0, 0))).reshape({wsplit}, cin, cout)"
                   f"{wperm_text}.reshape({', '.join(q_names)}, {phases} * cin, cout)")
        w_arg = "w_phases"
        ent.append(f"cin = {phases} * cin")
    elif transposed:
        ent += ["# The input from the first index a window reads, with zeros past its ends as far",
                "# as the last tiles' windows reach (a negative pad cuts what no window reads).",
                extents]
        cfg = ["(0, 0, 0)"] + [f"({-axes[i].base}, {L[i]}p - {in_names[i]}"
                               + (f" + {axes[i].base}" if axes[i].base >= 0 else f" - {-axes[i].base}")
                               + ", 0)" for i in range(k)] + ["(0, 0, 0)"]
        ent.append(lax_pad(cfg))
        ent += CT.weight_lines(wv, axes, q_names)
        w_arg = "w_phases"
    elif halos:
        ent += ["# The input as it lies: a tile reads its rows and a halo block on either side;",
                "# what lies outside the input is zeroed in the kernel. An input shorter than a",
                "# tile is padded to one (a block never outgrows its array).",
                f"length = {in_names[0]}",
                f"x_in = {xv}",
                "if length < bw:",
                f"    x_in = jnp.pad({xv}, ((0, 0), (0, bw - length), (0, 0)))",
                "main_blocks, halo_blocks = pl.cdiv(x_in.shape[1], bw), pl.cdiv(x_in.shape[1], halo)"]
        w_arg = wv
    else:
        ent += [("# The reference's padding, plus rows at the end so the last tile's window is "
                 "inside."),
                f"extra = row_tiles * {b_row} + {reach} - ({in_names[0]} + {pad_sum[0]})"]
        cfg = ["(0, 0)", f"({pad[0][0]}, {pad[0][1]} + extra)"] + \
            [f"({pad[i][0]}, {pad[i][1]})" for i in range(1, k)] + ["(0, 0)"]
        ent.append(f"x_pad = jnp.pad({xv}, ({', '.join(cfg)}))")
        if k > 1:
            ent.append(f"{', '.join(f'{ch}p' for ch in inner)} = x_pad.shape"
                       + ("[2]" if k == 2 else "[2:-1]"))
        w_arg = wv
    zeros = ", ".join(["0"] * (k - 1))
    if halos:
        specs = [("# the halo before the tile (block indexes clamped at the ends: those rows are "
                  "zeroed)\n"
                  "pl.BlockSpec((None, halo, cin),\n"
                  "             lambda img, i, j: (img, jnp.maximum(i * (bw // halo) - 1, 0), 0))"),
                 "pl.BlockSpec((None, bw, cin), lambda img, i, j: (img, jnp.minimum(i, main_blocks - 1), 0))",
                 ("# the halo after the tile\n"
                  "pl.BlockSpec((None, halo, cin),\n"
                  "             lambda img, i, j: (img, jnp.minimum((i + 1) * (bw // halo), "
                  "halo_blocks - 1), 0))")]
    elif k == 1:
        specs = ["pl.BlockSpec((None, bw, cin), lambda img, i, j: (img, i, 0))",
                 ("# the halo: the first rows of the next tile, in blocks of `halo` rows\n"
                  "pl.BlockSpec((None, halo, cin), lambda img, i, j: (img, (i + 1) * (bw // halo), 0))")]
    else:
        x_block = ", ".join(["pl.Element(1)", f"pl.Element({b_row} + {q_names[0]} - 1)"]
                            + [f"pl.Element({ch}p)" for ch in inner] + ["pl.Element(cin)"])
        specs = [(f"# Element offsets: the row windows of consecutive tiles overlap by {q_names[0]} - 1 "
                  "rows.\n"
                  f"pl.BlockSpec(({x_block}),\n"
                  f"             lambda img, i, j: (img, i * {b_row}, {zeros}, 0))")]
    specs.append(f"pl.BlockSpec(({', '.join(q_names)}, cin, bco), lambda img, i, j: "
                 f"({', '.join(['0'] * (k + 1))}, j))")
    args = (["x_in"] * 3 if halos else ["x_pad"] * (2 if k == 1 else 1)) + [w_arg]
    for _, nm in chan_ops:
        if transposed:
            ent.append(f"{nm}_in = jnp.tile({nm}.reshape(1, co), (1, {out_phases}))  # per "
                       "(phase, channel)")
        else:
            ent.append(f"{nm}_in = {nm}.reshape(1, cout)")
        specs.append("pl.BlockSpec((1, bco), lambda img, i, j: (0, j))")
        args.append(f"{nm}_in")
    for _, nm in scal_ops:
        ent.append(f"{nm}_in = jnp.reshape({nm}, (1, 1))")
        specs.append("pl.BlockSpec((1, 1), lambda img, i, j: (0, 0))")
        args.append(f"{nm}_in")
    spec_text = G.indent("\n".join(s + "," for s in specs), 8)
    binds = [f"{kn}={qn}" for kn, qn in zip(k_names, q_names)] + [f"{a}={a}" for a in epi.statics]
    binds += ["length=length"] if halos else []
    partial = "functools.partial(_conv_kernel, " + ", ".join(binds) + ")"
    ent.append(f'''out = pl.pallas_call(
    {partial},
    out_shape=jax.ShapeDtypeStruct((n, {", ".join(o_names)}, cout), {G.dtype_code(out_dt)}),
    grid=(n, row_tiles, cout // bco),
    in_specs=[
{spec_text}
    ],
    out_specs=pl.BlockSpec((None, {", ".join([b_row] + o_names[1:])}, bco),
                           lambda img, i, j: (img, i, {zeros + ", " if zeros else ""}j)),
    scratch_shapes=[pltpu.VMEM(({gemm_rows}, bco), jnp.float32)],
    compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "parallel"),
                                         vmem_limit_bytes=VMEM_LIMIT_BYTES),
)({", ".join(args)})''')
    if transposed:
        ent += CT.interleave_lines(axes, o_names, full_names)
    if tuple(back) != ident:
        ent.append(f"return out.transpose{_perm_code(back)}  # back to the reference's layout")
    else:
        ent.append("return out")
    entry = f'''

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent), 4)}
'''
    after = [q for q in ("max", "logistic", "tanh", "erf", "min") if q in epi.prims]
    description = (f"{k}-D convolution ({G.shape_text(xs)} * {'x'.join(map(str, win))} window, "
                   f"{cin}->{cout} channels"
                   + (f", stride {'x'.join(map(str, strides))}" if strided else "")
                   + (f", transposed (input dilation {'x'.join(map(str, dilation))})"
                      if transposed else "")
                   + f", {G.dtype_name(x_dt)}) as an implicit GEMM"
                   + (" + " + " + ".join([f"`{nm}`" for _, nm in chan_ops + scal_ops] + after)
                      if chan_ops or scal_ops or after else "") + " fused")
    source, imports, body_text = G.write_module(description=description, ctx=ctx,
                                                kernel_class=kc, constants=constants,
                                                code=kernel + entry,
                                                imports=_imports_with_itertools() if transposed else None)
    notes = [(f"tiles {bt} rows x {G.shape_text(outs[1:] or [1])} x {bco} channels: "
              f"{G.mib(plan_vmem)} of VMEM per step (budget {G.mib(ctx.vmem_budget)})"),
             f"chosen: one {k}-D convolution of two inputs with an elementwise epilogue"]
    if strided:
        notes.append(f"stride {_tup(strides)} rewritten as stride 1 over {phases} space-to-depth "
                     f"phase images (window {'x'.join(map(str, qwin))}, {phases * cin} channels)")
    if transposed:
        notes.append(f"transposed: the {out_phases} output phases are one stride-1 convolution of "
                     f"the undilated input (window {'x'.join(map(str, qwin))}, {out_phases * cout} "
                     f"(phase, channel) columns, {CT.used_taps(axes):.0%} of the gathered taps "
                     "non-zero), interleaved after the kernel")
    return G.Generated(kernel_class=kc, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body_text, tunables=tunables,
                       notes=notes)
