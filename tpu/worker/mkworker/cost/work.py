"""The whole candidate program's work: what its pallas_calls do and what XLA does around them.

A candidate that does the matmul in XLA and hands the result to a kernel that only copies it
is correct, and a time model that counts only the kernels ranks it far ahead of an honest tiled
kernel. This module counts, from the jaxpr alone (no lowering, no execution, the same on every
host):

- outside the kernels: the FLOPs (dot_general and convolutions as matmul FLOPs, elementwise and
  reduction ops one per element) and the bytes (operands + results of every op that moves data,
  an unfused upper bound) of every XLA op that is not inside a pallas_call;
- inside the kernels: the FLOPs of each kernel body times its grid steps (never the kernel's own
  `cost_estimate`, which the candidate writes), and its HBM traffic from the facts;
- the reference's FLOPs and bytes, counted the same way,

and flags a candidate whose XLA ops outside the kernels do at least SHARE_LIMIT of the
reference's matmul FLOPs (or of its floating-point FLOPs) while its kernels do less than
SHARE_LIMIT of them, or whose host callbacks return data the size of the outputs: "the work is
done outside the kernel". Both halves are needed: a kernel that skips work legitimately
(block-sparse, causal) does less in the kernel but nothing outside; a kernel that does all its
work and a cheap epilogue in XLA does little outside.
"""

from __future__ import annotations

import math

import numpy as np

from mkworker.cost import facts as cost_facts

# A candidate whose XLA ops outside every pallas_call do this share of the reference's matmul
# FLOPs (or, for a reference without matmuls, of its FLOPs) or more, while its kernels do less,
# is not a kernel solution.
SHARE_LIMIT = 0.5

_MATMUL = ("dot_general", "conv_general_dilated", "ragged_dot_general", "ragged_dot")
_ELEMENTWISE = frozenset((
    "add", "add_any", "sub", "mul", "div", "rem", "pow", "integer_pow", "max", "min", "neg", "abs", "sign",
    "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "asinh", "acosh", "atanh", "atan2", "sqrt", "rsqrt", "cbrt", "erf", "erfc", "erf_inv",
    "lgamma", "digamma", "square", "reciprocal", "floor", "ceil", "round", "nextafter", "clamp", "is_finite",
    "eq", "ne", "lt", "le", "gt", "ge", "select_n", "and", "or", "not", "xor", "shift_left",
    "shift_right_logical", "shift_right_arithmetic", "population_count", "exp2", "tan"))
_REDUCTIONS = frozenset(("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
                         "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
                         "cumlogsumexp", "reduce_precision", "sort"))
# Ops that move no data of their own (views, metadata, or always fused into their consumer).
_FREE = frozenset(("reshape", "squeeze", "expand_dims", "broadcast_in_dim", "iota", "bitcast_convert_type",
                   "stop_gradient", "name", "optimization_barrier", "pjit", "jit", "closed_call", "core_call",
                   "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr", "remat", "checkpoint",
                   "debug_callback", "random_wrap", "random_unwrap", "random_seed", "random_bits",
                   "random_fold_in", "random_split"))
_CALLBACKS = frozenset(("pure_callback", "io_callback", "callback"))


def _elems(aval) -> int:
    shape = getattr(aval, "shape", None)
    if shape is None:
        return 0
    try:
        return int(math.prod(int(d) for d in shape))
    except (TypeError, ValueError):
        return 0


def _nbytes(aval) -> int:
    dt = getattr(aval, "dtype", None)
    try:
        size = np.dtype(dt).itemsize
    except Exception:  # noqa: BLE001 - key/semaphore/extended dtypes
        return 0
    return _elems(aval) * size


def _aval(v):
    return getattr(v, "aval", None)


def _floating(vars_) -> bool:
    """FLOPs are floating-point operations: integer and bool arithmetic is not counted."""
    for v in vars_:
        try:
            if np.issubdtype(np.dtype(getattr(_aval(v), "dtype", None)), np.inexact):
                return True
        except TypeError:
            continue
    return False


