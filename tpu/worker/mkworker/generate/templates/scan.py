"""The scan template: an inclusive prefix sum (`jnp.cumsum`, forward or reversed) along the last
axis of one input, the leading dims flattened into rows.

XLA runs a cumsum on TPU as a windowed reduction in log steps, each a pass over the array. The
kernel makes one pass: the output viewed as (rows, cols) in (BLOCK_ROWS, BLOCK_COLS) tiles, rows
"parallel" and columns "arbitrary" (in scan order). Inside a tile the prefix sum is a matmul on
the MXU with a triangular 0/1 matrix built from iotas (y = x @ U, U[r, c] = 1 where r <= c, or
r >= c reversed), at HIGHEST precision (Mosaic's f32 passes: the sums stay f32-exact to
rounding); a (BLOCK_ROWS, 128) f32 scratch carries each row's running total from tile to tile.
The last column tile may run past the row's end: its out-of-range lanes are zeroed before the
matmul (a NaN there would reach every sum through 0 * NaN). Rows are independent, so the last
row tile may be ragged too (Pallas masks it).

Refused (NoTemplate): a cumsum over another axis than the last, cumprod / cummax / cummin /
cumlogsumexp, other operations around the scan (only dtype conversions are taken), several
inputs or outputs. The GPU form has no scan template yet.
"""

from __future__ import annotations

import math

from mkworker.generate import common as G
from mkworker.generate import expr as E
from mkworker.generate.common import NoTemplate

SCANS = ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
COVERED_PRIMITIVES = ("cumsum",)
# Primitives of other templates' classes (a matmul's epilogue cumsum is the matmul template's to
# refuse): the scan template does not claim a reference with one.
OTHER_CLASSES = ("dot_general", "conv_general_dilated", "ragged_dot", "pallas_call", "while",
                 "scan", "cond", "sort", "gather", "scatter", "scatter-add")
# Column tiles: the matmul's work grows with the tile's width (2 * rows * cols * BLOCK_COLS
# flops), so the narrowest lane-dense tile is the default; wider ones stay tunable.
COL_CHOICES = (128, 256, 512)
ROW_SIZES = (256, 512, 1024, 2048, 4096)
# f32 values live in a step besides the pipelined blocks: x, the triangle, the matmul's result.
LIVE_TEMPS = 3


def match(ctx: G.GenContext):
    """(input name, input var, output var, shape, reverse) for a bare cumsum over the last axis,
    None when the reference is not a scan, NoTemplate when it is one the template does not cover."""
    eqns = E.live_eqns(ctx.jaxpr)
    scans = [e for e in eqns if e.primitive.name in SCANS]
    if not scans:
        return None
    names = [e.primitive.name for e in eqns]
    if any(n in OTHER_CLASSES for n in names):
        return None
    if len(scans) > 1:
        raise NoTemplate(f"{len(scans)} scans in one reference; the scan template writes one",
                         [e.primitive.name for e in scans])
    scan = scans[0]
    if scan.primitive.name != "cumsum":
        raise NoTemplate(f"`{scan.primitive.name}` is not covered: the scan template writes "
                         "prefix sums (cumsum)", [scan.primitive.name])
    others = [n for n in names if n not in ("cumsum", "convert_element_type")]
    if others:
        raise NoTemplate("operations around the cumsum are not covered by the scan template: "
                         + ", ".join(f"`{n}`" for n in dict.fromkeys(others)), others)
    if not ctx.single_output:
        raise NoTemplate("the reference returns several outputs; the scan template writes one", [])
    src = scan.invars[0]
    while src not in ctx.jaxpr.invars:
        producer = next((e for e in eqns if src in e.outvars), None)
        if producer is None or producer.primitive.name != "convert_element_type":
            return None
        src = producer.invars[0]
    shape = tuple(int(d) for d in src.aval.shape)
    axis = int(scan.params.get("axis", 0))
    if len(shape) == 0 or axis != len(shape) - 1:
        raise NoTemplate(f"`cumsum` runs along axis {axis} of a {G.shape_text(shape)} value; the "
                         "scan template covers the last axis only", ["cumsum"])
    out = ctx.jaxpr.outvars[0]
    if E.is_literal(out) or tuple(int(d) for d in out.aval.shape) != shape:
        return None
    name = ctx.name_of_invar(src) or "x"
    return name, src, out, shape, bool(scan.params.get("reverse", False))


def emit(ctx: G.GenContext, matched) -> G.Generated:
    """The TPU form (the class has no GPU emitter)."""
    return _write(ctx, *matched)


