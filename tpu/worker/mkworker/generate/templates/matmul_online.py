"""Matmul + row reduction with the row tiled over N (flash style): what an expert writes where
the whole output row does not belong in one tile.

The epilogue (an E.Region over whole rows) is split into stages:
  tile   values computed from the matmul tile and the operands alone (no row statistic);
  stats  the row reductions: a max / min / sum of a tile value (or the picked logit of
         take_along_axis) is combined across N tiles as it goes; a sum of exp(a - c), where c is
         a per-row value made of running maxima (logsumexp's shift), is carried online, its
         partial sum rescaled by exp(c_old - c_new) whenever c moves;
  post   what depends on the statistics, computed once they are final.
The running statistics live in lane-dense (BM, 128) f32 scratch. A per-row output (logsumexp,
cross-entropy) is written at the row's last N tile: one pass over N, no logits in HBM. A full-row
output (softmax, log-softmax, row norm) keeps the raw tiles of the row block in VMEM as they come
(the output block itself when it is f32 and N divides into tiles) and writes the normalised row
at the last N tile, tile by tile, so the M block is not limited by whole-row temporaries; the
caller uses it only for a batched full-row output whose whole row does not fit (it never won on
the compiler's cycles; generate.templates.matmul_two_phase writes the others).
The last N tile may run past the row's end (vocab 50257): its extra columns are masked out of
every statistic with the reduction's identity (a large finite negative for a max, never -inf).

`analyse` returns None when the epilogue does not split this way (a statistic of a statistic
other than the online shift): the caller keeps the whole-row plan.
"""

from __future__ import annotations

import copy
import itertools

from mkworker.generate import common as G
from mkworker.generate import expr as E
from mkworker.generate.templates import matmul as MM

_REDUCE_FN = {"reduce_sum": "jnp.sum", "reduce_max": "jnp.max", "reduce_min": "jnp.min"}
_COMBINE = {"reduce_sum": "{0} + {1}", "reduce_max": "jnp.maximum({0}, {1})",
            "reduce_min": "jnp.minimum({0}, {1})", "gather": "{0} + {1}"}
# Elementwise passes through which the online sum's exp(a - c) may reach the reduction.
_THROUGH = ("stop_gradient", "copy", "copy_p", "optimization_barrier", "reduce_precision",
            "broadcast_in_dim", "reshape", "squeeze", "expand_dims")


class Stat:
    """One row statistic carried across N tiles in a (BM, 128) scratch ref."""

    def __init__(self, index, eqn, kind, operand, shift=None):
        self.index = index
        self.eqn = eqn
        self.kind = kind  # "direct" (max/min/sum/pick of a tile value) or "online" (sum exp(a - c))
        self.operand = operand  # the tile value reduced (a, for an online sum)
        self.shift = shift  # c, for an online sum
        self.prim = "gather" if eqn.primitive.name == "gather" else eqn.primitive.name
        dt = eqn.outvars[0].aval.dtype
        self.dtype = "float32" if G.dtype_name(dt).startswith(("float", "bfloat")) else "int32"

    @property
    def ref(self) -> str:
        return f"s{self.index}_ref"

    def identity(self) -> str:
        info = "jnp.finfo(jnp.float32)" if self.dtype == "float32" else "jnp.iinfo(jnp.int32)"
        if self.prim == "reduce_max":
            return f"{info}.min"
        if self.prim == "reduce_min":
            return f"{info}.max"
        return "0"


class Staged:
    def __init__(self, region, out, row_output, tile_eqns, stats, post_eqns):
        self.region, self.out, self.row_output = region, out, row_output
        self.tile_eqns, self.stats, self.post_eqns = tile_eqns, stats, post_eqns


def _producers(eqns):
    return {id(o): e for e in eqns for o in e.outvars}


def _is_reduction(region, e) -> bool:
    return e.primitive.name in _REDUCE_FN or id(e) in region.gathers


