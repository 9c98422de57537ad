"""The judge at the task's extra shapes (tasks.extra_shapes, issue 36): after the candidate passed at
the task's own shape, one more child of the candidate's gets the reference's input set at each
extra shape, runs the interpreter's first run there and exports its program; the judge compiles
and runs each program itself and compares with the reference's outputs at that shape. Only data
crosses, as at the own shape (judge.judge)."""

from __future__ import annotations

from mkworker import common as C
from mkworker.judge import judge
from mkworker.sandbox import sandbox
from mkworker.tasks import extra_shapes


def check(parsed, golden: judge.JudgeGolden, fields: dict, facts, plat, tol, accept, cancel,
          own_shape_correct: bool):
    """(the response's `extra_shapes` report, the verdict's failure or None)."""
    cases, required = parsed
    if not own_shape_correct or not cases:
        return extra_shapes.unchecked(required, own_shape_correct), None
    results = [result for result, _ in golden.extra]
    runnable, given, blobs = [], [], []
    for i, (result, case_golden) in enumerate(golden.extra):
        if case_golden is None:
            continue  # not_checked: the reference's child said why
        desc, arrays = case_golden.inputs_for_candidate()
        if desc is None:
            results[i] = dict(result, status="not_checked",
                              why="the task's inputs at this shape cannot cross to the candidate's process")
            continue
        runnable.append(i)
        given.append(desc)
        blobs += arrays
    if runnable:
        cancel.check()
        header, progs = sandbox.run_child(dict(fields, role="candidate", extra_inputs=given), cancel=cancel,
                                              blobs=blobs)
        judge.raise_error(header)
        answers = header.get("extra_programs")
        if not isinstance(answers, list) or len(answers) != len(runnable):
            raise C.WorkerError(C.RUNTIME, "the candidate's process sent no program per extra shape")
        for i, answer in zip(runnable, answers):
            cancel.check()
            results[i] = _judge_case(results[i], answer, progs, golden.extra[i][1], facts, plat, tol, accept,
                                     cancel)
    return extra_shapes.summarize(required, results)


def _judge_case(result, answer, progs, case_golden, facts, plat, tol, accept, cancel) -> dict:
    err = answer.get("error") if isinstance(answer, dict) else {"kind": C.RUNTIME, "message": "no answer"}
    if err is not None:
        err = err if isinstance(err, dict) else {}
        return extra_shapes.candidate_failed(result, err.get("kind"), err.get("message"))
    try:
        compiled = judge.candidate_callable(answer, progs, case_golden, plat)
    except judge.ShapeMismatch as e:
        seed = case_golden.seeds[0]
        return dict(result, status="failed", kind="shape_mismatch", message=f"seed {seed}: {e}")
    except judge.ProgramRefused as e:
        return dict(result, status="failed", kind="refused", message=str(e))
    here = answer.get("pallas_calls")  # the candidate's facts at this shape (its grid there)
    try:
        _, failure = judge.check(compiled, None, case_golden, tol, plat, accept, cancel,
                                     here if isinstance(here, list) else facts)
    except C.WorkerError:
        raise
    except Exception as e:  # noqa: BLE001
        return dict(result, status="failed", kind=C.RUNTIME,
                    message=f"the candidate's program failed while the judge ran it: {str(e).splitlines()[0][:300]}")
    if failure is None:
        return dict(result, status="passed")
    return dict(result, status="failed", kind=failure["kind"], message=failure["message"],
                **({"report": failure["report"]} if failure.get("report") else {}))
