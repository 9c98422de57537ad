"""evaluate: a correct kernel in interpret mode, and every cheat caught."""

import pytest
from worker_harness import marker_line, read_task, task_path

TASK = {"form": "infile", "path": task_path("infile", "scale_add.py")}


def _evaluate(worker, name, **kw):
    kw.setdefault("timing", {"min_runs": 3, "min_seconds": 0.0, "max_seconds": 1.0})
    return worker.request("evaluate", task=kw.pop("task", TASK), source=read_task("infile", name),
                          filename=task_path("infile", name), **kw)


def test_evaluate_correct_kernel_interpret_mode(worker):
    r = _evaluate(worker, "scale_add.py")
    assert r["ok"] is True, r
    assert r["correct"] is True, r["failure"]
    assert r["failure"] is None
    assert r["time_kind"] == "interpret"
    assert r["speedup"] is None
    assert r["run_mode"]["mode"] == "interpret"
    assert len(r["seeds"]) == 3 and len(set(r["seeds"])) == 3
    assert [c["seed"] for c in r["checks"]] == r["seeds"]
    for c in r["checks"]:
        assert c["ok"] and [run["order"] for run in c["runs"]] == ["candidate_first", "reference_first"]
    t = r["timing"]
    assert t["time_kind"] == "interpret"
    for who in ("candidate", "reference"):
        assert t[who]["runs"] >= 3
        assert t[who]["p10_s"] <= t[who]["median_s"] <= t[who]["p90_s"]
        assert t[who]["input_sets"] == 3
    assert r["task"]["reference_frozen"] is True


def test_evaluate_with_explicit_seeds_is_reproducible(worker):
    r = _evaluate(worker, "scale_add.py", seeds=[5, 6], timing=False)
    assert r["ok"] and r["correct"]
    assert r["seeds"] == [5, 6]
    assert r["timing"] is None


@pytest.mark.parametrize("name, kinds", [
    ("cheat_plain_jnp.py", {"no_pallas_call"}),
    ("cheat_dead_pallas.py", {"no_pallas_call"}),
    ("cheat_partial.py", {"nonfinite", "mismatch"}),
    ("cheat_zeros.py", {"mismatch"}),
    ("cheat_constant.py", {"mismatch"}),
    ("cheat_seed0.py", {"mismatch"}),
    ("cheat_mutate.py", {"input_mutated"}),
])
def test_cheats_are_caught(worker, name, kinds):
    r = _evaluate(worker, name)
    assert r["ok"] is True, r
    assert r["correct"] is False, f"{name} passed as correct"
    assert r["failure"]["kind"] in kinds, r["failure"]
    assert r["timing"] is None and r["speedup"] is None


def test_cheat_correct_for_seed_zero_only(worker):
    r = _evaluate(worker, "cheat_seed0.py", seeds=[0, 7])
    assert r["ok"] is True
    assert r["correct"] is False
    by_seed = {c["seed"]: c for c in r["checks"]}
    assert by_seed[0]["ok"] is True  # it does match the hard-coded seed ...
    assert by_seed[7]["ok"] is False  # ... and nothing else
    assert r["failure"]["seed"] == 7


def test_mutation_reports_which_input(worker):
    r = _evaluate(worker, "cheat_mutate.py", seeds=[3])
    run = r["checks"][0]["runs"][0]
    assert run["kind"] == "input_mutated"
    assert any("input 0" in p for p in run["input_problems"])


def test_evaluate_jaxbench_form_without_key(worker):
    r = worker.request("evaluate",
                       task={"form": "jaxbench", "baseline": task_path("jaxbench", "baseline.py")},
                       source=read_task("jaxbench", "candidate.py"),
                       filename=task_path("jaxbench", "candidate.py"),
                       seeds=[11, 12], timing=False)
    assert r["ok"] is True, r
    assert r["correct"] is True, r["failure"]
    assert r["task"]["inputs_take_key"] is False
    # Seeds drive freshly drawn inputs even though create_inputs() takes no key.
    errs = [c["runs"][0]["outputs"][0]["atol_effective"] for c in r["checks"]]
    assert errs[0] != errs[1]


def test_evaluate_maxkernel_form(worker):
    r = worker.request("evaluate", task={"form": "maxkernel", "dir": task_path("maxkernel_rowsum")},
                       seeds=[1, 2], timing=False)
    assert r["ok"] is True, r
    assert r["correct"] is True, r["failure"]
    assert r["entry"] == "computation"


def test_evaluate_reference_never_taken_from_candidate(worker):
    # The candidate redefines `reference` to agree with its wrong kernel; the
    # frozen task file's reference must still be used.
    src = read_task("infile", "cheat_zeros.py") + "\n\ndef reference(x, y):\n    return 0.0 * x\n"
    r = worker.request("evaluate", task=TASK, source=src, filename="/tmp/cheat_ref.py",
                       seeds=[1], timing=False)
    assert r["ok"] is True and r["correct"] is False


def test_hlo_interpreter_poisons_unwritten_output(worker):
    # interpret=True (the HLO interpreter) starts outputs as NaN: the
    # unwritten blocks show up as non-finite values.
    r = _evaluate(worker, "cheat_partial.py", interpret_mode="hlo", seeds=[2])
    assert r["ok"] is True
    assert r["run_mode"]["interpret_kind"] == "hlo"
    assert r["correct"] is False
    assert r["failure"]["kind"] == "nonfinite"
    out = r["checks"][0]["runs"][0]["outputs"][0]
    assert out["nonfinite"] == 48 * 128


def test_hlo_interpreter_correct_kernel(worker):
    r = _evaluate(worker, "scale_add.py", interpret_mode="hlo", seeds=[2, 3])
    assert r["ok"] and r["correct"], r.get("failure")
    assert r["time_kind"] == "interpret" and r["speedup"] is None


def test_native_mode_on_cpu_is_still_labelled_interpret(worker):
    r = _evaluate(worker, "explicit_interpret.py", interpret_mode="none", seeds=[2])
    assert r["ok"] is True and r["correct"] is True, r
    assert r["run_mode"]["mode"] == "device"
    assert r["time_kind"] == "interpret" and r["speedup"] is None
    assert any("interpret" in w for w in r["warnings"])


def test_runtime_error_in_kernel_then_worker_recovers(worker):
    r = _evaluate(worker, "oob_read.py", seeds=[1], timing=False)
    assert r["ok"] is False
    assert r["error"]["kind"] == "runtime"
    assert "Out-of-bounds" in r["error"]["message"]
    src = read_task("infile", "oob_read.py")
    assert r["error"]["locations"][0]["line"] == marker_line(src, "return pl.pallas_call")
    # The interpreter's global state was reset: the next kernel runs fine.
    r = _evaluate(worker, "scale_add.py", seeds=[1], timing=False)
    assert r["ok"] and r["correct"]
