"""generate: elementwise chains (full-size lowering, small-instance correctness)."""

import ast

from worker_harness import read_task, task_path

SEEDS = [3, 4]


def _generate(worker, task, **kw):
    r = worker.request("generate", task=task, timeout=300, **kw)
    assert r["ok"] is True, r.get("error", r)
    return r


def _constants(src):
    out = {}
    for n in ast.parse(src).body:
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and \
                isinstance(n.value, ast.Constant):
            out[n.targets[0].id] = n.value.value
    return out


def _check_module(r):
    src = r["source"]
    assert "pl.pallas_call(" in src and "interpret=" not in src
    consts = _constants(src)
    for name, values in r["tunables"].items():
        assert name in consts and consts[name] in values, (name, values, consts)


def _lower(worker, task, r, tmp_path):
    f = tmp_path / "generated_kernel.py"
    f.write_text(r["source"], encoding="utf-8")
    lo = worker.request("lower", task=task, source=r["source"], filename=str(f), kernel=r["entry"],
                        timeout=300)
    assert lo["ok"] is True, lo.get("error")
    return lo["pallas_calls"][0]


def _evaluate(worker, task, r, tmp_path):
    f = tmp_path / "generated_kernel.py"
    f.write_text(r["source"], encoding="utf-8")
    ev = worker.request("evaluate", task=task, source=r["source"], filename=str(f),
                        kernel=r["entry"], seeds=SEEDS, timing=False, timeout=300)
    assert ev["ok"] is True, ev.get("error")
    assert ev["correct"] is True, ev["failure"]
    return ev


GATE = "ew_gate.py"


def test_gate_chain_full_size_lowers(worker, tmp_path):
    text = read_task("generate", GATE).replace("B, R, C = 4, 64, 256", "B, R, C = 16, 4096, 4096")
    task = {"form": "infile", "source": text, "filename": task_path("generate", GATE)}
    r = _generate(worker, task)
    assert r["class"] == "elementwise"
    assert "16x4096x4096" in r["description"]
    _check_module(r)
    src = r["source"]
    # The bias row and the scale column are their own, broadcast operands.
    assert "bias_in = jnp.reshape(bias, (1, cols))" in src
    assert "scale_in = jnp.reshape(scale, (rows, 1))" in src
    assert "slope=slope" in src  # the static slope reaches the kernel by name
    call = _lower(worker, task, r, tmp_path)
    assert call["dimension_semantics"] == ["parallel", "parallel"]
    # The kernel sets vmem_limit_bytes from its plan, within v5e's 128 MiB: the static
    # analysis' per-step VMEM fits under it.
    assert call["vmem_limit_bytes"] <= 128 * 1024 * 1024
    assert call["vmem_bytes_per_step"] <= call["vmem_limit_bytes"]
    by_shape = {tuple(op["array_shape"]): op["block_shape"] for op in call["operands"]
                if op["role"] == "input"}
    assert by_shape[(1, 4096)][0] == 1  # the bias row: one row block, tiled along columns
    assert by_shape[(16 * 4096, 1)][1] == 1  # the scale column: one column, tiled along rows
    assert by_shape[(16 * 4096, 4096)][0] >= 8


def test_gate_chain_small_instance_is_correct(worker, tmp_path):
    task = {"form": "infile", "path": task_path("generate", GATE)}
    r = _generate(worker, task)
    assert r["class"] == "elementwise"
    _evaluate(worker, task, r, tmp_path)


def test_jaxbench_narrow_rows_full_size_lowers(worker, tmp_path):
    text = read_task("generate", "jaxbench_ew_mix", "baseline.py").replace(
        '"shape": (128, 32, 16)', '"shape": (8192, 512, 16)')
    task = {"form": "jaxbench", "baseline_source": text,
            "baseline_filename": task_path("generate", "jaxbench_ew_mix", "baseline.py")}
    r = _generate(worker, task)
    assert r["class"] == "elementwise" and r["entry"] == "workload"
    assert "LANES" in r["tunables"] or "LANES" in _constants(r["source"])
    call = _lower(worker, task, r, tmp_path)
    assert call["operands"][0]["block_shape"][1] >= 128  # lane-dense, not 16 wide


def test_jaxbench_narrow_rows_small_instance_is_correct(worker, tmp_path):
    task = {"form": "jaxbench", "baseline": task_path("generate", "jaxbench_ew_mix", "baseline.py")}
    r = _generate(worker, task)
    assert "jax.lax.integer_pow(" in r["source"] and "jnp.log1p(" in r["source"]
    _evaluate(worker, task, r, tmp_path)


EVERY = "ew_every_op.py"


def test_every_emitted_primitive_is_correct(worker, tmp_path):
    task = {"form": "infile", "path": task_path("generate", EVERY)}
    r = _generate(worker, task)
    assert r["class"] == "elementwise"
    for prim in ("expm1", "erfc", "cbrt", "sign", "atan2", "rem", "xor", "clamp", "is_finite"):
        assert prim in r["primitives"], prim
    _evaluate(worker, task, r, tmp_path)


def test_every_emitted_primitive_lowers_in_bfloat16(worker, tmp_path):
    text = read_task("generate", EVERY).replace("DTYPE = jnp.float32", "DTYPE = jnp.bfloat16")
    task = {"form": "infile", "source": text, "filename": task_path("generate", EVERY)}
    r = _generate(worker, task)
    assert r["lowering"]["ok"] is True
    assert all(v % 16 == 0 for v in r["tunables"]["BLOCK_ROWS"]), r["tunables"]
    _lower(worker, task, r, tmp_path)
