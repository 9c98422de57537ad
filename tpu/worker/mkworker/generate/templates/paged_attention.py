"""Template `paged_attention`: attention of one query token per sequence (decode) over a KV cache
held in pages, the pages of each sequence named by a page table.

    q (batch, heads, head_dim); k_pages, v_pages (kv_heads, total_pages, page_size, head_dim);
    page_table (batch, pages_per_seq) int32; lengths (batch,) int32
    out[b, h] = softmax(scale * q[b, h] . K_b[kv(h)]^T, positions >= lengths[b] masked) @ V_b

Recognised on the jaxpr by roles: two gathers `pages[:, page_table]` of two rank-4 inputs by a
rank-2 int input (the table), two dot_generals (scores, then the weighted sum of V) with a
softmax between them, and a mask `position < lengths` (an iota compared with a rank-1 int
input). The scale is the product of the scalar constants that multiply (or divide) q or the
scores. GQA heads are grouped as `q.reshape(batch, kv_heads, heads // kv_heads, head_dim)`
(query head h reads kv head h // group, as `jnp.repeat` of K/V over heads gives).

Kernel: page table (flattened) and lengths scalar-prefetched (`pltpu.PrefetchScalarGridSpec`);
grid (batch, kv_heads, page steps), the page steps "arbitrary". A step takes PAGES_PER_STEP
pages, each its own BlockSpec whose index map reads the table; pages past the sequence's
length map to its last page (the same block as the step before: no new DMA) and the step's
work is skipped. The query group of a kv head (heads // kv_heads rows) is one block; the
scores are f32, positions past the length masked (and V rows there zeroed, so garbage in an
unused page row cannot reach the sum), and an online softmax (running max and sum in VMEM)
carries across steps; the last step divides.

Refused (NoTemplate): gathers of another page layout, primitives outside the pattern (named),
masks that are not `position < length`.
"""

from __future__ import annotations

from mkworker.generate import common as G
from mkworker.generate import expr as E
from mkworker.generate.common import NoTemplate

KERNEL_CLASS = "paged_attention"
COVERED_PRIMITIVES = ("gather",)
ALLOWED = ("gather", "dot_general", "reshape", "broadcast_in_dim", "mul", "div", "sub", "exp",
           "reduce_max", "reduce_sum", "max", "select_n", "lt", "gt", "add", "iota",
           "convert_element_type", "stop_gradient", "squeeze", "expand_dims", "transpose")
# Positions a step covers: enough for an MXU-sized score row, few steps per sequence.
TOKENS_PER_STEP = 256


def _producers(eqns):
    return {id(o): e for e in eqns for o in e.outvars}


def _walk_back(roots, producers, stops, through=lambda e: True):
    """The values of `stops` (id -> value) that `roots` are computed from, walking back through
    the producers `through` accepts."""
    out, todo, seen = set(), list(roots), set()
    while todo:
        v = todo.pop()
        if E.is_literal(v) or id(v) in seen:
            continue
        seen.add(id(v))
        if id(v) in stops:
            out.add(stops[id(v)])
            continue
        e = producers.get(id(v))
        if e is not None and through(e):
            todo.extend(e.invars)
    return out


def _sources(var, producers, invars):
    """The top-level inputs a value is computed from."""
    return _walk_back([var], producers, invars)


def _has_iota(var, producers):
    todo, seen = [var], set()
    while todo:
        v = todo.pop()
        if E.is_literal(v) or id(v) in seen:
            continue
        seen.add(id(v))
        e = producers.get(id(v))
        if e is None:
            continue
        if e.primitive.name == "iota":
            return True
        todo.extend(e.invars)
    return False


