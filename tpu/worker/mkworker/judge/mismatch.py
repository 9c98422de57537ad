"""The correctness report: when a candidate's outputs differ from the frozen reference's, say where
and how, in facts a model (or a person) can act on. The judge (judge.judge.check) attaches it to the failure.

For each wrong output: its shape and dtype, how many elements are wrong, the first wrong indices
with both values, the largest absolute and relative error against the tolerance, and the pattern
the wrong elements make: NaN/Inf, zeros (never written), whole rows or columns, a constant offset
or scale, a transposed result, and, with the kernel's output block shape (the lowering facts),
which blocks are wrong and whether the wrong region starts and ends on block edges. Plus the seed,
the run order and the input shapes, so the fix can be checked in the head. `text` is the same
report in words, bounded (MAX_TEXT); the host trims it further to its prompt budget."""

from __future__ import annotations

import itertools
import math

import numpy as np

MAX_TEXT = 2400
FIRST = 4  # first wrong indices listed per output


def report(cand_leaves, gold_leaves, tolerances, *, seed, order, input_shapes, blocks=None) -> dict:
    """`tolerances(dtype) -> (rtol, atol)`; `blocks`: {output index: block shape (ints)} where the
    lowering facts know it."""
    outs = []
    for i, (c_raw, r) in enumerate(zip(cand_leaves, gold_leaves)):
        c, r = np.asarray(c_raw), np.asarray(r)
        if c.shape != r.shape or not (_floating(c) and _floating(r)):
            continue  # shape and dtype mismatches are already said exactly by the comparison
        o = _output(i, c, r, *tolerances(r.dtype), (blocks or {}).get(i))
        if o is not None:
            outs.append(o)
    rep = {"seed": seed, "order": order, "input_shapes": input_shapes, "outputs": outs}
    rep["text"] = text(rep)
    return rep


def _floating(a) -> bool:
    return np.issubdtype(a.dtype, np.floating) or a.dtype.name == "bfloat16"


def _output(i, c, r, rtol, atol, block):
    cf, rf = c.astype(np.float64), r.astype(np.float64)
    rfin, cfin = np.isfinite(rf), np.isfinite(cf)
    scale = max(1.0, float(np.max(np.abs(rf[rfin])))) if rfin.any() else 1.0
    allowed_abs = atol * scale
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(cf - rf)
        bad = (rfin & ~cfin) | (rfin & cfin & (err > allowed_abs + rtol * np.abs(rf)))
    n_bad = int(bad.sum())
    if not n_bad:
        return None
    both = rfin & cfin
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = err[both] / np.maximum(np.abs(rf[both]), allowed_abs if allowed_abs > 0 else 1e-30)
    o = {"index": i, "shape": list(r.shape), "dtype": r.dtype.name, "wrong": n_bad, "size": int(r.size),
         "nonfinite": int((rfin & ~cfin).sum()),
         "max_abs_error": _f(np.max(err[both])) if both.any() else None,
         "max_rel_error": _f(np.max(rel)) if rel.size else None,
         "rtol": rtol, "atol": atol, "allowed_abs": allowed_abs,
         "first": [{"index": [int(k) for k in idx], "candidate": _v(c[idx]), "reference": _v(r[idx])}
                   for idx in itertools.islice(zip(*np.nonzero(bad)), FIRST)] if r.ndim else []}
    o["patterns"] = _patterns(cf, rf, bad, rtol, allowed_abs, block)
    return o


