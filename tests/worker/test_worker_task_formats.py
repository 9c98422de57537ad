"""Task formats as the public suites publish them, Python-number inputs as static
arguments, suite conventions, and small (shrunk) instances (docs/tasks.md)."""

import os
import sys

import numpy as np
import pytest
from worker_harness import ROOT, marker_line, read_task, task_path

sys.path.insert(0, os.path.join(ROOT, "tpu", "worker"))

from mkworker import common
from mkworker.judge import run
from mkworker.tasks import count_axes
from mkworker.tasks import shrink
from mkworker.tasks import tasks
from mkworker.tasks import yaml

FAST = {"num_seeds": 2, "timing": {"min_runs": 1, "min_seconds": 0.0, "max_seconds": 0.5}}


def _formats(*parts):
    return task_path("formats", *parts)


# ---------------------------------------------------------------------------
# YAML block scalars (MaxKernel's `input_gen_code: |-`).

def test_yaml_block_scalars():
    text = (
        "task_id: t\n"
        "input_gen_code: |-\n"
        "  def get_inputs():\n"
        "      x = 1  # a comment inside the block is code\n"
        "\n"
        "      return [x], []\n"
        "\n"
        "rtol: 0.01\n"
        "clip: |\n"
        "  a\n"
        "   b\n"
        "\n"
        "keep: |+\n"
        "  a\n"
        "\n"
        "folded: >\n"
        "  one\n"
        "  two\n"
        "\n"
        "  three\n"
        "items:\n"
        "  - |\n"
        "    in a list\n"
        "  - code: |2\n"
        "       indented by the digit\n"
        "    n: 2\n"
        "atol: [0.05, 0.1]\n"
    )
    d = yaml.loads(text)
    assert d["input_gen_code"] == ("def get_inputs():\n    x = 1  # a comment inside the block is code\n"
                                   "\n    return [x], []")
    assert d["rtol"] == 0.01 and d["atol"] == [0.05, 0.1]
    assert d["clip"] == "a\n b\n"
    assert d["keep"] == "a\n\n"
    assert d["folded"] == "one two\nthree\n"
    assert d["items"] == ["in a list\n", {"code": " indented by the digit\n", "n": 2}]


def test_yaml_block_keeps_spaces_of_a_blank_code_line():
    d = yaml.loads("c: |-\n  a\n      \n  b\nz: 1\n")
    assert d == {"c": "a\n    \nb", "z": 1}


# ---------------------------------------------------------------------------
# MaxKernel's published layout.

def test_maxkernel_published_layout_loads_with_defaults():
    task = tasks.resolve({"form": "maxkernel", "dir": _formats("maxkernel_published")}, None, None)
    try:
        d = task.describe()
        assert d["reference_file"] == _formats("maxkernel_published", "reference.py")  # no `reference:` key
        assert d["reference"] == "computation" and d["inputs"] == "get_inputs"
        assert d["entry"] == "computation"
        assert d["tolerances"] == {"rtol": 0.01, "atol": 0.01}
        assert task.description == "scaled_rownorm"  # task_id
        args, kwargs = run.abstract_inputs(task)
        # get_inputs() returns (dynamic_args, static_args): computation(*dynamic, *static).
        assert [tuple(a.shape) for a in args[:1]] == [(64, 256)] and args[1:] == (1e-6, 2.0)
        _, dyn, _, statics = run.bind_static(task.reference_fn, args, kwargs)
        assert len(dyn) == 1 and statics == {1: 1e-6, 2: 2.0}
        assert run.static_arg_names(task.reference_fn, statics) == {"eps": 1e-6, "scale": 2.0}
    finally:
        task.close()


def test_maxkernel_inputs_from_input_gen_code_when_reference_has_none():
    task = tasks.resolve({"form": "maxkernel", "dir": _formats("maxkernel_yaml_inputs")}, None, None)
    try:
        args, _ = run.abstract_inputs(task)
        assert tuple(args[0].shape) == (32, 128) and args[1] == 3
        # rtol is a list (one per input configuration): the first configuration's value.
        assert task.tolerances == {"rtol": 0.02, "atol": 0.02}
        s = run.make_input_set(task, 4)
        assert s.statics == {1: 3} and len(s.args) == 1
    finally:
        task.close()


