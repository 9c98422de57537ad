"""Template `conv2d`: a direct 2-D convolution (stride 1, any padding, any layout) with the
reference's elementwise epilogue (bias, activation, scale) fused, as an implicit GEMM.

Recognised on the jaxpr: one conv_general_dilated of two task inputs (no dilation, no feature
groups, unit strides), followed by elementwise equations whose other operands are per output
channel (a bias `(C,)` or `(1, C, 1, 1)`) or scalars.

Kernel: the entry views the input as NHWC and the weight as HWIO (transposes only when the
reference's layout differs) and pads the image once (the reference's padding, plus rows so the
last row tile's window stays inside). Grid (N, Ho/BH, Co/BCO), all "parallel", BH = BLOCK_PIXELS // Wo. One step reads a
window of BH + KH - 1 input rows (`pl.Element` rows: windows of consecutive tiles overlap by
KH - 1 rows) and computes BH output rows x all Wo columns x BCO channels: for each tap (dh, dw)
of the kernel window, the shifted (BH*Wo, Cin) patch times the tap's (Cin, BCO) weight,
accumulated in f32 VMEM scratch; the epilogue runs once on the accumulator. A ragged last row
tile writes only the rows that exist (the output's cdiv grid clips it).
"""

from __future__ import annotations

import math

import numpy as np

from mkworker.generate import common as G
from mkworker.generate import expr as E
from mkworker.generate import fused as F
from mkworker.generate.common import NoTemplate

KERNEL_CLASS = "conv2d"
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
                             "not covered by the conv2d template yet", [p])
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


def match(ctx):
    eqns = E.live_eqns(ctx.jaxpr)
    convs = [e for e in eqns if e.primitive.name == "conv_general_dilated"]
    if len(convs) != 1:
        return None
    conv = convs[0]
    if eqns.index(conv) != 0 or any(e.primitive.name == "conv_general_dilated" for e in eqns[1:]):
        # something computed before the convolution (a prologue) is not covered
        raise NoTemplate("work before the convolution (its operands are not plain inputs) is "
                         "not covered", ["conv_general_dilated"])
    x, w = conv.invars
    if x not in ctx.jaxpr.invars or w not in ctx.jaxpr.invars or x is w:
        raise NoTemplate("the convolution's operands are not two task inputs",
                         ["conv_general_dilated"])
    p = conv.params
    if len(x.aval.shape) != 4:
        raise NoTemplate(f"conv_general_dilated over {len(x.aval.shape) - 2} spatial dims; the "
                         "conv2d template covers 2-D", ["conv_general_dilated"])
    if tuple(p["window_strides"]) != (1, 1) or tuple(p["lhs_dilation"]) != (1, 1) or \
            tuple(p["rhs_dilation"]) != (1, 1):
        raise NoTemplate(f"conv_general_dilated with strides {tuple(p['window_strides'])}, "
                         f"input dilation {tuple(p['lhs_dilation'])} (transposed when > 1), "
                         f"kernel dilation {tuple(p['rhs_dilation'])}: the conv2d template covers "
                         "unit strides and no dilation", ["conv_general_dilated"])
    if p["feature_group_count"] != 1 or p["batch_group_count"] != 1:
        raise NoTemplate("conv_general_dilated with feature groups (grouped or depthwise); not "
                         "covered",
                         ["conv_general_dilated"])
    pad = [tuple(int(a) for a in q) for q in p["padding"]]
    if any(a < 0 for q in pad for a in q):
        raise NoTemplate("negative convolution padding; not covered", ["conv_general_dilated"])
    return conv, eqns[1:], pad


def _perm_code(perm) -> str:
    return "(" + ", ".join(str(int(a)) for a in perm) + ")"