def _inputs(region, e) -> list:
    if id(e) in region.gathers:
        return [e.invars[0], region.gathers[id(e)][0]]
    return [v for v in e.invars if not E.is_literal(v)]


def analyse(region: E.Region, out, row_output: bool) -> Staged | None:
    eqns = region.eqns
    deps: dict = {}  # id(var) -> the reduction equations it depends on
    for e in eqns:
        d = frozenset().union(*[deps.get(id(v), frozenset()) for v in _inputs(region, e)])
        if _is_reduction(region, e):
            d = d | {id(e)}
        for o in e.outvars:
            deps[id(o)] = d
    prod = _producers(eqns)

    def through(v):
        while not E.is_literal(v) and id(v) in prod and prod[id(v)].primitive.name in _THROUGH:
            v = prod[id(v)].invars[0]
        return v

    stats: list[Stat] = []
    by_eqn = {}
    for e in eqns:
        if not _is_reduction(region, e):
            continue
        src = e.invars[0]
        if not deps.get(id(src)) and all(not deps.get(id(v)) for v in _inputs(region, e)):
            st = Stat(len(stats), e, "direct", src)
        elif e.primitive.name == "reduce_sum":
            st = _online(region, e, through, prod, deps, by_eqn, len(stats))
            if st is None:
                return None
        else:
            return None
        stats.append(st)
        by_eqn[id(e)] = st
    if not stats:
        return None
    tile = [e for e in eqns if not _is_reduction(region, e) and not deps.get(id(e.outvars[0]))]
    post = [e for e in eqns if not _is_reduction(region, e) and deps.get(id(e.outvars[0]))]
    if not row_output:
        # Only per-row values may lead to a per-row output (a row-spanning value that depends on
        # a statistic is the online sum's own summand, recomputed as it goes).
        for e in _ancestors(region, [out], post, prod):
            if region.held(e.outvars[0])[-1]:
                return None
    return Staged(region, out, row_output, tile, stats, post)


def _online(region, e, through, prod, deps, by_eqn, index):
    """sum(exp(a - c)) with a a tile value and c per-row, made of running maxima only."""
    x = through(e.invars[0])
    pe = prod.get(id(x))
    if pe is None or pe.primitive.name != "exp":
        return None
    d = through(pe.invars[0])
    se = prod.get(id(d))
    if se is None or se.primitive.name != "sub":
        return None
    a, c = se.invars
    if E.is_literal(a) or E.is_literal(c) or deps.get(id(a)) or not deps.get(id(c)):
        return None
    if not region.held(a)[-1] or region.held(c)[-1]:
        return None
    for rid in deps[id(c)]:
        st = by_eqn.get(rid)
        if st is None or st.kind != "direct" or st.prim != "reduce_max":
            return None
    return Stat(index, e, "online", a, c)


def _ancestors(region, vars_, allowed, prod) -> list:
    """The equations of `allowed` the values depend on (not through a reduction), in order."""
    allowed_ids = {id(e) for e in allowed}
    need = set()
    stack = [v for v in vars_ if not E.is_literal(v)]
    seen = set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        e = prod.get(id(v))
        if e is None or id(e) not in allowed_ids:
            continue
        need.add(id(e))
        stack.extend(x for x in _inputs(region, e))
    return [e for e in allowed if id(e) in need]


# ---------------------------------------------------------------------------
# Code.

def _stage(region, prefix: str, names: dict):
    """A copy of the region that emits into its own lines, with its own value names (`names`:
    {id(var): code} for values another stage made) and fresh names prefixed `prefix`."""
    r = copy.copy(region)
    r.lines = []
    r.names = dict(names)
    r._held = dict(region._held)
    r.reduced = set(region.reduced)
    r.operand_vars = []
    counter = itertools.count(1)
    r._new = lambda p="v": f"{prefix}{p}{next(counter)}"
    return r


def _emit(r, eqns):
    for e in eqns:
        r._emit_one(e)


