"""Timing the candidate cannot reach, and the check that it changed nothing it must not.

Candidate code runs in the worker's process. Everything the timing loop calls (the clock,
blocking on outputs, the statistics) is captured here, at import, into closure cells of the
timing function, before any candidate module exists; the loop never looks a name up in a
module that a candidate could rebind later. The source gate (sandbox.gate) refuses candidates that
try; `Integrity` is the run-time backstop: it snapshots the modules and classes the worker's
clock and checks use, and after the candidate ran, reports (and puts back) anything changed.

On a TPU or GPU the worker also takes the device time of the timed calls from a jax.profiler
trace (the device ops of the compiled program summed per run), the way JAXBench and MaxKernel
measure kernels; `device_run_times` reads that trace.
"""

from __future__ import annotations

import builtins
import gzip
import json
import math
import os
import statistics
import sys
import threading
import time
import types

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import api as _jax_api
from jax._src.array import ArrayImpl as _ArrayImpl

from mkworker import common as C
from mkworker.cost import device_events

TIMED_ANNOTATION = "maxkernel.timed"


# ---------------------------------------------------------------------------
# The bound timing loop.

def _make_timing():
    perf_counter = time.perf_counter
    tree_leaves = jax.tree_util.tree_leaves
    block_array = _ArrayImpl.block_until_ready
    is_instance = builtins.isinstance
    sorted_, len_, sum_, min_, max_, range_ = (builtins.sorted, builtins.len, builtins.sum, builtins.min,
                                               builtins.max, builtins.range)
    floor = math.floor
    median, fmean = statistics.median, statistics.fmean

    def block(tree):
        """Waits for every array of `tree` (the outputs are forced before the clock stops)."""
        for leaf in tree_leaves(tree):
            if is_instance(leaf, _ArrayImpl):
                block_array(leaf)
        return tree

    def percentile(s, q):
        if not s:
            return float("nan")
        if len_(s) == 1:
            return s[0]
        pos = (len_(s) - 1) * q
        lo = floor(pos)
        hi = min_(lo + 1, len_(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    def stats(times, n_sets):
        s = sorted_(times)
        p10, p25, p75, p90 = (percentile(s, q) for q in (0.10, 0.25, 0.75, 0.90))
        return {"runs": len_(s), "input_sets": n_sets, "median_s": median(s), "p10_s": p10, "p90_s": p90,
                "iqr_s": p75 - p25, "min_s": s[0], "mean_s": fmean(s), "total_s": sum_(s)}

    def time_fn(fn, arg_sets, cfg, cancel, outputs=None):
        """Median and spread of fn over rotating input sets. Every run is
        clock; call; block on every output; clock. `outputs`, when a list, receives the last
        output of each input set (for checking that the timed runs computed the right thing)."""
        n_sets = len_(arg_sets)
        for i in range_(cfg["warmup"]):
            a, k = arg_sets[i % n_sets]
            block(fn(*a, **k))
            cancel.check()
        times = []
        last = [None] * n_sets
        start = perf_counter()
        i = 0
        while True:
            elapsed = perf_counter() - start
            if len_(times) >= cfg["max_runs"] or (elapsed >= cfg["max_seconds"] and times):
                break
            if len_(times) >= cfg["min_runs"] and elapsed >= cfg["min_seconds"]:
                break
            a, k = arg_sets[i % n_sets]
            t0 = perf_counter()
            out = fn(*a, **k)
            block(out)
            times.append(perf_counter() - t0)
            if outputs is not None:
                last[i % n_sets] = out
            del out
            i += 1
            cancel.check()
        if outputs is not None:
            outputs.extend(last[:min_(n_sets, max_(len_(times), 1))])
        return stats(times, n_sets)

    return time_fn, block, stats, percentile


time_fn, block, run_stats, percentile = _make_timing()


# ---------------------------------------------------------------------------
# Device time from a jax.profiler trace.

def _make_profiled():
    trace = jax.profiler.trace
    annotation = jax.profiler.TraceAnnotation
    range_ = builtins.range

    def profile_runs(fn, arg_sets, runs, out_dir):
        """Runs fn `runs` times under jax.profiler.trace, one TraceAnnotation per run."""
        n = len(arg_sets)
        a, k = arg_sets[0]
        block(fn(*a, **k))
        with trace(out_dir, create_perfetto_trace=True):
            for i in range_(runs):
                a, k = arg_sets[i % n]
                with annotation(f"{TIMED_ANNOTATION}/{i}"):
                    block(fn(*a, **k))

    return profile_runs


profile_runs = _make_profiled()

def _module_matches(hmod, module) -> bool:
    if not module or not hmod:
        return True
    h = str(hmod)
    return h == module or h.split("(")[0] == module or h.startswith(module + ".")


def device_run_times(events: list, module: str | None, runs: int) -> dict | None:
    """Per-run device time of the timed calls in a Chrome/Perfetto trace's events.

    Device op events are the complete ('X') events of processes named `/device:...` that carry
    an `hlo_op` (and, when the event says, belong to `module`), on the rows cost.device_events
    counts (a TPU's op row; a GPU's stream rows, never the rows derived from them). A run's
    time is the sum of the op events that start inside its `maxkernel.timed/<i>` annotation; if
    the device clock puts none inside any window, the total is split evenly (`attribution`
    says which). None when the trace has no device op events (a CPU host)."""
    rows = device_events.DeviceRows(events)
    windows, ops = [], []
    for e in events:
        if e.get("ph") != "X":
            continue
        name = str(e.get("name", ""))
        if name.startswith(TIMED_ANNOTATION + "/"):
            try:
                idx = int(name.rsplit("/", 1)[1])
            except ValueError:
                continue
            windows.append((idx, float(e.get("ts", 0.0)), float(e.get("ts", 0.0)) + float(e.get("dur", 0.0))))
            continue
        if not rows.counts(e):
            continue
        args = e.get("args") or {}
        if "hlo_op" not in args and "hlo_module" not in args:
            continue
        if not _module_matches(args.get("hlo_module"), module):
            continue
        ops.append((float(e.get("ts", 0.0)), float(e.get("dur", 0.0) or 0.0)))
    if not ops:
        return None
    windows.sort()
    per_run = [0.0] * max(len(windows), 1)
    placed = 0
    for ts, dur in ops:
        for j, (_, lo, hi) in enumerate(windows):
            if lo <= ts <= hi:
                per_run[j] += dur
                placed += 1
                break
    attribution = "annotations"
    if not placed:
        n = max(runs, 1)
        total = sum(d for _, d in ops)
        per_run = [total / n] * n
        attribution = "even"
    run_s = [us * 1e-6 for us in per_run]
    out = run_stats(run_s, None)
    out.pop("input_sets", None)
    out.update(clock="profiler", events=len(ops), attribution=attribution,
               run_s=[round(x, 12) for x in run_s])
    return out


def load_trace_events(path: str) -> list:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    return data.get("traceEvents", []) if isinstance(data, dict) else data


# ---------------------------------------------------------------------------
# Run-time integrity: nothing the worker's clock and checks rely on may change while a
# candidate runs.

_WATCHED_MODULES = ("builtins", "time", "statistics", "math", "numpy", "jax", "jax.numpy", "jax.tree_util",
                    "jax.profiler", "jax.random", "jax._src.api", "jax._src.array",
                    "mkworker.common", "mkworker.judge.run", "mkworker.ops.prepared", "mkworker.judge.judge",
                    "mkworker.judge.timing", "mkworker.cost.facts", "mkworker.judge.golden", "mkworker.tasks.tasks",
                    "mkworker.judge.clock", "mkworker.sandbox.gate", "mkworker.cost.work", "mkworker.cost.profile",
                    "mkworker.cost.traffic", "mkworker.tasks.yaml",
                    "maxkernel_worker", "__main__")
_WATCHED_SYS = ("modules", "meta_path", "path_hooks", "settrace", "setprofile", "stderr", "__stderr__")
_WATCHED_CLASSES = (_ArrayImpl,) + tuple(c for c in _ArrayImpl.__mro__[1:] if c is not object)
# Keys that change as a matter of course (interactive `_`, module reload bookkeeping).
_VOLATILE = frozenset(("_", "__warningregistry__"))


class Integrity:
    """Snapshot of watched module dicts, class dicts and function code; `verify` lists what
    differs (changed or deleted keys of modules, and changed, deleted or added keys of the
    classes) and restores it, so the worker stays sound for the next request."""

    def __init__(self):
        self.modules: dict[str, tuple] = {}
        self.classes: list[tuple] = []
        self.codes: list[tuple] = []
        self.sys_items: dict[str, object] = {}
        self.trace = (None, None)
        self.captured = False

    def capture(self):
        self.modules = {}
        names = list(_WATCHED_MODULES) + sorted(n for n in sys.modules if _is_worker_name(n))
        for name in names:
            mod = sys.modules.get(name)
            if mod is None or name in self.modules:
                continue
            if name == "__main__" and not str(getattr(mod, "__file__", "")).endswith("maxkernel_worker.py"):
                continue
            snap = dict(mod.__dict__)
            if _is_worker_module(mod):
                # The worker's own modules keep data that changes between requests (caches,
                # counters); their functions, classes and modules must not.
                snap = {k: v for k, v in snap.items() if callable(v) or isinstance(v, types.ModuleType)}
            self.modules[name] = (mod, snap)
        self.captured = True
        self.classes = [(cls, dict(cls.__dict__)) for cls in _WATCHED_CLASSES]
        self.codes = []
        for mod, d in self.modules.values():
            if not _is_worker_module(mod):
                continue
            for k, v in d.items():
                code = getattr(v, "__code__", None)
                if code is not None:
                    self.codes.append((f"{mod.__name__}.{k}", v, code))
        for fn_name, fn in (("jax.block_until_ready", jax.block_until_ready),
                            ("ArrayImpl.block_until_ready", _ArrayImpl.block_until_ready),
                            ("jax.tree_util.tree_leaves", jax.tree_util.tree_leaves),
                            ("statistics.median", statistics.median), ("statistics.fmean", statistics.fmean)):
            code = getattr(fn, "__code__", None)
            if code is not None:
                self.codes.append((fn_name, fn, code))
        self.sys_items = {k: getattr(sys, k, None) for k in _WATCHED_SYS}
        self.trace = (sys.gettrace(), sys.getprofile())
        return self

    def verify(self) -> list[str]:
        """What changed since capture (empty when nothing did); puts the originals back."""
        changed = []
        for name, (mod, snap) in self.modules.items():
            if sys.modules.get(name) is not mod:
                changed.append(f"sys.modules[{name!r}]")
                sys.modules[name] = mod
            cur = mod.__dict__
            for k, v in snap.items():
                if k in _VOLATILE:
                    continue
                if k not in cur or cur[k] is not v:
                    changed.append(f"{name}.{k}")
                    cur[k] = v
        for cls, snap in self.classes:
            cur = dict(cls.__dict__)
            for k, v in snap.items():
                if k not in cur or cur[k] is not v:
                    changed.append(f"{cls.__name__}.{k}")
                    setattr(cls, k, v)
            for k in cur:
                if k not in snap:
                    changed.append(f"{cls.__name__}.{k} (added)")
                    delattr(cls, k)
        for label, fn, code in self.codes:
            if fn.__code__ is not code:
                changed.append(f"{label}.__code__")
                fn.__code__ = code
        for k, v in self.sys_items.items():
            if getattr(sys, k, None) is not v:
                changed.append(f"sys.{k}")
                setattr(sys, k, v)
        if (sys.gettrace(), sys.getprofile()) != self.trace:
            changed.append("sys.settrace/setprofile")
            sys.settrace(self.trace[0])
            sys.setprofile(self.trace[1])
        return changed


def _is_worker_name(name: str) -> bool:
    return name == "mkworker" or name.startswith("mkworker.")


def _is_worker_module(mod) -> bool:
    name = str(getattr(mod, "__name__", ""))
    return _is_worker_name(name) or name == "maxkernel_worker" or \
        str(getattr(mod, "__file__", "")).endswith("maxkernel_worker.py")


# Captured by the first Watch, at the start of the worker's first op: every worker module is
# imported by then and no candidate code has run in this process yet.
INTEGRITY = Integrity()


def worker_threads() -> set:
    """The Python threads alive now (foreign threads that merely called into Python, such as
    XLA's callback threads, are not counted)."""
    dummy = getattr(threading, "_DummyThread", ())
    return {t for t in threading.enumerate() if not isinstance(t, dummy) and t.is_alive()}


class Watch:
    """Around everything a candidate's code can run in (module execution, tracing, checks,
    timing): raises a `refused` WorkerError if it rebound anything watched or left a thread
    running."""

    def __init__(self, filename: str):
        self.filename = filename or "<buffer>"
        if not INTEGRITY.captured:
            INTEGRITY.capture()
        else:
            leftover = INTEGRITY.verify()  # puts back what an earlier request left changed
            if leftover:
                sys.__stderr__.write(f"[maxkernel-worker] restored after an earlier request: {leftover}\n")
        self.threads = worker_threads()

    def check(self, stage: str):
        changed = INTEGRITY.verify()
        if changed:
            shown = ", ".join(changed[:6]) + (f" and {len(changed) - 6} more" if len(changed) > 6 else "")
            raise C.WorkerError(
                "refused",
                f"{os.path.basename(self.filename)}: the candidate changed {shown} while it ran "
                f"({stage}); the worker put the originals back [runtime-rebinding]",
                rule="runtime-rebinding", changed=changed, file=self.filename, locations=[])
        new = [t for t in worker_threads() - self.threads if t.is_alive()]
        if new:
            raise C.WorkerError(
                "refused",
                f"{os.path.basename(self.filename)}: the candidate left {len(new)} thread(s) running "
                f"({', '.join(sorted(t.name for t in new))}) after {stage} [runtime-thread]",
                rule="runtime-thread", file=self.filename, locations=[])


# Keep the names the capture refers to imported (also for the watch list).
_KEEP = (jnp, np, _jax_api)
