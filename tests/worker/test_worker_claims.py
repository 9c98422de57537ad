"""The verdicts docs/worker-protocol.md promises for `evaluate`, each on a small in-file task
(tasks/claims/) whose candidate is right or wrong in exactly one way: shape_mismatch,
dtype_mismatch, a reference-state cheat (refused by the gate); NaN and +/-Inf where the reference has them; exact compares
of integer and bool outputs; warnings for all-zero and constant inputs; a cheat that is right
in one run order only. Each asserts the verdict's fields, never just a word in a message."""

import math

import pytest
from worker_harness import WorkerProcess, marker_line, read_task, task_path

SEEDS = [11, 12]


def evaluate(worker, task_file, kernel="candidate", source_file=None, seeds=SEEDS):
    task = {"form": "infile", "path": task_path("claims", task_file)}
    source_file = source_file or task_file
    return worker.request("evaluate", task=task, source=read_task("claims", source_file),
                          filename=task_path("claims", source_file), kernel=kernel,
                          seeds=seeds, timing=False)


def verdict(r):
    assert r["ok"] is True, r.get("error")
    return r


def failing_outputs(r):
    """(seed, order, output index) of every output the worker marked wrong."""
    return {(c["seed"], run["order"], o["index"])
            for c in r["checks"] for run in c["runs"] for o in run["outputs"] if not o.get("ok", True)}


def test_the_right_candidates_pass(worker):
    for task_file in ("outputs.py", "nonfinite.py", "exact_int.py"):
        r = verdict(evaluate(worker, task_file))
        assert r["correct"] is True and r["failure"] is None, (task_file, r["failure"])
        assert all(run["ok"] for c in r["checks"] for run in c["runs"])


def test_a_wrong_output_shape_is_shape_mismatch(worker):
    r = verdict(evaluate(worker, "outputs.py", "wrong_shape"))
    assert r["correct"] is False
    assert r["failure"]["kind"] == "shape_mismatch" and r["failure"]["seed"] == SEEDS[0]
    for c in r["checks"]:
        assert [run["kind"] for run in c["runs"]] == ["shape_mismatch", "shape_mismatch"]
        assert c["runs"][0]["outputs"] == [{"index": 0, "shape": [16, 128], "dtype": "float32",
                                            "ok": False}]


def test_a_wrong_output_dtype_is_dtype_mismatch_even_with_the_right_values(worker):
    r = verdict(evaluate(worker, "outputs.py", "wrong_dtype"))
    assert r["correct"] is False and r["failure"]["kind"] == "dtype_mismatch"
    assert {run["kind"] for c in r["checks"] for run in c["runs"]} == {"dtype_mismatch"}


def test_a_candidate_that_changes_what_the_reference_computes_is_refused():
    # The cheat writes os.environ, which the reference reads: the source gate refuses it before a
    # line of it runs (docs/worker-protocol.md, "Defences against faked measurements"), so the
    # environment is never changed; reference_changed remains the check behind the gate.
    w = WorkerProcess()
    try:
        assert w.request("hello", timeout=120)["ok"]
        r = evaluate(w, "reference_state.py", source_file="reference_state_cheat.py")
        assert r["ok"] is False and r["error"]["kind"] == "refused", r
        assert r["error"]["rule"] == "environment"
        assert r["error"]["locations"][0]["line"] == \
            marker_line(read_task("claims", "reference_state_cheat.py"), 'os.environ["MK_CLAIMS_SCALE"]')
        # The reference still reproduces its golden output with a clean candidate.
        assert verdict(evaluate(w, "reference_state.py"))["correct"] is True
    finally:
        w.close()


def test_special_values_must_match_where_the_reference_has_them(worker):
    right = verdict(evaluate(worker, "nonfinite.py"))
    assert right["correct"] is True  # NaN == NaN and +-Inf == +-Inf count as equal

    r = verdict(evaluate(worker, "nonfinite.py", "finite_where_nan"))
    assert r["correct"] is False and r["failure"]["kind"] == "mismatch"
    out = r["checks"][0]["runs"][0]["outputs"][0]
    assert out["nonfinite"] == 0 and out["mismatches"] > 0
    assert out["first_mismatch"]["reference"] == "nan"
    assert math.isfinite(out["first_mismatch"]["candidate"])

    r = verdict(evaluate(worker, "nonfinite.py", "nan_where_finite"))
    assert r["correct"] is False and r["failure"]["kind"] == "nonfinite"
    out = r["checks"][0]["runs"][0]["outputs"][0]
    assert out["nonfinite"] > 0 and out["first_mismatch"]["candidate"] == "nan"
    assert math.isfinite(out["first_mismatch"]["reference"])

    r = verdict(evaluate(worker, "nonfinite.py", "inf_sign_flipped"))
    assert r["correct"] is False and r["failure"]["kind"] == "mismatch"
    out = r["checks"][0]["runs"][0]["outputs"][0]
    assert (out["first_mismatch"]["reference"], out["first_mismatch"]["candidate"]) == ("inf", "-inf")


@pytest.mark.parametrize("entry, wrong_output", [("off_by_one", 0), ("one_flipped", 1)])
def test_integer_and_bool_outputs_are_compared_exactly(worker, entry, wrong_output):
    r = verdict(evaluate(worker, "exact_int.py", entry))
    assert r["correct"] is False and r["failure"]["kind"] == "mismatch"
    for c in r["checks"]:
        for run in c["runs"]:
            wrong = run["outputs"][wrong_output]
            assert wrong["exact"] is True and wrong["mismatches"] == 1, wrong
            assert wrong["first_mismatch"]["index"] == [0, 0]
            assert run["outputs"][1 - wrong_output]["ok"] is True
    # One element off, well inside rtol 0.5 / atol 100: only the exact compare can catch it.
    assert failing_outputs(r) == {(s, o, wrong_output) for s in SEEDS
                                  for o in ("candidate_first", "reference_first")}


def test_all_zero_and_constant_inputs_are_reported_and_the_candidate_still_checked(worker):
    r = verdict(evaluate(worker, "degenerate_inputs.py"))
    assert r["correct"] is True
    for seed in SEEDS:
        assert f"input 1 is all zeros for seed {seed}" in r["warnings"], r["warnings"]
        assert f"input 2 is constant for seed {seed}" in r["warnings"], r["warnings"]
    # The normal input is not named, and zeros are not also reported as "constant".
    assert not [w for w in r["warnings"] if w.startswith("input 0 ")]
    assert not [w for w in r["warnings"] if w.startswith("input 1 is constant")]


def test_a_cheat_right_in_one_run_order_only_is_caught_in_the_other(worker):
    """Its run-order state lives in a host callback: the judge runs only the exported program,
    which cannot hold one (issue 36), so it is refused before it runs; the judge still runs both
    orders (tests/worker/test_worker_evaluate.py checks the `runs`)."""
    r = evaluate(worker, "outputs.py", "order_cheat")
    assert r["ok"] is False and r["error"]["kind"] == "refused" and r["error"]["rule"] == "host-callback"
