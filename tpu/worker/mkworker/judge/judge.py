"""The judge of `evaluate` (issue 36): it never imports, calls or unpickles anything a task or a
candidate made. The reference and the candidate each run in a fresh child (sandbox.sandbox); what
comes back is data: the inputs and the reference's outputs as raw arrays, and the candidate's
program as serialized StableHLO. The judge wraps that program in a calling convention of its own
(inputs and outputs shaped as the task's), refuses custom calls it does not know (host callbacks
above all), counts the work outside the kernels in the program exported for the target
(judge.program_work), runs the program itself on the inputs, compares with the reference's outputs
and times it."""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
import time

import jax
import jax.numpy as jnp

from mkworker import common as C
from mkworker.cost import work as cost_work
from mkworker.judge import clock, mismatch, program_work, timing
from mkworker.judge import golden as judge_golden
from mkworker.judge import run as judge_run
from mkworker.protocol import wire
from mkworker.sandbox import sandbox

_CACHE: collections.OrderedDict = collections.OrderedDict()  # key -> JudgeGolden (arrays only)


class JudgeGolden:
    """The reference's answer as the judge keeps it: read-only host arrays, and its programs."""

    def __init__(self, header: dict, blobs: list[bytes], programs: ReferencePrograms | None = None):
        self.header = header
        self.origin = "fresh child"  # or "kept child" (a kept reference answered), "cache"
        self.extra: list = []  # per extra shape: (result so far, JudgeGolden or None), see golden_for
        self.seeds, self.inputs, self.outputs = [], [], []
        k = header.get("sets_blob", 0)
        if not isinstance(k, int) or not 0 <= k <= len(blobs):
            raise C.WorkerError(C.INTERNAL, "the reference's process sent a malformed answer")
        for s in header.get("sets") or []:
            ins, outs = [], []
            for meta in s["inputs"]:
                ins.append(wire.from_blob(meta, blobs[k]))
                k += 1
            for meta in s["outputs"]:
                outs.append(wire.from_blob(meta, blobs[k]))
                k += 1
            self.seeds.append(int(s["seed"]))
            self.inputs.append(ins)
            self.outputs.append(outs)
        if not self.inputs:
            raise C.WorkerError(C.INTERNAL, "the reference's process sent no input sets")
        # The reference's programs: this answer's, or those of the kept child's first answer.
        self.programs = programs or ReferencePrograms(blob(header.get("program"), blobs),
                                                      blob(header.get("target_program"), blobs))

    def tolerances(self) -> tuple[dict | None, bool]:
        """(the task's tolerances, whether another output dtype is accepted), as the reference's
        child read them from the task."""
        return self.header.get("tolerances"), bool(self.header.get("accept_dtype_difference"))

    def inputs_for_candidate(self) -> tuple[dict | None, list[bytes]]:
        """The first input set as the candidate's child gets it (protocol.input_wire): its description
        and arrays, or (None, []) when the reference's child could not describe it."""
        structure = self.header.get("inputs_structure")
        if structure is None:
            return None, []
        return ({"seed": self.seeds[0], "structure": structure,
                 "arrays": [wire.array_meta(a) for a in self.inputs[0]]},
                [wire.to_blob(a) for a in self.inputs[0]])

    def device_inputs(self, i):
        return [jnp.asarray(a) for a in self.inputs[i]]


class ReferencePrograms:
    """The reference's exported programs and what the judge derives from them once: its work
    count and its compiled callable. Shared by every input set of one kept reference."""

    def __init__(self, program, target):
        self.program = program
        self.target = target
        self.work = None
        self.compiled = None


def blob(desc, blobs):
    if not isinstance(desc, dict) or not isinstance(desc.get("blob"), int) or not 0 <= desc["blob"] < len(blobs):
        return None
    kept = desc.get("kept")
    if not isinstance(kept, list) or not all(isinstance(i, int) for i in kept) or kept != sorted(set(kept)):
        return None
    return blobs[desc["blob"]], tuple(kept), desc.get("platform")


