"""Extra input shapes: the candidate checked at other sizes of the same task (docs/tasks.md,
"Extra shapes").

An extra shape is a by-value size map over the task's input dims ({"512": 384}: every input dim
of size 512 becomes 384), as the host chose it (its rules, or the Tester's shapes). The inputs
come from the task's own inputs function re-run at those sizes and the expected outputs from the
task's reference run on them (tasks.shrink.Resized, strict): neither the candidate nor whoever
chose the shape writes the oracle, and the tolerances are the task's. When the inputs function
or the reference cannot run at a shape, that shape is reported as not checked, with the reason,
never guessed at.

Each shape is checked on one seed (the request's first), in both orders, exactly like the
task's own shape. With `required` (the default) a failure at any shape makes the verdict
incorrect and names the shape; without it the results are only reported (a host learns which
shapes the kernel as written passes). The reference's child resolves each case (resolve_case);
the judge checks the candidate's program there (judge.extra) and reports (summarize).
"""

from __future__ import annotations

import jax

from mkworker import common as C
from mkworker.judge import golden as judge_golden
from mkworker.judge import run
from mkworker.tasks import shrink

MAX_CASES = 8
MAX_SIZE = 1 << 24
_CANDIDATE_ERRORS = (C.TRACE, C.LOWERING, C.COMPILE, C.RUNTIME)


