"""The `generate` op: a Pallas kernel module written from a task's reference, without an LLM.

task -> input shapes (no data) -> jax.make_jaxpr of the reference (Python-number inputs bound as
static arguments) -> nested jit / custom_jvp / custom_vjp calls inlined -> GenContext -> the
templates in order (attention, gated_mlp, matmul_group_norm, matmul_batch_norm, conv,
matmul_row_reduction, matmul_epilogue, rowwise, elementwise) ->
the module is executed and lowered at the task's full shapes -> reply. The module is in the TPU
form (Mosaic, lowered for TPU) or the GPU form (Triton, lowered for CUDA; generate.gpu_form), as the
request's `kernel_form` says (default: the worker's platform).

A reference no template covers gets kind `no_template` naming the primitives at fault (with
their lines in the reference file); a generated module that does not lower is a generator bug,
reported as an `internal` error with the module text, never returned as a kernel.
"""

from __future__ import annotations

import functools
import inspect
import os
import time

import jax

from mkworker import common as C
from mkworker.cost import trace
from mkworker.generate import classes as KC
from mkworker.generate import common as G
from mkworker.generate import degenerate
from mkworker.generate import expr as E
from mkworker.generate import gpu_form as GPU
from mkworker.generate.common import GenContext
from mkworker.judge import run
from mkworker.tasks import tasks

NO_TEMPLATE = "no_template"

# Primitives some template handles (a reference made only of these that still matched no
# template has a structure no template covers, e.g. two matmuls).
_STRUCTURAL = ("dot_general", "transpose", "reduce_sum", "reduce_max", "reduce_min")

LLM_HINT = "configure an LLM (--llm ...) to write this kernel"


def op_generate(req, cancel, progress) -> dict:
    if "task" not in req:
        raise C.WorkerError(C.BAD_REQUEST, "request needs a `task`")
    target = _target(req.get("target"))
    form = GPU.kernel_form(req.get("kernel_form"), run.platform())
    filename = req.get("filename") or "<generated>"
    if not isinstance(filename, str):
        raise C.WorkerError(C.BAD_REQUEST, "`filename` must be a string")
    task = tasks.resolve(req["task"], None, req.get("filename"))
    try:
        entry = req.get("entry") or task.default_entry
        if not isinstance(entry, str) or not entry.isidentifier():
            raise C.WorkerError(C.BAD_REQUEST, f"`entry` must be a Python identifier, got {entry!r}")
        progress(stage="trace")
        ctx = build_context(task, entry, target, form)
        cancel.check()
        warnings = degenerate.warnings_for(ctx)
        progress(stage="match")
        gen, tried, refusals = KC.run_templates(ctx)
        if gen is None:
            e = _no_template(ctx, refusals)
            if warnings:
                e.extra["warnings"] = warnings
            raise e
        cancel.check()
        progress(stage="lower")
        lowering = lower_generated(gen, ctx, task, filename)
        return {
            "class": gen.kernel_class,
            "description": gen.description,
            "source": gen.source,
            "entry": gen.entry,
            "imports": gen.imports,
            "body": gen.body,
            "tunables": gen.tunables,
            "primitives": _all_primitives(ctx),
            "lowering": lowering,
            "notes": gen.notes,
            "templates_tried": tried,
            "why": _why(gen, tried),
            "warnings": warnings,
            "target": target,
            "kernel_form": form,
            "task": task.describe(),
        }
    finally:
        task.close()


def _why(gen, tried) -> str:
    """Which class was chosen and why: the template's own `chosen:` note, else its place in
    the order."""
    for n in gen.notes:
        if n.startswith("chosen: "):
            return f"{gen.kernel_class}: {n[len('chosen: '):]}"
    return (f"{gen.kernel_class}: the first template that covers the reference (tried in order: "
            f"{', '.join(tried)})")


def _target(t) -> dict:
    out = dict(G.DEFAULT_TARGET)
    if t is None:
        return out
    if isinstance(t, str):
        out["name"] = t
        return out
    if not isinstance(t, dict):
        raise C.WorkerError(C.BAD_REQUEST, "`target` must be an object {name, vmem_limit_bytes}")
    if t.get("name") is not None:
        if not isinstance(t["name"], str):
            raise C.WorkerError(C.BAD_REQUEST, "target.name must be a string")
        out["name"] = t["name"]
    v = t.get("vmem_limit_bytes")
    if v is not None:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1 << 20:
            raise C.WorkerError(C.BAD_REQUEST, "target.vmem_limit_bytes must be an integer >= 1 MiB")
        out["vmem_limit_bytes"] = v
    return out


# ---------------------------------------------------------------------------
# The reference, traced.

def reference_param_names(fn, n_args: int, kw_names) -> list[str]:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and len(names) < n_args:
            names.append(p.name)
    used = set(names) | set(kw_names)
    i = 0
    while len(names) < n_args:
        cand = f"arg{i}"
        i += 1
        if cand not in used:
            names.append(cand)
    return names + list(kw_names)


