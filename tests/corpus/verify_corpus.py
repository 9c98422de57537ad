#!/usr/bin/env python3
"""Verify the Pallas kernel corpus against real JAX lowering.

Plain script (no pytest).  Usage:

    python tests/corpus/verify_corpus.py [-v] [FILE_OR_GLOB ...]

For every file in good/ and bad/ it imports the module, calls
``corpus_entry() -> (fn, args)`` and lowers ``jax.jit(fn)`` with
``jax.export.export(..., platforms=[...])``:

* TPU files are lowered for ``tpu``.  This runs the Pallas -> Mosaic lowering
  and all of its block-shape / grid / dimension-semantics checks; it does NOT
  run the Mosaic compiler, so VMEM overflow is never an error here.  Rank-1
  block checks query the local TPU generation, so a v5e is simulated.
* GPU files (those importing ``jax.experimental.pallas.triton``) are lowered
  for ``cuda`` through the Triton backend; the Triton custom call has no
  export-compatibility guarantee, so that single safety check is disabled.
* Files whose header contains ``# corpus-requires: ...`` use APIs removed
  from the installed JAX; they are only byte-compiled and counted as skipped.

Besides lowering, a small reference checker runs on the *traced* pallas_call
parameters (real block shapes, array shapes, grid, compiler params) and
re-derives MK001 / MK002 / MK004 / MK005 / MK007.

Expectations:

* good/: every file lowers and the reference checker finds nothing.
* bad/: every ``# expect: MKxxx`` marker is collected.  If the file traces,
  the reference checker must find exactly the marked post-trace codes (no
  unmarked violations).  If a hard code (MK001, MK003, MK004, MK005, MK006,
  MK008) is expected, lowering must fail with an error of one of the expected
  kinds; if only MK002 / MK007 are expected, lowering must succeed.
* Marker placement is linted (e.g. MK007 must sit on a ``pallas_call(`` line).

The last line printed is ``N passed, N failed, N skipped``.
"""
from __future__ import annotations

import glob
import importlib.util
import math
import os
import re
import sys
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
HARD_CODES = {"MK001", "MK003", "MK004", "MK005", "MK006", "MK008"}
SOFT_CODES = {"MK002", "MK007"}
EXPECT_RE = re.compile(r"#\s*expect:\s*(MK\d{3}(?:\s*,\s*MK\d{3})*)")
REQUIRES_RE = re.compile(r"^#\s*corpus-requires:\s*(.+)$", re.MULTILINE)
GPU_IMPORT_RE = re.compile(
    r"(from\s+jax\.experimental\.pallas\s+import\s+(triton|mosaic_gpu)\b)"
    r"|(import\s+jax\.experimental\.pallas\.(triton|mosaic_gpu)\b)"
)

# Default scoped VMEM limit used by Mosaic on v5e (the strictest target).
DEFAULT_SCOPED_VMEM = 16 * 1024 * 1024

# Error-message fingerprints of each hard diagnostic (JAX 0.10.2 wording).
ERROR_PATTERNS = {
    "MK001": [
        r"last two dimensions of your block shape are divisible by 8 and 128",
        r"rank 1 block\s+shapes",
    ],
    "MK003": [
        r"positional argument",  # python arity error raised by the index_map
    ],
    "MK004": [r"Length of grid does not match length of dimension semantics"],
    "MK005": [r"tpu::DimensionSemantics", r"dimension_semantics<"],
    "MK006": [r"must have the same number of dimensions as the array shape"],
    "MK008": [r"must return \d+ values to match block_shape"],
}


def _setup_jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    warnings.filterwarnings("ignore")
    import jax
    from jax._src.pallas.mosaic import tpu_info

    # Rank-1 block checks query the *local* TPU for its tiling; on a CPU-only
    # host that raises "Unsupported TPU device kind: cpu".  Pretend to be v5e.
    v5e = tpu_info.get_tpu_info_for_chip(tpu_info.ChipVersion.TPU_V5E, 1)
    tpu_info.get_tpu_info = lambda: v5e
    return jax


def _load(path):
    name = "corpus_" + re.sub(r"\W", "_", os.path.relpath(path, HERE))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# What the text of a marked line must contain, per code.
MARKER_LINE_RE = {
    "MK001": r"BlockSpec\(|^\s*\(|=\s*\(",
    "MK002": r"BlockSpec\(|^\s*\(|=\s*\(",
    "MK003": r"\blambda\b|^\s*def\s",
    "MK004": r"dimension_semantics",
    "MK005": r"dimension_semantics",
    "MK006": r"BlockSpec\(|^\s*\(|=\s*\(",
    "MK007": r"pallas_call\(",
    "MK008": r"\blambda\b|^\s*return\b",
}


def _lint_markers(src):
    lines = src.splitlines()
    problems = []
    for lineno, code in _expectations(src):
        text = lines[lineno - 1].split("#", 1)[0]
        pat = MARKER_LINE_RE.get(code)
        if pat is None:
            problems.append(f"line {lineno}: unknown code {code}")
        elif not re.search(pat, text):
            problems.append(f"line {lineno}: {code} marker on an unexpected line: {text.strip()!r}")
    return problems


