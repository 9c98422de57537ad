"""Extra shapes in `evaluate` (docs/tasks.md "Extra shapes"): the candidate checked at other
sizes of the same task, with the task's own inputs function and reference at those sizes."""

import os
import sys

from worker_harness import ROOT, read_task, task_path

sys.path.insert(0, os.path.join(ROOT, "tpu", "worker"))

from mkworker.tasks import shrink
from mkworker.tasks import tasks

ROWS_TASK = task_path("extra_shapes", "rows_scale.py")
ROWS_SOURCE = read_task("extra_shapes", "rows_scale.py")
RAGGED = {"name": "ragged", "sizes": {"512": 384}, "why": "384 rows: one whole 256-row block and half of one"}
SINGLE = {"name": "single_block", "sizes": {"512": 256}}
QUICK = {"seeds": [5, 6], "timing": False}


def _evaluate(worker, kernel, extra, **fields):
    return worker.request("evaluate", task={"form": "infile", "path": ROWS_TASK}, filename=ROWS_TASK,
                          source=ROWS_SOURCE, kernel=kernel, extra_shapes=extra, **QUICK, **fields)


def test_a_kernel_that_drops_the_remainder_fails_the_ragged_shape_by_name(worker):
    r = _evaluate(worker, "drops_remainder", {"cases": [RAGGED, SINGLE]})
    assert r["ok"], r
    assert r["correct"] is False
    f = r["failure"]
    assert f["kind"] == "extra_shape" and f["cause"] == "nonfinite", f
    assert f["extra_shape"] == {"name": "ragged", "input_shapes": [[384, 128]]}
    assert f["message"].startswith("at extra shape `ragged` (inputs (384, 128)): seed 5:"), f
    report = r["extra_shapes"]
    assert (report["passed"], report["failed"], report["not_checked"]) == (1, 1, 0), report
    assert [c["status"] for c in report["cases"]] == ["failed", "passed"]
    assert report["cases"][0]["reason"] == RAGGED["why"]
    # The task's own shape passed: only the extra shape decided the verdict, and nothing was timed.
    assert all(c["ok"] for c in r["checks"]) and r["timing"] is None

    # Not required: the same results are reported, the verdict is the task's own shape's.
    told = _evaluate(worker, "drops_remainder", {"cases": [RAGGED], "required": False})
    assert told["correct"] is True and told["failure"] is None, told
    assert told["extra_shapes"]["cases"][0]["status"] == "failed"


def test_a_kernel_with_a_masked_edge_block_passes_every_shape(worker):
    r = _evaluate(worker, "masked", {"cases": [RAGGED, SINGLE]})
    assert r["ok"] and r["correct"] is True, r
    report = r["extra_shapes"]
    assert (report["passed"], report["failed"], report["none"]) == (2, 0, None), report
    assert [c["input_shapes"] for c in report["cases"]] == [[[384, 128]], [[256, 128]]]


def test_a_kernel_that_hard_codes_the_task_sizes_fails_at_other_sizes(worker):
    r = _evaluate(worker, "fixed_rows", {"cases": [RAGGED]})
    assert r["correct"] is False and r["failure"]["cause"] == "shape_mismatch", r
    assert "candidate shape [512, 128] != reference [384, 128]" in r["failure"]["message"]


def test_inputs_that_cannot_be_reshaped_are_checked_at_the_task_shape_only_and_say_why(worker):
    path = task_path("extra_shapes", "fixed_inputs.py")
    r = worker.request("evaluate", task={"form": "infile", "path": path}, filename=path,
                       source=read_task("extra_shapes", "fixed_inputs.py"),
                       extra_shapes={"cases": [RAGGED]}, **QUICK)
    assert r["ok"] and r["correct"] is True, r
    report = r["extra_shapes"]
    assert report["cases"][0]["status"] == "not_checked"
    assert report["none"] == ("`ragged`: the inputs function `make_inputs` cannot run at other sizes: "
                              "it captures a constant array of shape (512, 128)"), report


def test_a_shape_that_changes_no_task_size_is_not_checked(worker):
    r = _evaluate(worker, "masked", {"cases": [{"name": "elsewhere", "sizes": {"1000": 8}}]})
    assert r["correct"] is True
    assert r["extra_shapes"]["cases"][0]["why"] == "it changes none of the task's input sizes [128, 512]"


def test_a_reference_that_hard_codes_a_size_cannot_be_resized():
    path = task_path("formats", "shrink_hardcoded", "baseline.py")
    task = tasks.resolve({"form": "jaxbench", "baseline": path}, None, None)
    try:
        shrink.Resized(task, {131072: 4096}, strict=True)
        raise AssertionError("a reference with a hard-coded size was resized")
    except shrink.CannotResize as e:
        assert str(e).startswith("the reference `workload` cannot run at input shapes (4096,); "
                                 "it probably hard-codes a size"), e
    finally:
        task.close()


def test_bad_extra_shapes_requests(worker):
    for bad in ([RAGGED], {"cases": [{"name": "x", "sizes": {"512": 0}}]},
                {"cases": [{"name": "x", "sizes": {"rows": 8}}]}, {"cases": [RAGGED] * 9},
                {"cases": [RAGGED], "required": "yes"}):
        r = _evaluate(worker, "masked", bad)
        assert not r["ok"] and r["error"]["kind"] == "bad_request", (bad, r)