def _cache_key(req, seeds, plat) -> str | None:
    """Only explicit seeds of a task that is not the buffer itself are shared (as judge.golden);
    with `seeds` None, the key of the task alone (its kept reference)."""
    task = req.get("task") or {}
    if (seeds is not None and not req.get("seeds")) or (
            task.get("form") == "infile" and task.get("source") is None and task.get("path") is None):
        return None
    extra = req.get("extra_shapes") if seeds is not None else None
    h = hashlib.sha256(json.dumps([task, seeds, extra, plat, req.get("interpret_mode"), req.get("shrink"),
                                   bool(jax.config.jax_enable_x64), jax.__version__], sort_keys=True,
                                  default=str).encode())
    for v in task.values():
        if isinstance(v, str) and os.path.isabs(v) and os.path.exists(v):
            h.update(_path_stamp(v).encode())
    return h.hexdigest()


def task_key(req, plat) -> str | None:
    """The key of the request's task alone (its kept reference, its programs), or None where the
    task is the buffer itself."""
    return _cache_key(req, None, plat)


def _path_stamp(path):
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    try:
        return repr(sorted((e.name, e.stat().st_mtime_ns, e.stat().st_size)
                           for e in os.scandir(path) if e.is_file()))
    except OSError:
        return ""


class _KeptReference:
    """A task's reference child kept for the next evaluations (a search or a bench run draws fresh
    seeds for each): it loaded the task and compiled the reference once and answers each new
    list of seeds with inputs and outputs. Task code runs there, never candidate code (an in-file
    task's reference is its own file's, keyed by that file's content)."""

    def __init__(self):
        self.child = sandbox.KeptChild()
        self.programs = None
        self.signature = None


_KEPT: collections.OrderedDict = collections.OrderedDict()  # task key -> _KeptReference
try:
    KEPT_REFERENCES = max(0, int(os.environ.get("MAXKERNEL_WORKER_KEPT_REFERENCES", "2")))
except ValueError:
    KEPT_REFERENCES = 2


def _drop_kept(key):
    kept = _KEPT.pop(key, None)
    if kept is not None:
        kept.child.close()


def task_is_candidate(req) -> bool:
    """An in-file task whose text is the candidate's own (the Test lens on a file): its reference's
    child runs candidate code at import, so it is never kept past the evaluation. A search's
    variants of the file differ from it; their task is the user's file."""
    task = req.get("task") or {}
    if task.get("form") != "infile":
        return False
    text = task.get("source")
    if not isinstance(text, str):
        try:
            with open(task.get("path") or "", encoding="utf-8") as f:
                text = f.read()
        except (OSError, ValueError):
            return True
    return req.get("source") is None or req.get("source") == text


def _extra_goldens(header, blobs) -> list:
    """Per extra shape: (its result so far, the reference's JudgeGolden there or None)."""
    out = []
    for entry in header.get("extra") or []:
        result = entry.get("result") if isinstance(entry, dict) else None
        if not isinstance(result, dict) or not isinstance(result.get("name"), str):
            raise C.WorkerError(C.INTERNAL, "the reference's process sent a malformed extra shape")
        out.append((result, JudgeGolden(entry, blobs, ReferencePrograms(None, None)) if entry.get("sets") else None))
    return out


def _kept_answer(key, fields, seeds, cancel, extra_shapes=None):
    """(header, blobs, programs) from the task's kept reference, starting one if needed; programs
    is None when the answer is an error or the reference is not frozen (then nothing is kept)."""
    kept = _KEPT.get(key)
    if kept is not None and kept.child.alive():
        _KEPT.move_to_end(key)
        try:
            header, blobs = kept.child.ask({"seeds": seeds, "extra_shapes": extra_shapes}, cancel=cancel)
        except sandbox.ChildFailed as e:
            _drop_kept(key)
            if e.kind == C.CANCELLED:
                raise
            header = None
        if header is not None and not header.get("error") and header.get("signature") == kept.signature:
            header["reference_from"] = "kept child"
            return header, blobs, kept.programs
    _drop_kept(key)  # none, gone, an error or new shapes: a fresh child answers (and says what went wrong)
    kept = _KeptReference()
    try:
        header, blobs = kept.child.ask(dict(fields, role="reference", seeds=seeds, serve=True,
                                            extra_shapes=extra_shapes), cancel=cancel)
    except BaseException:
        kept.child.close()
        raise
    if header.get("error") or not header.get("reference_frozen"):
        kept.child.close()
        return header, blobs, None
    programs = ReferencePrograms(blob(header.get("program"), blobs), blob(header.get("target_program"), blobs))
    kept.programs, kept.signature = programs, header.get("signature")
    _KEPT[key] = kept
    while len(_KEPT) > KEPT_REFERENCES:
        _drop_kept(next(iter(_KEPT)))
    return header, blobs, programs