def _patterns(cf, rf, bad, rtol, allowed_abs, block) -> list[dict]:
    pats = []
    wrong_c, wrong_r = cf[bad], rf[bad]
    nonfinite = ~np.isfinite(wrong_c)
    if nonfinite.any():
        kinds = sorted({"NaN" if np.isnan(v) else "Inf" for v in wrong_c[nonfinite][:1000]})
        pats.append({"kind": "nonfinite", "detail": f"{int(nonfinite.sum())} wrong elements are "
                                                    f"{'/'.join(kinds)} where the reference is finite"})
    if np.all(wrong_c == 0):
        pats.append({"kind": "zeros", "detail": "the candidate is 0 at every wrong element (an output "
                                                "block never written, or a mask that drops values)"})
    elif not nonfinite.any() and wrong_c.size > 1:
        diff = wrong_c - wrong_r
        if np.ptp(diff) <= allowed_abs + 1e-6 * float(np.max(np.abs(diff))):
            pats.append({"kind": "offset", "detail": f"candidate = reference + {_g(np.mean(diff))} at every "
                                                     f"wrong element (a constant offset)"})
        nz = np.abs(wrong_r) > allowed_abs
        if nz.sum() > 1:
            ratio = wrong_c[nz] / wrong_r[nz]
            if np.ptp(ratio) <= 1e-3 * max(1.0, abs(float(np.mean(ratio)))):
                pats.append({"kind": "scaled", "detail": f"candidate = {_g(np.mean(ratio))} x reference at "
                                                         f"every wrong element (summed/scaled that many times)"})
    if cf.ndim >= 2 and cf.shape[-1] == cf.shape[-2] and not pats_have(pats, "nonfinite"):
        t = np.swapaxes(rf, -1, -2)
        with np.errstate(invalid="ignore", over="ignore"):
            if np.all(np.abs(cf - t) <= allowed_abs + rtol * np.abs(t)):
                pats.append({"kind": "transposed", "detail": "the candidate equals the reference transposed "
                                                             "(last two axes swapped)"})
    if cf.ndim >= 1:
        pats.extend(_lines(bad))
    if block is not None and len(block) == bad.ndim:
        b = _blocks(bad, block)
        if b:
            pats.append(b)
    return pats


def pats_have(pats, kind) -> bool:
    return any(p["kind"] == kind for p in pats)


def _lines(bad) -> list[dict]:
    """Whole rows / columns of the last two axes (leading axes folded into rows)."""
    m = bad.reshape(-1, bad.shape[-1]) if bad.ndim >= 2 else bad.reshape(1, -1)
    out = []
    rows_any, rows_all = m.any(axis=1), m.all(axis=1)
    cols_any, cols_all = m.any(axis=0), m.all(axis=0)
    if bad.ndim >= 2:
        rows = np.nonzero(rows_any)[0]
        whole = bool(np.all(rows_all[rows_any]))
        if rows.size < m.shape[0] or whole:
            out.append({"kind": "rows", "whole": whole, "ranges": _ranges(rows), "count": int(rows.size),
                        "of": int(m.shape[0]),
                        "detail": (f"{'whole ' if whole else ''}row{'s' if rows.size > 1 else ''} "
                                   f"{_ranges_text(rows)} ({rows.size} of {m.shape[0]}"
                                   f"{', leading axes folded in' if bad.ndim > 2 else ''}) "
                                   f"{'are' if rows.size > 1 else 'is'} wrong")})
    cols = np.nonzero(cols_any)[0]
    whole_cols = bad.ndim >= 2 and bool(np.all(cols_all[cols_any])) and m.shape[0] > 1
    if cols.size < m.shape[1] or whole_cols:
        noun = "column" if bad.ndim >= 2 else "element"
        out.append({"kind": "columns" if bad.ndim >= 2 else "elements", "whole": whole_cols,
                    "ranges": _ranges(cols), "count": int(cols.size), "of": int(m.shape[1]),
                    "detail": (f"{'whole ' if whole_cols else ''}{noun}{'s' if cols.size > 1 else ''} "
                               f"{_ranges_text(cols)} ({cols.size} of {m.shape[1]}) "
                               f"{'are' if whole_cols else 'have'} wrong"
                               f"{'' if whole_cols else ' elements'}")})
    return out