def _write(ctx, name, src, out, shape, reverse) -> G.Generated:
    rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
    cols = shape[-1]
    in_dt, out_dt = src.aval.dtype, out.aval.dtype
    sub = max(G.sublane_multiple(in_dt), G.sublane_multiple(out_dt))
    budget = ctx.vmem_budget

    def vmem(br, bc):
        temps = LIVE_TEMPS * br * bc * 4 + bc * bc * 4
        return G.step_vmem([((br, bc), in_dt)], [((br, bc), out_dt)],
                           [((br, G.LANE), "float32")]) + temps

    col_c = [b for b in COL_CHOICES if b < cols] or [cols]
    row_c = sorted({b for b in G.ragged_candidates(rows, sub, sizes=ROW_SIZES)
                    if b == rows or (b % sub == 0 and b % 8 == 0)}) or [rows]
    bc = col_c[0]
    fitting = [b for b in row_c if vmem(b, bc) <= budget]
    if not fitting:
        raise NoTemplate(f"the smallest tile of the {G.shape_text(shape)} scan does not fit the "
                         f"VMEM budget ({G.mib(vmem(row_c[0], bc))} per step, budget "
                         f"{G.mib(budget)})", [])
    # Big row tiles: each step's fixed cost is spread over more rows (a tile of 2048 x 128 f32
    # is 1 MiB).
    br = max(b for b in fitting if b <= 2048) if any(b <= 2048 for b in fitting) else fitting[0]
    br = G.ragged_pick(br, rows, sub)
    tun = {"BLOCK_ROWS": G.around(fitting, br if br in fitting else fitting[-1]),
           "BLOCK_COLS": [b for b in col_c if vmem(br, b) <= budget] or [bc]}
    largest = max(vmem(b, c) for b in tun["BLOCK_ROWS"] for c in tun["BLOCK_COLS"])
    params = G.compiler_params_code(("parallel", "arbitrary"), ctx, largest)
    kernel = _kernel_code(reverse)
    entry = _entry_code(ctx, name, shape, out_dt, sub, params, reverse)
    direction = "reversed " if reverse else ""
    description = (f"{direction}prefix sum along the last axis of {G.shape_text(shape)} "
                   f"{G.dtype_name(in_dt)} ({rows} rows of {cols}) in {br}x{bc} tiles: each tile's "
                   "sums are one triangular matmul on the MXU, a running row total carried across "
                   "column tiles")
    constants = [("BLOCK_ROWS", br, "rows of one tile (independent: the grid's parallel axis)"),
                 ("BLOCK_COLS", bc, "columns of one tile: the triangular matmul's width")]
    source, imports, body = G.write_module(description=description, ctx=ctx, kernel_class="scan",
                                           constants=constants,
                                           code=G.block_helpers(kernel, entry) + kernel + entry)
    notes = [f"{br}x{bc} tiles: {G.mib(vmem(br, bc))} of VMEM per step (budget {G.mib(budget)})",
             "the prefix sums are f32 matmuls at HIGHEST precision"]
    notes += G.folded_statics_notes(ctx, [])
    return G.Generated(kernel_class="scan", description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body, tunables=tun, notes=notes)


def _kernel_code(reverse: bool) -> str:
    # Forward: tile t is the t-th grid step and U[r, c] = 1 where r <= c. Reversed: the grid
    # walks the tiles from the last, and U[r, c] = 1 where r >= c.
    tile = "(pl.num_programs(1) - 1 - j)" if reverse else "j"
    keep = ">=" if reverse else "<="
    return f'''

def _cumsum_kernel(x_ref, o_ref, carry_ref, *, cols):
    j = pl.program_id(1)

    @pl.when(j == 0)
    def _start_rows():
        carry_ref[...] = jnp.zeros_like(carry_ref)

    bc = x_ref.shape[1]
    x = x_ref[...].astype(jnp.float32)
    # Lanes past the row's end (a ragged last tile) hold garbage: zero them, or a NaN there
    # would reach every sum of the row through the matmul.
    col = {tile} * bc + jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)
    x = jnp.where(col < cols, x, 0.0)
    r = jax.lax.broadcasted_iota(jnp.int32, (bc, bc), 0)
    c = jax.lax.broadcasted_iota(jnp.int32, (bc, bc), 1)
    triangle = jnp.where(r {keep} c, 1.0, 0.0).astype(jnp.float32)
    carry = carry_ref[...]
    sums = jnp.dot(x, triangle, precision=jax.lax.Precision.HIGHEST,
                   preferred_element_type=jnp.float32)
    o_ref[...] = (sums + carry[:, :1]).astype(o_ref.dtype)
    carry_ref[...] = carry + jnp.sum(x, axis=1, keepdims=True)
'''


def _entry_code(ctx, name, shape, out_dt, sub, params, reverse) -> str:
    dims = ", ".join(f"{name}.shape[{i}]" for i in range(len(shape)))
    tile = "nj - 1 - j" if reverse else "j"
    ent = [f"shape = ({dims}{',' if len(shape) == 1 else ''})",
           "cols = shape[-1]", "rows = 1", "for d in shape[:-1]:", "    rows *= d",
           f"br = _ragged_block(BLOCK_ROWS, rows, {sub})",
           "bc = cols if cols <= BLOCK_COLS else BLOCK_COLS",
           "nj = pl.cdiv(cols, bc)",
           f"x_in = jnp.reshape({name}, (rows, cols))"]
    call = G.pallas_call_code(
        kernel="functools.partial(_cumsum_kernel, cols=cols)",
        out_shape=f"jax.ShapeDtypeStruct((rows, cols), {G.dtype_code(out_dt)})",
        grid="(pl.cdiv(rows, br), nj)",
        in_specs=[f"pl.BlockSpec((br, bc), lambda i, j: (i, {tile}))"],
        out_spec=f"pl.BlockSpec((br, bc), lambda i, j: (i, {tile}))",
        options=["scratch_shapes=[pltpu.VMEM((br, 128), jnp.float32)]",
                 f"compiler_params={params}"],
        args=["x_in"], final="shape")
    return f'''

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent) + chr(10) + call, 4)}
'''
