"""Frozen references kept across evaluates: the warm worker's per-task saving.

A frozen reference (mkw_ops.Golden: the input sets of the requested seeds,
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

import jax
import numpy as np

# Entries kept (least recently used goes first); 0 turns the cache off.
try:
    MAX_ENTRIES = max(0, int(os.environ.get("MAXKERNEL_WORKER_GOLDEN_CACHE", "4")))
except ValueError:
    MAX_ENTRIES = 4

_entries: collections.OrderedDict = collections.OrderedDict()  # key -> (golden, digest)


def key_for(task, seeds, plat: str, mode) -> str | None:
    """What decides a frozen reference; None when it must not be shared (the
    reference comes from the candidate's own buffer, nothing froze it)."""
    if not MAX_ENTRIES or not task.reference_frozen:
        return None
    h = hashlib.sha256()
    for part in (task.form, task.reference_name, task.inputs_name, repr(list(seeds)), plat,
                 repr(sorted(mode.to_json().items())), str(bool(jax.config.jax_enable_x64)),
                 jax.__version__, task.ref_module.source, getattr(task, "cache_salt", ""),
                 repr(getattr(task, "shrink", None))):
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