def _tile_code(r, v) -> str:
    """Code for `v` spanning the tile's columns (a per-row value broadcast across them)."""
    c = r.code(v)
    h = r.held(v)
    if h[-1]:
        return c
    rows = f"{c}.shape[0]" if len(h) >= 2 and h[-2] else "1"
    return f"jnp.broadcast_to({c}, ({rows}, tile_cols))"


def tile_update_lines(sg: Staged, stat_names_old, stat_names_new) -> tuple[list, list]:
    """(lines, operand vars) of the per-tile update: the tile values the statistics need, each
    statistic's partial over the tile (masked past the row's end), combined into the running
    one (`stat_names_new[i]` = the new value's name)."""
    region = sg.region
    prod = _producers(region.eqns)
    need = [s.operand for s in sg.stats] + [s.eqn.invars[0] for s in sg.stats] + \
        [region.gathers[id(s.eqn)][0] for s in sg.stats if s.prim == "gather"]
    shift_chain = {}
    for s in sg.stats:
        if s.kind == "online":
            chain = _ancestors(region, [s.shift], sg.post_eqns, prod)
            shift_chain[s.index] = chain
            for e in chain:
                need.extend(_inputs(region, e))
    tile = _ancestors(region, [v for v in need if not E.is_literal(v)], sg.tile_eqns, prod)
    r = _stage(region, "t", {})
    _emit(r, tile)
    lines = list(r.lines)
    tile_names = dict(r.names)
    for s in sg.stats:
        old, new = stat_names_old[s.index], stat_names_new[s.index]
        if s.kind == "direct" and s.prim == "gather":
            src = _tile_code(r, s.eqn.invars[0])
            idx = r.code(region.gathers[id(s.eqn)][0])
            lines += [(f"hit{s.index} = jax.lax.broadcasted_iota(jnp.int32, (1, tile_cols), 1) "
                      f"+ col0 == {idx}"),
                      (f"part{s.index} = jnp.sum(jnp.where(hit{s.index}, {src}, 0), axis=-1, "
                      "keepdims=True)")]
        elif s.kind == "direct":
            src = _tile_code(r, s.operand)
            lines += [f"x{s.index} = {src}",
                      "if ragged:",
                      f"    x{s.index} = jnp.where(valid, x{s.index}, {s.identity()})",
                      f"part{s.index} = {_REDUCE_FN[s.prim]}(x{s.index}, axis=-1, keepdims=True)"]
        if s.kind == "direct":
            lines.append(f"{new} = " + _COMBINE[s.prim].format(old, f"part{s.index}"))
    for s in sg.stats:
        if s.kind != "online":
            continue
        shifts = []
        for which, names in (("old", stat_names_old), ("new", stat_names_new)):
            known = dict(tile_names)
            for t in sg.stats:
                known[id(t.eqn.outvars[0])] = names[t.index]
            rc = _stage(region, f"c{which}{s.index}_", known)
            _emit(rc, shift_chain[s.index])
            lines += rc.lines
            shifts.append(rc.code(s.shift))
        a = r.code(s.operand)
        old, new = stat_names_old[s.index], stat_names_new[s.index]
        lines += [f"e{s.index} = jnp.exp({a} - {shifts[1]})",
                  "if ragged:",
                  f"    e{s.index} = jnp.where(valid, e{s.index}, 0.0)",
                  (f"{new} = {old} * jnp.exp({shifts[0]} - {shifts[1]}) + "
                  f"jnp.sum(e{s.index}, axis=-1, keepdims=True)")]
    return lines, r.operand_vars


