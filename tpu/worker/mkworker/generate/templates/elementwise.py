"""Template for elementwise chains: any number of inputs of the output's shape, rows or columns
broadcast against it, and scalars, combined by the reference's elementwise equations.

Kernel shape: the output viewed as (rows, cols) with the leading dims flattened into rows, a
(BLOCK_ROWS, BLOCK_COLS) tile per grid step, both axes "parallel". When every input is
full-shaped (or a scalar) and the last dim is narrower than a lane row, the whole array is
viewed as (size / LANES, LANES) instead, so stores are lane-dense.
"""

from __future__ import annotations

import math

from mkworker.generate import common as G
from mkworker.generate import expr as E
from mkworker.generate import gpu_form as GPU
from mkworker.generate.common import NoTemplate

# A tile of about this many bytes per operand keeps the per-step overhead small and leaves room
# for several operands double-buffered in VMEM.
TARGET_BLOCK_BYTES = 2 << 20  # 2 MiB a block: the ~0.35 us step cost is small against it
MAX_COLS_BLOCK = 4096
LANE_CHOICES = (1024, 512, 256, 128)
# GPU form: values per program (a tile of about 8 KiB of f32; more in flight comes from more
# programs, not bigger ones).
GPU_TILE_ELEMENTS = 2048
GPU_MAX_COLS = 1024


def match(ctx):
    """(region, output var, output shape) when the reference is elementwise, else None."""
    eqns = E.live_eqns(ctx.jaxpr)
    if not eqns:
        return None
    allowed = set(E.ELEMENTWISE_PRIMITIVES) | set(E.LAYOUT_PRIMITIVES) | set(E.INDEX_PRIMITIVES)
    if any(e.primitive.name not in allowed for e in eqns):
        return None
    if not ctx.single_output:
        raise NoTemplate("the reference returns several outputs (a tuple); the elementwise "
                         "template writes one output", [])
    out = ctx.jaxpr.outvars[0]
    if E.is_literal(out) or out in ctx.jaxpr.invars or len(out.aval.shape) == 0:
        return None
    shape = tuple(int(d) for d in out.aval.shape)
    operands = {}
    for e in eqns:
        for v in e.invars:
            if not E.is_literal(v) and v in ctx.jaxpr.invars and v not in operands:
                operands[v] = ctx.name_of_invar(v) or f"arg{len(operands)}"
    if not operands:
        return None
    consts = dict(zip(ctx.jaxpr.constvars, ctx.consts))
    has_iota = any(e.primitive.name == "iota" for e in eqns)
    tiles = {"cols": ("o_ref.shape[1]", "col0")}
    if len(shape) == 2:
        tiles["rows"] = ("o_ref.shape[0]", "row0")
    region = E.Region(eqns, out_shape=shape, known={}, operands=operands, ctx=ctx, consts=consts,
                      tiles=tiles if has_iota else None)
    return region, out, shape


def emit(ctx, matched) -> G.Generated:
    """Both forms: the inputs laid out alike, then the TPU tiling or _write_gpu."""
    return _write(ctx, *matched)


class _Input:
    def __init__(self, name, var, expanded, shape):
        self.name, self.var = name, var
        self.expanded = expanded
        nlead = len(shape) - 1
        lead = expanded[:nlead]
        if all(a == f for a, f in zip(lead, shape[:nlead])):
            self.rows_full = True
        elif all(a == 1 for a in lead):
            self.rows_full = False
        else:
            raise NoTemplate(f"input `{name}` is broadcast over some but not all leading dims "
                             f"({G.shape_text(expanded)} against {G.shape_text(shape)}); not "
                             "covered", ["broadcast_in_dim"])
        self.cols_full = expanded[-1] == shape[-1]
        self.full = self.rows_full and self.cols_full
        self.scalar = all(d == 1 for d in expanded)
        self.dtype = var.aval.dtype


def _runtime_dims(region, inputs, shape) -> list[str]:
    """Code for each output dim, read from an input that runs along it."""
    dims = []
    for d, size in enumerate(shape):
        code = None
        for inp in inputs:
            a = region.align.get(id(inp.var))
            if a is None:
                continue
            for i, (ax, s) in enumerate(zip(a, inp.var.aval.shape)):
                if ax == d and s == size and s != 1:
                    code = f"{inp.name}.shape[{i}]"
                    break
            if code:
                break
        if code is None:
            if size != 1:
                raise NoTemplate(f"no input runs along output dim {d}; not covered", [])
            code = "1"
        dims.append(code)
    return dims