def _blocks(bad, block) -> dict | None:
    block = [max(1, int(b)) for b in block]
    grid = [-(-n // b) for n, b in zip(bad.shape, block)]
    padded = np.zeros([g * b for g, b in zip(grid, block)], dtype=bool)
    padded[tuple(slice(0, n) for n in bad.shape)] = bad
    valid = np.zeros_like(padded)
    valid[tuple(slice(0, n) for n in bad.shape)] = True
    split = [x for g, b in zip(grid, block) for x in (g, b)]
    per = padded.reshape(split).sum(axis=tuple(range(1, 2 * len(block), 2)))
    full = valid.reshape(split).sum(axis=tuple(range(1, 2 * len(block), 2)))
    wrong = np.argwhere(per > 0)
    n_blocks = int(np.prod(grid))
    filled = bool(np.all(per[per > 0] == full[per > 0]))
    listed = ", ".join(str(tuple(int(k) for k in w)) for w in wrong[:6]) + (" ..." if len(wrong) > 6 else "")
    edges = []
    for ax, (b, n) in enumerate(zip(block, bad.shape)):
        idx = np.nonzero(bad.any(axis=tuple(a for a in range(bad.ndim) if a != ax)))[0]
        if idx.size and idx.size < n and (idx[0] % b == 0 or (idx[-1] + 1) % b == 0 or idx[-1] + 1 == n):
            starts = [s for s, _ in _ranges(idx)]
            ends = [e + 1 for _, e in _ranges(idx)]
            if n % b and idx[0] >= (n // b) * b:
                edges.append(f"along axis {ax} only the last, partial block is wrong ({n} is not a multiple "
                             f"of {b}: {n % b} left over)")
            elif all(s % b == 0 for s in starts) and all(e % b == 0 or e == n for e in ends):
                edges.append(f"along axis {ax} the wrong region starts and ends on block edges "
                             f"(multiples of {b})")
            else:
                res = np.unique(idx % b)
                if res.size <= 2:
                    edges.append(f"along axis {ax} only offsets {', '.join(map(str, res))} within each "
                                 f"block of {b} are wrong (a block edge)")
    detail = (f"the output block is {tuple(block)} (grid {tuple(grid)}); {len(wrong)} of {n_blocks} blocks "
              f"have wrong elements: {listed}; they {'fill those blocks entirely' if filled else 'are part of those blocks'}"
              + ("; " + "; ".join(edges) if edges else ""))
    return {"kind": "blocks", "block": block, "grid": grid, "wrong_blocks": [[int(k) for k in w] for w in wrong[:16]],
            "of": n_blocks, "filled": filled, "block_edge": bool(edges), "detail": detail}


def _ranges(idx) -> list[list[int]]:
    out = []
    for k in (int(x) for x in idx):
        if out and out[-1][1] == k - 1:
            out[-1][1] = k
        else:
            out.append([k, k])
    return out


def _ranges_text(idx, most=6) -> str:
    rs = _ranges(idx)
    parts = [str(a) if a == b else f"{a}..{b}" for a, b in rs[:most]]
    return ", ".join(parts) + (f" and {len(rs) - most} more ranges" if len(rs) > most else "")


def text(rep) -> str:
    lines = [f"Correctness report (seed {rep['seed']}, {rep['order'].replace('_', ' ')}; inputs "
             + ", ".join(str(tuple(s)) for s in rep.get("input_shapes") or []) + "):"]
    for o in rep["outputs"]:
        lines.append(f"- output {o['index']} {o['dtype']}{o['shape']}: {o['wrong']} of {o['size']} elements wrong"
                     f" ({100.0 * o['wrong'] / max(o['size'], 1):.3g}%), {o['nonfinite']} NaN/Inf; "
                     + (f"max abs error {_g(o['max_abs_error'])}, max rel error {_g(o['max_rel_error'])}"
                        if o["wrong"] > o["nonfinite"] else "every wrong element is NaN/Inf")
                     + f"; allowed |c - r| <= {_g(o['allowed_abs'])} + {_g(o['rtol'])} x |r|")
        if o["first"]:
            lines.append("  first wrong: " + "; ".join(
                f"[{', '.join(map(str, f['index']))}] candidate {_g(f['candidate'])}, reference {_g(f['reference'])}"
                for f in o["first"]))
        for p in o["patterns"]:
            lines.append(f"  pattern ({p['kind']}): {p['detail']}")
    out = "\n".join(lines)
    return out if len(out) <= MAX_TEXT else out[:MAX_TEXT - 20] + "\n[... report cut]"


def _f(x):
    x = float(x)
    return x if math.isfinite(x) else None


def _v(v):
    v = float(np.asarray(v, dtype=np.float64))
    return v if math.isfinite(v) else str(v)


def _g(x) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    return f"{float(x):.4g}"


def output_blocks(facts, shapes) -> dict:
    """{output index: block shape} for each program output whose shape a pallas_call output
    operand has (the lowering facts, cost.facts); squeezed dims count as 1."""
    out = {}
    for i, shape in enumerate(shapes):
        for f in facts or []:
            for op in f.get("operands", []):
                if op.get("role") == "output" and op.get("array_shape") == list(shape) and i not in out:
                    dims = []
                    for d in op.get("block_shape") or []:
                        if isinstance(d, int):
                            dims.append(d)
                        elif isinstance(d, dict) and d:
                            dims.append(int(next(iter(d.values()))))
                        else:
                            dims.append(1)
                    if len(dims) == len(shape):
                        out[i] = dims
    return out