def golden_for(req, seeds, plat, cancel, extra_shapes=None) -> tuple[JudgeGolden, bool]:
    """The reference's answer for `seeds` (and at the request's `extra_shapes`, passed as the
    request holds them: the reference's child resolves them against the task's sizes)."""
    key = _cache_key(req, seeds, plat) if judge_golden.MAX_ENTRIES else None
    if key is not None and key in _CACHE:
        _CACHE.move_to_end(key)
        _CACHE[key].origin = "cache"
        return _CACHE[key], True
    fields = {k: req[k] for k in ("task", "source", "filename", "shrink", "interpret_mode") if k in req}
    task_key = _cache_key(req, None, plat) if judge_golden.MAX_ENTRIES and KEPT_REFERENCES and \
        not task_is_candidate(req) else None
    if task_key is not None:
        header, blobs, programs = _kept_answer(task_key, fields, seeds, cancel, extra_shapes)
    else:
        header, blobs = sandbox.run_child(dict(fields, role="reference", seeds=seeds, extra_shapes=extra_shapes),
                                              cancel=cancel)
        programs = None
    raise_error(header)
    golden = JudgeGolden(header, blobs, programs)
    golden.extra = _extra_goldens(header, blobs)
    golden.origin = header.get("reference_from") or "fresh child"
    if key is not None and golden.header.get("reference_frozen"):
        _CACHE[key] = golden
        while len(_CACHE) > judge_golden.MAX_ENTRIES:
            _CACHE.popitem(last=False)
    return golden, False


_CHILD_KINDS = (C.BAD_REQUEST, C.SYNTAX, C.IMPORT, C.TRACE, C.LOWERING, C.COMPILE, C.RUNTIME, C.TASK, "refused",
                C.CANCELLED, "timeout")


def raise_error(header):
    err = header.get("error")
    if err is None:
        return
    if not isinstance(err, dict):
        raise C.WorkerError(C.RUNTIME, "the child sent a malformed error")
    kind = err.get("kind") if err.get("kind") in _CHILD_KINDS else C.RUNTIME
    extra = {k: v for k, v in err.items() if k not in ("kind", "message")}
    raise C.WorkerError(kind, str(err.get("message", ""))[:20000], **extra)


# ---------------------------------------------------------------------------
# The candidate's program, in the judge's own calling convention.

_TEMPLATES: dict = {}


def wrap_program(module: bytes, kept, in_avals, out_avals, platform):
    """A jax.export.Exported whose signature is the judge's (the task's inputs, the declared
    outputs, flat) and whose body is the child's module: if they disagree, it does not compile."""
    n_out = len(out_avals)
    sig = (tuple((a.shape, str(a.dtype)) for a in in_avals), platform, n_out)
    tmpl = _TEMPLATES.get(sig)
    if tmpl is None:
        # As many outputs as the program declares: the template's per-output fields fit.
        tmpl = jax.export.export(jax.jit(lambda *xs: (xs[0],) * n_out), platforms=[platform])(*in_avals)
        _TEMPLATES[sig] = tmpl
    if any(not 0 <= i < len(in_avals) for i in kept):
        raise ProgramRefused("the candidate's program names arguments the task does not have")
    outs = tuple(jax.core.ShapedArray(tuple(a.shape), a.dtype) for a in out_avals)
    return dataclasses.replace(tmpl, mlir_module_serialized=module, module_kept_var_idx=tuple(kept),
                               out_avals=outs, out_tree=jax.tree_util.tree_structure(tuple(range(len(outs)))),
                               fun_name="candidate")


