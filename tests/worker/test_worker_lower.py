"""lower: facts of a correct kernel, and errors mapped to source lines."""

import pytest
from worker_harness import marker_line, read_task, task_path


def _lower(worker, name, **kw):
    src = read_task("infile", name)
    return src, worker.request("lower", source=src, filename=task_path("infile", name),
                               task={"form": "infile"}, **kw)


def test_lower_correct_kernel_returns_facts(worker):
    src, r = _lower(worker, "scale_add.py", target="tpu")
    assert r["ok"] is True, r
    assert r["lowered"] is True and r["lowered_for"] == "tpu"
    assert r["num_pallas_calls"] == 1
    f = r["pallas_calls"][0]
    assert f["kernel"] == "_kernel"
    assert f["grid"] == [4]
    assert [op["block_shape"] for op in f["operands"]] == [[16, 128]] * 3
    assert [op["role"] for op in f["operands"]] == ["input", "input", "output"]
    assert all(op["array_shape"] == [64, 128] and op["dtype"] == "float32" for op in f["operands"])
    assert f["dimension_semantics"] == ["parallel"]
    assert f["vmem_limit_bytes"] is None
    # 3 operands x 2 buffers x 16*128*4 bytes.
    assert f["vmem_bytes_per_step"] == 3 * 2 * 16 * 128 * 4
    assert "double buffering" in r["vmem_assumptions"]
    assert f["location"]["line"] == marker_line(src, "PALLAS_CALL_LINE")
    assert f["cost"]["flops"] == 2 * 64 * 128
    assert r["cost"]["source"] == "pallas_cost_estimate"
    assert r["cost"]["arithmetic_intensity"] > 0
    assert r["cost"]["reference_xla"]["flops"] > 0


def test_lower_native_on_cpu_uses_interpret(worker):
    _, r = _lower(worker, "scale_add.py", target="native")
    assert r["ok"] is True, r
    assert r["lowered_for"] == "cpu"
    assert r["run_mode"]["mode"] == "interpret"


def test_lower_bad_block_shape_maps_to_pallas_call_line(worker):
    src, r = _lower(worker, "bad_block.py")
    assert r["ok"] is False
    assert r["lowered"] is False
    err = r["error"]
    assert err["kind"] == "lowering"
    assert "divisible by 8 and 128" in err["message"]
    assert err["locations"], err
    assert err["locations"][0]["line"] == marker_line(src, "PALLAS_CALL_LINE")
    # The facts from tracing still come back, with the offending block.
    assert r["pallas_calls"][0]["operands"][0]["block_shape"] == [12, 128]


def test_lower_syntax_error(worker):
    src, r = _lower(worker, "syntax_error.txt")
    assert r["ok"] is False
    assert r["error"]["kind"] == "syntax"
    assert r["error"]["locations"][0]["line"] == marker_line(src, "SYNTAX_ERROR_LINE")


def test_lower_trace_error_points_into_kernel_body(worker):
    src, r = _lower(worker, "trace_error.py")
    assert r["ok"] is False
    assert r["error"]["kind"] == "trace"
    assert r["error"]["locations"][0]["line"] == marker_line(src, "TRACE_ERROR_LINE")


def test_lower_import_error(worker):
    src = "import numpy\nimport definitely_not_a_module_xyz\n"
    r = worker.request("lower", source=src, filename="/tmp/imp.py", task={"form": "infile"})
    assert r["ok"] is False
    assert r["error"]["kind"] == "import"
    assert r["error"]["locations"][0]["line"] == 2


def test_lower_missing_task_function(worker):
    src = "def candidate(x):\n    return x\n"
    r = worker.request("lower", source=src, filename="/tmp/t.py", task={"form": "infile"})
    assert r["ok"] is False
    assert r["error"]["kind"] == "task"


def test_lower_jaxbench_and_maxkernel_forms(worker):
    r = worker.request("lower", task={"form": "jaxbench", "baseline": task_path("jaxbench", "baseline.py")},
                       source=read_task("jaxbench", "candidate.py"),
                       filename=task_path("jaxbench", "candidate.py"))
    assert r["ok"] is True, r
    assert r["entry"] == "workload"
    assert r["pallas_calls"][0]["grid"] == [4]
    assert r["cost"]["get_flops"] == 4 * 64 * 128
    # maxkernel: the candidate file comes from kernel_task.yaml.
    r = worker.request("lower", task={"form": "maxkernel", "dir": task_path("maxkernel_rowsum")})
    assert r["ok"] is True, r
    assert r["entry"] == "computation"
    assert r["pallas_calls"][0]["operands"][1]["block_shape"] == [8, 1]


def test_lower_finds_nested_pallas_calls(worker):
    _, r = _lower(worker, "nested.py")
    assert r["ok"] is True, r
    nesting = [tuple(f["nesting"]) for f in r["pallas_calls"]]
    assert len(nesting) == 3
    assert any("cond" in n and "custom_vjp_call" in " ".join(n) for n in nesting), nesting
    assert any("cond" in n and "custom_vjp_call" not in " ".join(n) for n in nesting), nesting
    assert any("scan" in n for n in nesting), nesting
    assert all(f["live"] for f in r["pallas_calls"])


def test_evaluate_nested_kernels(worker):
    r = worker.request("evaluate", task={"form": "infile", "path": task_path("infile", "nested.py")},
                       source=read_task("infile", "nested.py"), filename=task_path("infile", "nested.py"),
                       seeds=[1, 2], timing=False)
    assert r["ok"] is True and r["correct"] is True, r


@pytest.mark.parametrize("reference", ["../infile/scale_add.py", "/etc/hostname", "link.py"])
def test_a_task_file_cannot_name_files_outside_its_folder(worker, tmp_path, reference):
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    (tmp_path / "infile").mkdir()
    (tmp_path / "infile" / "scale_add.py").write_text(read_task("infile", "scale_add.py"))
    (task_dir / "link.py").symlink_to(tmp_path / "infile" / "scale_add.py")
    (task_dir / "kernel_task.yaml").write_text(f"reference: {reference}\n")
    r = worker.request("lower", task={"form": "maxkernel", "dir": str(task_dir)})
    assert r["ok"] is False
    assert r["error"]["kind"] == "task"
    assert "points outside the task folder" in r["error"]["message"]