def _write(ctx, region: E.Region, out, shape) -> G.Generated:
    inputs = []
    for v in region.operand_vars:
        if v in [i.var for i in inputs]:
            continue
        a = region.align.get(id(v))
        if a is not None:
            big = [ax for ax, s in zip(a, v.aval.shape) if s != 1]
            if big != sorted(big):
                raise NoTemplate(f"input `{region.operands[v]}` is broadcast with its dims "
                                 "reordered (a transpose); not covered", ["broadcast_in_dim"])
        inputs.append(_Input(region.operands[v], v, region.expanded(v), shape))
    dtypes = [i.dtype for i in inputs] + [out.aval.dtype]
    sub = max(G.sublane_multiple(d) for d in dtypes)
    total = math.prod(shape)
    rows = math.prod(shape[:-1])
    cols = shape[-1]
    if ctx.form == "gpu":
        return _write_gpu(ctx, region, out, shape, inputs)
    # (An iota indexes the output's own rows and columns: no lane-dense re-view then.)
    dense = cols < G.LANE and all(i.full or i.scalar for i in inputs) and total % G.LANE == 0 \
        and not region.tiles_used
    if dense:
        lanes = next(b for b in LANE_CHOICES if total % b == 0)
        rows, cols = total // lanes, lanes
    budget = ctx.vmem_budget
    widest = max(G.itemsize(d) for d in dtypes)

    def vmem(br, bc):
        ins = [((br if i.rows_full else 1, bc if i.cols_full else 1), i.dtype) for i in inputs]
        return G.step_vmem(ins, [((br, bc), out.aval.dtype)])

    col_c = [cols] if dense else [b for b in G.ragged_candidates(cols, G.LANE)
                                  if b <= MAX_COLS_BLOCK] or [cols]
    row_c = [b for b in G.ragged_candidates(rows, sub, sizes=(64, 128, 256, 512, 1024, 2048, 4096))
             if b == rows or b % sub == 0 and (b < 128 and (b & (b - 1)) == 0 or b % 128 == 0)]
    row_c = sorted(set(row_c)) or [rows]
    best = None
    for bc in col_c:
        for br in row_c:
            v = vmem(br, bc)
            if v > budget:
                continue
            size = br * bc * widest
            key = (abs(math.log2(max(size, 1) / TARGET_BLOCK_BYTES)), -bc, -br)
            if best is None or key < best[0]:
                best = (key, br, bc, v)
    if best is None:
        raise NoTemplate(f"the smallest valid tile of the {G.shape_text(shape)} output does not "
                         f"fit the VMEM budget ({G.mib(vmem(row_c[0], col_c[0]))} per step, budget "
                         f"{G.mib(budget)})", [])
    _, br, bc, vbytes = best

    kernel, statics = _kernel_code(region, inputs, out)
    if dense:
        tiling = ["total = 1", "for d in shape:", "    total *= d",
                  "cols = _fit_block(LANES, total, 128)", "rows = total // cols"]
    else:
        tiling = ["cols = shape[-1]", "rows = 1", "for d in shape[:-1]:", "    rows *= d"]
    # Rows and columns are independent: the last tile may be ragged (Pallas masks it).
    tiling.append(f"br = _ragged_block(BLOCK_ROWS, rows, {sub})")
    tiling.append("bc = cols" if dense else "bc = _ragged_block(BLOCK_COLS, cols, 128)")
    tun = {"BLOCK_ROWS": G.around([b for b in row_c if vmem(b, bc) <= budget], br)}
    if not dense:
        tun["BLOCK_COLS"] = G.around([b for b in col_c if vmem(br, b) <= budget], bc)
    largest = max([vbytes] + [vmem(b, bc) for b in tun["BLOCK_ROWS"]] +
                  [vmem(br, b) for b in tun.get("BLOCK_COLS", [])])
    params = G.compiler_params_code(("parallel", "parallel"), ctx, largest)
    entry = _entry_code(ctx, region, inputs, out, shape, statics, tiling, params)
    constants = [("BLOCK_ROWS", br, "rows of one tile")]
    if dense:
        constants.append(("LANES", cols, "the array is viewed as (size / LANES, LANES): lane-dense"))
    else:
        constants.append(("BLOCK_COLS", bc, "columns of one tile"))
    description = _description(region, shape, out, inputs, br, bc)
    source, imports, mbody = G.write_module(description=description, ctx=ctx,
                                            kernel_class="elementwise", constants=constants,
                                            code=G.block_helpers(kernel, entry) + kernel + entry)
    notes = [f"{br}x{bc} tiles: {G.mib(vbytes)} of VMEM per step (budget {G.mib(budget)})"]
    notes += G.folded_statics_notes(ctx, statics)
    return G.Generated(kernel_class="elementwise", description=description, source=source,
                       entry=ctx.entry, imports=imports, body=mbody, tunables=tun, notes=notes)


