"""Template `grouped_matmul`: a grouped (ragged) matmul, as in MoE expert FFNs.

    out[r] = epilogue(x[r] @ w[group(r)])     x (M, K) rows sorted by group, w (G, K, N) or
                                              (G, N, K), group_sizes (G,) int32 (runtime data)

Recognised on the jaxpr: one `ragged_dot_general` (`jax.lax.ragged_dot`) in its forward form
(the ragged dim is x's rows, the group dim w's first) reading task inputs, optionally followed
by an elementwise epilogue that reads no other array (an activation, a scale).

Kernel: the group metadata is computed in the entry from the sizes (offsets, then a list of
"visits": for each M tile, one visit per group whose rows it holds, in order) and
scalar-prefetched (`pltpu.PrefetchScalarGridSpec`): four int32 vectors (the visit's M tile, its
group, the group's first and past-the-end row). Grid (N tiles, visits, K tiles): the weight's
index map picks the visit's group, x's and the output's its tile. An M tile that straddles a
group boundary is visited once per group it touches; each visit zeroes the x rows of other
groups, so the tile's f32 accumulator sums each row's product with its own group's weight. The
accumulator starts at a tile's first visit and is stored (epilogue applied) at its last.
The number of visits is at most tiles + G - 1 (static); the unused tail repeats the last
visit with an empty row range (no work, no new DMA). A tile no group covers (sizes summing to
less than M) gets one empty visit, so its rows come out as the epilogue of zero, like the
reference's. Empty groups get no visit. Ragged N and M use cdiv grids (Pallas clips the
stores); a ragged depth is zeroed past its end on both sides.

Refused (NoTemplate): the ragged-contraction or batched forms of ragged_dot_general, a group
offset, operands that are not task inputs, work after it other than an elementwise epilogue
of scalars.
"""

from __future__ import annotations

from mkworker.generate import common as G
from mkworker.generate import expr as E
from mkworker.generate import fused as F
from mkworker.generate.common import NoTemplate

KERNEL_CLASS = "grouped_matmul"
COVERED_PRIMITIVES = ("ragged_dot_general",)
# Visits past the data's: an extra M tile per group boundary costs one tile of MXU work, which
# the tile choice weighs against the traffic saved by larger tiles (flops per byte on v5e).
FLOPS_PER_BYTE = 240