class ProgramRefused(Exception):
    pass


class ShapeMismatch(ProgramRefused):
    pass


def program_text(exported) -> str:
    try:
        return exported.mlir_module()
    except Exception as e:  # noqa: BLE001
        raise ProgramRefused(f"the candidate's program is not a readable StableHLO module ({e})") from None


def foreign_calls(work: program_work.Work, platform: str) -> list[str]:
    allowed = set(program_work.KERNEL_TARGETS.get(platform, ())) | set(program_work.HARMLESS_TARGETS)
    return sorted(t for t in work.custom_calls if t not in allowed)


def _failure(kind, message, **extra):
    return dict({"kind": kind, "message": message}, **extra)


# Outside work at this share of the reference's or more is refused whatever the kernels are said to
# do (the child's count of the kernels' work can be inflated, e.g. by a branch never taken); between
# cost.work.SHARE_LIMIT and this, the child's count of the kernels' share decides, as before.
HARD_SHARE = 0.75


def judge_target(cand_target, golden: JudgeGolden, in_avals, claimed=None) -> tuple[dict, dict | None]:
    """(the judge's work report, a failure or None) from the program exported for the target."""
    if cand_target is None:
        return {"error": "the candidate's program for the target could not be exported"}, None
    module, kept, platform = cand_target
    text = program_text(wrap_program(module, kept, in_avals, [], "cpu"))
    cw = program_work.count(text)
    rep = {"platform": platform, "outside": cw.to_json(), "share_limit": cost_work.SHARE_LIMIT,
           "hard_share_limit": HARD_SHARE}
    bad = foreign_calls(cw, platform)
    if bad:
        return rep, _failure("refused", f"the candidate's program calls {', '.join(bad)} (a host callback or "
                                        f"other code outside XLA and the kernels): the judge does not run it",
                             rule="custom-call")
    kernels = sum(cw.custom_calls.get(t, 0) for t in program_work.KERNEL_TARGETS.get(platform, ()))
    rep["kernels"] = kernels
    if not kernels:
        return rep, _failure("no_pallas_kernel", "the candidate's program for the target contains no Pallas "
                                                 "kernel (plain XLA is not a kernel solution)")
    ref = _ref_work(golden, in_avals)
    rep["reference"] = ref.to_json() if ref else None
    if cw.unknown_loops and cw.flops:
        return rep, _failure("work_outside_kernel", "the work is done outside the kernel: a loop outside every "
                                                    "kernel runs an unknown number of times", rule="loop")
    if ref is None:
        return rep, None
    inside = ((claimed or {}).get("candidate") or {}).get("kernels") or {}
    for what, key, outside, whole in (("matmul FLOPs", "matmul_flops", cw.matmul_flops, ref.matmul_flops),
                                      ("FLOPs", "flops", cw.flops, ref.flops)):
        said_inside = inside.get(key) if isinstance(inside.get(key), (int, float)) else 0
        if whole and (outside >= HARD_SHARE * whole or (
                outside >= cost_work.SHARE_LIMIT * whole and said_inside < cost_work.SHARE_LIMIT * whole)):
            return rep, _failure(
                "work_outside_kernel",
                f"the work is done outside the kernel: the program's XLA ops outside every kernel do "
                f"{outside / whole:.0%} of the reference's {what} ({outside:,} of {whole:,}; counted by the "
                f"judge in the exported program); at most {cost_work.SHARE_LIMIT:.0%} may run outside the kernels "
                f"({HARD_SHARE:.0%} when the kernels do the rest)",
                rule="exported-program")
    return rep, None


def _ref_work(golden: JudgeGolden, in_avals):
    progs = golden.programs
    if progs.work is None and progs.target is not None:
        module, kept, _ = progs.target
        try:
            progs.work = program_work.count(program_text(wrap_program(module, kept, in_avals, [], "cpu")))
        except ProgramRefused:
            progs.work = None
    return progs.work


