"""The attention class's shared matcher: softmax(q k^T * scale [+ causal mask]) v, written as a
flash-attention kernel by the TPU emitter (generate.templates.attention_tpu) or the GPU emitter
(generate.templates.attention_gpu), chosen by the generate op (ops.generate).

Recognised, on the jaxpr (nested calls inlined):
  two dot_generals, the second reading the first through a softmax over the last (kv) axis;
  between the first dot and the softmax only converts, transposes that keep the kv axis last,
  multiplications/divisions by a constant scalar (the scale; also on q or k before the dot),
  and a constant mask (select_n with a constant predicate and fill, or a constant additive bias);
  q, k, v reach the dots through layout ops only (transpose, reshape, broadcast_in_dim: head
  repeats for GQA, converts); the output leaves the second dot through layout ops only.
Checked, not assumed:
  the layout of q, k, v (batch, heads, seq, head_dim) or (batch, seq, heads, head_dim), of the
  output (either, or (batch, seq, heads*head_dim)) and the kv head of each q head (h // group for
  jnp.repeat, h % kv_heads for jnp.tile) are found by running the reference's index maps
  backwards on samples (generate.index) against each candidate model: exactly one must match;
  the softmax slice is re-stated as a row program and compared numerically with a softmax;
  the mask, evaluated at the sampled indices, must be exactly causal (q >= k) or absent, and a
  fill/bias must be <= -1e4 (exp of it underflows to 0 in f32, as the kernel's skip does).
Anything else with this shape (another mask, soft-capping, dropout, a bias from an input, a
projection after the attention) is refused with the reason.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mkworker.generate import common as G
from mkworker.generate import index as X
from mkworker.generate import rows as R
from mkworker.generate.templates.attention_scores import (
    ScoreModifiers,
    run_back,
)

LAYOUTS4 = ("bhsd", "bshd")
OUT_LAYOUTS = ("bhsd", "bshd", "bs(hd)")
SAMPLES = 3000


class Matched(NamedTuple):
    """An attention the class covers, as both emitters take it: the matcher (its context,
    notes, scale and precision text), the layout model `m` (dims, layouts, head map), the mask
    kind, the scale, and the q, k, v and output vars."""
    matcher: object
    m: dict
    causal: bool
    scale: float
    q_var: object
    k_var: object
    v_var: object
    out_var: object


def match(ctx: G.GenContext) -> Matched | None:
    eqns = R.reachable_eqns(ctx.jaxpr)
    dots = [e for e in eqns if e.primitive.name == "dot_general"]
    names = {e.primitive.name for e in eqns}
    if len(dots) != 2 or not {"exp", "reduce_sum"} <= names:
        return None
    graph = X.Graph(ctx.closed_jaxpr)
    d1, d2 = dots
    s_var = d1.outvars[0]
    if not any(graph.depends_on_var(v, s_var) for v in d2.invars):
        return None  # two independent matmuls: not attention
    if not any(graph.depends_on_var(e.invars[0], s_var)
               and any(graph.depends_on_var(v, e.outvars[0]) for v in d2.invars)
               for e in eqns if e.primitive.name == "exp"):
        # No exp between the matmuls (e.g. matmul, sigmoid, matmul, then a logsumexp): the
        # second matmul does not read a softmax of the first, so this is not attention.
        return None
    return Matcher(ctx, graph, eqns, d1, d2).build()


class Parts(NamedTuple):
    """The operands of an attention-shaped reference, traced (Matcher.operands)."""
    out_var: object
    out_chain: object
    x_var: object  # where the scores' chain ends
    pre: object  # the scores' chain (Chain): scale, masks, weights
    p_side: int
    p_var: object
    p_chain: object
    v_var: object
    v_chain: object
    score_sides: list  # [(var, chain)] for both operands of the scores matmul
    scale: float


class Chain:
    """A path of layout equations from a value back to its source, with the scale factors met
    and the masks met (pre-softmax chain only)."""

    def __init__(self):
        self.eqns: list = []  # layout equations, from the far end towards the source
        self.scale = 1.0
        self.masks: list = []  # (eqn, kind, chain_operand_index)


class Matcher(ScoreModifiers):
    def __init__(self, ctx, graph, eqns, d1, d2):
        self.ctx, self.g, self.eqns, self.d1, self.d2 = ctx, graph, eqns, d1, d2
        self.accounted = {id(d1), id(d2)}
        self.notes: list[str] = []
        self.alibi = None  # (per-head slopes, "signed" | "abs") when the scores get ALiBi's bias
        self.bias_input = None  # (input var, axis roles) when the scores get a bias from an input
        self.mask_input = None  # (input var, axis roles, kept value) when an input masks them

    def fail(self, message, prims=()):
        # The dispatcher prefixes "it looks like attention, but": the message is the reason.
        raise G.NoTemplate(message, list(prims))

    # -- chains ------------------------------------------------------------------------
    def scalar_const(self, v):
        """The value of a constant scalar operand (a literal, a 0-d constant, or a scalar
        broadcast), else None."""
        if X.is_literal(v):
            a = np.asarray(v.val)
            return float(a) if a.shape == () else None
        if not self.g.is_const(v):
            return None
        e = self.g.producer.get(v)
        while e is not None and e.primitive.name in ("broadcast_in_dim", "convert_element_type") \
                and not X.shape_of(e.invars[0]):
            v = e.invars[0]
            if X.is_literal(v):
                return float(np.asarray(v.val))
            e = self.g.producer.get(v)
        if v in self.g.consts and np.asarray(self.g.consts[v]).shape == ():
            return float(np.asarray(self.g.consts[v]))
        if not X.shape_of(v):
            try:
                return float(self.g.value_at(v, np.zeros((1, 0), dtype=np.int64))[0])
            except X.NotConstant:
                return None
        return None

    def back_chain(self, v, allow_scale: bool) -> tuple[object, Chain]:
        """Walks from `v` back through layout ops (and constant-scalar scaling when allowed) to
        the first value made by anything else; returns it and the chain."""
        chain = Chain()
        while True:
            e = self.g.producer.get(v)
            if e is None:
                return v, chain
            name = e.primitive.name
            if name in X.LAYOUT_OPS:
                if name == "convert_element_type" and not _float(e.outvars[0]):
                    return v, chain
                chain.eqns.append(e)
                self.accounted.add(id(e))
                v = e.invars[0]
                continue
            if allow_scale and name in ("mul", "div"):
                a, b = e.invars
                cb, ca = self.scalar_const(b), self.scalar_const(a)
                if cb is not None and not self.g.is_const(a):
                    chain.scale *= cb if name == "mul" else 1.0 / cb  # the index is unchanged
                    self.accounted.add(id(e))
                    v = a
                    continue
                if name == "mul" and ca is not None and not self.g.is_const(b):
                    chain.scale *= ca
                    self.accounted.add(id(e))
                    v = b
                    continue
            return v, chain

    def _input_behind(self, v):
        """The input `v` is read from through layout ops only (and its chain), else None."""
        src, chain = self.back_chain(v, allow_scale=False)
        if src not in list(self.ctx.jaxpr.invars):
            for e in chain.eqns:
                self.accounted.discard(id(e))
            return None
        return src, chain

    def forward_scores(self):
        """From the first dot's result forward through converts, layout ops that keep the last
        axis last, constant scaling and constant masks, to the softmax input."""
        v = self.d1.outvars[0]
        chain = Chain()
        steps = []  # (eqn, operand index of the chain value)
        while True:
            users = self.g.consumers.get(v, [])
            if len(users) != 1 or users[0] is None:
                break
            e = users[0]
            name = e.primitive.name
            pos = [i for i, x in enumerate(e.invars) if x is v]
            if len(pos) != 1:
                break
            pos = pos[0]
            others = [x for i, x in enumerate(e.invars) if i != pos]
            if name in X.CONVERTS:
                if name == "convert_element_type" and not _float(e.outvars[0]):
                    break
            elif name == "transpose":
                pass  # where the key axis ends up is checked on the index samples
            elif name in ("broadcast_in_dim", "reshape", "squeeze", "expand_dims"):
                # Only adding or dropping unit dims (jnp.matmul's batch handling): the same
                # elements in the same order.
                a, o = X.shape_of(v), X.shape_of(e.outvars[0])
                if math.prod(a) != math.prod(o) or not a or not o \
                        or [d for d in a if d != 1] != [d for d in o if d != 1]:
                    break
            elif name in ("mul", "div") and len(others) == 1:
                c = self.scalar_const(others[0])
                if c is None and name == "mul" and self.g.is_const(others[0]):
                    # A weight that depends on the position only (a decay): the retention
                    # class takes it; a softmax after it is refused in _mask_kind.
                    chain.masks.append((e, "weight", pos))
                elif c is None or (name == "div" and pos != 0):
                    break
                else:
                    chain.scale *= c if name == "mul" else 1.0 / c
            elif name == "select_n" and len(e.invars) == 3 and pos in (1, 2) \
                    and all(self.g.is_const(x) for x in others):
                chain.masks.append((e, "select", pos))
            elif name == "select_n" and len(e.invars) == 3 and pos in (1, 2) \
                    and self.g.is_const(e.invars[3 - pos]) \
                    and self._input_behind(e.invars[0]) is not None:
                # A mask read from an input (padding, documents): the kernel reads its tile.
                chain.masks.append((e, "input_mask", pos))
            elif name == "add" and len(others) == 1 and self.g.is_const(others[0]):
                chain.masks.append((e, "bias", pos))
            elif name == "add" and len(others) == 1 and self._input_behind(others[0]) is not None:
                # A bias read from an input (a relative-position bias, an additive mask): the
                # kernel reads its (q block, kv block) tile.
                chain.masks.append((e, "input_bias", pos))
            elif name == "sub" and pos == 0 and self.g.is_const(others[0]):
                chain.masks.append((e, "neg_bias", pos))
            else:
                break
            steps.append((e, pos))
            self.accounted.add(id(e))
            v = e.outvars[0]
        chain.eqns = list(reversed(steps))  # from the softmax input back to the dot
        return v, chain

    # -- the softmax slice ---------------------------------------------------------------
    def softmax_region(self, x_var, p_var):
        """The equations from x_var to p_var; they must read nothing else but constants."""
        region, seen, stack = [], set(), [p_var]
        while stack:
            v = stack.pop()
            if X.is_literal(v) or v is x_var or v in seen:
                continue
            seen.add(v)
            e = self.g.producer.get(v)
            if e is None:
                self.fail("the softmax reads another input besides the scores (an input is "
                          "covered only as a bias added to them, reached through layout ops)")
            if self.g.is_const(v):
                continue
            if id(e) not in {id(r) for r in region}:
                region.append(e)
            stack.extend(e.invars)
        order = {id(e): i for i, e in enumerate(self.ctx.jaxpr.eqns)}
        region.sort(key=lambda e: order[id(e)])
        # Constant helpers used inside (broadcast scalars) come along.
        consts = []
        for e in region:
            for x in e.invars:
                if not X.is_literal(x) and self.g.is_const(x):
                    consts.extend(_const_eqns(self.g, x))
        full = {id(e): e for e in consts + region}
        return sorted(full.values(), key=lambda e: order[id(e)])

    def check_softmax(self, x_var, p_var, region, fill):
        shape = X.shape_of(x_var)
        n = shape[-1]
        prog = R.RowProgram(shape[:-1], n, lead_perm_free=True)
        prog.bind_input(x_var, "row", "x")
        try:
            for e in region:
                self.accounted.add(id(e))
                prog.emit(e)
            out = prog.store_text(p_var, ("rows", "n"))
        except R.Unsupported as u:
            self.fail(f"what lies between the two matmuls is not a softmax over the key axis "
                      f"({u.message})", [u.primitive] if u.primitive else [])
        src = "def _softmax_probe(x):\n    rows, n = x.shape\n" + G.indent(
            "\n".join(prog.lines + [f"return {out}"])) + "\n"
        ns = {"jax": jax, "jnp": jnp}
        exec(compile(src, "<softmax probe>", "exec"), ns)  # noqa: S102 - text we generated
        rng = np.random.default_rng(0)
        x = rng.standard_normal((8, n)).astype(np.float32) * 3.0
        x[4:, n // 2:] = fill if fill is not None else -np.inf
        x[6, :] += 40.0
        with jax.default_device(jax.devices("cpu")[0]):
            got = np.asarray(jax.jit(ns["_softmax_probe"])(jnp.asarray(x)), dtype=np.float64)
            want = np.asarray(jax.nn.softmax(jnp.asarray(x), axis=-1), dtype=np.float64)
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-6):
            self.fail("the slice between the scores and the second matmul is not a softmax over "
                      "the last axis (checked numerically)", sorted({e.primitive.name for e in region}))
        perm = prog.values[p_var].perm
        if perm is None or prog.values[p_var].domain != "row":
            self.fail("the probabilities do not depend on the scores row by row")
        return perm

    # -- build ---------------------------------------------------------------------------
    def build(self) -> Matched:
        parts = self.operands()
        fill = self._fill_value(parts.pre)
        region = self.softmax_region(parts.x_var, parts.p_var)
        # Which score axis each leading axis of the probabilities runs along (the softmax may
        # transpose its rows, as jax.nn.dot_product_attention does).
        self._p_perm = self.check_softmax(parts.x_var, parts.p_var, region, fill)
        self._check_accounted()
        model, q_var, k_var, causal = self.reading(parts, self._mask_kind)
        return Matched(self, model, causal, parts.scale, q_var, k_var, parts.v_var, parts.out_var)

    def operands(self) -> Parts:
        """The output, the scores' chain and the operands of both matmuls, each traced back
        through layout ops to an input (what both the softmax and the retention readings take)."""
        ctx, g = self.ctx, self.g
        if len(ctx.jaxpr.outvars) != 1:
            self.fail("it returns more than one array")
        out_var = ctx.jaxpr.outvars[0]
        if X.is_literal(out_var):
            self.fail("it returns a constant")
        # The output leaves the second dot through layout ops.
        o_src, out_chain = self.back_chain(out_var, allow_scale=False)
        if o_src is not self.d2.outvars[0]:
            self.fail(f"the output is not the second matmul's result re-laid out (it goes through "
                      f"`{g.producer[o_src].primitive.name}`)" if o_src in g.producer else
                      "the output is not the second matmul's result")
        # Scores: dot -> [scale, mask, weight, converts] -> softmax input (or the second dot).
        x_var, pre = self.forward_scores()
        # Which operand of the second dot carries the probabilities.
        sides = [self.back_chain(v, allow_scale=False) for v in self.d2.invars]
        p_side = [i for i, v in enumerate(self.d2.invars) if g.depends_on_var(v, self.d1.outvars[0])]
        if len(p_side) != 1:
            self.fail("both operands of the second matmul depend on the scores")
        p_side = p_side[0]
        p_var, p_chain = sides[p_side]
        v_var, v_chain = sides[1 - p_side]
        if len(X.shape_of(p_var)) != len(X.shape_of(x_var)):
            self.fail("the probabilities are reshaped before the second matmul")
        score_sides = [self.back_chain(v, allow_scale=True) for v in self.d1.invars]
        invars = list(ctx.jaxpr.invars)
        for what, var in (("q/k", score_sides[0][0]), ("k/q", score_sides[1][0]), ("v", v_var)):
            if var not in invars:
                e = g.producer.get(var)
                self.fail(f"{what} reaches the matmul through `{e.primitive.name if e else '?'}`, "
                          f"not only layout ops", [e.primitive.name] if e else [])
        scale = score_sides[0][1].scale * score_sides[1][1].scale * pre.scale
        return Parts(out_var, out_chain, x_var, pre, p_side, p_var, p_chain, v_var, v_chain,
                     score_sides, scale)

    def reading(self, parts: Parts, mask_kind):
        """The layout model, q and k, and what `mask_kind(model, pre)` says of the masks, for
        the first reading of the operands whose masks it accepts."""
        # q is usually the first operand of the scores matmul, but einsum may put k first.
        models, first_error = [], None
        pre, score_sides = parts.pre, parts.score_sides
        for q_side in (0, 1):
            (q_var, q_chain), (k_var, k_chain) = score_sides[q_side], score_sides[1 - q_side]
            self.q_side = q_side
            try:
                found = self._find_model(q_var, k_var, parts.v_var, parts.out_var, parts.out_chain,
                                         parts.p_side, parts.p_chain, parts.v_chain, pre, q_chain,
                                         k_chain)
            except G.NoTemplate as e:
                first_error = first_error or e
                continue
            models += [(m, q_side) for m in found]
        if not models:
            raise first_error
        first_error = None
        for model, q_side in models:
            (q_var, q_chain), (k_var, k_chain) = score_sides[q_side], score_sides[1 - q_side]
            self.q_side = q_side
            # Re-run this reading's index maps: they leave the mask's sample points behind.
            self._model_holds(model, parts.out_chain, parts.p_side, parts.p_chain, parts.v_chain,
                              pre, q_chain, k_chain, q_var, k_var, parts.v_var)
            try:
                kind = mask_kind(model, pre)
            except G.NoTemplate as e:
                first_error = first_error or e
                continue
            return model, q_var, k_var, kind
        raise first_error

    def _check_accounted(self):
        rest = [e for e in self.eqns if id(e) not in self.accounted
                and not all(self.g.is_const(o) for o in e.outvars)]
        if rest:
            prims = sorted({e.primitive.name for e in rest})
            self.fail(f"it also computes {', '.join(prims)} outside the attention pattern", prims)

    # -- the model: layouts and head mapping --------------------------------------------
    def _find_model(self, q_var, k_var, v_var, out_var, out_chain, p_side, p_chain, v_chain,
                    pre, q_chain, k_chain):
        qs, ks, vs, os_ = (X.shape_of(v) for v in (q_var, k_var, v_var, out_var))
        if not (len(qs) == len(ks) == len(vs) == 4):
            self.fail(f"q, k, v are not 4-D (shapes {qs}, {ks}, {vs}); the template covers "
                      f"(batch, heads, seq, head_dim) and (batch, seq, heads, head_dim)")
        found = []
        for ql, kl, vl in itertools.product(LAYOUTS4, repeat=3):
            b, h, s, d = _dims(qs, ql)
            bk, kvh, t, dk = _dims(ks, kl)
            bv, kvh2, t2, dv = _dims(vs, vl)
            if (b, d, t, kvh) != (bk, dk, t2, kvh2) or bv != b or h % kvh:
                continue
            # One kv head, or one per q head: h // group and h % kv_heads are the same map.
            hmaps = ["repeat"] if kvh in (1, h) else ["repeat", "tile"]
            for ol in OUT_LAYOUTS:
                if _out_shape(ol, b, h, s, dv) != os_:
                    continue
                for hm in hmaps:
                    m = {"q": ql, "k": kl, "v": vl, "out": ol, "hmap": hm, "B": b, "H": h, "S": s, "D": d, "KVH": kvh,
                             "T": t, "DV": dv}
                    if self._model_holds(m, out_chain, p_side, p_chain, v_chain, pre, q_chain,
                                         k_chain, q_var, k_var, v_var):
                        found.append(m)
        if not found:
            self.fail("the q/k/v/output layouts could not be matched to (batch, heads, seq, dim) "
                      "or (batch, seq, heads, dim) with one kv head per group of q heads")
        # Several readings can hold when shapes allow it (one kv head: q heads and q positions
        # are interchangeable). Each was checked index by index, so each is a correct reading;
        # the mask (checked next, per reading) decides, then the longer sequence (better tiles).
        return sorted(found, key=lambda m: -m["S"])

    def _samples(self, m):
        rng = np.random.default_rng(1234)
        B, H, S, T, D, DV = m["B"], m["H"], m["S"], m["T"], m["D"], m["DV"]
        n = SAMPLES
        cols = {
            "b": rng.integers(0, B, n), "h": rng.integers(0, H, n), "s": rng.integers(0, S, n),
            "t": rng.integers(0, T, n), "c": rng.integers(0, D, n), "e": rng.integers(0, DV, n)}
        # Every head of every batch, the corners, and the band around the diagonal.
        bh = np.array(list(itertools.product(range(B), range(H))))
        extra = {"b": bh[:, 0], "h": bh[:, 1]}
        k = len(bh)
        extra.update({"s": rng.integers(0, S, k), "t": rng.integers(0, T, k),
                      "c": np.full(k, D - 1), "e": np.full(k, DV - 1)})
        diag_s = rng.integers(0, S, n)
        band = {"b": rng.integers(0, B, n), "h": rng.integers(0, H, n), "s": diag_s,
                "t": np.clip(diag_s + rng.integers(-2, 3, n), 0, T - 1),
                "c": rng.integers(0, D, n), "e": rng.integers(0, DV, n)}
        # Per head a key one and two before the query (where a per-head slope is read).
        near = {"b": np.zeros(2 * H, np.int64), "h": np.repeat(np.arange(H), 2),
                "s": np.tile([min(2, S - 1), min(2, S - 1)], H),
                "t": np.tile([min(1, T - 1), 0], H), "c": np.zeros(2 * H, np.int64),
                "e": np.zeros(2 * H, np.int64)}
        extra = {key: np.concatenate([value, near[key]]) for key, value in extra.items()}
        rows = np.concatenate([np.full(T, S - 1), np.full(T, S // 2), np.zeros(T, dtype=np.int64)])
        full_rows = {"b": np.full(len(rows), B - 1), "h": np.full(len(rows), H - 1), "s": rows,
                     "t": np.tile(np.arange(T), 3), "c": np.zeros(len(rows), dtype=np.int64),
                     "e": np.zeros(len(rows), dtype=np.int64)}
        return {key: np.concatenate([cols[key], extra[key], band[key], full_rows[key]]).astype(np.int64)
                for key in cols}

    def _model_holds(self, m, out_chain, p_side, p_chain, v_chain, pre, q_chain, k_chain,
                     q_var, k_var, v_var) -> bool:
        smp = self._samples(m)
        b, h, s, t, c, e = (smp[k] for k in "bhstce")
        hk = h // (m["H"] // m["KVH"]) if m["hmap"] == "repeat" else h % m["KVH"]
        try:
            o = _out_index(m["out"], m, b, h, s, e)
            o = run_back(out_chain, o)
            lhs, rhs = _dot_back(self.d2, o, t)
            p_idx, v_idx = (lhs, rhs) if p_side == 0 else (rhs, lhs)
            p_idx = run_back(p_chain, p_idx)
            v_idx = run_back(v_chain, v_idx)
            if not np.array_equal(v_idx, _in_index(m["v"], b, hk, t, e)):
                return False
            if not np.array_equal(p_idx[:, -1], t):
                return False
            x_idx = np.empty_like(p_idx)
            for i, a in enumerate(self._p_perm):
                x_idx[:, a] = p_idx[:, i]
            x_idx[:, -1] = p_idx[:, -1]
            p_idx = x_idx
            s_idx = self._pre_back(pre, p_idx)
            ql, kl = _dot_back(self.d1, s_idx, c)
            if self.q_side == 1:
                ql, kl = kl, ql
            ql = run_back(q_chain, ql)
            kl = run_back(k_chain, kl)
        except (ValueError, IndexError):
            return False
        return bool(np.array_equal(ql, _in_index(m["q"], b, h, s, c))
                    and np.array_equal(kl, _in_index(m["k"], b, hk, t, c)))

    def precision_text(self) -> str | None:
        """The reference's dot precision as Mosaic takes it (G.mosaic_precision)."""
        precs = [e.params.get("precision") for e in (self.d1, self.d2)]
        return G.mosaic_precision_code(precs)

    def scale_text(self, scale, d):
        for name, val in self.ctx.static_args.items():
            if isinstance(val, (int, float)) and not isinstance(val, bool):
                if R.f32_equal(val, scale):
                    return name, [name]
                if val and R.f32_equal(1.0 / val, scale):
                    return f"1.0 / {name}", [name]
        if R.f32_equal(scale, 1.0 / math.sqrt(d)):
            return "head_dim ** -0.5", []  # follows a smaller instance
        if R.f32_equal(scale, 1.0):
            return "1.0", []
        return G.literal(scale), []



