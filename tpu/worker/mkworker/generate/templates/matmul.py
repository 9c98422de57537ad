"""The matmul classes' shared matcher: one dot_general (2-D, leading dims flattened, or batched)
with the reference's elementwise epilogue, and the same with a reduction over the output row
(softmax, log-softmax, logsumexp, row sum / mean / max, row L2 norm...). `match_epilogue` and
`match_row_reduction` recognise the reference and lay its epilogue operands out as blocks (a
Matched); the TPU emitter (generate.templates.matmul_tpu) and the GPU emitter (generate.templates.matmul_gpu) write the
kernel from that, chosen by the generate op (ops.generate). The parts of the entry both forms
write alike are here too.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from mkworker.generate import common as G
from mkworker.generate import expr as E
from mkworker.generate.common import NoTemplate

# The fixed cost of one grid step (DMA issue, pipeline bookkeeping).
STEP_SECONDS = 0.35e-6
# Plans modelled within this fraction of the fastest count as equally fast.
COST_SLACK = 0.03
MAX_BLOCK = 2048


class _Operand:
    """A dot input traced back to a jaxpr input: the input var, the dims (of the input) that
    the dot contracts, the dtype conversion applied on the way, and whether it was transposed."""

    def __init__(self, var, chain):
        self.var = var
        self.chain = chain  # equations between the input and the dot (transpose / convert)
        self.perm = None
        self.convert = None
        for e in chain:
            if e.primitive.name == "transpose":
                self.perm = tuple(e.params["permutation"])
            else:
                self.convert = e.params["new_dtype"]

    def orig_dim(self, d: int) -> int:
        """A dim of the dot's operand, as a dim of the jaxpr input."""
        return self.perm[d] if self.perm is not None else d


def trace_operand(v, ctx, users) -> _Operand | None:
    chain = []
    producers = {id(o): e for e in ctx.eqns for o in e.outvars}
    while not E.is_literal(v) and id(v) in producers:
        e = producers[id(v)]
        if e.primitive.name not in ("transpose", "convert_element_type"):
            return None
        if len(users.get(id(v), [])) > 1:
            return None
        if e.primitive.name == "transpose" and any(x.primitive.name == "transpose" for x in chain):
            return None
        chain.insert(0, e)
        v = e.invars[0]
    if E.is_literal(v) or v not in ctx.jaxpr.invars:
        return None
    op = _Operand(v, chain)
    # Only convert_element_type after the transpose keeps the chain order irrelevant; refuse
    # a transpose that is not a plain 2-D swap of the last two dims.
    if op.perm is not None:
        r = len(op.perm)
        if op.perm != tuple(range(r - 2)) + (r - 1, r - 2):
            return None
    return op


def users_by_var(eqns):
    out: dict = {}
    for e in eqns:
        for v in e.invars:
            if not E.is_literal(v):
                out.setdefault(id(v), []).append(e)
    return out