def match(ctx):
    eqns = E.live_eqns(ctx.jaxpr)
    invars = {id(v): i for i, v in enumerate(ctx.jaxpr.invars)}
    avals = [v.aval for v in ctx.jaxpr.invars]
    producers = _producers(eqns)

    def is_int(a, rank):
        return len(a.shape) == rank and G.dtype_name(a.dtype).startswith(("int", "uint"))

    gathers = [e for e in eqns if e.primitive.name == "gather"]
    page_gathers = []
    for e in gathers:
        src = e.invars[0]
        idx = _sources(e.invars[1], producers, invars)
        if id(src) in invars and len(src.aval.shape) == 4 and any(is_int(avals[i], 2) for i in idx):
            page_gathers.append(e)
    if not page_gathers:
        return None  # no page table: not this class
    names = [e.primitive.name for e in eqns]
    folded = _scalar_constants(eqns, ctx)
    others = [n for n in dict.fromkeys(e.primitive.name for e in eqns if id(e) not in folded)
              if n not in ALLOWED]
    if others:
        raise NoTemplate(", ".join(f"`{n}`" for n in others)
                         + " is not covered by the paged_attention template (decode attention: "
                         "gather, scores, a length mask, softmax, weighted sum)", others)
    if len(page_gathers) != 2 or len(gathers) != 2:
        raise NoTemplate(f"{len(gathers)} gathers; the paged_attention template takes two "
                         "(K and V pages by one page table)", ["gather"])
    for e in page_gathers:
        dn = e.params["dimension_numbers"]
        shape = e.invars[0].aval.shape
        ok = (tuple(dn.collapsed_slice_dims) == (1,) and tuple(dn.start_index_map) == (1,)
              and tuple(e.params["slice_sizes"]) == (shape[0], 1, shape[2], shape[3])
              and not tuple(getattr(dn, "operand_batching_dims", ())))
        if not ok:
            raise NoTemplate("`gather` of pages in another form than `pages[:, page_table]` on "
                             "(kv_heads, total_pages, page_size, head_dim) pages is not covered "
                             "by the paged_attention template", ["gather"])
    dots = [e for e in eqns if e.primitive.name == "dot_general"]
    if len(dots) != 2:
        raise NoTemplate(f"{len(dots)} dot_generals; the paged_attention template takes two "
                         "(scores, then the weighted sum of V)", ["dot_general"])
    if not {"exp", "reduce_sum"} <= set(names):
        raise NoTemplate("no softmax between the two dot_generals (exp, reduce_sum)", [])
    if not ctx.single_output:
        raise NoTemplate("the reference returns several outputs; the paged_attention template "
                         "writes one", [])
    # Roles: the pages each dot reads, the query, the table, the lengths.
    pool_of = {id(e.outvars[0]): invars[id(e.invars[0])] for e in page_gathers}

    def pool_read_by(dot):
        return _walk_back(dot.invars, producers, pool_of,
                          lambda e: e.primitive.name != "dot_general")

    first, second = dots
    k_pool, v_pool = pool_read_by(first), pool_read_by(second)
    if len(k_pool) != 1 or len(v_pool) != 1 or k_pool == v_pool:
        raise NoTemplate("the two dot_generals do not read one page pool each (K for the "
                         "scores, V for the sum)", ["dot_general"])
    k_i, v_i = next(iter(k_pool)), next(iter(v_pool))
    q_cands = [i for i in _sources(first.invars[0], producers, invars)
               | _sources(first.invars[1], producers, invars)
               if i not in (k_i, v_i) and len(avals[i].shape) == 3]
    table_cands = {i for e in page_gathers for i in _sources(e.invars[1], producers, invars)
                   if is_int(avals[i], 2)}
    if len(q_cands) != 1 or len(table_cands) != 1:
        raise NoTemplate("the query (batch, heads, head_dim) or the page table is not one input",
                         [])
    q_i, t_i = q_cands[0], next(iter(table_cands))
    # The mask: an iota of positions compared with the lengths input (position < length).
    len_i = None
    for e in eqns:
        if e.primitive.name not in ("lt", "gt"):
            continue
        a, b = e.invars
        if e.primitive.name == "gt":
            a, b = b, a  # length > position is position < length
        ls = [i for i in _sources(b, producers, invars) if is_int(avals[i], 1)]
        if _has_iota(a, producers) and len(ls) == 1 and not _sources(a, producers, invars):
            len_i = ls[0]
    if len_i is None:
        raise NoTemplate("no `position < length` mask (an iota compared with a (batch,) int "
                         "input) was found; other masks are not covered by the paged_attention "
                         "template", ["lt"])
    qa, ka = avals[q_i], avals[k_i]
    b, h, d = (int(x) for x in qa.shape)
    kvh, _, s, kd = (int(x) for x in ka.shape)
    out = ctx.jaxpr.outvars[0]
    if (kd != d or h % kvh or next(iter(avals[t_i].shape)) != b or tuple(avals[len_i].shape) != (b,)
            or tuple(avals[v_i].shape) != tuple(ka.shape) or E.is_literal(out)
            or tuple(out.aval.shape) != (b, h, d)):
        raise NoTemplate("the shapes do not fit paged decode attention: q (batch, heads, "
                         "head_dim), pages (kv_heads, total_pages, page_size, head_dim), table "
                         "(batch, pages_per_seq), lengths (batch,) -> (batch, heads, head_dim)",
                         [])
    scale = _scale(eqns, first, producers, ctx)
    return {"q": q_i, "k": k_i, "v": v_i, "table": t_i, "lengths": len_i, "scale": scale,
            "out": out, "page_size": s, "group": h // kvh}


def _scalar_constants(eqns, ctx) -> dict:
    """{id(eqn): value} for the scalar equations computed from constants only (the trace keeps
    `jnp.sqrt(float(head_dim))` as a sqrt of a literal): evaluated here, they are part of the
    scale, not of the kernel."""
    consts = {id(v): c for v, c in zip(ctx.jaxpr.constvars, ctx.consts)}
    known, out = {}, {}
    for e in eqns:
        vals = []
        for v in e.invars:
            if E.is_literal(v):
                vals.append(v.val)
            elif id(v) in known:
                vals.append(known[id(v)])
            elif id(v) in consts and getattr(consts[id(v)], "shape", None) == ():
                vals.append(consts[id(v)])
            else:
                break
        else:
            if len(e.outvars) == 1 and tuple(e.outvars[0].aval.shape) == () and vals:
                try:
                    val = e.primitive.bind(*vals, **e.params)
                except Exception:  # noqa: BLE001 - not foldable: the kernel check refuses it
                    val = None
                if val is not None:
                    known[id(e.outvars[0])] = val
                    out[id(e)] = val
    return out


def _scale(eqns, first, producers, ctx):
    """The product of the scalar constants multiplying (or dividing) the query on its way to the
    scores dot, and the scores on their way to the softmax's max / exp."""
    consts = dict(zip(ctx.jaxpr.constvars, ctx.consts))
    folded = {id(e.outvars[0]): v for e in eqns
              for k, v in _scalar_constants(eqns, ctx).items() if k == id(e)}

    def scalar(v):
        if E.is_literal(v):
            return float(v.val) if getattr(v.val, "shape", ()) == () else None
        if id(v) in folded:
            return float(folded[id(v)])
        c = consts.get(v)
        return float(c) if c is not None and getattr(c, "shape", ()) == () else None

    scale = 1.0
    # Before the dot: along q's operand chain.
    todo = list(first.invars)
    seen = set()
    while todo:
        v = todo.pop()
        if E.is_literal(v) or id(v) in seen:
            continue
        seen.add(id(v))
        e = producers.get(id(v))
        if e is None or e.primitive.name == "gather":
            continue
        if e.primitive.name in ("mul", "div"):
            c = scalar(e.invars[1])
            if e.primitive.name == "mul" and c is None:
                c = scalar(e.invars[0])
            if c is not None:
                scale *= c if e.primitive.name == "mul" else 1.0 / c
        todo.extend(e.invars)
    # After it: the chain of single-input users up to the first reduction or exp.
    cur = first.outvars[0]
    while True:
        users = [e for e in eqns if any(u is cur for u in e.invars)]
        step = [e for e in users if e.primitive.name in ("mul", "div", "convert_element_type",
                                                         "select_n")]
        if len(step) != 1 or len(users) != 1:
            break
        e = step[0]
        if e.primitive.name in ("mul", "div"):
            other = [u for u in e.invars if u is not cur]
            c = scalar(other[0]) if other else None
            if c is None:
                break
            scale *= c if e.primitive.name == "mul" else 1.0 / c
        cur = e.outvars[0]
    return scale


def emit(ctx, m) -> G.Generated:
    """The TPU emitter (the class has no GPU form: generate.classes skips it there)."""
    names = {r: ctx.name_of_invar(ctx.jaxpr.invars[m[r]])
             for r in ("q", "k", "v", "table", "lengths")}
    avals = {r: ctx.jaxpr.invars[m[r]].aval for r in ("q", "k", "v")}
    s, group = m["page_size"], m["group"]
    pps = int(ctx.jaxpr.invars[m["table"]].aval.shape[1])
    d = int(avals["q"].shape[2])
    pages = max(1, min(pps, TOKENS_PER_STEP // s))
    out_dt = m["out"].aval.dtype
    constants = [("PAGES_PER_STEP", pages, ("pages of one sequence a grid step reads (each its "
                  "own block, picked by the page table)"))]
    tunables = {"PAGES_PER_STEP": sorted({p for p in (1, 2, 4, 8, 16, 32, 64) if p <= pps}
                                         | {pages})}
    kernel = _KERNEL
    entry = _entry_code(ctx, names, m["scale"], out_dt)
    kv_dt = G.dtype_name(avals["k"].dtype)
    description = (f"paged decode attention: q {G.shape_text(avals['q'].shape)} over "
                   f"{G.shape_text(avals['k'].shape)} K/V pages ({kv_dt}) by the page table "
                   f"`{names['table']}` and lengths `{names['lengths']}`, {group} query heads per "
                   f"kv head; table and lengths scalar-prefetched, an online softmax across "
                   f"steps of {pages} pages")
    source, imports, body = G.write_module(description=description, ctx=ctx,
                                           kernel_class=KERNEL_CLASS, constants=constants,
                                           code=kernel + entry)
    step = 4 * pages * s * d * G.itemsize(avals["k"].dtype)
    notes = [(f"{pages} pages of {s} positions a step: {G.mib(step)} of K/V blocks "
             "(double-buffered)"),
             f"scale {m['scale']!r} (the scalar constants on the query and the scores)",
             ("query head h reads kv head h // group (q reshaped to (batch, kv_heads, group, "
             "head_dim))")]
    notes += G.folded_statics_notes(ctx, [])
    return G.Generated(kernel_class=KERNEL_CLASS, description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body, tunables=tunables, notes=notes)


_KERNEL = '''

def _paged_attention_kernel(table_ref, lengths_ref, q_ref, *refs, pages, page_size, scale):
    k_refs, v_refs = refs[:pages], refs[pages:2 * pages]
    o_ref, m_ref, l_ref, acc_ref = refs[2 * pages:]
    b, step = pl.program_id(0), pl.program_id(2)
    length = lengths_ref[b]
    start = step * pages * page_size

    @pl.when(step == 0)
    def _init():
        m_ref[...] = jnp.full_like(m_ref, -jnp.inf)
        l_ref[...] = jnp.zeros_like(l_ref)
        acc_ref[...] = jnp.zeros_like(acc_ref)

    @pl.when(start < length)  # steps wholly past the length do nothing (their blocks repeat)
    def _step():
        q = q_ref[...]
        m, l, acc = m_ref[:, :1], l_ref[:, :1], acc_ref[...]
        for i in range(pages):  # one online-softmax update per page (pages are separate blocks)
            k, v = k_refs[i][...], v_refs[i][...]
            first = start + i * page_size
            s = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())),
                                    preferred_element_type=jnp.float32) * scale
            pos = first + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
            s = jnp.where(pos < length, s, -jnp.inf)
            # Rows of V past the length are zeroed: a garbage NaN there would survive 0 * NaN.
            row = first + jax.lax.broadcasted_iota(jnp.int32, v.shape, 0)
            v = jnp.where(row < length, v, jnp.zeros_like(v))
            # A page wholly past the length has every score at -inf: keep the max finite.
            m_new = jnp.maximum(m, jnp.max(s, axis=1, keepdims=True))
            m_safe = jnp.where(m_new == -jnp.inf, 0.0, m_new)
            alpha = jnp.exp(m - m_safe)
            p = jnp.exp(s - m_safe)
            l = alpha * l + jnp.sum(p, axis=1, keepdims=True)
            acc = alpha * acc + jnp.dot(p.astype(v.dtype), v, preferred_element_type=jnp.float32)
            m = m_new
        m_ref[...] = jnp.broadcast_to(m, m_ref.shape)
        l_ref[...] = jnp.broadcast_to(l, l_ref.shape)
        acc_ref[...] = acc

    @pl.when(step == pl.num_programs(2) - 1)
    def _store():
        o_ref[...] = (acc_ref[...] / l_ref[:, :1]).astype(o_ref.dtype)
'''


def _entry_code(ctx, n, scale, out_dt) -> str:
    q, k, v, table, lengths = n["q"], n["k"], n["v"], n["table"], n["lengths"]
    ent = [f"b, h, d = {q}.shape",
           f"kv_heads, _, page_size, _ = {k}.shape",
           f"pages_per_seq = {table}.shape[1]",
           "group = h // kv_heads",
           "pages = min(PAGES_PER_STEP, pages_per_seq)",
           f"qg = {q}.reshape(b, kv_heads, group, d)",
           f"flat_table = {table}.reshape(-1).astype(jnp.int32)",
           "",
           "def page_spec(i):",
           "    # Page i of a step; past the sequence's last page, that page again (no new DMA).",
           "    def index(bi, hi, step, table, lens):",
           "        # lax.div, not `//` (whose sign op Mosaic's lowering cannot place here).",
           "        last = jax.lax.div(jnp.maximum(lens[bi] - 1, 0), page_size)",
           "        j = jnp.minimum(jnp.minimum(step * pages + i, last), pages_per_seq - 1)",
           "        return (hi, table[bi * pages_per_seq + j], 0, 0)",
           "    return pl.BlockSpec((None, None, page_size, d), index)",
           "",
           "page_specs = [page_spec(i) for i in range(pages)]",
           ("group_spec = pl.BlockSpec((None, None, group, d), lambda bi, hi, step, table, lens: "
           "(bi, hi, 0, 0))"),
           '''grid_spec = pltpu.PrefetchScalarGridSpec(
    num_scalar_prefetch=2,
    grid=(b, kv_heads, pl.cdiv(pages_per_seq, pages)),
    in_specs=[group_spec] + page_specs + page_specs,
    out_specs=group_spec,
    scratch_shapes=[pltpu.VMEM((group, 128), jnp.float32), pltpu.VMEM((group, 128), jnp.float32),
                    pltpu.VMEM((group, d), jnp.float32)],
)''',
           f'''out = pl.pallas_call(
    functools.partial(_paged_attention_kernel, pages=pages, page_size=page_size,
                      scale={scale!r}),
    out_shape=jax.ShapeDtypeStruct((b, kv_heads, group, d), {G.dtype_code(out_dt)}),
    grid_spec=grid_spec,
    compiler_params=pltpu.CompilerParams(
        dimension_semantics=("parallel", "parallel", "arbitrary")),
)(flat_table, {lengths}.astype(jnp.int32), qg, *([{k}] * pages), *([{v}] * pages))''',
           "return out.reshape(b, h, d)"]
    return f'''

def {ctx.entry}({ctx.signature}):
{G.indent(chr(10).join(ent), 4)}
'''