def finish_lines(sg: Staged, stat_names, known=None) -> tuple[list, str]:
    """(lines, output code): the output computed from the final statistics and the tile values
    it needs (`known`: {id(var): name} of values already there: y, loaded operands)."""
    region = sg.region
    prod = _producers(region.eqns)
    known = dict(known or {})
    r = _stage(region, "f", known)
    lines = []
    for s in sg.stats:
        code = stat_names[s.index]
        if s.prim == "gather" and region.gathers[id(s.eqn)][1]:
            # FILL_OR_DROP: NaN for an index outside the row, as XLA does.
            idx_var = region.gathers[id(s.eqn)][0]
            rr = _stage(region, f"g{s.index}_", known)
            _emit(rr, _ancestors(region, [idx_var], sg.tile_eqns, prod))
            lines += rr.lines
            lines.append(f"pick{s.index} = jnp.where(({rr.code(idx_var)} >= 0) & "
                         f"({rr.code(idx_var)} < row_len), {code}, jnp.nan)")
            code = f"pick{s.index}"
        r.names[id(s.eqn.outvars[0])] = code
    need = {id(e) for e in _ancestors(region, [sg.out], sg.tile_eqns + sg.post_eqns, prod)}
    _emit(r, [e for e in region.eqns if id(e) in need])
    lines += r.lines
    return lines, r.code(sg.out)


# ---------------------------------------------------------------------------
# Tiles.

# f32 temporaries over one (BM, BN) tile besides the accumulator: the tile values, the masked
# operand of a statistic and the online sum's exp.
TILE_TEMPS = 3
MIN_ROW_BLOCK = 128
# Deeper single-step dots were refused by Mosaic on v5e for VMEM far beyond their blocks
# (cross-entropy at 512 x 1024 x 2048 f32: 144 MiB used where the blocks take 34 MiB; a
# 4096-deep step held 15 GB while compiling); the epilogue class compiles 1024-deep steps.
MAX_DEPTH = 1024


class Plan:
    def __init__(self, bm, bn, bk, vmem, cost):
        self.bm, self.bn, self.bk, self.vmem, self.cost = bm, bn, bk, vmem, cost
        self.limit_vmem = vmem


def keeps_rows(ms, out_block, n, bn) -> bool:
    """A full-row output keeps its raw tiles in a scratch row when the output block cannot hold
    them (not f32, or the last tile runs past the row's end); else in the output block."""
    return out_block.cols_full and (G.dtype_name(out_block.dtype) != "float32" or n % bn != 0)


