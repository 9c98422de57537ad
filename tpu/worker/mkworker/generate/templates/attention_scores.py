"""What the attention matcher (generate.templates.attention) accepts between the scores and the
softmax besides the scale: a mask (constant, or from a boolean or additive input), a padding
mask, an ALiBi bias, a bias input over some of the axes. A mixin of the Matcher: each method reads
the reference at sampled indices (generate.index) and says what the modifier is, or refuses."""

from __future__ import annotations

import numpy as np

from mkworker.generate import index as X

# A fill or bias at or below this is a masked score: exp of it underflows to 0 in f32, as the
# kernel's skip of a masked block does.
MASK_FLOOR = -1e4


def run_back(chain, idx):
    """Indices into a chain's input for indices into its output (generate.index.back, each op)."""
    for e in chain.eqns:
        idx = X.back(e, idx)
    return idx


class ScoreModifiers:
    """The Matcher's methods for score modifiers (see the module doc)."""

    def _pre_back(self, pre, idx):
        self._mask_points = []
        for e, pos in pre.eqns:
            if e.primitive.name in X.LAYOUT_OPS:
                idx = X.back(e, idx)
            elif any(e is me for me, _, _ in pre.masks):
                self._mask_points.append((e, idx))
        return idx

    # -- the mask ------------------------------------------------------------------------
    def _fill_value(self, pre):
        fills = []
        for e, kind, pos in pre.masks:
            if kind == "select":
                other = e.invars[3 - pos]
                c = self.scalar_const(other)
                if c is not None:
                    fills.append(c)
        return min(fills) if fills else None

    def _mask_kind(self, m, pre) -> bool:
        """True for a causal mask, False for none; anything else is refused. A finite bias that
        is a per-head linear function of the distance (ALiBi) is kept in self.alibi."""
        self.alibi = None
        if not pre.masks:
            return False
        smp = self._samples(m)
        keep = np.ones(len(smp["s"]), dtype=bool)
        added = np.zeros(len(smp["s"]), dtype=np.float64)
        biased_at = []  # chain positions of the biases that add finite values
        points = {id(e): idx for e, idx in self._mask_points}
        self.bias_input = None
        self.mask_input = None
        for e, kind, pos in pre.masks:
            idx = points[id(e)]
            if kind == "input_bias":
                self.bias_input = self._input_axes(e.invars[1 - pos], idx, smp, "bias")
                continue
            if kind == "input_mask":
                other = e.invars[3 - pos]
                fill = self.g.value_at(other, X.operand_index(other, idx)).astype(np.float64)
                if np.any(fill > MASK_FLOOR):
                    self.fail(f"scores masked by an input are filled with {float(np.max(fill))}, "
                              f"not a large negative value", ["select_n"])
                var, roles = self._input_axes(e.invars[0], idx, smp, "mask")
                if self.mask_input is not None:
                    self.fail("the scores are masked by more than one input", ["select_n"])
                self.mask_input = (var, roles, pos - 1)  # kept where the input equals this
                continue
            if kind == "weight":
                self.fail("the scores are multiplied by a position-dependent weight before the "
                          "softmax", ["mul"])
            try:
                if kind == "select":
                    pred = self.g.value_at(e.invars[0], X.operand_index(e.invars[0], idx))
                    other = e.invars[3 - pos]
                    fill = self.g.value_at(other, X.operand_index(other, idx)).astype(np.float64)
                    kept = (np.asarray(pred).astype(np.int64) == pos - 1)
                    if np.any(fill[~kept] > MASK_FLOOR):
                        self.fail(f"masked scores are filled with {float(np.max(fill[~kept]))}, "
                                  f"not a large negative value", ["select_n"])
                    keep &= kept
                else:
                    other = e.invars[1 - pos]
                    bias = self.g.value_at(other, X.operand_index(other, idx)).astype(np.float64)
                    if kind == "neg_bias":
                        bias = -bias
                    masked = bias <= MASK_FLOOR
                    keep &= ~masked
                    finite = np.where(masked, 0.0, bias)
                    if np.any(finite != 0):
                        added += finite
                        biased_at.append(next(i for i, (x, _) in enumerate(pre.eqns) if x is e))
            except X.NotConstant as nc:
                self.fail(f"the mask is computed with {nc}, which the template cannot evaluate",
                          [str(nc)])
        if biased_at:
            self.alibi = self._alibi(m, smp, keep, added, pre, biased_at)
        if keep.all():
            if not self.alibi and any(k in ("select", "bias", "neg_bias") for _, k, _ in pre.masks):
                self.notes.append("the mask keeps every score: treated as no mask")
            return False
        if np.array_equal(keep, smp["s"] >= smp["t"]):
            return True
        self.fail("the mask is neither causal (query index >= key index) nor absent (sliding "
                  "windows, padding and other masks are not covered)", ["select_n"])

    def _input_axes(self, other, idx, smp, what):
        """(input var, role of each of its axes: "b", "h", "s", "t" or None for a size-1 axis)
        of a bias or mask read from an input, found by running the sampled score indices back
        to it."""
        var, chain = self._input_behind(other)
        try:
            at = run_back(chain, X.operand_index(other, idx))
        except (ValueError, IndexError):
            self.fail(f"the {what} input's indices could not be followed back to it", ["add"])
        roles = []
        for a, size in enumerate(X.shape_of(var)):
            col = at[:, a]
            if size == 1 and np.all(col == 0):
                roles.append(None)
                continue
            role = next((r for r in "bhst" if np.array_equal(col, smp[r])), None)
            if role is None:
                self.fail(f"the {what} input is not indexed by (batch, head, query, key) axes (or "
                          "size-1 ones)", ["add"])
            roles.append(role)
        named = [r for r in roles if r]
        if roles.count("s") != 1 or roles.count("t") != 1 or len(set(named)) != len(named):
            self.fail(f"the {what} input does not have exactly one query and one key axis", ["add"])
        if named.index("s") > named.index("t") or named[-2:] != ["s", "t"]:
            self.fail(f"the {what} input's last two axes are not (query, key) in that order (its "
                      "tile is applied to the scores as it is read)", ["add"])
        return var, tuple(roles)

    def _alibi(self, m, smp, keep, added, pre, biased_at) -> tuple:
        """(per-head slopes, form) of a bias slope_h * (key - query) ("signed") or -slope_h *
        |key - query| ("abs") on the kept scores; anything else is refused."""
        # pre.eqns runs from the softmax back to the dot: a scale nearer the softmax than a
        # bias would scale the bias too.
        if any(x.primitive.name in ("mul", "div") for x, _ in pre.eqns[:min(biased_at)]):
            self.fail("the scores are scaled after a position bias is added", ["add"])
        h, rel = smp["h"], (smp["t"] - smp["s"]).astype(np.float64)
        for form, dist in (("signed", rel), ("abs", -np.abs(rel))):
            slopes = []
            for head in range(m["H"]):
                at = keep & (h == head) & (dist != 0)
                if not at.any():
                    self.fail(f"head {head}'s position bias could not be sampled", ["add"])
                d = dist[at]
                slopes.append(float(np.sum(d * added[at]) / np.sum(d * d)))
            want = np.asarray(slopes)[h] * dist
            scale = max(1.0, float(np.max(np.abs(added[keep]))))
            if np.allclose(added[keep], want[keep], rtol=1e-4, atol=1e-5 * scale):
                return tuple(slopes), form
        self.fail("the scores get an additive bias that is neither a 0/-inf mask nor ALiBi's "
                  "slope_h * (key - query)", ["add"])

    # -- emission ------------------------------------------------------------------------