def test_maxkernel_input_gen_code_errors_point_at_the_yaml(tmp_path):
    (tmp_path / "kernel_task.yaml").write_text(
        "task_id: broken\ninput_gen_code: |-\n  def get_inputs():\n      return [undefined_name], []\n"
        "rtol: 0.01\n")
    (tmp_path / "reference.py").write_text("def computation(x):\n    return x\n")
    task = tasks.resolve({"form": "maxkernel", "dir": str(tmp_path)}, None, None)
    try:
        with pytest.raises(common.WorkerError) as e:
            run.abstract_inputs(task)
        assert e.value.kind == "task" and "undefined_name" in e.value.message
        assert [loc["line"] for loc in e.value.extra["locations"]] == [4]  # the YAML's line
    finally:
        task.close()


def test_maxkernel_published_layout_lowers_and_evaluates_with_static_args(worker):
    task = {"form": "maxkernel", "dir": _formats("maxkernel_published")}
    src = read_task("formats", "maxkernel_published", "candidate_src.py")
    fname = _formats("maxkernel_published", "kernel.py")
    low = worker.request("lower", task=task, source=src, filename=fname)
    assert low["ok"] and low["lowered"], low
    assert low["static_args"] == {"eps": 1e-6, "scale": 2.0}
    assert low["inputs"][0] == {"shape": [64, 256], "dtype": "float32"}
    r = worker.request("evaluate", task=task, source=src, filename=fname, **FAST)
    assert r["ok"] and r["correct"], r
    # The statics are real arguments: a kernel that ignores `scale` is wrong.
    bad = src.replace("o_ref[...] = scale * v", "o_ref[...] = v")
    r = worker.request("evaluate", task=task, source=bad, filename=fname, **FAST)
    assert r["ok"] and not r["correct"] and r["failure"]["kind"] == "mismatch", r


# ---------------------------------------------------------------------------
# JAXBench's baseline alone, and the in-file form with only a reference.

def test_jaxbench_baseline_alone_is_a_task(worker):
    task = tasks.resolve({"form": "jaxbench", "dir": _formats("jaxbench_alone")}, None, None)
    try:
        assert task.candidate_source is None and task.get_flops() == 10 * 64 * 256
        args, _ = run.abstract_inputs(task)
        assert [tuple(a.shape) for a in args] == [(64, 256), (256,)]
    finally:
        task.close()
    r = worker.request("evaluate", task={"form": "jaxbench", "dir": _formats("jaxbench_alone")}, **FAST)
    assert not r["ok"] and r["error"]["kind"] == "bad_request" and "candidate" in r["error"]["message"]
    kernel = (
        "import jax\nfrom jax.experimental import pallas as pl\n\n"
        "def _k(x_ref, b_ref, o_ref):\n    o_ref[...] = jax.nn.gelu(x_ref[...] + b_ref[...])\n\n"
        "def workload(x, b):\n    return pl.pallas_call(_k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))"
        "(x, b.reshape(1, -1))\n")
    r = worker.request("evaluate", task={"form": "jaxbench", "baseline": _formats("jaxbench_alone", "baseline.py")},
                       source=kernel, filename="/tmp/kernel.py", **FAST)
    assert r["ok"] and r["correct"], r


def test_infile_task_with_only_reference_and_inputs(worker):
    task = tasks.resolve({"form": "infile", "path": _formats("infile_reference_only", "task.py")}, None, None)
    try:
        args, _ = run.abstract_inputs(task)
        import jax
        out = jax.eval_shape(task.reference_fn, *args)
        assert tuple(out.shape) == (32, 128)
    finally:
        task.close()
    kernel = (
        "import jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\n\n"
        "def _k(x_ref, y_ref, o_ref):\n    o_ref[...] = jnp.tanh(x_ref[...]) * y_ref[...]\n\n"
        "def candidate(x, y):\n    return pl.pallas_call(_k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)\n")
    r = worker.request("evaluate", task={"form": "infile", "path": _formats("infile_reference_only", "task.py")},
                       source=kernel, filename="/tmp/kernel.py", **FAST)
    assert r["ok"] and r["correct"], r


# ---------------------------------------------------------------------------
# Python-number inputs are static arguments in every op.