def _expectations(src):
    codes = []
    for lineno, line in enumerate(src.splitlines(), 1):
        m = EXPECT_RE.search(line)
        if m:
            for c in m.group(1).split(","):
                codes.append((lineno, c.strip()))
    return codes


# --------------------------------------------------------------------------
# Grid-mapping inspection (MK002 / MK007 ground truth for files that trace).
# --------------------------------------------------------------------------
def _pallas_eqns(jaxpr):
    from jax._src import core as jcore

    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "pallas_call":
            yield eqn
        for sub in jcore.jaxprs_in_params(eqn.params):
            yield from _pallas_eqns(sub)


def _mem_space_name(aval):
    ms = getattr(aval, "memory_space", None)
    return "default" if ms is None else str(ms).lower()


def _is_vmem(space):
    return space in ("default", "vmem", "memoryspace.default")


VALID_SEMANTICS = {"parallel", "arbitrary", "core_parallel", "subcore_parallel"}


def _tiling_ok(block, array, itemsize):
    """Mirror of the (8, 128) / rank-1 rule in jax/_src/pallas/mosaic/lowering.py."""
    if len(block) >= 2:
        bs0, as0, bs1, as1 = block[-1], array[-1], block[-2], array[-2]
        return (bs0 == as0 or bs0 % 128 == 0) and (bs1 == as1 or bs1 % 8 == 0)
    (bs,), (size,) = block, array
    min_tiling = 128 * (4 // itemsize if itemsize < 4 else 1)
    return bs == size or bs % 1024 == 0 or (bs >= min_tiling and bs & (bs - 1) == 0)


def _inspect(jax, fn, args, force_tpu_rules=False):
    """Reference checker run on the *traced* pallas_call parameters.

    Returns (findings, vmem) where findings is a list of (code, message) and
    vmem a list of (estimated_bytes, limit_bytes), one per pallas_call.
    Only diagnostics that survive tracing can be seen here: MK001, MK002,
    MK004, MK005, MK007 (MK003 / MK006 / MK008 abort tracing itself).
    """
    import numpy as np
    from jax._src.pallas import core as plcore

    closed = jax.make_jaxpr(fn)(*args)
    findings, vmem = [], []
    for eqn in _pallas_eqns(closed.jaxpr):
        gm = eqn.params["grid_mapping"]
        cp = eqn.params.get("compiler_params")
        is_tpu = force_tpu_rules or cp is None or type(cp).__module__.endswith("mosaic.core")
        interpret = bool(eqn.params.get("interpret"))
        limit = getattr(cp, "vmem_limit_bytes", None) or DEFAULT_SCOPED_VMEM
        sem = getattr(cp, "dimension_semantics", None)
        if sem is not None:
            sem = tuple(getattr(x, "value", x) for x in sem)
            if len(sem) != len(gm.grid):
                findings.append(("MK004", f"{len(sem)} semantics for grid {gm.grid}"))
            for x in sem:
                if x not in VALID_SEMANTICS:
                    findings.append(("MK005", f"dimension semantic {x!r}"))
        total = 0
        for bm in gm.block_mappings:
            space = _mem_space_name(bm.transformed_block_aval)
            if not _is_vmem(space):
                continue
            dtype = np.dtype(bm.array_aval.dtype)
            shape = plcore._get_block_shape(bm.block_shape)
            array = tuple(bm.array_aval.shape)
            bufs = 2
            if bm.pipeline_mode is not None and bm.pipeline_mode.buffer_count:
                bufs = bm.pipeline_mode.buffer_count
            total += bufs * math.prod(shape) * dtype.itemsize
            if not is_tpu or interpret:
                continue
            if not _tiling_ok(shape, array, dtype.itemsize):
                findings.append(("MK001", f"{bm.origin}: block {shape} on array {array}"))
            if len(shape) >= 2 and dtype.itemsize < 4:
                sub, full = shape[-2], array[-2]
                native = 8 * (4 // dtype.itemsize)
                if sub != full and sub % 8 == 0 and sub % native:
                    msg = (f"{bm.origin}: {dtype} block {shape}, "
                           f"sublane dim {sub} not a multiple of {native}")
                    findings.append(("MK002", msg))
        for aval in gm.scratch_avals:
            if not _is_vmem(_mem_space_name(aval)):
                continue
            inner = getattr(aval, "inner_aval", aval)
            if not hasattr(inner, "shape") or not hasattr(inner, "dtype"):
                continue  # semaphores
            try:
                itemsize = np.dtype(inner.dtype).itemsize
            except TypeError:
                continue
            total += math.prod(inner.shape) * itemsize
        if is_tpu and not interpret:
            vmem.append((total, limit))
            if total > limit:
                findings.append(("MK007", f"VMEM {total / 2**20:.1f} MiB > {limit / 2**20:.0f} MiB"))
    return findings, vmem


# --------------------------------------------------------------------------
def _lower(jax, fn, args, platform):
    kwargs = {}
    if platform == "cuda":
        kwargs["disabled_checks"] = [
            jax.export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")
        ]
    return jax.export.export(jax.jit(fn), platforms=[platform], **kwargs)(*args)


def _classify(msg):
    return {
        code
        for code, pats in ERROR_PATTERNS.items()
        if any(re.search(p, msg) for p in pats)
    }


def check_file(jax, path, verbose=False):
    """Returns (status, detail) with status in {"pass", "fail", "skip"}."""
    with open(path) as fh:
        src = fh.read()
    rel = os.path.relpath(path, HERE)
    kind = "bad" if rel.startswith("bad" + os.sep) else "good"
    req = REQUIRES_RE.search(src)
    if req:
        compile(src, path, "exec")
        return "skip", f"requires {req.group(1).strip()} (syntax only)"
    is_gpu = bool(GPU_IMPORT_RE.search(src))
    platform = "cuda" if is_gpu else "tpu"
    expected = {c for _, c in _expectations(src)}
    if kind == "bad" and not expected:
        return "fail", "bad file without any '# expect:' marker"
    if kind == "good" and expected:
        return "fail", "good file carries '# expect:' markers"
    lint = _lint_markers(src)
    if lint:
        return "fail", "; ".join(lint)

    try:
        mod = _load(path)
        fn, args = mod.corpus_entry()
    except Exception as e:  # noqa: BLE001
        return "fail", f"import/corpus_entry failed: {type(e).__name__}: {e}"

    lower_err = None
    try:
        _lower(jax, fn, args, platform)
    except Exception as e:  # noqa: BLE001
        lower_err = e
        if verbose:
            traceback.print_exc()

    findings, vmem, traced = [], [], True
    try:
        findings, vmem = _inspect(jax, fn, args)
    except Exception:  # noqa: BLE001
        traced = False  # tracing failures are covered by lowering
    found = {c for c, _ in findings}

    if kind == "good":
        if lower_err is not None:
            msg = str(lower_err).splitlines()[0][:300]
            return "fail", f"{platform} lowering failed: {type(lower_err).__name__}: {msg}"
        if findings:
            return "fail", "reference checker: " + "; ".join(f"{c} {m}" for c, m in findings)
        est = ", ".join(f"{t / 2**20:.2f}/{l / 2**20:.0f} MiB" for t, l in vmem)
        detail = f"lowered for {platform}" + (f"; vmem {est}" if est else "")
        if is_gpu:
            # Document that these really are TPU-illegal blocks (the checker
            # must classify the kernel as GPU instead of reporting MK001).
            tpu_view, _ = _inspect(jax, fn, args, force_tpu_rules=True)
            if any(c == "MK001" for c, _ in tpu_view):
                detail += "; blocks would be MK001 under TPU rules"
        return "pass", detail

    # bad file
    notes = []
    if traced:
        # Everything visible after tracing must be marked, and vice versa.
        visible = expected & (SOFT_CODES | {"MK001", "MK004", "MK005"})
        if found - expected:
            return "fail", "unmarked violations: " + "; ".join(
                f"{c} {m}" for c, m in findings if c not in expected)
        if visible - found:
            return "fail", f"reference checker did not reproduce {sorted(visible - found)}"
        notes.append(f"reference checker found {sorted(found)}")
    hard = expected & HARD_CODES
    if hard:
        if lower_err is None:
            return "fail", f"expected {sorted(hard)} but {platform} lowering succeeded"
        msg = f"{type(lower_err).__name__}: {lower_err}"
        got = _classify(msg)
        if not got & hard:
            return "fail", f"expected {sorted(hard)}, got error: {msg.splitlines()[0][:300]}"
        return "pass", "; ".join([f"lowering rejected it as {sorted(got & hard)}"] + notes)
    if lower_err is not None:
        msg = str(lower_err).splitlines()[0][:300]
        return "fail", f"soft-only file failed lowering: {type(lower_err).__name__}: {msg}"
    return "pass", "lowers (soft diagnostics only); " + "; ".join(
        f"{c} {m}" for c, m in findings)


def main(argv):
    verbose = "-v" in argv
    targets = [a for a in argv if a != "-v"]
    if targets:
        files = []
        for t in targets:
            files.extend(sorted(glob.glob(t)) or [t])
    else:
        files = sorted(glob.glob(os.path.join(HERE, "good", "*.py"))) + sorted(
            glob.glob(os.path.join(HERE, "bad", "*.py"))
        )
    jax = _setup_jax()
    print(f"jax {jax.__version__}; {len(files)} corpus files")
    counts = {"pass": 0, "fail": 0, "skip": 0}
    for path in files:
        status, detail = check_file(jax, os.path.abspath(path), verbose)
        counts[status] += 1
        label = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}[status]
        print(f"{label} {os.path.relpath(os.path.abspath(path), HERE)}: {detail}")
    print(f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