def parse_request(value):
    """(cases, required) from a request's `extra_shapes`, or None when absent."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise C.WorkerError(C.BAD_REQUEST, "`extra_shapes` must be an object {\"cases\": [{\"name\": ..., "
                                           "\"sizes\": {\"SIZE\": NEW_SIZE}}], \"required\": true}")
    cases = value.get("cases", [])
    required = value.get("required", True)
    if not isinstance(required, bool):
        raise C.WorkerError(C.BAD_REQUEST, "`extra_shapes.required` must be true or false")
    if not isinstance(cases, list) or len(cases) > MAX_CASES:
        raise C.WorkerError(C.BAD_REQUEST, f"`extra_shapes.cases` must be a list of at most {MAX_CASES} cases")
    out = []
    for i, case in enumerate(cases):
        where = f"extra_shapes.cases[{i}]"
        if not isinstance(case, dict) or not isinstance(case.get("name"), str) or not case["name"] \
                or not isinstance(case.get("sizes"), dict) or not case["sizes"]:
            raise C.WorkerError(C.BAD_REQUEST, f"`{where}` must be {{\"name\": \"...\", \"sizes\": "
                                               f"{{\"SIZE\": NEW_SIZE, ...}}}}")
        sizes = {}
        for k, v in case["sizes"].items():
            try:
                old = int(k)
            except ValueError:
                old = 0
            if old < 1 or isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_SIZE:
                raise C.WorkerError(C.BAD_REQUEST, f"`{where}.sizes` maps positive sizes to positive "
                                                   f"sizes (at most {MAX_SIZE}); got {k!r}: {v!r}")
            sizes[old] = v
        out.append({"name": case["name"][:60], "sizes": sizes, "why": str(case.get("why", ""))[:200]})
    return out, required


def label(result: dict) -> str:
    """`ragged` (inputs (384, 128), (384, 128)): how a verdict names a shape."""
    shapes = result.get("input_shapes") or []
    text = ", ".join(str(tuple(s)) for s in shapes if isinstance(s, list))
    return f"`{result['name']}` (inputs {text})" if text else f"`{result['name']}`"


def unchecked(required: bool, own_shape_correct: bool) -> dict:
    """The report when no case is checked: the own shape fails, or no case was asked for."""
    return {"required": required, "cases": [], "passed": 0, "failed": 0, "not_checked": 0,
            "none": "no extra shapes were asked for" if own_shape_correct else
            "not checked: the candidate already fails at the task's own shape"}


def summarize(required: bool, results: list[dict]):
    """(the `extra_shapes` report, the verdict's failure or None) from each case's result."""
    report = {"required": required, "cases": [], "passed": 0, "failed": 0, "not_checked": 0, "none": None}
    failure = None
    for result in results:
        report["cases"].append(result)
        report[result["status"]] += 1
        if result["status"] == "failed" and required and failure is None:
            failure = {"kind": "extra_shape", "cause": result["kind"],
                       "message": f"at extra shape {label(result)}: {result['message']}",
                       "extra_shape": {"name": result["name"], "input_shapes": result["input_shapes"]}}
            if result.get("report"):
                failure["report"] = dict(result["report"], extra_shape=result["name"],
                                         text=f"The task's own shape passes; the failing shape is the extra "
                                              f"shape {label(result)}.\n" + result["report"]["text"])
    if report["passed"] + report["failed"] == 0:
        report["none"] = "; ".join(f"`{r['name']}`: {r['why']}" for r in report["cases"])
    return report, failure


def task_sizes(task) -> list[int]:
    return sorted({int(d) for x in jax.tree_util.tree_leaves(run.abstract_value(task))
                   if run.is_data(x) for d in x.shape})


def _shrunk_counts(task, smap) -> dict:
    """The shrunk instance's count axes (shrink.Shrunk) under an extra shape: a size the case
    sets takes the case's value, every other axis keeps its shrunk size."""
    inst = task.shrink
    if inst is None or not inst.count_sizes:
        return {}
    shapes = [[smap.get(int(d), int(e)) for d, e in zip(x.shape, y.shape)]
              for x, y in zip(inst.full_leaves, inst.leaves) if run.is_data(x)]
    return {"counts": {d: inst.size_map[d] for d in inst.count_sizes if d not in smap}, "shapes": shapes}


def resolve_case(case, task, sizes, seeds, mode, plat, cancel, compiled: dict | None = None):
    """(the case's result so far, the reference's Golden at its shape), or (a `not_checked`
    result, None) when the case changes nothing or the task cannot run there."""
    smap = {d: v for d, v in case["sizes"].items() if d in sizes}
    result = {"name": case["name"], "sizes": {str(d): v for d, v in smap.items()}, "input_shapes": None}
    if case.get("why"):
        result["reason"] = case["why"]
    if not smap or all(d == v for d, v in smap.items()):
        return dict(result, status="not_checked", why=f"it changes none of the task's input sizes {sizes}"), None
    shrunk = getattr(task.shrink, "size_map", {})
    # Sizes the shape leaves alone stay at the request's instance (shrunk, or the task's own).
    full_map = {d: smap.get(d, shrunk.get(d, d)) for d in sizes}
    try:
        instance = shrink.Resized(task, full_map, strict=True, **_shrunk_counts(task, smap))
        result["input_shapes"] = instance.input_shapes()
        golden, _ = judge_golden.frozen(task, seeds, plat, mode, cancel, instance=instance, compiled=compiled)
    except shrink.CannotResize as e:
        return dict(result, status="not_checked", why=str(e)), None
    except C.WorkerError as e:
        if e.kind != C.TASK:
            raise
        return dict(result, status="not_checked", why=e.message.splitlines()[0][:300]), None
    return result, golden


def candidate_failed(result: dict, kind, message) -> dict:
    """The case's result when the candidate cannot trace, lower, compile or run at its shape (as
    its child reported it; any other kind reads as a run-time failure)."""
    kind = kind if kind in _CANDIDATE_ERRORS else C.RUNTIME
    return dict(result, status="failed", kind=kind,
                message=f"the candidate does not run there: {_gist(str(message or '')) or kind}")


def _gist(message: str) -> str:
    """The first line of an error, and its last when the first only opens a traceback."""
    lines = [ln.strip() for ln in (message or "").splitlines() if ln.strip()]
    if not lines:
        return ""
    text = lines[0] if len(lines) == 1 or not lines[0].endswith("Traceback (most recent call last):") \
        else f"{lines[0][:-len('Traceback (most recent call last):')].strip()} {lines[-1]}"
    return text[:300]