def test_python_number_inputs_are_static_in_lower_evaluate_and_autotune(worker):
    task = {"form": "jaxbench", "baseline": _formats("static_number", "baseline.py"),
            "candidate": _formats("static_number", "candidate.py")}
    low = worker.request("lower", task=task)
    assert low["ok"] and low["lowered"], low
    assert low["static_args"] == {"groups": 16}
    assert low["inputs"][2] == {"value": "16"}
    r = worker.request("evaluate", task=task, **FAST)
    # The candidate leaves its matmul to XLA: the judge counts the reference's program with its static
    # argument bound (issue 36), which the jaxpr count could not, and says so.
    assert r["ok"] and r["failure"]["kind"] == "work_outside_kernel", r
    assert r["work"]["judge"]["reference"]["matmul_flops"] == r["work"]["judge"]["outside"]["matmul_flops"] > 0
    r = worker.request("autotune", task=task, space={"BLOCK": [2, 4]}, num_seeds=1,
                       timing={"min_runs": 1, "min_seconds": 0.0, "max_seconds": 0.5})
    assert r["ok"], r
    by_block = {x["config"]["BLOCK"]: x for x in r["results"]}
    # Each configuration is judged as evaluate judges the candidate: the same verdict.
    assert by_block[4]["status"] == "incorrect", by_block[4]
    assert by_block[4]["failure"]["kind"] == "work_outside_kernel", by_block[4]
    # 2-row blocks trace (the static reached the kernel) and are then refused by the TPU rules.
    assert by_block[2]["status"] == "skipped" and by_block[2]["stage"] == "lowering", by_block[2]
    p = worker.request("profile", task=task, runs=1)
    assert p["ok"] and p["pallas_kernels"], p


def test_bind_static_keeps_arrays_and_restores_statics():
    import jax
    import jax.numpy as jnp

    def f(x, n, w, *, scale):
        return (x.reshape(n, -1) @ w) * scale

    x, w = jnp.ones((4, 6)), jnp.ones((12, 3))
    bound, dyn, dkw, statics = run.bind_static(f, (x, 2, w), {"scale": 0.5})
    assert statics == {1: 2, "scale": 0.5} and len(dyn) == 2 and dkw == {}
    assert [str(p) for p in __import__("inspect").signature(bound).parameters] == ["x", "w"]
    out = jax.jit(bound)(*dyn)
    assert out.shape == (2, 3) and float(out[0, 0]) == 6.0
    same, dyn2, _, none = run.bind_static(jnp.sin, (x,), {})
    assert same is jnp.sin and none == {} and dyn2 == (x,)


# ---------------------------------------------------------------------------
# Suite conventions.

def test_jaxbench_convention_accepts_float32_output_only_under_it(worker):
    base = {"form": "jaxbench", "dir": _formats("dtype_f32_out")}
    r = worker.request("evaluate", task=base, **FAST)
    assert r["ok"] and not r["correct"], r
    assert r["failure"]["kind"] == "dtype_mismatch" and r["task"]["convention"] is None
    r = worker.request("evaluate", task=dict(base, convention="jaxbench"), **FAST)
    assert r["ok"] and r["correct"], r
    assert r["task"]["convention"] == {"name": "jaxbench", "tolerances": "convention",
                                       "dtype_differences": "accepted (both outputs compared in float32)"}
    assert r["task"]["tolerances"] == {"rtol": 0.01, "atol": 0.01}
    out = r["checks"][0]["runs"][0]["outputs"][0]
    assert out["dtype"] == "bfloat16" and out["candidate_dtype"] == "float32" and out["compared_in"] == "float32"
    # Not a blanket pass: a wrong float32 output is still wrong under the convention.
    wrong = read_task("formats", "dtype_f32_out", "optimized.py").replace("1.5 * x_ref", "1.4 * x_ref")
    r = worker.request("evaluate", task=dict(base, convention="jaxbench"), source=wrong,
                       filename=_formats("dtype_f32_out", "optimized.py"), **FAST)
    assert r["ok"] and not r["correct"] and r["failure"]["kind"] == "mismatch", r


