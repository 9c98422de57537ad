"""Profiling: wrap each pallas_call in a named scope, capture a
jax.profiler trace, and read the Perfetto JSON (trace.json.gz) it writes,
so no protobuf dependency is needed for the .xplane.pb.

Attribution works through the compiled HLO: every op of the ENTRY
computation carries an op_name metadata string; ops created for a
pallas_call carry our scope `mk_pallas_<index>_<kernel>` in it.  Trace
events are matched to ENTRY ops by name (and by hlo_module when the event
says which module it belongs to), so nested events (the body of a while
loop, fusion internals) are never counted twice.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import json
import os
import re

import jax
from jax.extend import core as _jex_core

from mkworker.cost import device_events as cost_device_events
from mkworker.cost import eqn as cost_eqn
from mkworker.cost import facts

_Literal = _jex_core.Literal

SCOPE_PREFIX = "mk_pallas_"
_SCOPE_RE = re.compile(SCOPE_PREFIX + r"(\d+)_([A-Za-z0-9_]*)")
RUN_ANNOTATION = "maxkernel.run"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)[:60] or "kernel"


def scoped_function(closed_jaxpr):
    """A function evaluating `closed_jaxpr` with each pallas_call (also
    inside nested jit/pjit calls, which are inlined) bound under
    jax.named_scope('mk_pallas_<i>_<kernel>').  Returns (fn, kernels)."""
    kernels: list[str] = []

    def ev(jaxpr, consts, args):
        env = {}

        def read(v):
            return v.val if isinstance(v, _Literal) else env[v]

        for v, c in zip(jaxpr.constvars, consts):
            env[v] = c
        for v, a in zip(jaxpr.invars, args):
            env[v] = a
        for eqn in jaxpr.eqns:
            inv = [read(v) for v in eqn.invars]
            name = eqn.primitive.name
            ctx = getattr(getattr(eqn, "ctx", None), "manager", None) or contextlib.nullcontext()
            if name == facts.PALLAS_PRIMITIVE:
                idx = len(kernels)
                kname = facts.kernel_name(eqn)
                kernels.append(kname)
                with jax.named_scope(f"{SCOPE_PREFIX}{idx}_{_safe(kname)}"), ctx:
                    outs = eqn.primitive.bind(*inv, **eqn.params)
            elif name in ("pjit", "jit") and "jaxpr" in eqn.params:
                sub = eqn.params["jaxpr"]
                outs = ev(sub.jaxpr, sub.consts, inv)
            else:
                with ctx:
                    outs = cost_eqn.bind(eqn, inv)
            cost_eqn.store_results(env, eqn, outs)
        return [read(v) for v in jaxpr.outvars]

    def fn(*flat_args):
        kernels.clear()
        return ev(closed_jaxpr.jaxpr, closed_jaxpr.consts, flat_args)

    return fn, kernels


_INSTR_RE = re.compile(r"^\s*(?:ROOT\s+)?%?([A-Za-z0-9_.\-]+)\s*=")
_OPNAME_RE = re.compile(r'op_name="([^"]*)"')


def entry_ops(hlo_text: str) -> tuple[str | None, dict[str, str]]:
    """(module name, {ENTRY op name: op_name metadata})."""
    m = re.search(r"^HloModule\s+([^\s,]+)", hlo_text, re.MULTILINE)
    module = m.group(1) if m else None
    ops: dict[str, str] = {}
    in_entry = False
    for line in hlo_text.splitlines():
        if line.startswith("ENTRY"):
            in_entry = True
            continue
        if in_entry:
            if line.startswith("}"):
                break
            mi = _INSTR_RE.match(line)
            if mi:
                mo = _OPNAME_RE.search(line)
                ops[mi.group(1)] = mo.group(1) if mo else ""
    return module, ops


def find_trace_file(trace_dir: str) -> tuple[str | None, str | None]:
    """(perfetto/trace json.gz, xplane.pb) under a jax.profiler output dir."""
    files = sorted(glob.glob(os.path.join(trace_dir, "**", "*"), recursive=True), key=os.path.getmtime)
    perfetto = [f for f in files if f.endswith("perfetto_trace.json.gz")]
    tracejson = [f for f in files if f.endswith(".trace.json.gz")]
    xplane = [f for f in files if f.endswith(".xplane.pb")]
    js = (perfetto or tracejson or [None])[-1]
    return js, (xplane[-1] if xplane else None)


def _load_events(path: str):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, dict):
        return data.get("traceEvents", [])
    return data


def summarize(trace_path: str, module: str | None, ops: dict[str, str], kernels: list[str],
              runs: int, platform: str) -> dict:
    events = _load_events(trace_path)
    rows = cost_device_events.DeviceRows(events)
    procs = rows.procs
    run_walls = []
    matched = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        name = str(e.get("name", ""))
        dur = float(e.get("dur", 0.0) or 0.0)
        if name.startswith(RUN_ANNOTATION):
            run_walls.append(dur)
            continue
        args = e.get("args") or {}
        hmod = args.get("hlo_module")
        if module and hmod and hmod != module:
            continue
        op = args.get("hlo_op") or name
        op = op.lstrip("%")
        if op not in ops:
            continue
        if not hmod and not rows.is_device(e.get("pid")):
            continue  # unattributed host event that merely shares a name
        if rows.is_device(e.get("pid")) and not rows.counts(e):
            continue  # a summary row, or a GPU's rows derived from its stream rows
        key = (e.get("pid"), e.get("tid"), e.get("ts"), op)
        matched[key] = (op, dur, procs.get(e.get("pid"), ""))
    device_events = [v for v in matched.values() if "/device:" in v[2]]
    if device_events:
        chosen = device_events
        measured = "device"
    else:
        chosen = list(matched.values())
        measured = "host"
    total = 0.0
    per_kernel: dict[int, dict] = {}
    per_op: dict[str, dict] = {}
    for op, dur, _ in chosen:
        total += dur
        opn = ops.get(op, "")
        m = _SCOPE_RE.search(opn)
        if m:
            idx = int(m.group(1))
            k = per_kernel.setdefault(idx, {"index": idx, "kernel": kernels[idx] if idx < len(kernels)
                                            else m.group(2), "time_us": 0.0, "events": 0})
            k["time_us"] += dur
            k["events"] += 1
        po = per_op.setdefault(op, {"op": op, "op_name": opn, "time_us": 0.0, "events": 0,
                                    "pallas": bool(m)})
        po["time_us"] += dur
        po["events"] += 1
    pallas = sum(k["time_us"] for k in per_kernel.values())
    kern_list = sorted(per_kernel.values(), key=lambda k: -k["time_us"])
    for k in kern_list:
        k["time_us"] = round(k["time_us"], 3)
        k["per_run_us"] = round(k["time_us"] / max(runs, 1), 3)
        k["share"] = round(k["time_us"] / total, 4) if total > 0 else None
    top = sorted(per_op.values(), key=lambda o: -o["time_us"])[:15]
    for o in top:
        o["time_us"] = round(o["time_us"], 3)
    summary = {
        "measured": measured,
        "runs": runs,
        "run_wall_us": [round(w, 3) for w in run_walls],
        "run_wall_median_us": round(sorted(run_walls)[len(run_walls) // 2], 3) if run_walls else None,
        "op_time_us": round(total, 3),
        "op_time_per_run_us": round(total / max(runs, 1), 3),
        "pallas_time_us": round(pallas, 3),
        "pallas_share": round(pallas / total, 4) if total > 0 else None,
        "kernels": kern_list,
        "top_ops": top,
        "matched_events": len(chosen),
        "hlo_module": module,
    }
    if measured == "host":
        summary["note"] = (
            f"No device events: times are host-side XLA:{platform.upper()} thunk executions of the "
            "program's top-level ops" + (
                ", and the pallas_calls run through the Pallas interpreter, so 'pallas' time is the "
                "interpreter's cost, not a kernel time." if platform == "cpu" else "."))
    else:
        summary["note"] = "Device op events of the profiled program; Pallas kernels matched by scope."
    return summary