def roofline_reference(golden: JudgeGolden, in_avals) -> dict:
    """What cost.work.roofline reads, from the judge's own numbers: the reference program's matmul
    FLOPs and the bytes of the inputs and outputs."""
    ref = _ref_work(golden, in_avals)
    return {"matmul_flops": ref.matmul_flops if ref else 0,
            "min_bytes": int(sum(a.nbytes for a in golden.inputs[0]) + sum(o.nbytes for o in golden.outputs[0]))}


# ---------------------------------------------------------------------------
# Running it.

def out_avals_from(header, golden: JudgeGolden):
    outs = (header.get("program") or {}).get("outputs")
    ref = golden.outputs[0]
    if not isinstance(outs, list) or len(outs) != len(ref):
        raise ShapeMismatch(f"candidate returned {len(outs) if isinstance(outs, list) else '?'} arrays, "
                            f"reference {len(ref)}")
    avals = []
    for i, (m, r) in enumerate(zip(outs, ref)):
        if not isinstance(m, dict) or m.get("dtype") not in wire.DTYPES or m.get("shape") != list(r.shape):
            raise ShapeMismatch(f"output {i}: candidate shape {m.get('shape') if isinstance(m, dict) else m} != "
                                f"reference {list(r.shape)}")
        avals.append(jax.ShapeDtypeStruct(tuple(r.shape), jnp.dtype(m["dtype"])))
    return avals


def compile_program(exported, in_avals):
    """The judge's own compiled callable of an exported program (flat arrays in, flat tuple out)."""
    return jax.jit(exported.call).trace(*in_avals).lower().compile()


def check(compiled, ref, golden: JudgeGolden, tol, plat, accept_dtype, cancel,
          facts=None) -> tuple[list, dict | None]:
    """Runs the candidate's program and the reference's in both orders on every input set (fresh
    device copies of the judge's read-only arrays each time) and compares with the golden outputs.
    A wrong result carries the correctness report (judge.mismatch) of its first failing run, with the
    output blocks from the candidate's lowering facts."""
    checks, failure, reports = [], None, {}
    for i, (seed, gold) in enumerate(zip(golden.seeds, golden.outputs)):
        cancel.check()
        entry = {"seed": seed, "ok": True, "runs": []}
        c1 = _run(compiled, golden, i)
        r1 = _run(ref, golden, i) if ref is not None else None
        r2 = _run(ref, golden, i) if ref is not None else None
        c2 = _run(compiled, golden, i)
        for order, c, r in (("candidate_first", c1, r1), ("reference_first", c2, r2)):
            cmp = judge_run.compare(c, gold, tol, plat, accept_dtype)
            run = {"order": order, "ok": cmp["ok"], "outputs": cmp["outputs"]}
            if not cmp["ok"]:
                run.update(kind=cmp["kind"], message=cmp["message"])
            if r is not None and not judge_run.compare(r, gold, tol, plat, accept_dtype)["ok"]:
                run.update(ok=False, kind=run.get("kind", "reference_changed"),
                           message=run.get("message", "the reference's program no longer reproduces its outputs"))
            entry["runs"].append(run)
            if not run["ok"] and entry["ok"]:
                entry.update(ok=False, kind=run["kind"], message=run["message"])
                if cmp.get("kind") in ("mismatch", "nonfinite"):
                    reports[seed] = _mismatch_report(c, gold, golden, i, seed, order, tol, plat, facts)
        checks.append(entry)
        if not entry["ok"] and failure is None:
            failure = {"kind": entry["kind"], "message": f"seed {seed}: {entry['message']}", "seed": seed}
            if seed in reports:
                failure["report"] = reports[seed]
    return checks, failure


def _mismatch_report(cand, gold, golden: JudgeGolden, i, seed, order, tol, plat, facts) -> dict:
    shapes = [list(g.shape) for g in gold]
    try:
        blocks = mismatch.output_blocks(facts or [], shapes)
    except Exception:  # noqa: BLE001 - the report goes without block facts
        blocks = {}
    return mismatch.report(cand, gold, lambda dt: judge_run.tolerances_for(dt, tol, plat), seed=seed,
                               order=order, blocks=blocks,
                               input_shapes=[list(x.shape) for x in golden.inputs[i] if hasattr(x, "shape")])