def vmem(ms, blocks, out_block, nstats, bm, bn, bk) -> int:
    ins = [((bm, bk), ms.lhs.var.aval.dtype),
           (((bn, bk) if ms.w_transposed else (bk, bn)), ms.rhs.var.aval.dtype)]
    for b in blocks:
        ins.append(((bm if b.rows_full else 1, bn if b.cols_full else 1), b.dtype))
        if out_block.cols_full and b.cols_full:  # the whole row again, for the last tile's pass
            ins.append(((bm if b.rows_full else 1, ms.n), b.dtype))
    outs = [((bm, ms.n if out_block.cols_full else 1), out_block.dtype)]
    scratch = [((bm, bn), "float32")] * (1 + TILE_TEMPS) + [((bm, G.LANE), "float32")] * nstats
    if keeps_rows(ms, out_block, ms.n, bn):
        scratch.append(((bm, -(-ms.n // bn) * bn), "float32"))
    return G.step_vmem(ins, outs, scratch)


def cost(ctx, ms, out_block, bm, bn, bk) -> float:
    """Modelled seconds, as the matmul plans are (generate.templates.matmul_tpu._cost): each step the longer of
    its MXU work and its DMA, plus the fixed step cost. With the whole depth in one step the x
    block stays put across the N tiles (its index does not change), so it is read once per M
    block (only with a short K; see MAX_DEPTH); the output (a row statistic, or the whole row)
    is written once per M block."""
    peak, bw = G.target_roofline(ctx.target)
    xs = G.itemsize(ms.lhs.var.aval.dtype)
    ws = G.itemsize(ms.rhs.var.aval.dtype)
    m, n, k = ms.m, ms.n, ms.k
    gm, gn, gk = -(-m // bm), -(-n // bn), k // bk
    out_row = bm * G.itemsize(out_block.dtype) * (n if out_block.cols_full else 1)
    x_load = bm * bk * xs / (gn if gk == 1 else 1)
    load = x_load + bk * bn * ws + out_row / (gn * gk)
    step = max(2 * bm * bn * bk / peak, load / bw) + MM.STEP_SECONDS
    return max(1, ms.nbatch) * gm * gn * gk * step + (bm * bk * xs + bk * bn * ws + out_row) / bw


def choose(ctx, ms, blocks, out_block, nstats, sub):
    """The least modelled cost whose step fits the VMEM budget (within COST_SLACK, the least
    VMEM), or None; with the tunable lists around it."""
    m_c = MM.candidates(ms.m, sub, ragged=True)
    if out_block.cols_full:
        # A full-row output keeps BM whole rows: below MIN_ROW_BLOCK rows the weight would be
        # re-read once per handful of rows (recomputing the tiles in a second pass is the fix).
        m_c = [b for b in m_c if b >= min(MIN_ROW_BLOCK, ms.m)]
    n_c = MM.candidates(ms.n, G.LANE, ragged=True)
    k_align = max(G.LANE, G.sublane_multiple(ms.rhs.var.aval.dtype))
    k_c = [b for b in MM.candidates(ms.k, k_align) if b <= MAX_DEPTH] or \
        MM.candidates(ms.k, k_align)[:1]
    budget = ctx.vmem_budget

    def v(bm, bn, bk):
        return vmem(ms, blocks, out_block, nstats, bm, bn, bk)

    plans = [Plan(bm, bn, bk, v(bm, bn, bk), cost(ctx, ms, out_block, bm, bn, bk))
             for bm in m_c for bn in n_c for bk in k_c if v(bm, bn, bk) <= budget]
    if not plans:
        return None, None
    top = min(p.cost for p in plans) * (1 + MM.COST_SLACK)
    plan = min((p for p in plans if p.cost <= top),
               key=lambda p: (p.vmem, p.cost, -(p.bm * p.bn), -p.bk))
    tun = {"BLOCK_M": [b for b in m_c if v(b, plan.bn, plan.bk) <= budget],
           "BLOCK_N": [b for b in n_c if v(plan.bm, b, plan.bk) <= budget],
           "BLOCK_K": [b for b in k_c if v(plan.bm, plan.bn, b) <= budget]}
    tun = {name: G.around(vals, getattr(plan, "b" + name[-1].lower())) for name, vals in tun.items()}
    plan.limit_vmem = max([plan.vmem] + [
        v(*(b if name == "BLOCK_" + a.upper() else getattr(plan, "b" + a) for a in "mnk"))
        for name, vals in tun.items() for b in vals])
    return plan, tun


# ---------------------------------------------------------------------------
# The module.

def write(ctx, ms, region, out, blocks, out_block, sg: Staged, plan, tunables, sub, k_align,
          dot) -> G.Generated:
    x_name = ctx.name_of_invar(ms.lhs.var)
    w_name = ctx.name_of_invar(ms.rhs.var)
    batched = ms.nbatch > 0
    gi = "b, i, j, kk" if batched else "i, j, kk"
    kaxis = 3 if batched else 2
    row_out = sg.row_output
    row_blocks = [b for b in blocks if row_out and b.cols_full]
    stat_refs = [s.ref for s in sg.stats]
    params = [f"{x_name}_ref", f"{w_name}_ref"] + [f"{b.name}_ref" for b in blocks] + \
        [f"{b.name}_row_ref" for b in row_blocks] + ["o_ref", "acc_ref"] + stat_refs + \
        (["*row_ref"] if row_out else ["*"])
    old = {s.index: f"st{s.index}" for s in sg.stats}
    new = {s.index: f"st{s.index}_new" for s in sg.stats}
    upd, _ = tile_update_lines(sg, old, new)
    y_line = f"y = acc_ref[...].astype({G.dtype_code(ms.dot_dtype)})"
    loads = [f"st{s.index} = {s.ref}[:, :1]" for s in sg.stats]
    stores = [f"{s.ref}[...] = jnp.broadcast_to(st{s.index}_new, {s.ref}.shape)"
              for s in sg.stats]
    init = [f"{s.ref}[...] = jnp.full_like({s.ref}, {s.identity()})"
            + ("  # sum of exp(x - shift), the shift from the running max" if s.kind == "online"
               else "")
            for s in sg.stats]
    tile_body = [y_line,
                 "valid = col0 + jax.lax.broadcasted_iota(jnp.int32, (1, tile_cols), 1) < row_len"]
    tile_body += loads + upd + stores
    if row_out:
        tile_body += ["# the raw tile, kept until the row's statistics are final",
                      "rows[:, _cols(col0, tile_cols)] = y.astype(rows.dtype)"]
    statics = list(region.statics_used)
    sig = ", ".join(params) + ", row_len" + ("".join(", " + s for s in statics))
    pos = ["tile_cols = acc_ref.shape[1]",
           f"col0 = pl.program_id({kaxis - 1}) * tile_cols"]
    if "rows" in region.tiles_used:
        pos += ["tile_rows = acc_ref.shape[0]", f"row0 = pl.program_id({kaxis - 2}) * tile_rows"]
    if row_out:
        pos.append("rows = row_ref[0] if row_ref else o_ref  # where the raw tiles wait")
    pos_text = "\n    ".join(pos)
    if row_out:
        finish = _row_finish(sg, old, blocks, row_blocks, y_line)
    else:
        flines, code = finish_lines(sg, old)
        finish = loads + flines + [
            f"o_ref[...] = jnp.broadcast_to({code}, o_ref.shape).astype(o_ref.dtype)"]
    kernel = f'''

def _cols(start, size):
    """Columns [start, start + size) of a row block (aligned when the tile is lane-aligned)."""
    if size % 128 == 0 and not isinstance(start, int):
        start = pl.multiple_of(start, 128)
    return pl.ds(start, size)


def _row_kernel({sig}):
    j = pl.program_id({kaxis - 1})
    kk = pl.program_id({kaxis})
    {pos_text}
    ragged = row_len % tile_cols != 0  # the last N tile runs past the row's end
    last_k = kk == pl.num_programs({kaxis}) - 1

    @pl.when((j == 0) & (kk == 0))
    def _init_stats():
{G.indent(chr(10).join(init), 8)}

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += {dot}

    @pl.when(last_k)
    def _tile():
{G.indent(chr(10).join(tile_body), 8)}

    @pl.when(last_k & (j == pl.num_programs({kaxis - 1}) - 1))
    def _finish():
{G.indent(chr(10).join(finish), 8)}
'''
    if not row_out:
        kernel = kernel.replace(kernel[:kernel.index("\n\ndef _row_kernel")], "\n")
    fits = [f"bm = _ragged_block(BLOCK_M, m, {sub})",
            "bn = _ragged_block(BLOCK_N, n, 128)",
            f"bk = _fit_block(BLOCK_K, k, {k_align})"]
    lines, specs, args = MM.entry_inputs(ms, x_name, w_name, blocks, gi, fits, MM.operand_specs(ms, batched))
    for b in row_blocks:  # not batched (see `fits_staged`)
        specs.append(f"pl.BlockSpec(({'bm' if b.rows_full else '1'}, n), "
                     f"lambda {gi}: ({'i' if b.rows_full else '0'}, 0))")
        args.append(f"{b.name}_in")
    view = MM.output_view(ms, out, out_block, gi)
    out_spec = view.spec
    if row_out:
        out_spec = (f"pl.BlockSpec((None, bm, n), lambda {gi}: (b, i, 0))" if batched else
                    f"pl.BlockSpec((bm, n), lambda {gi}: (i, 0))")
    sem = ("parallel",) * (len(view.grid) - 1) + ("arbitrary", "arbitrary")
    scratch = [f"pltpu.VMEM((bm, bn), jnp.{ms.acc_dtype})"] + \
        [f"pltpu.VMEM((bm, 128), jnp.{s.dtype})" for s in sg.stats]
    scratch_text = "[" + ",\n                   ".join(scratch) + "]"
    if row_out:
        lines.append("keep = True  # the output is not f32: the raw tiles wait in f32 scratch"
                     if G.dtype_name(out.aval.dtype) != "float32" else
                     "keep = n % bn != 0  # a ragged last tile does not fit the output block")
        scratch_text += " + ([pltpu.VMEM((bm, pl.cdiv(n, bn) * bn), jnp.float32)] if keep else [])"
    kernel_ref = "functools.partial(_row_kernel, row_len=n" + \
        "".join(f", {s}={s}" for s in statics) + ")"
    call = G.pallas_call_code(
        kernel=kernel_ref, out_shape=view.shape,
        grid=f"({', '.join(view.grid + ['k // bk'])})", in_specs=specs, out_spec=out_spec,
        options=[f"scratch_shapes={scratch_text}",
                 f"compiler_params={MM.wrap_params(G.compiler_params_code(sem, ctx, plan.limit_vmem))}"],
        args=args, final=view.final)
    entry = MM.entry_code(ctx, lines, call, ragged=True)
    constants = [("BLOCK_M", plan.bm, "rows of the output tile"),
                 ("BLOCK_N", plan.bn, "columns of one step's tile of the row"),
                 ("BLOCK_K", plan.bk, "depth of one accumulation step")]
    description = MM.describe(ms, region, blocks)
    source, imports, body = G.write_module(
        description=description, ctx=ctx, kernel_class="matmul_row_reduction",
        constants=constants, code=G.block_helpers(kernel, entry) + kernel + entry)
    what = ("the raw tiles wait in VMEM and the row is normalised at its last tile" if row_out
            else "the row statistic is written at the row's last tile, no logits in HBM")
    notes = [(f"tiles {plan.bm}x{plan.bn}x{plan.bk}: {G.mib(plan.vmem)} of VMEM per step "
             f"(budget {G.mib(ctx.vmem_budget)})"),
             (f"the row (N={ms.n}) is tiled: {len(sg.stats)} running statistic(s) carried across "
             f"the N tiles; {what}")]
    notes += G.folded_statics_notes(ctx, statics)
    return G.Generated(kernel_class="matmul_row_reduction", description=description,
                       source=source, entry=ctx.entry, imports=imports, body=body,
                       tunables=tunables, notes=notes)


def _row_finish(sg, stat_names, blocks, row_blocks, y_line) -> list:
    """The last tile's pass over a full-row output: each kept tile normalised and stored, the
    whole tiles in a loop, a ragged last one after it."""
    region = sg.region
    loads = [f"st{s.index} = {s.ref}[:, :1]" for s in sg.stats]
    known = {id(v): "y" for v in region.known}
    body = ["y = rows[:, _cols(col0, tile_cols)]"]
    for b in blocks:
        if b in row_blocks:
            body.append(f"{b.name} = {b.name}_row_ref[:, _cols(col0, tile_cols)]")
        else:
            body.append(f"{b.name} = {b.name}_ref[...]")
        known[id(b.var)] = b.name
    flines, code = finish_lines(sg, stat_names, known)
    body += flines + [(f"o_ref[:, _cols(col0, tile_cols)] = jnp.broadcast_to({code}, y.shape)"
                      ".astype(o_ref.dtype)")]
    text = "\n".join(body)
    return loads + [
        "width = acc_ref.shape[1]",
        "",
        "def _normalise(t, carry):",
        "    col0 = t * width",
        "    tile_cols = width",
        G.indent(text, 4),
        "    return carry",
        "",
        "jax.lax.fori_loop(0, row_len // width, _normalise, 0)",
        "if row_len % width:  # the ragged last tile",
        "    col0 = row_len // width * width",
        "    tile_cols = row_len - col0",
        G.indent(text, 4),
    ]