def test_dtype_difference_compare_rules():
    import jax.numpy as jnp
    ref = [np.array([1, 2, 3], np.int32)]
    tol = {"rtol": 0.5, "atol": 0.5}
    assert run.compare([jnp.array([1, 2, 3], jnp.int16)], ref, tol, "cpu", True)["ok"]
    # Integers of another width stay exact, whatever the tolerance.
    assert not run.compare([jnp.array([1, 2, 4], jnp.int16)], ref, tol, "cpu", True)["ok"]
    assert run.compare([jnp.array([1, 2, 3], jnp.int16)], ref, tol, "cpu", False)["kind"] == "dtype_mismatch"
    # A bool never stands in for a number.
    bools = [np.array([True, False])]
    assert run.compare([jnp.array([1, 0], jnp.int32)], bools, tol, "cpu", True)["kind"] == "dtype_mismatch"


def test_convention_keeps_the_tasks_own_tolerances():
    t = tasks.resolve({"form": "maxkernel", "dir": _formats("maxkernel_yaml_inputs"), "convention": "maxkernel"},
                          None, None)
    try:
        assert t.tolerances == {"rtol": 0.02, "atol": 0.02}
        assert t.convention["tolerances"] == "task" and t.accept_dtype_difference
    finally:
        t.close()
    with pytest.raises(common.WorkerError) as e:
        tasks.resolve({"form": "jaxbench", "dir": _formats("dtype_f32_out"), "convention": "kernelbench"},
                          None, None)
    assert e.value.kind == "bad_request" and "kernelbench" in e.value.message


# ---------------------------------------------------------------------------
# Small instances (shrink).

SHRINK_MATMUL = {"form": "jaxbench", "baseline": _formats("shrink_matmul", "baseline.py"),
                 "candidate": _formats("shrink_matmul", "candidate.py")}


def test_shrink_evaluate_shapes_consistency_and_labels(worker):
    r = worker.request("evaluate", task=SHRINK_MATMUL, shrink=2, seeds=[31, 32], timing=FAST["timing"])
    assert r["ok"] and r["correct"], r
    inst = r["instance"]
    assert inst["kind"] == "shrunk" and inst["factor"] == 2
    # One size maps to one new size across inputs: K (512) is 256 in both x and w; the static
    # out_features (384, a shrunk size) follows the map.
    assert inst["input_shapes"] == [[128, 256], [256, 192], [192], {"static": 192}]
    assert inst["full_input_shapes"] == [[256, 512], [512, 384], [384], {"static": 384}]
    assert r["checks"][0]["runs"][0]["outputs"][0]["shape"] == [128, 192]
    assert r["timing"]["instance"] == "shrunk"
    # The same seeds and instance reuse the frozen reference; the full instance does not.
    again = worker.request("evaluate", task=SHRINK_MATMUL, shrink=2, seeds=[31, 32], timing=False)
    assert again["ok"] and again["correct"] and again["reference_reused"] is True, again
    full = worker.request("evaluate", task=SHRINK_MATMUL, timing=False, seeds=[31, 32])
    assert full["ok"] and full["correct"] and full["instance"] == {"kind": "full"}
    assert full["reference_reused"] is False
    assert full["checks"][0]["runs"][0]["outputs"][0]["shape"] == [256, 384]


def test_shrink_labels_autotune_and_profile_results(worker):
    r = worker.request("autotune", task=SHRINK_MATMUL, shrink=2, space={"BLOCK_ROWS": [32, 64]}, num_seeds=1,
                       timing={"min_runs": 1, "min_seconds": 0.0, "max_seconds": 0.5})
    assert r["ok"] and r["instance"]["kind"] == "shrunk", r
    assert [x["instance"] for x in r["results"]] == ["shrunk", "shrunk"]
    assert all(x["status"] == "ok" for x in r["results"]), r["results"]
    p = worker.request("profile", task=SHRINK_MATMUL, shrink={"factor": 2, "min_dim": 128}, runs=1)
    assert p["ok"] and p["instance"]["factor"] == 2, p


def test_shrink_draws_from_each_inputs_distribution():
    task = tasks.resolve({"form": "jaxbench", "baseline": _formats("shrink_matmul", "baseline.py")}, None, None)
    try:
        shrink.configure(task, 2)
        a = run.make_input_set(task, 1)
        b = run.make_input_set(task, 2)
        x, w, bias = (np.asarray(v) for v in a.args)
        assert a.statics == {3: 192}
        assert 0.5 <= bias.min() and bias.max() <= 2.0  # non-negative stays in the task's range
        assert abs(x.mean()) < 0.1 and 0.9 < x.std() < 1.1
        assert 0.04 < w.std() < 0.06
        assert not np.array_equal(x, np.asarray(b.args[0]))  # fresh per seed
    finally:
        task.close()


