"""Pieces the multi-kernel and fused templates share (gated_mlp, group_norm, ...): tile choice
over cdiv grids, the VMEM limit a module sets, and code text every such module carries.

Tiles here need not divide their dim: the grids are cdiv grids, Pallas clips the stores of an
edge block, and a ragged contraction depth is zeroed past its end (`_zero_past`), so a tile
stays MXU-sized at any size of the task.
"""

from __future__ import annotations

from mkworker.generate import common as G

# Bytes of HBM traffic one grid step costs in fixed overhead (about 0.35 us at ~820 GB/s): the
# fused classes' block choosers weigh per-step overhead against re-fetching operands.
STEP_OVERHEAD_BYTES = 300_000

# Tile sizes worth trying, per dim: small powers of two (narrow dims) and MXU multiples.
TILE_SIZES = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
WHOLE_K_MAX = 4096
MIB = 1024 * 1024


def fit_tile(block: int, dim: int, align: int) -> int:
    """What the module's `_fit_tile` returns (kept in step with FIT_TILE_HELPER)."""
    if dim <= block:
        return dim
    lo = max(align, block // 2)
    for b in range(block - block % align, lo - 1, -align):
        if dim % b == 0:
            return b
    return block - block % align


def tile_candidates(dim: int, align: int) -> list[int]:
    out = sorted({fit_tile(b, dim, align) for b in TILE_SIZES if b % align == 0 or b >= dim})
    return out or [dim]


def tunable(dim: int, align: int, chosen: int) -> list[int]:
    vals = [b for b in TILE_SIZES if b % align == 0 and b <= max(dim, align)]
    if chosen not in vals:
        vals.append(chosen)
    return G.around(vals, chosen)


def choose_tiles(m, n, k, row_align, k_align, vmem_fn, cost_fn, budget, whole_k=False):
    """(bm, bn, bk, vmem) with the least modelled cost whose step fits the budget, or None.
    The returned sizes are the module-level constants (the tile the module fits at this size
    is the same). `whole_k` adds the whole K as a depth past TILE_SIZES (one step per tile),
    up to WHOLE_K_MAX: past it Mosaic's unrolled body grows the compile (a 14336-deep bf16 down
    projection took 15.8 GB of compiler memory)."""
    best = None
    depths = depth_options(k, k_align) if whole_k else TILE_SIZES
    for bm in TILE_SIZES:
        if bm % row_align and bm < m:
            continue
        for bn in TILE_SIZES:
            if bn % G.LANE and bn < n:
                continue
            for bk in depths:
                if bk % k_align and bk < k:
                    continue
                tm, tn, tk = fit_tile(bm, m, row_align), fit_tile(bn, n, G.LANE), \
                    fit_tile(bk, k, k_align)
                v = vmem_fn(tm, tn, tk)
                if v > budget:
                    continue
                key = (cost_fn(tm, tn, tk), -(tm * tn), -tk, bm + bn + bk)
                if best is None or key < best[0]:
                    best = (key, (min(bm, _cap(m, row_align)), min(bn, _cap(n, G.LANE)),
                                  bk if bk > TILE_SIZES[-1] else min(bk, _cap(k, k_align)), v))
    return None if best is None else best[1]


def depth_options(k, k_align):
    """TILE_SIZES, and the whole K (one step per tile) where it lies past them, up to WHOLE_K_MAX."""
    deep = TILE_SIZES[-1] < k <= WHOLE_K_MAX and k % k_align == 0
    return TILE_SIZES + ((k,) if deep else ())


def _cap(dim, align):
    """The largest constant worth writing for a dim (a tile bigger than the dim fits the dim)."""
    for b in TILE_SIZES:
        if b >= dim and b % align == 0:
            return b
    return TILE_SIZES[-1]


def vmem_limit(planned: int, ctx) -> int:
    """The scoped VMEM a module asks for: its largest step plus a third for Mosaic's own
    temporaries, in whole MiB, at least the 16 MiB default and at most the target's limit."""
    want = -(-int(planned * 4 // 3) // MIB) * MIB
    return int(min(max(want, 16 * MIB), max(ctx.vmem_limit, 16 * MIB)))


def dot_code(a: str, b: str, b_transposed: bool, acc: str) -> str:
    if b_transposed:
        return (f"jax.lax.dot_general({a}, {b}, (((1,), (1,)), ((), ())),\n"
                f"        preferred_element_type=jnp.{acc})")
    return f"jnp.dot({a}, {b}, preferred_element_type=jnp.{acc})"


def load_acc(name: str, ref: str, dtype) -> str:
    """`name = ref[...]` (the f32 accumulator), cast to the reference's dot dtype if it differs."""
    if G.dtype_name(dtype) == "float32":
        return f"{name} = {ref}[...]"
    return f"{name} = {ref}[...].astype({G.dtype_code(dtype)})"


FIT_TILE_HELPER = '''

def _fit_tile(block, dim, align):
    """The tile for `dim`: the whole dim when it is small; else an aligned divisor near `block`
    when there is one, else `block` itself (the grid is a cdiv grid and the edge is ragged)."""
    if dim <= block:
        return dim
    for b in range(block - block % align, max(align, block // 2) - 1, -align):
        if dim % b == 0:
            return b
    return block - block % align
'''

ZERO_PAST_HELPER = '''

def _zero_past(tile, axis, start, total):
    """`tile` with the entries at or past `total` along `axis` set to zero (an edge block reads
    past the array's end; zeros keep them out of a sum of products). A 16-bit tile is masked in
    f32 and cast back: libtpu's static profile aborts on a select of packed bf16 rows that feed
    the MXU ("Expected vector-bf16packed, got vector-int16")."""
    idx = start + jax.lax.broadcasted_iota(jnp.int32, tile.shape, axis)
    if tile.dtype.itemsize < 4:
        return jnp.where(idx < total, tile.astype(jnp.float32), 0.0).astype(tile.dtype)
    return jnp.where(idx < total, tile, jnp.zeros_like(tile))
'''


def matmul_kernel_code(name: str) -> str:
    """A plain tiled matmul kernel (f32 accumulator, ragged depth zeroed), for a module's second
    stage."""
    return f'''

def {name}(a_ref, w_ref, o_ref, acc_ref, *, depth, w_depth_axis):
    kk = pl.program_id(2)

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    a_tile, w_tile = a_ref[...], w_ref[...]
    bk = a_tile.shape[1]
    if depth % bk:  # ragged depth: zero what lies past its end on both sides
        a_tile = _zero_past(a_tile, 1, kk * bk, depth)
        w_tile = _zero_past(w_tile, w_depth_axis, kk * bk, depth)
    if w_depth_axis == 1:  # the weight is stored (out, depth)
        acc_ref[...] += jax.lax.dot_general(a_tile, w_tile, (((1,), (1,)), ((), ())),
                                            preferred_element_type=jnp.float32)
    else:
        acc_ref[...] += jnp.dot(a_tile, w_tile, preferred_element_type=jnp.float32)

    @pl.when(kk == pl.num_programs(2) - 1)
    def _store():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)
'''