def emit(ctx, m) -> G.Generated:
    """The TPU emitter (the class has no GPU form: generate.classes skips it there)."""
    conv, epilogue, pad = m
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
    _n, cin = xs[lhs_spec[0]], xs[lhs_spec[1]]
    h, wd = xs[lhs_spec[2]], xs[lhs_spec[3]]
    cout, kh, kw = ws[rhs_spec[0]], ws[rhs_spec[2]], ws[rhs_spec[3]]
    ho = h + pad[0][0] + pad[0][1] - kh + 1
    wo = wd + pad[1][0] + pad[1][1] - kw + 1
    wp = wd + pad[1][0] + pad[1][1]
    x_dt, w_dt, out_dt = x.aval.dtype, w.aval.dtype, out.aval.dtype
    chan_ops = [(v, nm) for v, nm, k in epi.operands if k == "chan"]
    scal_ops = [(v, nm) for v, nm, k in epi.operands if k == "scalar"]

    def vmem(bh, bco):
        ins = [((bh + kh - 1, wp, cin), x_dt), ((kh, kw, cin, bco), w_dt)]
        ins += [((1, bco), v.aval.dtype) for v, _ in chan_ops]
        # the accumulator, and about two more f32 tiles (a patch, the epilogue's temporaries)
        return G.step_vmem(ins, [((bh, wo, bco), out_dt)], [((bh * wo, bco), "float32")] * 3)

    bco_opts = [cout] if cout <= 512 else [b for b in (512, 256, 128) if cout % 128 == 0] or [cout]
    plan = None
    for bco in bco_opts:
        for bh in (64, 32, 16, 8, 4, 2, 1):
            if bh > ho and bh != 1:
                continue
            if bh * wo > 8192:  # rows of the GEMM tile: enough for the MXU, no more
                continue
            v = vmem(bh, bco)
            if v <= ctx.vmem_budget:
                plan = (bh, bco, v)
                break
        if plan:
            break
    if plan is None:
        raise NoTemplate(f"one output row ({wo} wide, window {kh}x{kw}x{cin}) does not fit the "
                         "VMEM budget", ["conv_general_dilated"])
    bh, bco, plan_vmem = plan
    constants = [("BLOCK_PIXELS", bh * wo, "output pixels of a tile: BLOCK_PIXELS // Wo rows"),
                 ("BLOCK_CO", bco, "output channels of a tile"),
                 ("VMEM_LIMIT_BYTES", F.vmem_limit(plan_vmem, ctx),
                  "scoped VMEM the kernel may use (its plan plus headroom)")]
    tunables = {"BLOCK_PIXELS": sorted({max(1, bh // 2) * wo, bh * wo, bh * 2 * wo}),
                "BLOCK_CO": sorted(set(bco_opts))}

    x_name, w_name = ctx.name_of_invar(x), ctx.name_of_invar(w)
    refs = ", ".join(["x_ref", "w_ref"] + [f"{nm}_ref" for _, nm in chan_ops + scal_ops]
                     + ["o_ref", "acc_ref"])
    kw_args = ["kh", "kw"] + epi.statics
    body = ["y = acc_ref[...]"] + epi.lines + \
        [(f"o_ref[...] = jnp.broadcast_to({epi.code(out)}, acc_ref.shape).reshape(o_ref.shape)"
         ".astype(o_ref.dtype)")]
    kernel = f'''

def _conv_kernel({refs}, *, {", ".join(kw_args)}):
    bh, wo, bco = o_ref.shape
    cin = x_ref.shape[-1]
    acc_ref[...] = jnp.zeros_like(acc_ref)
    # Implicit GEMM: each tap of the window is a shifted (bh*wo, cin) patch of the input rows
    # times the tap's (cin, bco) weight.
    for dh in range(kh):
        for dw in range(kw):
            patch = x_ref[0, dh:dh + bh, dw:dw + wo, :].reshape(bh * wo, cin)
            acc_ref[...] += jnp.dot(patch, w_ref[dh, dw], preferred_element_type=jnp.float32)
{G.indent(chr(10).join(body), 4)}
'''
    lhs_nhwc = (lhs_spec[0], lhs_spec[2], lhs_spec[3], lhs_spec[1])
    rhs_hwio = (rhs_spec[2], rhs_spec[3], rhs_spec[1], rhs_spec[0])
    back = [0] * 4
    for role, axis in zip((0, 3, 1, 2), out_spec):  # out_spec: (N, C, H, W) axes
        back[axis] = role
    ent = []
    if lhs_nhwc != (0, 1, 2, 3):
        ent.append(f"x_nhwc = {x_name}.transpose{_perm_code(lhs_nhwc)}  # the reference's "
                   "layout, as NHWC")
    else:
        ent.append(f"x_nhwc = {x_name}")
    if rhs_hwio != (0, 1, 2, 3):
        ent.append(f"w_hwio = {w_name}.transpose{_perm_code(rhs_hwio)}  # as (kh, kw, cin, cout)")
    else:
        ent.append(f"w_hwio = {w_name}")
    ent += ["n, h, w_in, cin = x_nhwc.shape",
            "kh, kw, _, cout = w_hwio.shape",
            f"ho, wo = h + {pad[0][0] + pad[0][1]} - kh + 1, w_in + {pad[1][0] + pad[1][1]} - kw + 1",
            "bh = max(1, min(BLOCK_PIXELS // wo, ho))  # output rows of a tile",
            "bco = BLOCK_CO if cout % BLOCK_CO == 0 else cout",
            "row_tiles = pl.cdiv(ho, bh)",
            "# The reference's padding, plus rows at the bottom so the last tile's window is inside.",
            f"extra = row_tiles * bh + kh - 1 - (h + {pad[0][0] + pad[0][1]})",
            (f"x_pad = jnp.pad(x_nhwc, ((0, 0), ({pad[0][0]}, {pad[0][1]} + extra), "
            f"({pad[1][0]}, {pad[1][1]}), (0, 0)))"),
            "wp = x_pad.shape[2]"]
    specs = [("# Element offsets: the row windows of consecutive tiles overlap by kh - 1 rows.\n"
             "pl.BlockSpec((pl.Element(1), pl.Element(bh + kh - 1), pl.Element(wp), "
             "pl.Element(cin)),\n"
             "             lambda img, i, j: (img, i * bh, 0, 0))"),
             "pl.BlockSpec((kh, kw, cin, bco), lambda img, i, j: (0, 0, 0, j))"]
    args = ["x_pad", "w_hwio"]
    for _, nm in chan_ops:
        ent.append(f"{nm}_in = {nm}.reshape(1, cout)")
        specs.append("pl.BlockSpec((1, bco), lambda img, i, j: (0, j))")
        args.append(f"{nm}_in")
    for _, nm in scal_ops:
        ent.append(f"{nm}_in = jnp.reshape({nm}, (1, 1))")
        specs.append("pl.BlockSpec((1, 1), lambda img, i, j: (0, 0))")
        args.append(f"{nm}_in")
    spec_text = G.indent("\n".join(s + "," for s in specs), 8)
    partial = "functools.partial(_conv_kernel, " + ", ".join(f"{a}={a}" for a in kw_args) + ")"
    ent.append(f'''out = pl.pallas_call(
    {partial},
    out_shape=jax.ShapeDtypeStruct((n, ho, wo, cout), {G.dtype_code(out_dt)}),
    grid=(n, row_tiles, cout // bco),
    in_specs=[
{spec_text}
    ],
    out_specs=pl.BlockSpec((None, bh, wo, bco), lambda img, i, j: (img, i, 0, j)),
    scratch_shapes=[pltpu.VMEM((bh * wo, bco), jnp.float32)],
    compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "parallel"),
                                         vmem_limit_bytes=VMEM_LIMIT_BYTES),
)({", ".join(args)})''')
    if tuple(back) != (0, 1, 2, 3):
        ent.append(f"return out.transpose{_perm_code(back)}  # back to the reference's layout")
    else:
        ent.append("return out")
    entry = f'''

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent), 4)}
'''
    after = [q for q in ("max", "logistic", "tanh", "erf", "min") if q in epi.prims]
    description = (f"2-D convolution ({G.shape_text(xs)} * {kh}x{kw} window, {cin}->{cout} "
                   f"channels, {G.dtype_name(x_dt)}) as an implicit GEMM"
                   + (" + " + " + ".join([f"`{nm}`" for _, nm in chan_ops + scal_ops] + after)
                      if chan_ops or scal_ops or after else "") + " fused")
    source, imports, body_text = G.write_module(description=description, ctx=ctx,
                                                kernel_class=KERNEL_CLASS, constants=constants,
                                                code=kernel + entry)
    notes = [(f"tiles {bh} rows x {wo} columns x {bco} channels: {G.mib(plan_vmem)} of VMEM per "
             f"step (budget {G.mib(ctx.vmem_budget)})"),
             "chosen: one 2-D convolution of two inputs with an elementwise epilogue"]
    return G.Generated(kernel_class=KERNEL_CLASS, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body_text, tunables=tunables,
                       notes=notes)