# ---------------------------------------------------------------------------
# Index helpers.

def _float(v) -> bool:
    return jnp.issubdtype(np.dtype(v.aval.dtype), np.floating)


def _dims(shape, layout):
    if layout == "bhsd":
        return shape
    b, s, h, d = shape
    return b, h, s, d


def _out_shape(layout, b, h, s, d):
    return {"bhsd": (b, h, s, d), "bshd": (b, s, h, d), "bs(hd)": (b, s, h * d)}[layout]


def _in_index(layout, b, h, s, d):
    cols = (b, h, s, d) if layout == "bhsd" else (b, s, h, d)
    return np.stack(cols, axis=1)


def _out_index(layout, m, b, h, s, d):
    if layout == "bs(hd)":
        return np.stack((b, s, h * m["DV"] + d), axis=1)
    return _in_index(layout, b, h, s, d)


def _dot_back(e, idx, contract):
    """Indices into both operands of a dot_general for indices into its result, with the
    contracted coordinate `contract` (one contracting dim per side)."""
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    if len(lc) != 1 or len(rc) != 1:
        raise ValueError("more than one contracting dim")
    ls, rs = X.shape_of(e.invars[0]), X.shape_of(e.invars[1])
    lfree = [i for i in range(len(ls)) if i not in lc and i not in lb]
    rfree = [i for i in range(len(rs)) if i not in rc and i not in rb]
    nb = len(lb)
    L = np.zeros((len(idx), len(ls)), dtype=np.int64)
    Rr = np.zeros((len(idx), len(rs)), dtype=np.int64)
    for k, (a, b) in enumerate(zip(lb, rb)):
        L[:, a] = idx[:, k]
        Rr[:, b] = idx[:, k]
    for k, a in enumerate(lfree):
        L[:, a] = idx[:, nb + k]
    for k, b in enumerate(rfree):
        Rr[:, b] = idx[:, nb + len(lfree) + k]
    L[:, lc[0]] = contract
    Rr[:, rc[0]] = contract
    if np.any(L >= np.array(ls)) or np.any(Rr >= np.array(rs)):
        raise IndexError("index out of range")
    return L, Rr


def _const_eqns(g, v) -> list:
    out, stack, seen = [], [v], set()
    while stack:
        x = stack.pop()
        if X.is_literal(x) or x in seen:
            continue
        seen.add(x)
        e = g.producer.get(x)
        if e is not None:
            out.append(e)
            stack.extend(e.invars)
    return out