class MatmulShape:
    """The matmul in kernel terms: batch (flattened), M (lhs free dims flattened), N, K, the
    weight layout and how the entry reshapes the operands."""

    def __init__(self, ctx, dot, lhs: _Operand, rhs: _Operand):
        (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
        lc = [lhs.orig_dim(d) for d in lc]
        rc = [rhs.orig_dim(d) for d in rc]
        lb = [lhs.orig_dim(d) for d in lb]
        rb = [rhs.orig_dim(d) for d in rb]
        xs = tuple(int(d) for d in lhs.var.aval.shape)
        ws = tuple(int(d) for d in rhs.var.aval.shape)
        self.lhs, self.rhs, self.dot = lhs, rhs, dot
        self.x_shape, self.w_shape = xs, ws
        nb = len(lb)
        if len(lc) != 1 or len(rc) != 1:
            raise NoTemplate("dot_general contracts over more than one dim; the matmul template "
                             "covers one contracting dim", ["dot_general"])
        if lb != list(range(nb)) or rb != list(range(nb)):
            raise NoTemplate("dot_general batch dims are not the leading dims of both operands",
                             ["dot_general"])
        if lc[0] != len(xs) - 1:
            raise NoTemplate("the matmul's left operand contracts over a dim that is not its last "
                             "(x.T @ w); not covered", ["dot_general"])
        if len(ws) != nb + 2 or len(xs) < 2:
            raise NoTemplate(f"dot_general of {G.shape_text(xs)} and {G.shape_text(ws)} is not a "
                             "(batched) matrix product the template covers", ["dot_general"])
        if nb and len(xs) != nb + 2:
            raise NoTemplate("a batched dot_general with extra free dims on the left operand is "
                             "not covered", ["dot_general"])
        if rc[0] == nb:
            self.w_transposed = False
            self.n = ws[nb + 1]
        elif rc[0] == nb + 1:
            self.w_transposed = True
            self.n = ws[nb]
        else:
            raise NoTemplate("unexpected contracting dim of the right operand", ["dot_general"])
        self.k = xs[-1]
        self.batch_dims = xs[:nb]
        self.nbatch = math.prod(self.batch_dims) if nb else 0  # 0: no batch grid axis
        self.lead = xs[nb:-1]  # lhs free dims (flattened into M)
        self.m = math.prod(self.lead)
        self.out_shape = tuple(int(d) for d in dot.outvars[0].aval.shape)
        want = tuple(self.batch_dims) + tuple(self.lead) + (self.n,)
        if self.out_shape != want:
            raise NoTemplate("dot_general output layout is not (batch, rows, cols)", ["dot_general"])
        self.x_dtype = lhs.convert or lhs.var.aval.dtype
        self.w_dtype = rhs.convert or rhs.var.aval.dtype
        self.dot_dtype = dot.outvars[0].aval.dtype
        # f32 accumulation for float matmuls; an integer matmul accumulates exactly in int32.
        self.acc_dtype = "int32" if G.dtype_name(self.dot_dtype).startswith(("int", "uint")) \
            else "float32"
        self.precision = dot.params.get("precision")


def dot_summary(ms: MatmulShape) -> str:
    lhs = G.shape_text(ms.x_shape)
    w = G.shape_text(ms.w_shape) + (" (transposed)" if ms.w_transposed else "")
    kind = "batched matmul" if ms.nbatch else "matmul"
    return f"{kind} ({lhs} @ {w}, {G.dtype_name(ms.x_dtype)})"


def match(ctx):
    """(MatmulShape, epilogue eqns) for a reference with exactly one dot_general, else None."""
    eqns = E.live_eqns(ctx.jaxpr)
    dots = [e for e in eqns if e.primitive.name == "dot_general"]
    if len(dots) != 1:
        return None
    dot = dots[0]
    users = users_by_var(eqns)
    lhs = trace_operand(dot.invars[0], ctx, users)
    rhs = trace_operand(dot.invars[1], ctx, users)
    if lhs is None or rhs is None:
        raise NoTemplate("the matmul's operands are computed in the reference (not plain inputs, "
                         "a transpose or a dtype conversion of them); a prologue before the matmul "
                         "is not covered", ["dot_general"])
    if lhs.var is rhs.var:
        raise NoTemplate("the matmul multiplies an input by itself; not covered", ["dot_general"])
    ms = MatmulShape(ctx, dot, lhs, rhs)
    prologue = {id(e) for e in lhs.chain + rhs.chain}
    epilogue = [e for e in eqns if e is not dot and id(e) not in prologue]
    for e in epilogue:
        for v in e.invars:
            if v is lhs.var or v is rhs.var:
                raise NoTemplate("the epilogue reads a matmul input again (its tile is not "
                                 "aligned with the output tile); not covered", [e.primitive.name])
    return ms, epilogue



class Matched(NamedTuple):
    """A reference one of the matmul classes covers, as both emitters take it: the dot, the
    epilogue (a Region over the output), the output var and the lines storing it, and the
    epilogue operands and the output as kernel blocks."""
    ms: MatmulShape
    region: E.Region
    out: object
    store: list
    reduction: bool
    blocks: list
    out_block: Block


def match_row_reduction(ctx) -> Matched | None:
    return _match_class(ctx, want_reduction=True)


def match_epilogue(ctx) -> Matched | None:
    return _match_class(ctx, want_reduction=False)


def _match_class(ctx, want_reduction: bool):
    m = match(ctx)
    if m is None:
        return None
    ms, epilogue = m
    has_reduction = any(e.primitive.name in E.ROW_REDUCTION_PRIMITIVES for e in epilogue)
    if has_reduction != want_reduction:
        return None
    if not ctx.single_output:
        raise NoTemplate("the reference returns several outputs (a tuple); the matmul templates "
                         "write one output", [])
    out = ctx.jaxpr.outvars[0]
    if E.is_literal(out) or out in ctx.jaxpr.invars:
        return None
    dot_out = ms.dot.outvars[0]
    operand_vars = {}
    for e in epilogue:
        for v in e.invars:
            if not E.is_literal(v) and v in ctx.jaxpr.invars and v not in operand_vars:
                operand_vars[v] = ctx.name_of_invar(v) or f"arg{len(operand_vars)}"
    consts = dict(zip(ctx.jaxpr.constvars, ctx.consts))
    tiles = {"cols": ("tile_cols", "col0")}
    if len(ms.lead) == 1:  # rows of the output are rows of one dim (not flattened)
        tiles["rows"] = ("tile_rows", "row0")
    region = E.Region(epilogue, out_shape=ms.out_shape, known={dot_out: "y"},
                      operands=operand_vars, ctx=ctx, row_reduce=want_reduction, consts=consts,
                      tiles=tiles)
    store = region.store_lines(out, "o_ref") if out is not dot_out else \
        ["o_ref[...] = y.astype(o_ref.dtype)"]
    return _blocks(ms, region, out, store, want_reduction)


# ---------------------------------------------------------------------------
# Operand layouts in the kernel.

class Block:
    """An epilogue operand (or the output) as a kernel block: its 2-D (rows, cols) view with
    each side either full ("m"/"n") or 1, and whether it follows the batch axis."""

    def __init__(self, name, var, rows_full, cols_full, batch_full, dtype):
        self.name, self.var = name, var
        self.rows_full, self.cols_full, self.batch_full = rows_full, cols_full, batch_full
        self.dtype = dtype


def classify(expanded, ms: MatmulShape, what: str) -> tuple[bool, bool, bool]:
    nb = len(ms.batch_dims)
    bpart = expanded[:nb]
    rpart = expanded[nb:-1]
    col = expanded[-1]

    def side(part, full, label):
        if all(a == f for a, f in zip(part, full)):
            return True
        if all(a == 1 for a in part):
            return False
        raise NoTemplate(f"{what} is broadcast over some but not all of the {label} dims "
                         f"({G.shape_text(expanded)} against {G.shape_text(ms.out_shape)}); "
                         "not covered", [])

    batch_full = False
    if nb:
        if all(a == f for a, f in zip(bpart, ms.batch_dims)):
            batch_full = True
        elif not all(a == 1 for a in bpart):
            # Broadcast over some batch dims (a per-head bias against (batch, heads)): the
            # operand keeps its batch dims and its index map unflattens the grid's batch index.
            if any(a not in (1, f) for a, f in zip(bpart, ms.batch_dims)):
                side(bpart, ms.batch_dims, "batch")
            batch_full = tuple(a == f and f != 1 for a, f in zip(bpart, ms.batch_dims))
    rows_full = side(rpart, ms.lead, "row")
    cols_full = col == ms.n
    return batch_full, rows_full, cols_full


def monotonic(region, v) -> bool:
    a = region.align.get(id(v))
    if a is None:
        return True
    big = [ax for ax, s in zip(a, v.aval.shape) if s != 1]
    return big == sorted(big)


# ---------------------------------------------------------------------------
# Block sizes.

def candidates(dim: int, align: int, ragged: bool = False) -> list[int]:
    """Tile sizes worth trying for a dim: powers of two below 128 that are multiples of the
    sublane tile, multiples of 128 up to MAX_BLOCK, all dividing the dim (or, on an axis whose
    last tile may be ragged, not dividing it); or the whole dim."""
    out = []
    for b in (G.ragged_candidates(dim, align) if ragged else G.block_candidates(dim, align)):
        small_power_of_two = b < 128 and (b & (b - 1)) == 0
        if small_power_of_two or (b <= MAX_BLOCK and (b == dim or b % 128 == 0)):
            out.append(b)
    if not out:
        out = [dim]
    return sorted(set(out))


def _blocks(ms: MatmulShape, region: E.Region, out, store, reduction: bool) -> Matched:
    batched = ms.nbatch > 0
    # Epilogue operands as blocks.
    blocks = []
    for v in region.operand_vars:
        if not monotonic(region, v):
            raise NoTemplate(f"epilogue operand `{region.operands[v]}` is broadcast with its dims "
                             "reordered; not covered", ["broadcast_in_dim"])
        bf, rf, cf = classify(region.expanded(v), ms, f"epilogue operand `{region.operands[v]}`")
        blocks.append(Block(region.operands[v], v, rf, cf, bf, v.aval.dtype))
    out_exp = region.expanded(out) if out is not ms.dot.outvars[0] else ms.out_shape
    obf, orf, ocf = classify(out_exp, ms, "the output")
    if not orf or (batched and not obf) or (ms.n > 1 and not ocf and not reduction):
        raise NoTemplate("the output is broadcast along the matmul's rows; not covered", [])
    out_block = Block("out", out, True, ocf, obf, out.aval.dtype)
    return Matched(ms, region, out, store, reduction, blocks, out_block)


# The parts of the entry both forms write alike (generate.templates.matmul_gpu calls them too).

def operand_specs(ms, batched: bool) -> list[str]:
    """The BlockSpecs of x and w over the (batch,) M, N, K grid (w as stored: (K, N) or (N, K))."""
    if batched:
        return ["pl.BlockSpec((None, bm, bk), lambda b, i, j, kk: (b, i, kk))",
                "pl.BlockSpec((None, bn, bk), lambda b, i, j, kk: (b, j, kk))" if ms.w_transposed
                else "pl.BlockSpec((None, bk, bn), lambda b, i, j, kk: (b, kk, j))"]
    return ["pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk))",
            "pl.BlockSpec((bn, bk), lambda i, j, kk: (j, kk))" if ms.w_transposed
            else "pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))"]


def entry_inputs(ms, x_name, w_name, blocks, grid_ids: str, fits, operand_specs):
    """(lines, in_specs, args) of the entry up to its pallas_call: m, n and k (and the batch
    dims) read from the operands, x (and w, when batched) viewed as the kernel's 2-D or 3-D
    operand, the form's `fits` (bm, bn, bk fitted to them) and each epilogue operand viewed
    with the output tile's dims; `operand_specs` are the form's BlockSpecs of x and w, and
    `grid_ids` the parameters of its index_maps."""
    ent = []
    if ms.nbatch > 0:
        nbd = len(ms.batch_dims)
        ent.append(f"batch = {x_name}.shape[:{nbd}]")
        ent.append(f"m, k = {x_name}.shape[{nbd}], {x_name}.shape[{nbd + 1}]")
        ent.append(f"n = {w_name}.shape[{nbd if ms.w_transposed else nbd + 1}]")
        ent.append("nb = 1")
        ent.append("for d in batch:")
        ent.append("    nb *= d")
        ent.append(f"{x_name}_3d = {x_name}.reshape(nb, m, k)")
        ent.append(f"{w_name}_3d = {w_name}.reshape(nb, {'n, k' if ms.w_transposed else 'k, n'})")
        args = [f"{x_name}_3d", f"{w_name}_3d"]
    else:
        ent.append(f"lead = {x_name}.shape[:-1]")
        ent.append(f"k = {x_name}.shape[-1]")
        ent.append(f"n = {w_name}.shape[{0 if ms.w_transposed else 1}]")
        ent.append(f"{x_name}_2d = {x_name}.reshape(-1, k)")
        ent.append(f"m = {x_name}_2d.shape[0]")
        args = [f"{x_name}_2d", w_name]
    ent += fits
    specs = list(operand_specs)
    for b in blocks:
        rows = "m" if b.rows_full else "1"
        cols = "n" if b.cols_full else "1"
        rb = "bm" if b.rows_full else "1"
        cb = "bn" if b.cols_full else "1"
        ri = "i" if b.rows_full else "0"
        ci = "j" if b.cols_full else "0"
        if ms.nbatch > 0 and isinstance(b.batch_full, tuple):
            nbd = len(ms.batch_dims)
            dims = [f"batch[{d}]" if full else "1" for d, full in enumerate(b.batch_full)]
            ent.append(f"{b.name}_in = {b.name}.reshape({', '.join(dims)}, {rows}, {cols})")
            idx = []
            for d, full in enumerate(b.batch_full):
                # lax.div/rem: non-negative indices, and Mosaic cross-lowers them (jnp's floor
                # division asks for the device kind).
                stride = " * ".join(f"batch[{e}]" for e in range(d + 1, nbd))
                q = f"jax.lax.div(b, {stride})" if stride else "b"
                idx.append(f"jax.lax.rem({q}, batch[{d}])" if full else "0")
            nones = ", ".join(["None"] * nbd)
            specs.append(f"pl.BlockSpec(({nones}, {rb}, {cb}),\n             lambda {grid_ids}: "
                         f"({', '.join(idx)}, {ri}, {ci}))")
        elif ms.nbatch > 0:
            lead = "nb" if b.batch_full else "1"
            ent.append(f"{b.name}_in = {b.name}.reshape({lead}, {rows}, {cols})")
            bi = "b" if b.batch_full else "0"
            specs.append(f"pl.BlockSpec((None, {rb}, {cb}), lambda {grid_ids}: ({bi}, {ri}, {ci}))")
        else:
            ent.append(f"{b.name}_in = {b.name}.reshape({rows}, {cols})")
            specs.append(f"pl.BlockSpec(({rb}, {cb}), lambda {grid_ids}: ({ri}, {ci}))")
        args.append(f"{b.name}_in")
    return ent, specs, args


class OutputView(NamedTuple):
    """How the pallas_call writes the output: its ShapeDtypeStruct and BlockSpec, the grid's
    batch, M and N axes (a form adds its own after them), and the reshape back to the
    reference's output shape."""
    shape: str
    spec: str
    grid: list
    final: str


def output_view(ms, out, out_block, grid_ids: str) -> OutputView:
    ocols = "n" if out_block.cols_full else "1"
    obn = "bn" if out_block.cols_full else "1"
    oj = "j" if out_block.cols_full else "0"
    odt = G.dtype_code(out.aval.dtype)
    keepdims = len(out.aval.shape) == len(ms.out_shape)  # a row statistic kept as (..., 1)
    if ms.nbatch > 0:
        final = "batch + (m, n)" if out_block.cols_full else \
            ("batch + (m, 1)" if keepdims else "batch + (m,)")
        return OutputView(f"jax.ShapeDtypeStruct((nb, m, {ocols}), {odt})",
                          f"pl.BlockSpec((None, bm, {obn}), lambda {grid_ids}: (b, i, {oj}))",
                          ["nb", "pl.cdiv(m, bm)", "pl.cdiv(n, bn)"], final)
    final = "lead + (n,)" if out_block.cols_full else ("lead + (1,)" if keepdims else "lead")
    return OutputView(f"jax.ShapeDtypeStruct((m, {ocols}), {odt})",
                      f"pl.BlockSpec((bm, {obn}), lambda {grid_ids}: (i, {oj}))",
                      ["pl.cdiv(m, bm)", "pl.cdiv(n, bn)"], final)


def entry_code(ctx, lines, call: str, ragged: bool = False) -> str:
    """The entry function: `lines`, the check that the tiles divide the matmul (only K's when
    the M and N tiles may be ragged), the `call`."""
    if ragged:
        check = 'assert k % bk == 0, f"the {bk}-deep tile does not divide K={k}"'
    else:
        check = ('assert m % bm == 0 and n % bn == 0 and k % bk == 0, (\n'
                 '    f"tiles {bm}x{bn}x{bk} do not divide the matmul {m}x{n}x{k}")')
    body = "\n".join(lines) + "\n" + check + "\n" + call
    return f'''

def {ctx.entry}({ctx.signature}):
{G.indent(body, 4)}
'''


def describe(ms, region: E.Region, blocks) -> str:
    """The dot and the epilogue fused into its output stage, in words."""
    epi_desc = _epilogue_summary(region, blocks)
    return dot_summary(ms) + (f" + {epi_desc}" if epi_desc else "") + \
        (" fused into the output stage" if epi_desc else "")


def wrap_params(text: str) -> str:
    """CompilerParams(...) on a line of its own inside the pallas_call when it is long."""
    if len(text) <= 70:
        return text
    return text.replace("CompilerParams(", "CompilerParams(\n        ", 1)


def precision_code(p) -> str:
    """The reference's dot precision as code: a Precision pair or a DotAlgorithmPreset."""
    if isinstance(p, (tuple, list)):
        names = [getattr(x, "name", str(x)) for x in p]
        if len(set(names)) == 1:
            return f"jax.lax.Precision.{names[0]}"
        return "(" + ", ".join(f"jax.lax.Precision.{n}" for n in names) + ")"
    return f"jax.lax.{type(p).__name__}.{p.name}"


def _epilogue_summary(region: E.Region, blocks) -> str:
    parts = []
    for b in blocks:
        kind = ("residual" if b.rows_full and b.cols_full else
                "bias row" if b.cols_full else "column" if b.rows_full else "scalar")
        parts.append(f"{kind} `{b.name}`")
    names = region.summary()
    if names:
        parts.extend(names)
    elif region.primitives and not parts:
        parts.append("elementwise epilogue")
    return " + ".join(parts)