def match(ctx):
    eqns = E.live_eqns(ctx.jaxpr)
    rd = [e for e in eqns if e.primitive.name == "ragged_dot_general"]
    if not rd:
        return None
    if len(rd) > 1:
        raise NoTemplate(f"{len(rd)} ragged dots in one reference; the grouped_matmul template "
                         "writes one", ["ragged_dot_general"])
    e = rd[0]
    p = e.params
    rdn = p["ragged_dot_dimension_numbers"]
    (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
    if (tuple(lb) or tuple(rb) or tuple(rdn.lhs_ragged_dimensions) != (0,)
            or tuple(rdn.rhs_group_dimensions) != (0,) or tuple(lc) != (1,)
            or tuple(rc) not in ((1,), (2,))):
        raise NoTemplate("`ragged_dot_general` in another form than x (M, K) rows grouped by "
                         "w (G, K, N) (a ragged contraction, batch dims) is not covered by the "
                         "grouped_matmul template", ["ragged_dot_general"])
    if p.get("group_offset") is not None:
        raise NoTemplate("`ragged_dot_general` with a group offset is not covered",
                         ["ragged_dot_general"])
    x, w, sizes = e.invars
    names = [ctx.name_of_invar(v) for v in (x, w, sizes)]
    if any(n is None for n in names):
        raise NoTemplate("the ragged dot's operands are not task inputs (work before the ragged "
                         "dot is not covered by the grouped_matmul template)",
                         ["ragged_dot_general"])
    if len(x.aval.shape) != 2 or len(w.aval.shape) != 3 or len(sizes.aval.shape) != 1:
        return None
    if not ctx.single_output:
        raise NoTemplate("the reference returns several outputs; the grouped_matmul template "
                         "writes one", [])
    after = eqns[eqns.index(e) + 1:]
    others = [a.primitive.name for a in after
              if a.primitive.name not in E.ELEMENTWISE_PRIMITIVES + E.LAYOUT_PRIMITIVES]
    before = [b.primitive.name for b in eqns[:eqns.index(e)]]
    if others or before:
        prims = list(dict.fromkeys(before + others))
        raise NoTemplate("operations around the ragged dot other than an elementwise epilogue "
                         "are not covered by the grouped_matmul template: "
                         + ", ".join(f"`{n}`" for n in prims), prims)
    out = ctx.jaxpr.outvars[0]
    if E.is_literal(out) or tuple(out.aval.shape) != tuple(e.outvars[0].aval.shape):
        return None
    return e, names, tuple(rc) == (2,), after, out


def emit(ctx, m) -> G.Generated:
    """The TPU emitter (the class has no GPU form: generate.classes skips it there)."""
    e, (x_name, w_name, sizes_name), w_transposed, after, out = m
    x, w, _ = e.invars
    y = e.outvars[0]
    mm, kk = (int(d) for d in x.aval.shape)
    groups = int(w.aval.shape[0])
    nn = int(w.aval.shape[1] if w_transposed else w.aval.shape[2])
    x_dt, w_dt, y_dt, out_dt = x.aval.dtype, w.aval.dtype, y.aval.dtype, out.aval.dtype
    consts = dict(zip(ctx.jaxpr.constvars, ctx.consts))
    region = E.Region(after, out_shape=(mm, nn), known={y: "y"}, operands={}, ctx=ctx,
                      consts=consts)
    if region.operand_vars:
        raise NoTemplate("the epilogue reads other arrays than the ragged dot's result (a bias "
                         "per group?); not covered by the grouped_matmul template", [])
    budget = ctx.vmem_budget
    sub = max(G.sublane_multiple(x_dt), G.sublane_multiple(out_dt))
    k_align = max(G.LANE, G.sublane_multiple(w_dt))

    def vmem(bm, bn, bk):
        return G.step_vmem([((bm, bk), x_dt), ((bk, bn), w_dt)], [((bm, bn), out_dt)],
                           [((bm, bn), "float32")])

    def cost(bm, bn, bk):
        mb, nb, kb = -(-mm // bm), -(-nn // bn), -(-kk // bk)
        visits = mb + groups - 1
        traffic = (nb * visits * bm * kk * G.itemsize(x_dt)
                   + visits * kk * nn * G.itemsize(w_dt))
        waste = (visits * bm - mm) * kk * nn * 2 // FLOPS_PER_BYTE
        return traffic + waste + nb * visits * kb * F.STEP_OVERHEAD_BYTES

    plan = F.choose_tiles(mm, nn, kk, sub, k_align, vmem, cost, budget)
    if plan is None:
        raise NoTemplate("the smallest grouped-matmul tiles do not fit the VMEM budget",
                         ["ragged_dot_general"])
    bm, bn, bk, step = plan
    constants = [("BLOCK_M", bm, "rows (tokens) of a tile, visited once per group it holds"),
                 ("BLOCK_N", bn, "output columns of a tile"),
                 ("BLOCK_K", bk, "depth of one step"),
                 ("VMEM_LIMIT_BYTES", F.vmem_limit(step, ctx),
                  "scoped VMEM the kernel may use (its plan plus headroom)")]
    tunables = {"BLOCK_M": F.tunable(mm, sub, bm), "BLOCK_N": F.tunable(nn, G.LANE, bn),
                "BLOCK_K": F.tunable(kk, k_align, bk)}
    statics = list(region.statics_used)
    kernel = _kernel_code(w_transposed, y_dt, region, out, statics)
    entry = _entry_code(ctx, x_name, w_name, sizes_name, w_transposed, out_dt, sub, k_align,
                        statics)
    epi = " ".join(region.summary()) if after else ""
    description = (f"grouped matmul: {G.shape_text((mm, kk))} rows in {groups} groups (sizes "
                   f"`{sizes_name}` at run time) @ `{w_name}` {G.shape_text(w.aval.shape)} "
                   f"({G.dtype_name(x_dt)})" + (f", then {epi}" if epi else "")
                   + "; the group metadata is scalar-prefetched and the weight's index map "
                   "picks each tile's group")
    source, imports, body = G.write_module(
        description=description, ctx=ctx, kernel_class=KERNEL_CLASS, constants=constants,
        code=F.FIT_TILE_HELPER + F.ZERO_PAST_HELPER + VISITS_HELPER + kernel + entry)
    notes = [f"tiles {bm}x{bn}x{bk}: {G.mib(step)} of VMEM per step (budget {G.mib(budget)})",
             f"at most {-(-mm // bm) + groups - 1} tile visits: one per M tile and group boundary"]
    notes += G.folded_statics_notes(ctx, statics)
    return G.Generated(kernel_class=KERNEL_CLASS, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body, tunables=tunables, notes=notes)


VISITS_HELPER = '''

def _group_visits(group_sizes, m, bm, tiles):
    """The visits of the grid, as four int32 vectors of length tiles + G - 1: each visit's M
    tile, group, and the group's rows [lo, hi). A tile gets one visit per non-empty group whose
    rows it holds (in order); a tile no group covers gets one empty visit (it stores zeros);
    the unused tail repeats the last visit with an empty range."""
    g = group_sizes.shape[0]
    ends = jnp.minimum(jnp.cumsum(group_sizes.astype(jnp.int32)), m)
    starts = jnp.concatenate([jnp.zeros((1,), jnp.int32), ends[:-1]])
    first_row = jnp.arange(tiles, dtype=jnp.int32)[:, None] * bm
    past_row = jnp.minimum(first_row + bm, m)
    touch = (ends > starts)[None, :] & (starts[None, :] < past_row) & (ends[None, :] > first_row)
    lonely = ~jnp.any(touch, axis=1, keepdims=True)
    touch = touch | (lonely & (jnp.arange(g)[None, :] == 0))
    lo = jnp.where(lonely, 0, starts[None, :]).reshape(-1)
    hi = jnp.where(lonely, 0, ends[None, :]).reshape(-1)
    tile = jnp.broadcast_to(jnp.arange(tiles, dtype=jnp.int32)[:, None], (tiles, g)).reshape(-1)
    group = jnp.broadcast_to(jnp.arange(g, dtype=jnp.int32)[None, :], (tiles, g)).reshape(-1)
    flat = touch.reshape(-1)
    count = jnp.cumsum(flat.astype(jnp.int32))  # visits up to and including each (tile, group)
    nvis = tiles + g - 1
    v = jnp.minimum(jnp.arange(nvis, dtype=jnp.int32), count[-1] - 1)
    # Visit v is the (tile, group) whose count reaches v + 1: a one-hot pick (a scatter or gather
    # here would be an XLA fusion of its own; this is a small compare-and-sum).
    pick = flat[None, :] & (count[None, :] == v[:, None] + 1)
    pad = jnp.arange(nvis) >= count[-1]

    def pack(values, empty_tail=False):
        out = jnp.sum(jnp.where(pick, values[None, :], 0), axis=1).astype(jnp.int32)
        return jnp.where(pad, 0, out) if empty_tail else out

    return pack(tile), pack(group), pack(lo, True), pack(hi, True)
'''


def _kernel_code(w_transposed, y_dt, region, out, statics) -> str:
    kw = ", ".join(["k"] + statics)
    dot = F.dot_code("x_tile", "w_tile", w_transposed, "float32")
    w_axis = 1 if w_transposed else 0
    epi = [F.load_acc("y", "acc_ref", y_dt)] + region.lines + region.store_lines(out, "o_ref")
    return f'''

def _grouped_matmul_kernel(tile_ref, group_ref, lo_ref, hi_ref, x_ref, w_ref, o_ref, acc_ref,
                           *, {kw}):
    v, kk = pl.program_id(1), pl.program_id(2)
    last_v = pl.num_programs(1) - 1
    tile = tile_ref[v]
    # A tile's visits are consecutive: its accumulator starts at the first, is stored at the last.
    first = jnp.logical_or(v == 0, tile_ref[jnp.maximum(v - 1, 0)] != tile)
    last = jnp.logical_or(v == last_v, tile_ref[jnp.minimum(v + 1, last_v)] != tile)
    lo, hi = lo_ref[v], hi_ref[v]

    @pl.when(jnp.logical_and(first, kk == 0))
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    @pl.when(lo < hi)
    def _accumulate():
        x_tile, w_tile = x_ref[...], w_ref[...]
        bm, bk = x_tile.shape
        # Rows of the tile outside this visit's group belong to another visit: zero them.
        row = tile * bm + jax.lax.broadcasted_iota(jnp.int32, x_tile.shape, 0)
        x_tile = jnp.where((row >= lo) & (row < hi), x_tile, jnp.zeros_like(x_tile))
        if k % bk:  # ragged depth: the last step reads past K; zero both sides of the product
            x_tile = _zero_past(x_tile, 1, kk * bk, k)
            w_tile = _zero_past(w_tile, {w_axis}, kk * bk, k)
        acc_ref[...] += {dot}

    @pl.when(jnp.logical_and(last, kk == pl.num_programs(2) - 1))
    def _store():
{G.indent(chr(10).join(epi), 8)}
'''


def _entry_code(ctx, x_name, w_name, sizes_name, w_transposed, out_dt, sub, k_align,
                statics) -> str:
    w_block = "(None, bn, bk)" if w_transposed else "(None, bk, bn)"
    w_index = "(group[v], j, kk)" if w_transposed else "(group[v], kk, j)"
    partial = "functools.partial(_grouped_matmul_kernel, k=k" + "".join(
        f", {s}={s}" for s in statics) + ")"
    ent = [f"m, k = {x_name}.shape",
           f"groups = {w_name}.shape[0]",
           f"n = {w_name}.shape[{1 if w_transposed else 2}]",
           f"bm = _fit_tile(BLOCK_M, m, {sub})",
           "bn = _fit_tile(BLOCK_N, n, 128)",
           f"bk = _fit_tile(BLOCK_K, k, {k_align})",
           "tiles = pl.cdiv(m, bm)",
           "# The visits live in HBM: XLA would keep such small vectors in VMEM, and libtpu's",
           "# static profile aborts on their copy from there into SMEM (\"Unsupported DMA",
           "# direction\"), so no cycles for the kernel.",
           "visits = [pltpu.with_memory_space_constraint(a, pltpu.MemorySpace.HBM)",
           f"          for a in _group_visits({sizes_name}, m, bm, tiles)]",
           "# Index maps get the grid indices, then the prefetched refs (tile, group, lo, hi).",
           f'''grid_spec = pltpu.PrefetchScalarGridSpec(
    num_scalar_prefetch=4,
    grid=(pl.cdiv(n, bn), tiles + groups - 1, pl.cdiv(k, bk)),
    in_specs=[
        pl.BlockSpec((bm, bk), lambda j, v, kk, tile, group, lo, hi: (tile[v], kk)),
        pl.BlockSpec({w_block}, lambda j, v, kk, tile, group, lo, hi: {w_index}),
    ],
    out_specs=pl.BlockSpec((bm, bn), lambda j, v, kk, tile, group, lo, hi: (tile[v], j)),
    scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
)''',
           f'''return pl.pallas_call(
    {partial},
    out_shape=jax.ShapeDtypeStruct((m, n), {G.dtype_code(out_dt)}),
    grid_spec=grid_spec,
    compiler_params=pltpu.CompilerParams(
        dimension_semantics=("parallel", "arbitrary", "arbitrary"),
        vmem_limit_bytes=VMEM_LIMIT_BYTES),
)(*visits, {x_name}, {w_name})''']
    return f'''

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent), 4)}
'''
