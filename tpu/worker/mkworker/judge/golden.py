"""Frozen references kept across evaluates: the warm worker's per-task saving.

A frozen reference (Golden: the input sets of the requested seeds,
their pristine host copies, the compiled reference and its outputs) depends
only on the task's reference module, the seeds, the run mode and the
platform.  When several candidates of one task are evaluated with the same
explicit seeds (a search, a suite, a benchmark), the worker computes it once
and reuses it; a fresh process per candidate has to recompute it every time.
Default random seeds differ per request, so they never hit.

Nothing about the checks changes: every evaluate still runs the candidate
and the reference in both orders on fresh copies of the inputs, compares
with the golden outputs, checks the inputs afterwards and applies the
pallas_call gate.  Candidate code runs in this process, so a cached entry is
guarded: its arrays are read-only and a digest of every array taken when it
was built must still match before it is reused (otherwise it is dropped and
rebuilt, with a warning).
"""

from __future__ import annotations

import collections
import copy
import hashlib
import os
import time

import jax
import numpy as np

from mkworker import common as C
from mkworker.judge import run

# Entries kept (least recently used goes first); 0 turns the cache off.
try:
    MAX_ENTRIES = max(0, int(os.environ.get("MAXKERNEL_WORKER_GOLDEN_CACHE", "4")))
except ValueError:
    MAX_ENTRIES = 4

_entries: collections.OrderedDict = collections.OrderedDict()  # key -> (golden, digest)


def key_for(task, seeds, plat: str, mode, instance=None) -> str | None:
    """What decides a frozen reference; None when it must not be shared (the
    reference comes from the candidate's own buffer, nothing froze it)."""
    if not MAX_ENTRIES or not task.reference_frozen:
        return None
    h = hashlib.sha256()
    for part in (task.form, task.reference_name, task.inputs_name, repr(list(seeds)), plat,
                 repr(sorted(mode.to_json().items())), str(bool(jax.config.jax_enable_x64)),
                 jax.__version__, task.ref_module.source, getattr(task, "cache_salt", ""),
                 repr(instance if instance is not None else getattr(task, "shrink", None))):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def _arrays(golden):
    for s in golden.sets:
        for x in s.leaves():
            if isinstance(x, (jax.Array, np.ndarray)):
                yield np.asarray(x)
        for p in s.pristine or []:
            if isinstance(p, np.ndarray):
                yield p
    for outs in golden.outputs:
        yield from outs


def _digest(golden) -> str:
    h = hashlib.sha256()
    for a in _arrays(golden):
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def lookup(key: str | None):
    """(a private copy of the cached reference for `key` or None, a warning or None)."""
    if key is None or key not in _entries:
        return None, None
    golden, digest = _entries[key]
    if _digest(golden) != digest:
        # Something (a candidate in this process) changed a cached array: never trust it again.
        del _entries[key]
        return None, ("the cached frozen reference of this task was changed in this worker "
                      "(by an earlier candidate?); it was computed again")
    _entries.move_to_end(key)
    return _private_copy(golden), None


def store(key: str | None, golden) -> None:
    if key is None:
        return
    for s in golden.sets:
        for p in s.pristine or []:
            if isinstance(p, np.ndarray):
                p.flags.writeable = False
    for outs in golden.outputs:
        for o in outs:
            o.flags.writeable = False
    _entries[key] = (_private_copy(golden), _digest(golden))
    _entries.move_to_end(key)
    while len(_entries) > MAX_ENTRIES:
        _entries.popitem(last=False)


def _private_copy(golden):
    """Per-request state (the run mode may be switched by the interpret fallback, the task is
    the request's own) must never leak into the cached entry."""
    g = copy.copy(golden)
    g.warnings = list(golden.warnings)
    g.sets = list(golden.sets)
    g.outputs = [list(outs) for outs in golden.outputs]
    g.task = None  # the caller sets the request's own task
    return g


def clear() -> None:
    _entries.clear()


# ---------------------------------------------------------------------------
# The frozen reference itself.

class Golden:
    """The frozen reference: input sets and the reference's outputs,
    computed before any candidate code is executed."""

    def __init__(self, task, seeds, plat, mode, cancel, instance=None, compiled: dict | None = None):
        """`compiled`: the task's compiled references by signature, kept in this process (the
        reference's child serving more seeds): reused when the new sets' arrays and static
        arguments have a signature seen before, and the new one added."""
        self.task = task
        self.sets: list[run.InputSet] = []
        self.outputs: list[list[np.ndarray]] = []
        self.warnings: list[str] = []
        self.mode = mode
        ref_name = task.reference_name
        for seed in seeds:
            cancel.check()
            s = run.make_input_set(task, seed, instance)
            self.sets.append(s)
            self.warnings.extend(s.warnings)
        a0, k0 = self.sets[0].args, self.sets[0].kwargs
        self.signature = _signature(self.sets[0])
        try:
            with mode.context():
                t0 = time.perf_counter()
                if compiled is not None and self.signature in compiled:
                    self.ref_compiled = compiled[self.signature]
                else:
                    ref = self.sets[0].bind(task.reference_fn)
                    self.ref_compiled = jax.jit(ref).trace(*a0, **k0).lower().compile()
                    if compiled is not None:
                        compiled[self.signature] = self.ref_compiled
                self.compile_s = time.perf_counter() - t0
                for s in self.sets:
                    cancel.check()
                    a, k = s.clone()
                    self.outputs.append(run.to_host(self.ref_compiled(*a, **k)))
        except C.WorkerError:
            raise
        except Exception as e:  # noqa: BLE001
            raise C.from_exception(C.TASK, e, task.ref_module.filename, source=task.ref_module.source,
                                   prefix=f"the reference `{ref_name}` failed",
                                   file=task.ref_module.filename) from None
        for i, outs in enumerate(self.outputs):
            for j, o in enumerate(outs):
                if o.size > 1 and np.issubdtype(o.dtype, np.number) and np.all(o == o.flat[0]):
                    self.warnings.append(f"reference output {j} is constant for seed {self.sets[i].seed}")

    def run_ref(self, s: run.InputSet):
        a, k = s.clone()
        with self.mode.context():
            return run.to_host(self.ref_compiled(*a, **k))


def _signature(s: run.InputSet) -> str:
    """What a compiled reference depends on: the arrays' types and the static arguments."""
    def leaf(x):
        if not hasattr(x, "shape") or not hasattr(x, "dtype"):
            return repr(x)
        return tuple(x.shape), str(x.dtype), bool(getattr(x, "weak_type", False))

    avals = jax.tree_util.tree_map(leaf, (s.args, s.kwargs))
    return repr((avals, sorted(s.statics.items(), key=lambda kv: str(kv[0]))))


def frozen(task, seeds, plat, mode, cancel, instance=None, compiled: dict | None = None):
    """(Golden, reused): the cached one for this task, seeds, mode and instance (None: the
    request's own, task.shrink; else an extra shape's, tasks.shrink.Resized), else a new one."""
    key = key_for(task, seeds, plat, mode, instance)
    golden, warning = lookup(key)
    if golden is not None:
        golden.task = task
        return golden, True
    golden = Golden(task, seeds, plat, mode, cancel, instance, compiled=compiled)
    store(key, golden)
    if warning:
        golden.warnings.append(warning)
    return golden, False