def test_shrink_runs_the_inputs_function_at_the_shrunk_sizes():
    task = tasks.resolve({"form": "jaxbench", "baseline": _formats("shrink_matmul", "baseline.py")}, None, None)
    try:
        shrink.configure(task, 2)
        assert task.shrink.describe()["data"] == "the task's inputs function at the shrunk sizes"
        s = run.make_input_set(task, 1)
        assert s.warnings == []
    finally:
        task.close()


def test_shrink_falls_back_to_learnt_statistics():
    task = tasks.resolve({"form": "jaxbench", "baseline": _formats("shrink_fallback", "baseline.py")}, None, None)
    try:
        shrink.configure(task, 2)
        d = task.shrink.describe()
        assert d["data"].startswith("statistics") and d["input_shapes"] == [[128, 256]]
        s = run.make_input_set(task, 1)
        assert any("captures a constant array of shape (256, 512)" in w for w in s.warnings), s.warnings
        x = np.asarray(s.args[0])
        assert x.shape == (128, 256) and 1.0 <= x.min() and x.max() <= 3.0 and x.std() > 0.3
    finally:
        task.close()


def test_shrink_rescales_index_inputs_into_the_new_range():
    task = tasks.resolve({"form": "jaxbench", "baseline": _formats("shrink_index", "baseline.py")}, None, None)
    try:
        shrink.configure(task, {"factor": 4, "min_dim": 8})
        assert task.shrink.describe()["input_shapes"] == [[64, 256], [64]]
        labels = np.asarray(run.make_input_set(task, 3).args[1])
        assert labels.dtype == np.int32 and labels.min() >= 0 and labels.max() < 256
        assert labels.max() >= 128  # spread over the new range, not clipped into the old one's start
    finally:
        task.close()


def test_shrink_count_axes_keep_gqa_heads_divisible():
    # Batch, query heads and kv heads are count axes (never contracted nor reduced): they shrink
    # although far below min_dim, and kv heads still divide query heads.  head_dim stays.
    task = tasks.resolve({"form": "jaxbench", "baseline": _formats("shrink_gqa", "baseline.py")}, None, None)
    try:
        shrink.configure(task, {"factor": 4, "min_dim": 16})
        d = task.shrink.describe()
        assert d["input_shapes"] == [[2, 4, 16, 32], [2, 2, 16, 32], [2, 2, 16, 32]], d
        assert d["count_sizes"] == {"4": 2, "16": 4} and d["sizes"]["64"] == 16
        assert d["data"] == "the task's inputs function at the shrunk sizes"
        s = run.make_input_set(task, 2)
        q, k, v = (np.asarray(a) for a in s.args)
        assert q.shape == (2, 4, 16, 32) and k.shape == v.shape == (2, 2, 16, 32) and s.warnings == []
        assert np.isfinite(np.asarray(task.reference_fn(q, k, v))).all()
        # The option to keep every count axis: the size rule alone.
        shrink.configure(task, {"factor": 4, "min_dim": 16, "counts": False})
        assert task.shrink.describe()["input_shapes"] == [[4, 16, 16, 32], [4, 4, 16, 32], [4, 4, 16, 32]]
    finally:
        task.close()


def test_count_axes_from_the_reference_jaxpr():
    import jax
    import jax.numpy as jnp

    def flags(fn, *shapes):
        return count_axes.count_axes(fn, [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes], {})

    # Reduced and contracted axes are features; batch and free axes of a dot are counts.
    assert flags(lambda x: x.sum(axis=1), (4, 6, 8)) == [[True, False, True]]
    assert flags(lambda a, b: jnp.matmul(a, b), (3, 5, 7), (3, 7, 2)) == [[True, True, False], [True, False, True]]
    # Axes that meet share their fate, even when they meet after one of them is reduced.
    assert flags(lambda x, y: ((x * 2).sum(axis=1), y + x), (4, 6), (4, 6)) == [[True, False], [True, False]]
    # An op the walk does not model makes its operands' axes, and what its result meets, features.
    assert flags(lambda x, b: jnp.sort(x, axis=0) + b, (4, 6), (6,)) == [[False, False], [False]]
    # A convolution's images are independent (its batch axis a count), the rest features.
    def conv(x, w, b):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return y + b
    assert flags(conv, (4, 8, 8, 16), (3, 3, 16, 16), (16,)) == [
        [True, False, False, False], [False] * 4, [False]]