def _run(fn, golden: JudgeGolden, i):
    out = fn(*golden.device_inputs(i))
    jax.block_until_ready(out)
    return list(out)


def time_programs(cand, ref, golden: JudgeGolden, cfg, cancel, tol, plat, accept_dtype, device=False) -> dict:
    """Times the candidate's program (and the reference's, when given) with judge.clock's bound
    loop on fresh copies of the input sets. The last output of every set is compared with the
    reference's afterwards, so a program right while checked and stale while timed is caught
    (`timed_outputs`). `device`: on a TPU or GPU, the device time of the same calls from a
    profiler trace too (`device` in each side's stats)."""
    sets = [(tuple(golden.device_inputs(i)), {}) for i in range(len(golden.seeds))]
    timed: list = []
    c = clock.time_fn(cand, sets, cfg, cancel, outputs=timed)
    r = clock.time_fn(ref, sets, cfg, cancel) if ref is not None else None
    if device:
        runs = max(1, min(int(cfg.get("min_runs", 20)), 20))
        c["device"] = timing.device_time(cand, sets, runs, "candidate")
        if r is not None:
            r["device"] = timing.device_time(ref, sets, runs, "reference")
    out = {"candidate": c, "reference": r, "config": cfg, "timed_by": "judge"}
    for seed, got, gold in zip(golden.seeds, timed, golden.outputs):
        cmp = judge_run.compare(list(got), gold, tol, plat, accept_dtype)
        if not cmp["ok"]:
            out["timed_outputs"] = {"ok": False, "checked": len(timed), "failure": {
                "kind": "timed_outputs_differ", "seed": seed,
                "message": f"seed {seed}: the outputs of the timed runs differ from the checked ones "
                           f"({cmp['message']})"}}
            return out
    out["timed_outputs"] = {"ok": True, "checked": len(timed)}
    return out


def elapsed(t0):
    return time.perf_counter() - t0


def input_avals(golden: JudgeGolden):
    return [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in golden.inputs[0]]


def reference_callable(golden: JudgeGolden, plat):
    """The reference's compiled program, compiled once per kept reference."""
    progs = golden.programs
    if progs.compiled is None:
        progs.compiled = _reference_callable(golden, plat) or False
    return progs.compiled or None


def _reference_callable(golden: JudgeGolden, plat):
    if golden.programs.program is None:
        return None
    module, kept, _ = golden.programs.program
    ins = input_avals(golden)
    outs = [jax.ShapeDtypeStruct(o.shape, o.dtype) for o in golden.outputs[0]]
    try:
        return compile_program(wrap_program(module, kept, ins, outs, _EXPORT.get(plat, plat)), ins)
    except Exception:  # noqa: BLE001 - the reference is then not timed
        return None


_EXPORT = {"cpu": "cpu", "gpu": "cuda", "tpu": "tpu"}


def candidate_callable(header, blobs, golden: JudgeGolden, plat):
    prog = blob(header.get("program"), blobs)
    if prog is None:
        raise ProgramRefused("the candidate's process sent no program")
    module, kept, _ = prog
    ins = input_avals(golden)
    outs = out_avals_from(header, golden)
    exported = wrap_program(module, kept, ins, outs, _EXPORT.get(plat, plat))
    work = program_work.count(program_text(exported))
    allowed_platform = "cuda" if plat == "gpu" else plat
    bad = foreign_calls(work, allowed_platform)
    if bad:
        raise ProgramRefused(f"the candidate's program calls {', '.join(bad)} (a host callback or other code "
                             f"outside XLA and the kernels): the judge does not run it")
    try:
        return compile_program(exported, ins)
    except Exception as e:  # noqa: BLE001
        raise ProgramRefused(f"the candidate's program does not fit the task's inputs and outputs "
                             f"({str(e).splitlines()[0][:300]})") from None