def _write_gpu(ctx, region: E.Region, out, shape, inputs) -> G.Generated:
    """The GPU form (generate.gpu_form): power-of-two tiles dividing the (rows, cols) view, or, when
    every input is full-shaped or a scalar, the whole array viewed as (size / LANES, LANES)
    (contiguous programs whatever the last dim)."""
    total = math.prod(shape)
    rows = math.prod(shape[:-1])
    cols = shape[-1]
    dense = all(i.full or i.scalar for i in inputs) and not region.tiles_used
    if dense:
        cols = GPU.largest_pow2(total, GPU_MAX_COLS)
        rows = total // cols
    bc = GPU.largest_pow2(cols, GPU_MAX_COLS)
    br = GPU.largest_pow2(rows, max(1, GPU_TILE_ELEMENTS // bc))
    warps = 4 if br * bc <= GPU_TILE_ELEMENTS else 8
    kernel, statics = _kernel_code(region, inputs, out)
    if dense:
        tiling = ["total = 1", "for d in shape:", "    total *= d",
                  "cols = _fit_pow2(LANES, total)", "rows = total // cols", "bc = cols"]
    else:
        tiling = ["cols = shape[-1]", "rows = 1", "for d in shape[:-1]:", "    rows *= d",
                  "bc = _fit_pow2(BLOCK_COLS, cols)"]
    tiling.append("br = _fit_pow2(BLOCK_ROWS, rows)")
    entry = _entry_code(ctx, region, inputs, out, shape, statics, tiling,
                        "plgpu.CompilerParams(num_warps=NUM_WARPS)")
    constants = [("BLOCK_ROWS", br, "rows of one tile (a power of two)")]
    if dense:
        constants.append(("LANES", cols, "the array is viewed as (size / LANES, LANES)"))
    else:
        constants.append(("BLOCK_COLS", bc, "columns of one tile (a power of two)"))
    constants.append(("NUM_WARPS", warps, "warps per program (32 threads each)"))
    description = _description(region, shape, out, inputs, br, bc) + " (GPU form)"
    source, imports, mbody = G.write_module(description=description, ctx=ctx,
                                            kernel_class="elementwise", constants=constants,
                                            code=GPU.FIT_POW2_HELPER + GPU.helpers_code(region.helpers)
                                            + kernel + entry,
                                            imports=GPU.IMPORTS)
    tun = {"BLOCK_ROWS": G.around(GPU.pow2_divisors(rows, 1024), br),
           "NUM_WARPS": GPU.launch_tunables(warps)["NUM_WARPS"]}
    if not dense:
        tun["BLOCK_COLS"] = G.around(GPU.pow2_divisors(cols, GPU_MAX_COLS), bc)
    notes = [GPU.notes_for_form(), f"{br}x{bc} tiles, {warps} warps"]
    notes += G.folded_statics_notes(ctx, statics)
    return G.Generated(kernel_class="elementwise", description=description, source=source,
                       entry=ctx.entry, imports=imports, body=mbody, tunables=tun, notes=notes)


def _kernel_code(region: E.Region, inputs, out) -> tuple[str, list]:
    """The kernel, the same in both forms (the refs loaded whole, the reference's equations,
    the store), and the static arguments it reads."""
    params = [f"{i.name}_ref" for i in inputs] + ["o_ref"]
    statics = list(region.statics_used)
    sig = ", ".join(params) + ((", *, " + ", ".join(statics)) if statics else "")
    pos = []
    if "rows" in region.tiles_used:
        pos.append("row0 = pl.program_id(0) * o_ref.shape[0]")
    if "cols" in region.tiles_used:
        pos.append("col0 = pl.program_id(1) * o_ref.shape[1]")
    body = pos + region.lines + region.store_lines(out, "o_ref")
    kernel = f'''

def _elementwise_kernel({sig}):
{G.indent(chr(10).join(body), 4)}
'''
    return kernel, statics


def _entry_code(ctx, region: E.Region, inputs, out, shape, statics, tiling, params) -> str:
    """The entry, the same in both forms but for `tiling` (the lines that set rows, cols, br
    and bc from the runtime shape) and `params` (the compiler_params): each input viewed as
    (rows, cols) or broadcast along one of them, one (br, bc) tile per grid step."""
    dims = _runtime_dims(region, inputs, shape)
    ent = [f"shape = ({', '.join(dims)}{',' if len(dims) == 1 else ''})"] + tiling
    specs, args = [], []
    for i in inputs:
        r = "rows" if i.rows_full else "1"
        c = "cols" if i.cols_full else "1"
        ent.append(f"{i.name}_in = jnp.reshape({i.name}, ({r}, {c}))")
        specs.append(f"pl.BlockSpec(({'br' if i.rows_full else '1'}, {'bc' if i.cols_full else '1'}), "
                     f"lambda i, j: ({'i' if i.rows_full else '0'}, {'j' if i.cols_full else '0'}))")
        args.append(f"{i.name}_in")
    call = G.pallas_call_code(
        kernel=G.static_partial("_elementwise_kernel", ctx, statics),
        out_shape=f"jax.ShapeDtypeStruct((rows, cols), {G.dtype_code(out.aval.dtype)})",
        grid="(pl.cdiv(rows, br), pl.cdiv(cols, bc))", in_specs=specs,
        out_spec="pl.BlockSpec((br, bc), lambda i, j: (i, j))",
        options=[f"compiler_params={params}"], args=args, final="shape")
    return f'''

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent) + chr(10) + call, 4)}
'''


def _description(region: E.Region, shape, out, inputs, br, bc) -> str:
    ops = region.summary() or [p for p in region.primitives if p not in E.LAYOUT_PRIMITIVES][:4]
    return (f"elementwise {', '.join(ops) or 'copy'} over {G.shape_text(shape)} "
            f"{G.dtype_name(out.aval.dtype)} ({len(inputs)} input"
            f"{'s' if len(inputs) != 1 else ''}) in {br}x{bc} tiles")