def test_shrink_count_sizes_keep_divisibility():
    # Every prime of a count size survives, and a size dividing another still does.
    assert [count_axes.shrunk_count(d, 8) for d in (1, 2, 3, 4, 8, 12, 32, 48, 64)] == [1, 2, 3, 2, 2, 6, 4, 6, 8]
    for f in (2, 3, 4, 6, 8):
        for a in range(1, 65):
            for b in range(a, 129, a):
                assert count_axes.shrunk_count(b, f) % count_axes.shrunk_count(a, f) == 0, (a, b, f)


def test_shrink_paged_task_shrinks_batch_and_heads_but_keeps_its_page_table_width():
    # 4 is the batch (a count axis) and the pages per sequence (contracted): the page table keeps
    # 4 pages per sequence while its batch halves, its values index the shrunk pool (64 -> 16),
    # and the lengths still fit pages_per_seq * page_size = 32.
    task = tasks.resolve({"form": "jaxbench", "baseline": _formats("shrink_paged", "baseline.py")}, None, None)
    try:
        shrink.configure(task, {"factor": 4, "min_dim": 16})
        d = task.shrink.describe()
        assert d["input_shapes"] == [[2, 4, 32], [2, 16, 8, 32], [2, 16, 8, 32], [2, 4], [2]], d
        assert d["data"] == "the task's inputs function at the shrunk sizes"
        tables, lengths = [], []
        for seed in (1, 2, 3, 4):
            s = run.make_input_set(task, seed)
            assert s.warnings == []
            tables.append(np.asarray(s.args[3]))
            lengths.append(np.asarray(s.args[4]))
            assert np.isfinite(np.asarray(task.reference_fn(*s.args))).all()
        tables, lengths = np.concatenate(tables), np.concatenate(lengths)
        assert tables.min() >= 0 and tables.max() < 16 and tables.max() >= 8
        assert lengths.min() >= 1 and lengths.max() <= 32
    finally:
        task.close()


def test_shrink_keeps_count_axes_a_reference_hard_codes():
    task = tasks.resolve({"form": "jaxbench", "baseline": _formats("shrink_counts_hardcoded", "baseline.py")},
                         None, None)
    try:
        shrink.configure(task, 4)
        d = task.shrink.describe()
        assert d["input_shapes"] == [[8, 128, 128]] and d["count_sizes"] == {}, d
        s = run.make_input_set(task, 1)
        assert any("count axes shrunk" in w for w in s.warnings), s.warnings
    finally:
        task.close()


def test_shrink_refuses_a_reference_that_hard_codes_a_size(worker):
    task = {"form": "jaxbench", "baseline": _formats("shrink_hardcoded", "baseline.py")}
    r = worker.request("evaluate", task=task, shrink=2, source="def workload(x):\n    return x\n", **FAST)
    assert not r["ok"] and r["error"]["kind"] == "task", r
    msg = r["error"]["message"]
    assert "cannot run at the shrunk instance" in msg and "shrink factor 2" in msg and "(65536,)" in msg
    line = marker_line(read_task("formats", "shrink_hardcoded", "baseline.py"), "# hard-coded size")
    assert [loc["line"] for loc in r["error"]["locations"]] == [line]


def test_shrink_request_validation(worker):
    assert shrink.parse_request(None) is None and shrink.parse_request(1) is None
    assert shrink.parse_request(4) == (4, shrink.DEFAULT_MIN_DIM, True)
    assert shrink.parse_request({"factor": 4, "counts": False}) == (4, shrink.DEFAULT_MIN_DIM, False)
    for bad in (0, 2.5, "2", True, {"factor": 2, "min_dim": 0}, {"factor": 2, "counts": 1}):
        with pytest.raises(common.WorkerError):
            shrink.parse_request(bad)
    r = worker.request("lower", task=SHRINK_MATMUL, shrink=2)
    assert not r["ok"] and r["error"]["kind"] == "bad_request" and "full shapes" in r["error"]["message"]