# Names the generated code uses for its own locals; a reference parameter with one of them (or
# with a suffix the code appends: `_ref`, `_in`, `_2d`, `_3d`) is renamed with a trailing `_`.
_RESERVED = frozenset((
    "o", "acc", "y", "row_len", "kk", "m", "n", "k", "lead", "shape", "rows", "cols", "out",
    "batch", "nb", "bm", "bn", "bk", "br", "bc", "total", "d", "jax", "jnp", "pl",
    "pltpu", "functools", "math", "BLOCK_M", "BLOCK_N", "BLOCK_K", "BLOCK_ROWS", "BLOCK_COLS",
    "LANES", "plgpu", "NUM_WARPS", "NUM_STAGES", "x_tile", "w_tile"))


def _safe_name(name: str) -> str:
    if name in _RESERVED or name.startswith("_") or name.endswith(("_ref", "_in", "_2d", "_3d")) \
            or (name[:1] in ("v", "t") and name[1:].isdigit()):
        return name + "_" if not name.startswith("_") else "p" + name
    return name


def build_context(task, entry: str, target: dict, form: str = "tpu") -> GenContext:
    # Shapes only (the inputs function runs under jax.eval_shape); Python numbers and other
    # non-array inputs stay as values and are bound as static arguments, as in every op.
    args, kwargs = run.abstract_inputs(task)
    bound, dyn_args, dyn_kwargs, statics = run.bind_static(task.reference_fn, args, kwargs)
    names = reference_param_names(task.reference_fn, len(args), list(kwargs))
    names = [_safe_name(n) for n in names]
    slots = list(range(len(args))) + list(kwargs)
    static_args = {names[i]: statics[key] for i, key in enumerate(slots) if key in statics}
    # The jaxpr's inputs: positional arrays in order, then keyword arrays by sorted key (how
    # jax flattens a dict).
    arg_names = [names[i] for i, key in enumerate(slots) if isinstance(key, int) and key not in statics]
    kw_names = {key: names[i] for i, key in enumerate(slots) if isinstance(key, str)}
    arg_names += [kw_names[key] for key in sorted(kw_names) if key not in statics]
    for n, key in zip(names, slots):
        value = args[key] if isinstance(key, int) else kwargs[key]
        if key not in statics and not hasattr(value, "shape"):
            raise C.WorkerError(C.TASK, f"input `{n}` is neither an array nor a static value")
    try:
        raw, out_shapes = jax.make_jaxpr(bound, return_shape=True)(*dyn_args, **dyn_kwargs)
    except Exception as e:  # noqa: BLE001
        raise C.from_exception(C.TRACE, e, task.ref_module.filename,
                               prefix=f"tracing the reference `{task.reference_name}` failed",
                               source=task.ref_module.source, file=task.ref_module.filename) from None
    flat = inline_calls(raw)
    return GenContext(
        closed_jaxpr=flat, raw_jaxpr=raw,
        in_avals=[v.aval for v in flat.jaxpr.invars],
        arg_names=arg_names, static_args=static_args, params=names,
        signature=", ".join(names), entry=entry, target=target,
        out_avals=[v.aval for v in flat.jaxpr.outvars],
        out_tree=jax.tree_util.tree_structure(out_shapes),
        reference_name=task.reference_name, reference_file=task.ref_module.filename,
        reference_source=task.ref_module.source, form=form,
        retrace=None if dyn_kwargs else (lambda specs: inline_calls(jax.make_jaxpr(bound)(*specs))))


_CALLS = {"pjit": "jaxpr", "jit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
          "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
          "custom_vjp_call_jaxpr": "fun_jaxpr", "remat": "jaxpr", "checkpoint": "jaxpr"}


def inline_calls(closed):
    """The same computation as one flat jaxpr: nested jit, custom_jvp/vjp and remat calls are
    replaced by their bodies (templates match equations, not call boundaries)."""
    from jax._src import source_info_util

    def run_jaxpr(jaxpr, consts, *args):
        env = {}

        def read(v):
            return v.val if E.is_literal(v) else env[id(v)]

        for v, c in zip(jaxpr.constvars, consts):
            env[id(v)] = c
        for v, a in zip(jaxpr.invars, args):
            env[id(v)] = a
        for eqn in jaxpr.eqns:
            invals = [read(v) for v in eqn.invars]
            name = eqn.primitive.name
            with source_info_util.user_context(eqn.source_info.traceback,
                                               name_stack=eqn.source_info.name_stack):
                sub = eqn.params.get(_CALLS[name]) if name in _CALLS else None
                if sub is not None:
                    if hasattr(sub, "jaxpr"):
                        outs = run_jaxpr(sub.jaxpr, sub.consts, *invals)
                    else:
                        outs = run_jaxpr(sub, (), *invals)
                else:
                    outs = eqn.primitive.bind(*invals, **eqn.params)
                    if not eqn.primitive.multiple_results:
                        outs = [outs]
            for v, o in zip(eqn.outvars, outs):
                env[id(v)] = o
        return [read(v) for v in jaxpr.outvars]

    avals = [v.aval for v in closed.jaxpr.invars]
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=getattr(a, "weak_type", False))
             for a in avals]
    try:
        return jax.make_jaxpr(functools.partial(run_jaxpr, closed.jaxpr, closed.consts))(*specs)
    except Exception:  # noqa: BLE001 - an exotic call primitive: match on the unflattened trace
        return closed