def _matmul_flops(eqn) -> int:
    name = eqn.primitive.name
    ins = [_aval(v) for v in eqn.invars]
    if name == "dot_general" and len(ins) >= 2:
        (_, rc), (_, rb) = eqn.params["dimension_numbers"]
        rhs = ins[1].shape
        rhs_free = math.prod(int(d) for i, d in enumerate(rhs) if i not in rc and i not in rb)
        return 2 * _elems(ins[0]) * int(rhs_free)
    if name == "conv_general_dilated" and len(ins) >= 2:
        out = _aval(eqn.outvars[0])
        rhs = ins[1]
        dn = eqn.params.get("dimension_numbers")
        out_feature_dim = getattr(dn, "rhs_spec", (0,))[0] if dn is not None else 0
        out_features = int(rhs.shape[out_feature_dim]) or 1
        return 2 * _elems(out) * (_elems(rhs) // out_features)
    if name in ("ragged_dot", "ragged_dot_general") and len(ins) >= 2:
        # lhs [m, k] x rhs [g, k, n]: each row meets one group.
        rhs = ins[1].shape
        return 2 * _elems(ins[0]) * int(rhs[-1]) if len(rhs) else 0
    return 0


class Tally:
    def __init__(self):
        self.flops = 0
        self.matmul_flops = 0
        self.bytes = 0
        self.ops = 0
        self.host_callbacks = 0
        self.callback_bytes = 0
        self.estimated = False
        self.top: list[dict] = []

    def to_json(self, with_top=True) -> dict:
        d = {"flops": self.flops, "matmul_flops": self.matmul_flops, "bytes": self.bytes, "ops": self.ops,
             "estimated": self.estimated}
        if self.host_callbacks:
            d["host_callbacks"] = self.host_callbacks
            d["host_callback_bytes"] = self.callback_bytes
        if with_top:
            d["top_ops"] = sorted(self.top, key=lambda o: (-o["flops"], -o["bytes"]))[:8]
        return d


def _count(jaxpr, tally: Tally, mult: int, *, filename=None, kernels=None, top=True):
    """Adds the work of `jaxpr`'s equations, `mult` times, to `tally`; pallas_calls go to
    `kernels` (a list) instead, when given."""
    if cost_facts.is_closed_jaxpr(jaxpr):
        jaxpr = jaxpr.jaxpr
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == cost_facts.PALLAS_PRIMITIVE:
            if kernels is not None:
                kernels.append((eqn, mult))
            continue
        subs = list(cost_facts.sub_jaxprs(eqn))
        if subs:
            if name == "cond":
                # One branch runs: count the most expensive.
                best = None
                for _, sub in subs:
                    t = Tally()
                    _count(sub, t, 1, filename=filename, kernels=kernels, top=False)
                    if best is None or (t.matmul_flops, t.flops, t.bytes) > (best.matmul_flops, best.flops,
                                                                             best.bytes):
                        best = t
                if best is not None:
                    tally.flops += mult * best.flops
                    tally.matmul_flops += mult * best.matmul_flops
                    tally.bytes += mult * best.bytes
                    tally.ops += best.ops
                    tally.estimated |= best.estimated
                continue
            inner = mult
            if name == "scan":
                inner = mult * int(eqn.params.get("length", 1) or 1)
            elif name == "while":
                tally.estimated = True  # trip count unknown: the body is counted once
            for _, sub in subs:
                _count(sub, tally, inner, filename=filename, kernels=kernels, top=top)
            continue
        if name in _CALLBACKS:
            tally.host_callbacks += 1
            tally.callback_bytes += mult * sum(_nbytes(_aval(v)) for v in eqn.outvars)
        flops = matmul = 0
        if name in _MATMUL:
            matmul = flops = _matmul_flops(eqn)  # integer matmuls are MXU work too
        elif name in _ELEMENTWISE and _floating(eqn.invars):
            flops = sum(_elems(_aval(v)) for v in eqn.outvars)
        elif name in _REDUCTIONS and _floating(eqn.invars):
            flops = sum(_elems(_aval(v)) for v in eqn.invars)
        nbytes = 0
        if name not in _FREE:
            nbytes = sum(_nbytes(_aval(v)) for v in eqn.invars) + sum(_nbytes(_aval(v)) for v in eqn.outvars)
        tally.flops += mult * flops
        tally.matmul_flops += mult * matmul
        tally.bytes += mult * nbytes
        tally.ops += 1
        if top and (flops or nbytes):
            op = {"primitive": name, "flops": mult * flops, "bytes": mult * nbytes}
            loc = cost_facts.user_location(eqn, filename) if filename else None
            if loc:
                op["line"] = loc["line"]
            tally.top.append(op)


def _grid_steps(eqn) -> tuple[int, bool]:
    steps, exact = 1, True
    for g in getattr(eqn.params["grid_mapping"], "grid", ()) or ():
        if isinstance(g, (int, np.integer)):
            steps *= int(g)
        else:
            exact = False
    return steps, exact


def _kernel_work(eqn, mult, fact) -> dict:
    steps, exact = _grid_steps(eqn)
    body = Tally()
    _count(eqn.params["jaxpr"], body, 1, top=False)
    traffic = (fact or {}).get("traffic") or {}
    if traffic.get("available"):
        nbytes = int(traffic.get("hbm_bytes_read_in_bounds", traffic.get("hbm_bytes_read", 0)) or 0) + \
            int(traffic.get("hbm_bytes_written_in_bounds", traffic.get("hbm_bytes_written", 0)) or 0)
    else:
        nbytes = sum(_nbytes(_aval(v)) for v in eqn.invars) + sum(_nbytes(_aval(v)) for v in eqn.outvars)
    return {"kernel": cost_facts.kernel_name(eqn), "grid_steps": steps,
            "flops": mult * steps * body.flops, "matmul_flops": mult * steps * body.matmul_flops,
            "bytes": mult * nbytes, "estimated": body.estimated or not exact or mult != 1}


def program_work(closed_jaxpr, facts=None, filename=None) -> dict:
    """{outside, kernels, total} of a traced program (see the module docstring)."""
    outside = Tally()
    kernels: list = []
    _count(closed_jaxpr, outside, 1, filename=filename, kernels=kernels)
    per_kernel = []
    facts = facts or []
    for i, (eqn, mult) in enumerate(kernels):
        per_kernel.append(_kernel_work(eqn, mult, facts[i] if i < len(facts) else None))
    k = {"flops": sum(p["flops"] for p in per_kernel), "matmul_flops": sum(p["matmul_flops"] for p in per_kernel),
         "bytes": sum(p["bytes"] for p in per_kernel), "estimated": any(p["estimated"] for p in per_kernel),
         "per_kernel": per_kernel}
    o = outside.to_json()
    total = {key: o[key] + k[key] for key in ("flops", "matmul_flops", "bytes")}
    return {"outside": o, "kernels": k, "total": total}


def reference_work(closed_jaxpr, args_avals, out_avals) -> dict:
    t = Tally()
    _count(closed_jaxpr, t, 1, top=False)
    jaxpr = closed_jaxpr.jaxpr if cost_facts.is_closed_jaxpr(closed_jaxpr) else closed_jaxpr
    used = set()
    for eqn in jaxpr.eqns:
        used.update(id(v) for v in eqn.invars)
    used.update(id(v) for v in jaxpr.outvars)
    in_bytes = sum(_nbytes(_aval(v)) for v in jaxpr.invars if id(v) in used)
    out_bytes = sum(_nbytes(a) for a in out_avals)
    d = t.to_json(with_top=False)
    d["min_bytes"] = in_bytes + out_bytes
    d["output_bytes"] = out_bytes
    return d


def _share(part, whole):
    return round(part / whole, 4) if whole else None


def verdict(cand: dict, ref: dict) -> dict | None:
    """The `work_outside_kernel` failure, or None."""
    out, kern = cand["outside"], cand["kernels"]
    checks = []
    if ref.get("matmul_flops"):
        checks.append(("matmul_flops", "matmul FLOPs", out["matmul_flops"], kern["matmul_flops"],
                       ref["matmul_flops"]))
    elif ref.get("flops"):
        checks.append(("flops", "FLOPs", out["flops"], kern["flops"], ref["flops"]))
    if ref.get("matmul_flops") and ref.get("flops"):
        checks.append(("flops", "FLOPs", out["flops"], kern["flops"], ref["flops"]))
    cb = out.get("host_callback_bytes", 0)
    if ref.get("output_bytes") and cb >= SHARE_LIMIT * ref["output_bytes"]:
        msg = (f"the work is done outside the kernel: host callbacks (pure_callback/io_callback) return "
               f"{cb:,} bytes, {cb / ref['output_bytes']:.0%} of the size of the reference's outputs; "
               f"results computed in Python on the host are not the kernel's")
        return {"kind": "work_outside_kernel", "rule": "host_callback", "message": msg}
    for rule, what, outside, inside, whole in checks:
        if outside >= SHARE_LIMIT * whole and inside < SHARE_LIMIT * whole:
            msg = (f"the work is done outside the kernel: XLA ops outside every pallas_call do "
                   f"{outside / whole:.0%} of the reference's {what} ({outside:,} of {whole:,}; the kernels "
                   f"do {inside / whole:.0%}); at most {SHARE_LIMIT:.0%} may run outside the kernels")
            f = {"kind": "work_outside_kernel", "rule": rule, "message": msg}
            lines = [o["line"] for o in out.get("top_ops", []) if o.get("line") and
                     (o["flops"] if rule == "flops" else o["flops"] and o["primitive"] in _MATMUL)]
            if lines:
                f["locations"] = [{"line": lines[0], "column": 1, "message": msg}]
            return f
    return None


def report(cand: dict, ref: dict | None) -> dict:
    """The `work` object of lower and evaluate responses."""
    d = {"candidate": cand, "reference": ref, "share_limit": SHARE_LIMIT, "verdict": None}
    if ref:
        d["share"] = {
            "kernels_flops": _share(cand["kernels"]["flops"], ref["flops"]),
            "kernels_matmul_flops": _share(cand["kernels"]["matmul_flops"], ref["matmul_flops"]),
            "outside_flops": _share(cand["outside"]["flops"], ref["flops"]),
            "outside_matmul_flops": _share(cand["outside"]["matmul_flops"], ref["matmul_flops"]),
            "kernels_bytes": _share(cand["kernels"]["bytes"], cand["kernels"]["bytes"] + cand["outside"]["bytes"]),
        }
        d["verdict"] = verdict(cand, ref)
    return d


# ---------------------------------------------------------------------------
# Faster than the hardware allows.

def roofline(ref: dict, hardware: dict) -> dict | None:
    """The least time any program computing the task needs on `hardware`: the reference's
    matmul FLOPs at the peak, and its used inputs plus its outputs moved once at the HBM
    bandwidth (whichever is longer). None without numbers."""
    if not isinstance(hardware, dict):
        return None
    try:
        peak = float(hardware.get("peak_flops_per_s") or 0)
        bw = float(hardware.get("hbm_bandwidth_bytes_per_s") or 0)
    except (TypeError, ValueError):
        return None
    if peak <= 0 and bw <= 0:
        return None
    flops = int(ref.get("matmul_flops") or 0)
    nbytes = int(ref.get("min_bytes") or 0)
    compute = flops / peak if peak > 0 else 0.0
    memory = nbytes / bw if bw > 0 else 0.0
    return {"target": hardware.get("name"), "flops": flops, "bytes": nbytes, "compute_s": compute,
            "memory_s": memory, "min_s": max(compute, memory),
            "peak_flops_per_s": peak, "hbm_bandwidth_bytes_per_s": bw}


def below_roofline(measured_s: float, roof: dict | None) -> dict | None:
    """The `faster_than_hardware` failure when `measured_s` is below the roofline."""
    if not roof or not roof["min_s"] or measured_s is None or measured_s >= roof["min_s"]:
        return None
    name = roof.get("target") or "the target"
    msg = (f"the measured time {measured_s:.3g} s is below what {name} allows for this task "
           f"({roof['min_s']:.3g} s: {roof['flops']:,} matmul FLOPs at {roof['peak_flops_per_s']:.3g} FLOP/s, "
           f"{roof['bytes']:,} bytes at {roof['hbm_bandwidth_bytes_per_s']:.3g} B/s); the measurement "
           f"cannot be the kernel's (work skipped or results kept from earlier calls?)")
    return {"kind": "faster_than_hardware", "message": msg}
