"""The retention class: attention without a softmax whose scores are weighted by a per-head
decay, o = ((q k^T * scale) * D) v with D[h, i, j] = gamma_h ** (i - j) for i >= j and 0 above
the diagonal (RetNet's parallel form; a plain causal linear attention is gamma = 1). The chunked
form of the recurrence S_i = gamma S_{i-1} + k_i^T v_i, o_i = q_i S_i, written as one kernel.

XLA computes it as written: the (batch, heads, seq, seq) scores go to HBM, are weighted there,
and are read back for the second matmul. The kernel keeps a (q block, kv block) tile of them in
VMEM: grid (batch, heads, q blocks, kv blocks), the kv steps "arbitrary", an f32 accumulator; the
decay of a tile is exp((row - col) * log(gamma_h)) from iotas; tiles above the diagonal are
skipped and not fetched, and so are tiles so far below it that every weight is 0 in float32
(exp(x) rounds to 0 for x < -110): per head, DECAY_WINDOW is the largest distance whose weight
is not 0, and the kv index map starts at the first tile within it. The per-head log-decay and
window are scalar-prefetched (SMEM).

Recognised (generate.templates.attention's operand tracing and layout models, shared): two
dot_generals, the second reading the first through converts, layout ops, constant scaling,
multiplications by a constant that depends on the position only (the decay) and selects with a
constant predicate and a 0 fill (the causal mask); no exp on the scores (that is attention).
Checked, not assumed: the product of those weights, evaluated at sampled (batch, head, query,
key) points through the reference's own index maps, equals gamma_h ** (query - key) below the
diagonal and 0 above it, with gamma_h read from the weights one step off the diagonal.
Refused (NoTemplate): a bias added to the scores, a weight that is not such a decay (a
bidirectional or non-causal one, a gamma above 1), a fill that is not 0.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from mkworker.generate import common as G
from mkworker.generate import index as X
from mkworker.generate import rows as R
from mkworker.generate.templates import attention as MA
from mkworker.generate.templates import attention_entry as AE
from mkworker.generate.templates import attention_tpu as AT
from mkworker.generate.templates import head_tables as HT

# exp(x) is 0 in float32 for x below this (the smallest subnormal is about exp(-103.3)).
F32_EXP_ZERO = -110.0
NO_WINDOW = 1 << 30  # gamma = 1: every tile below the diagonal counts


class Matched(NamedTuple):
    matcher: object
    m: dict
    log_decay: tuple  # per q head
    scale: float
    q_var: object
    k_var: object
    v_var: object
    out_var: object


def match(ctx: G.GenContext) -> Matched | None:
    eqns = R.reachable_eqns(ctx.jaxpr)
    dots = [e for e in eqns if e.primitive.name == "dot_general"]
    if len(dots) != 2:
        return None
    graph = X.Graph(ctx.closed_jaxpr)
    d1, d2 = dots
    s_var = d1.outvars[0]
    if not any(graph.depends_on_var(v, s_var) for v in d2.invars):
        return None
    if any(e.primitive.name in ("exp", "exp2", "logistic") and graph.depends_on_var(e.invars[0], s_var)
           for e in eqns):
        return None  # a softmax (or a gate) on the scores: not this class
    matcher = _RetentionMatcher(ctx, graph, eqns, d1, d2)
    _, pre = matcher.forward_scores()
    if not any(kind in ("weight", "select") for _, kind, _ in pre.masks):
        return None  # two chained matmuls with nothing position-dependent between them
    matcher = _RetentionMatcher(ctx, graph, eqns, d1, d2)  # forward_scores marks what it met
    return matcher.build()


class _RetentionMatcher(MA.Matcher):
    def build(self) -> Matched:
        parts = self.operands()
        if parts.p_var is not parts.x_var:
            # The scores' chain may run on through layout ops (a cast back to bf16) that the
            # second matmul's operand chain also went back through: the operand reads x_var.
            chain = self._layout_chain(self.d2.invars[parts.p_side], parts.x_var)
            if chain is not None:
                parts = parts._replace(p_var=parts.x_var, p_chain=chain)
        if parts.p_var is not parts.x_var:
            e = self.g.producer.get(parts.p_var)
            self.fail("something other than a position weight lies between the scores and the "
                      f"second matmul (`{e.primitive.name if e else '?'}`)",
                      [e.primitive.name] if e else [])
        self._p_perm = tuple(range(len(X.shape_of(parts.x_var)) - 1))
        self._check_accounted()
        model, q_var, k_var, log_decay = self.reading(parts, self._decay)
        return Matched(self, model, log_decay, parts.scale, q_var, k_var, parts.v_var,
                       parts.out_var)

    def _layout_chain(self, v, stop):
        """The layout ops from `v` back to `stop`, or None if something else lies between."""
        chain = MA.Chain()
        while v is not stop:
            e = self.g.producer.get(v)
            if e is None or e.primitive.name not in X.LAYOUT_OPS:
                return None
            chain.eqns.append(e)
            v = e.invars[0]
        return chain

    def _samples(self, m):
        smp = super()._samples(m)
        # One and two steps off the diagonal in every head: where gamma_h is read.
        H, S = m["H"], m["S"]
        if S < 3:
            return smp
        extra = {"b": np.zeros(2 * H, np.int64), "h": np.repeat(np.arange(H), 2),
                 "s": np.tile([1, 2], H), "t": np.zeros(2 * H, np.int64),
                 "c": np.zeros(2 * H, np.int64), "e": np.zeros(2 * H, np.int64)}
        return {k: np.concatenate([smp[k], extra[k]]) for k in smp}

    def _decay(self, m, pre) -> tuple:
        """The per-head log(gamma) the weights on the scores amount to, or NoTemplate."""
        smp = self._samples(m)
        points = {id(e): idx for e, idx in self._mask_points}
        w = np.ones(len(smp["s"]), dtype=np.float64)
        for e, kind, pos in pre.masks:
            idx = points[id(e)]
            try:
                if kind == "weight":
                    other = e.invars[1 - pos]
                    w *= self.g.value_at(other, X.operand_index(other, idx)).astype(np.float64)
                elif kind == "select":
                    pred = self.g.value_at(e.invars[0], X.operand_index(e.invars[0], idx))
                    other = e.invars[3 - pos]
                    fill = self.g.value_at(other, X.operand_index(other, idx)).astype(np.float64)
                    kept = np.asarray(pred).astype(np.int64) == pos - 1
                    if np.any(fill[~kept] != 0):
                        self.fail(f"masked scores are filled with {float(np.max(np.abs(fill[~kept])))}"
                                  f", not 0 (with no softmax after them they are summed)", ["select_n"])
                    w = np.where(kept, w, 0.0)
                else:
                    self.fail("the scores get an additive bias (with no softmax after them)",
                              [e.primitive.name])
            except X.NotConstant as nc:
                self.fail(f"the weight on the scores is computed with {nc}, which the template "
                          f"cannot evaluate", [str(nc)])
        s, t, h = smp["s"], smp["t"], smp["h"]
        if np.any(w[s < t] != 0):
            self.fail("the weights on the scores are not 0 above the diagonal (a key after the "
                      "query): only causal decays are covered", ["mul"])
        log_decay = []
        for head in range(m["H"]):
            # log w = (s - t) * log(gamma): a least-squares slope over every sampled weight of
            # the head that is not 0 (the far ones pin it: one step off the diagonal, f32's
            # rounding of gamma alone would be off by 2e-4 after 4000 steps).
            seen = (h == head) & (s > t) & (w > 1e-30)
            if not ((h == head) & (s - t == 1) & (w > 0)).any():
                self.fail(f"head {head}'s weight one step off the diagonal is 0 or was not "
                          f"sampled: no decay to read", ["mul"])
            d = (s - t)[seen].astype(np.float64)
            log_decay.append(float(np.sum(d * np.log(w[seen])) / np.sum(d * d)))
        ld = np.asarray(log_decay)
        if np.any(ld > 0):
            self.fail("the decay is above 1 (the weights grow with distance)", ["mul"])
        want = np.where(s >= t, np.exp((s - t) * ld[h]), 0.0)
        if not np.allclose(w, want, rtol=1e-4, atol=1e-30):
            bad = int(np.argmax(np.abs(w - want) - 1e-4 * np.abs(want)))
            self.fail(f"the weights on the scores are not a per-head decay gamma ** (query - key) "
                      f"(at head {int(h[bad])}, query {int(s[bad])}, key {int(t[bad])}: "
                      f"{w[bad]:.6g}, where gamma ** {int(s[bad] - t[bad])} = {want[bad]:.6g})", ["mul"])
        return tuple(log_decay)


def decay_window(log_decay: float) -> int:
    """The largest query-key distance whose weight exp(distance * log_decay) is not 0 in f32."""
    if log_decay >= 0:
        return NO_WINDOW
    return min(NO_WINDOW, math.floor(F32_EXP_ZERO / log_decay))


def emit(ctx, matched: Matched) -> G.Generated:
    matcher, m, log_decay, scale, q_var, k_var, v_var, out_var = matched
    names = {v: n for v, n in zip(ctx.jaxpr.invars, ctx.arg_names)}
    qn, kn, vn = (AE.ident(names[v]) for v in (q_var, k_var, v_var))
    qdt, kdt, vdt, odt = (v.aval.dtype for v in (q_var, k_var, v_var, out_var))
    S, T, D, DV = (m[k] for k in ("S", "T", "D", "DV"))
    # The accumulator, and the scores, the decay and their product.
    plan = AT.tile_plan(ctx, matcher, m, (qdt, kdt, vdt, odt), [((DV,), 1), (None, 3)])
    bq, bk, q_ok, k_ok, sub, _, step = plan
    scale_text, _ = matcher.scale_text(scale, D)
    views = {key: "bhsd" if lay == "bhsd" else ("flat" if dim % 128 == 0 else "transpose")
             for key, lay, dim in (("q", m["q"], D), ("k", m["k"], D), ("v", m["v"], DV))}
    out_view = "bhsd" if m["out"] == "bhsd" else ("flat" if DV % 128 == 0 else "transpose")
    fold_scale = G.dtype_name(qdt) == "float32"
    windows = tuple(decay_window(ld) for ld in log_decay)
    tables = HT.tables(ctx, m, q_var, k_var, log_decay,
                       lambda c: getattr(match(c), "log_decay", None), "decay", matcher.fail)
    prefix = HT.is_prefix(tables)
    limit = AT.plan_limit(ctx, plan)
    # A kv tile is fetched from the first one within the decay window to the diagonal's.
    kv_blk = ("jnp.minimum(jnp.maximum(ki, jax.lax.div(jnp.maximum(qi * bq - win_ref[hi], 0), bk)), "
              "jnp.minimum(jax.lax.div((qi + 1) * bq - 1, bk), kv_len // bk - 1))")
    form = AE.EntryForm(
        fits=(f"bq = _ragged_block(BLOCK_Q, q_len, {sub})", "bk = _fit_block(BLOCK_K, kv_len, 128)",
              *HT.entry_lines(("LOG_DECAY", "DECAY_WINDOW"), ("log_decay", "window"),
                              ("jnp.float32", "jnp.int32"), prefix)),
        grid_ids="bi, hi, qi, ki, ld_ref, win_ref", kv_rows="bk", kv_block=kv_blk,
        kernel="functools.partial(_retention_kernel, scale=sm_scale)",
        grid="(batch, heads, pl.cdiv(q_len, bq), kv_len // bk)",
        options=AT.compiler_params_lines(limit),
        prefetch=("log_decay", "window"), scratch="[pltpu.VMEM((bq, v_dim), jnp.float32)]")
    entry = AE.entry_text(ctx, m, views, out_view, scale_text, (qn, kn, vn), odt, form)
    per_head = ", ".join(f"{math.exp(ld):.6g}" for ld in log_decay[:4]) + (", ..." if len(log_decay) > 4 else "")
    description = (f"retention (batch {m['B']}, {m['H']} q heads" +
                   (f" / {m['KVH']} kv heads" if m["KVH"] != m["H"] else "") +
                   f", seq {S}x{T}, head_dim {D}, {G.dtype_name(qdt)}, q/k/v {m['q']}/{m['k']}/"
                   f"{m['v']} -> {m['out']}, decay {per_head}): chunked kernel over {bk}-long kv "
                   f"blocks, the decayed scores kept in VMEM")
    code = "\n".join([
        "# Per q head: log(gamma_h), read from the reference's weights, and the largest query-key",
        "# distance whose weight exp(distance * log(gamma_h)) is not 0 in float32"
        + ("." if prefix else "; by the number of q heads (the decays are spread over them)."),
        HT.module_text("LOG_DECAY", tables),
        HT.module_text("DECAY_WINDOW", {h: tuple(decay_window(x) for x in v) for h, v in tables.items()},
                       int),
    ])
    kernel = _kernel_text(fold_scale, matcher.precision_text())
    constants = [("BLOCK_Q", bq, f"query rows per step; valid here: {q_ok}"),
                 ("BLOCK_K", bk, f"kv rows per step; valid here: {k_ok}")]
    source, imports, body = G.write_module(
        description=description, ctx=ctx, kernel_class="retention", constants=constants,
        code=code + "\n\n\n" + G.block_helpers(entry) + "\n\n" + kernel + "\n\n\n" + entry)
    skipped = sum(1 for w in windows if w < T)
    notes = [f"scale {scale:.6g} ({scale_text})",
             f"{G.mib(step(bq, bk))} VMEM per step at BLOCK_Q={bq}, BLOCK_K={bk}",
             "kv blocks above the diagonal are skipped and not fetched"]
    if skipped:
        notes.append(f"{skipped} of {len(windows)} heads decay to 0 in float32 within the "
                     f"sequence: kv blocks beyond their window ({min(windows)} to "
                     f"{max(w for w in windows if w < T)} positions) are skipped too")
    notes += AE.gqa_notes(m)
    return G.Generated(kernel_class="retention", description=description, source=source,
                       entry=ctx.entry, imports=imports, body=body,
                       tunables={"BLOCK_Q": q_ok, "BLOCK_K": k_ok}, notes=notes + matcher.notes)


def _kernel_text(fold_scale: bool, precision: str | None) -> str:
    prec = f", precision={precision}" if precision else ""
    lines = [
        "def _decayed_step(q, k_ref, v_ref, acc_ref, *, scale, log_decay, first_row, first_col,",
        "                  diagonal):",
        '    """One kv block: the scores weighted by gamma ** (row - col), summed into acc."""',
        "    bq, bk = q.shape[0], k_ref.shape[0]",
        "    s = jax.lax.dot_general(q, k_ref[...], (((1,), (1,)), ((), ())),",
        f"                            preferred_element_type=jnp.float32{prec})",
    ]
    if not fold_scale:
        lines.append("    s = s * scale")
    lines += [
        "    rows = first_row + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 0)",
        "    cols = first_col + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 1)",
        "    dist = rows - cols",
        "    w = jnp.exp(dist.astype(jnp.float32) * log_decay)",
        "    if diagonal:",
        "        w = jnp.where(dist >= 0, w, 0.0)",
        "    pv = jax.lax.dot_general((s * w).astype(v_ref.dtype), v_ref[...],",
        f"                             (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32{prec})",
        "    acc_ref[...] += pv",
        "",
        "",
        "def _retention_kernel(ld_ref, win_ref, q_ref, k_ref, v_ref, o_ref, acc_ref, *, scale):",
        "    bq, bk = q_ref.shape[0], k_ref.shape[0]",
        "    hi, qi, ki = pl.program_id(1), pl.program_id(2), pl.program_id(3)",
        "    first_row, first_col = qi * bq, ki * bk",
        "",
        "    @pl.when(ki == 0)",
        "    def _init():",
        "        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)",
        "",
        ("    q = q_ref[...] * scale  # the scale on q: bq x d multiplies, not bq x bk" if fold_scale
         else "    q = q_ref[...]"),
        "    step = functools.partial(_decayed_step, q, k_ref, v_ref, acc_ref, scale=scale,",
        "                             log_decay=ld_ref[hi], first_row=first_row, first_col=first_col)",
        "    # The block's nearest (query, key) distance: beyond the window every weight is 0.",
        "    nearest = first_row - (first_col + bk - 1)",
        "",
        "    @pl.when(jnp.logical_and(nearest >= 0, nearest <= win_ref[hi]))",
        "    def _below():",
        "        step(diagonal=False)",
        "",
        "    # Crossing the diagonal: the causal mask. Wholly above it: skipped (and not fetched).",
        "    @pl.when(jnp.logical_and(nearest < 0, first_col <= first_row + bq - 1))",
        "    def _diagonal():",
        "        step(diagonal=True)",
        "",
        "    @pl.when(ki == pl.num_programs(3) - 1)",
        "    def _finish():",
        "        o_ref[...] = acc_ref[...].astype(o_ref.dtype)",
    ]
    return "\n".join(lines)