# ---------------------------------------------------------------------------
# Templates.

def _all_primitives(ctx) -> list[str]:
    return list(ctx.primitive_names())


def _known_primitives() -> set:
    return set(E.COVERED_PRIMITIVES) | set(_STRUCTURAL) | KC.covered_primitives()


def _no_template(ctx: GenContext, refusals) -> C.WorkerError:
    fname = os.path.basename(ctx.reference_file or "reference")
    prims = [p for p in ctx.primitive_names() if p not in _known_primitives()]
    if refusals:
        kclass, e = refusals[0]
        prims = [p for p in e.primitives if p] or prims
        locations = _locations(ctx, prims)
        lines = sorted({loc["line"] for loc in locations})
        at = f" ({fname} line {', '.join(map(str, lines))})" if lines else ""
        msg = (f"no kernel template covers this reference: it looks like {kclass}, but "
               f"{e.message}{at}")
    elif prims:
        locations = _locations(ctx, prims)
        where = []
        for p in prims:
            lines = [loc["line"] for loc in locations if loc["primitive"] == p]
            where.append(f"{p} ({fname} line {lines[0]})" if lines else p)
        msg = f"no kernel template covers this reference: it uses {', '.join(where)}"
    else:
        locations = []
        counts = {}
        for e in ctx.eqns:
            counts[e.primitive.name] = counts.get(e.primitive.name, 0) + 1
        shape = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in counts.items())
        msg = (f"no kernel template covers this reference: its structure ({shape}) is not one "
               "a template writes")
    msg += f"; {LLM_HINT}"
    return C.WorkerError(NO_TEMPLATE, msg, primitives=prims,
                         locations=[{"line": loc["line"], "column": loc["column"],
                                     "message": loc["message"]} for loc in locations],
                         file=ctx.reference_file)


def _locations(ctx: GenContext, prims) -> list[dict]:
    """Where in the reference file each named primitive comes from (source info of the
    equations in the un-inlined trace, nested calls included)."""
    out = []
    seen = set()
    ref = os.path.abspath(ctx.reference_file) if ctx.reference_file else None
    for eqn, frame in _walk(ctx.raw_jaxpr.jaxpr if ctx.raw_jaxpr is not None else ctx.jaxpr, ref):
        name = eqn.primitive.name
        if name not in prims or frame is None:
            continue
        key = (name, frame.start_line)
        if key in seen:
            continue
        seen.add(key)
        out.append({"line": frame.start_line, "column": (frame.start_column or 0) + 1,
                    "primitive": name,
                    "message": f"{name}: no kernel template covers it"})
    return out


def _walk(jaxpr, ref_file, outer=None):
    """(equation, frame in the reference file) for every equation, nested ones included; an
    equation inside a library call (jnp.sort's jit) takes the frame of the call."""
    from jax._src import source_info_util
    for eqn in jaxpr.eqns:
        frame = source_info_util.user_frame(eqn.source_info.traceback)
        if frame is None or (ref_file and os.path.abspath(frame.file_name) != ref_file):
            frame = outer
        yield eqn, frame
        for p in eqn.params.values():
            for sub in (p if isinstance(p, (tuple, list)) else (p,)):
                inner = getattr(sub, "jaxpr", None)
                if inner is not None and hasattr(inner, "eqns"):
                    yield from _walk(inner, ref_file, frame)
                elif hasattr(sub, "eqns"):
                    yield from _walk(sub, ref_file, frame)


# ---------------------------------------------------------------------------
# Lowering the module before it is returned.

def lower_generated(gen: G.Generated, ctx: GenContext, task, filename: str) -> dict:
    t0 = time.perf_counter()
    mod = None
    try:
        mod = C.UserModule(gen.source, filename, role="generated").run()
        fn = mod.get(gen.entry)
        if not callable(fn):
            raise TypeError(f"the generated module defines no function `{gen.entry}`")
        args, kwargs = run.abstract_inputs(task)
        bound, dyn_args, dyn_kwargs, _ = run.bind_static(fn, args, kwargs)
        traced, _ = trace.trace_candidate(bound, dyn_args, dyn_kwargs, filename, gen.source)
        lower = trace.lower_gpu if ctx.form == "gpu" else trace.lower_tpu
        _, lowered_for = lower(traced, bound, dyn_args, dyn_kwargs, run.platform(), filename,
                               gen.source)
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        detail = e.message if isinstance(e, C.WorkerError) else f"{type(e).__name__}: {e}"
        where = "GPU (CUDA)" if ctx.form == "gpu" else "TPU"
        raise C.WorkerError(C.INTERNAL, f"the generated {gen.kernel_class} kernel does not lower "
                                        f"for {where} (a generator bug): {detail}",
                            generated_source=gen.source, stage="lowering",
                            locations=getattr(e, "extra", {}).get("locations", [])) from None
    finally:
        if mod is not None:
            mod.close()
    return {"ok": True, "seconds": round(time.perf_counter() - t0, 3), "platforms": [lowered_for]}
