"""generate: matmul-class references (matmul + epilogue, matmul + row reduction).

For each reference: at FULL size the generated module lowers for TPU (the op lowers it before it
answers; the test lowers the returned text again with the lower op); generated for a SMALL
instance, the module passes evaluate in interpret mode (the correctness check).
"""

import ast
import pathlib

import pytest
from worker_harness import read_task, task_path

NO_TIMING = False
SEEDS = [11, 12]


def _generate(worker, task, **kw):
    r = worker.request("generate", task=task, timeout=300, **kw)
    assert r["ok"] is True, r.get("error", r)
    return r


def _infile(name, replace=None):
    """An in-file task; `replace` = (old line, new line) makes another size of it."""
    path = task_path("generate", name)
    if replace is None:
        return {"form": "infile", "path": path}
    text = read_task("generate", name)
    assert replace[0] in text
    return {"form": "infile", "source": text.replace(replace[0], replace[1]), "filename": path}


def _maxkernel_folder(tmp_path, name, replace=None):
    """A copy of a MaxKernel folder (optionally at another size: the line is replaced in both
    the reference and the YAML's inputs block)."""
    src = pathlib.Path(task_path("generate", name))
    dst = tmp_path / name
    dst.mkdir()
    for f in sorted(p.name for p in src.iterdir()):
        text = (src / f).read_text(encoding="utf-8")
        if replace is not None:
            assert replace[0] in text, f
            text = text.replace(replace[0], replace[1])
        (dst / f).write_text(text, encoding="utf-8")
    return {"form": "maxkernel", "dir": str(dst)}


def _jaxbench(name, replace=None):
    path = task_path("generate", name, "baseline.py")
    if replace is None:
        return {"form": "jaxbench", "baseline": path}
    text = read_task("generate", name, "baseline.py")
    assert replace[0] in text
    return {"form": "jaxbench", "baseline_source": text.replace(*replace), "baseline_filename": path}


def _assert_readable(r, constants):
    src = r["source"]
    tree = ast.parse(src)
    assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Name)}
    for c in constants:
        assert c in assigned, f"{c} is not a module-level constant"
        assert c in r["tunables"] and r["tunables"][c], r["tunables"]
    assert "pl.pallas_call(" in src
    assert "interpret=" not in src
    assert "dimension_semantics=" in src
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert r["entry"] in funcs
    # body = the source without its import lines
    assert "import jax" not in r["body"] and r["body"].strip() in src
    assert all(line in src for line in r["imports"])


def _lower_again(worker, task, r, tmp_path, calls=1):
    """The returned text, as a candidate, lowers for TPU through the lower op: its first
    pallas_call's facts (all of them when `calls` > 1)."""
    f = tmp_path / "generated_kernel.py"
    f.write_text(r["source"], encoding="utf-8")
    lo = worker.request("lower", task=task, source=r["source"], filename=str(f),
                        kernel=r["entry"], target="tpu", timeout=300)
    assert lo["ok"] is True, lo.get("error")
    assert lo["lowered"] is True and lo["num_pallas_calls"] == calls
    return lo["pallas_calls"] if calls > 1 else lo["pallas_calls"][0]


def _evaluate(worker, task, r, tmp_path, seeds=SEEDS, **kw):
    f = tmp_path / "generated_kernel.py"
    f.write_text(r["source"], encoding="utf-8")
    ev = worker.request("evaluate", task=task, source=r["source"], filename=str(f),
                        kernel=r["entry"], seeds=seeds, timing=NO_TIMING, timeout=300, **kw)
    assert ev["ok"] is True, ev.get("error")
    assert ev["correct"] is True, ev["failure"]
    return ev


# ---------------------------------------------------------------------------
# matmul_epilogue

FULL_MM = ("M, K, N = 256, 512, 384", "M, K, N = 4096, 8192, 8192")


def test_matmul_bias_gelu_full_size_lowers(worker, tmp_path):
    task = _infile("mm_bias_gelu.py", FULL_MM)
    r = _generate(worker, task)
    assert r["class"] == "matmul_epilogue"
    assert "4096x8192 @ 8192x8192" in r["description"] and "gelu" in r["description"]
    assert r["lowering"]["ok"] is True
    assert r["primitives"][0] == "dot_general" and "tanh" in r["primitives"]
    _assert_readable(r, ["BLOCK_M", "BLOCK_N", "BLOCK_K"])
    src = r["source"]
    assert "acc_ref[...] +=" in src and "pltpu.VMEM(" in src and '"arbitrary"' in src
    assert "b_in = b.reshape(1, n)" in src  # the bias row is its own operand
    # Every listed value is a valid TPU tile at these shapes (multiple of 8/128 dividing M/N/K).
    for name, dim, align in (("BLOCK_M", 4096, 8), ("BLOCK_N", 8192, 128), ("BLOCK_K", 8192, 128)):
        assert all(v % align == 0 and dim % v == 0 for v in r["tunables"][name]), r["tunables"]
    call = _lower_again(worker, task, r, tmp_path)
    assert call["dimension_semantics"] == ["parallel", "parallel", "arbitrary"]
    bm, bk = call["operands"][0]["block_shape"]
    bn = call["operands"][1]["block_shape"][1]
    assert call["grid"] == [4096 // bm, 8192 // bn, 8192 // bk]
    assert min(bm, bn) >= 256  # MXU-sized tiles at this size
    # f32 operands are rounded for the MXU every step: the weight block's share falls with the
    # rows of the tile (on v5e's compiler 512 rows cost 8 % more than 1024; bench/RESULTS.md).
    assert bm >= 1024
    # The kernel sets vmem_limit_bytes from its plan, within v5e's 128 MiB: the static
    # analysis' per-step VMEM fits under it.
    assert call["vmem_limit_bytes"] <= 128 * 1024 * 1024
    assert call["vmem_bytes_per_step"] <= call["vmem_limit_bytes"]


def test_matmul_bias_gelu_small_instance_is_correct(worker, tmp_path):
    task = _infile("mm_bias_gelu.py")
    r = _generate(worker, task)
    assert r["class"] == "matmul_epilogue"
    _evaluate(worker, task, r, tmp_path)


def test_full_size_module_runs_at_a_shrunk_instance(worker, tmp_path):
    """A module generated at a large size (its tiles chosen for 1024x2048 @ 2048x1024) runs
    unchanged at the evaluate op's shrunk instance: tiles are fitted to the shapes at trace time."""
    task = _infile("mm_bias_gelu.py", ("M, K, N = 256, 512, 384", "M, K, N = 1024, 2048, 1024"))
    r = _generate(worker, task)
    blocks = {n: r["source"].split(f"\n{n} = ")[1].split()[0] for n in ("BLOCK_M", "BLOCK_N")}
    assert max(int(v) for v in blocks.values()) >= 512, blocks  # larger than the shrunk dims
    ev = _evaluate(worker, task, r, tmp_path, shrink={"factor": 8, "min_dim": 64})
    assert ev["instance"]["kind"] == "shrunk", ev["instance"]


def test_batched_matmul_residual_full_size_lowers(worker, tmp_path):
    task = _infile("bmm_residual.py", ("B, S, K, N = 2, 128, 256, 256",
                                       "B, S, K, N = 16, 2048, 1024, 2048"))
    r = _generate(worker, task)
    assert r["class"] == "matmul_epilogue"
    assert r["description"].startswith("batched matmul") and "transposed" in r["description"]
    assert "residual `r`" in r["description"]
    _assert_readable(r, ["BLOCK_M", "BLOCK_N", "BLOCK_K"])
    call = _lower_again(worker, task, r, tmp_path)
    assert call["dimension_semantics"] == ["parallel", "parallel", "parallel", "arbitrary"]
    assert call["grid"][0] == 16
    assert call["operands"][0]["block_shape"][0] is None  # the batch dim is squeezed
    # The whole K in one step: a K split adds the f32 partial products into the accumulator
    # every step (v5e's compiler: 2048 x 2048 x 128 tiles 45 % slower than 2048 x 1024 x 1024).
    assert call["grid"][-1] == 1, call["grid"]


def test_batched_matmul_residual_small_instance_is_correct(worker, tmp_path):
    task = _infile("bmm_residual.py")
    r = _generate(worker, task)
    _evaluate(worker, task, r, tmp_path)


def test_jaxbench_bf16_linear_full_size_lowers(worker, tmp_path):
    task = _jaxbench("jaxbench_linear_bf16", (
        'CONFIG = {"batch": 256, "in_features": 256, "out_features": 384',
        'CONFIG = {"batch": 8192, "in_features": 4096, "out_features": 8192'))
    r = _generate(worker, task)
    assert r["class"] == "matmul_epilogue" and r["entry"] == "workload"
    assert "bfloat16" in r["description"] and "transposed" in r["description"]
    # bf16 output tiles: rows in multiples of 16
    assert all(v % 16 == 0 for v in r["tunables"]["BLOCK_M"]), r["tunables"]
    call = _lower_again(worker, task, r, tmp_path)
    assert call["operands"][-1]["dtype"] == "bfloat16"
    # The whole K (4096, past the 2048 of other axes' tiles) in one step: no f32 partial products
    # through the accumulator (a split cost 8 % on v5e's compiler at this size).
    assert call["grid"][-1] == 1 and call["operands"][0]["block_shape"][1] == 4096, call


def test_jaxbench_bf16_linear_small_instance_is_correct(worker, tmp_path):
    task = _jaxbench("jaxbench_linear_bf16")
    r = _generate(worker, task)
    assert "astype(jnp.bfloat16)" in r["source"]  # the epilogue runs in the reference's dtype
    _evaluate(worker, task, r, tmp_path)


# ---------------------------------------------------------------------------
# matmul_row_reduction

def test_matmul_softmax_maxkernel_full_size_lowers(worker, tmp_path):
    """At 4096 x 8192 @ 8192 x 8192 the row is written in two phases (statistics over N tiles,
    then each tile normalised): 1024-row blocks, where a whole 8192-column row allows 256."""
    task = _maxkernel_folder(tmp_path, "maxkernel_mm_softmax",
                             ("m, k, n = 128, 256, 512", "m, k, n = 4096, 8192, 8192"))
    r = _generate(worker, task)
    assert r["class"] == "matmul_row_reduction" and r["entry"] == "computation"
    assert "softmax" in r["description"]
    assert any("two phases over the row (N=8192)" in n for n in r["notes"]), r["notes"]
    assert r["tunables"]["BLOCK_M"] and set(r["tunables"]["PHASES"]) == {"recompute", "logits"}
    assert "def computation(x, w, temperature):" in r["source"]
    assert "temperature=temperature" in r["source"]  # the static argument reaches the kernels
    stats, out = _lower_again(worker, task, r, tmp_path, calls=2)
    assert out["operands"][-1]["block_shape"][0] >= 512, out["operands"]
    # Each call sets vmem_limit_bytes from its own phase; the two limits together fit v5e's
    # 128 MiB (one XLA program holds one call's allocation beside the other's limit).
    assert stats["vmem_limit_bytes"] + out["vmem_limit_bytes"] <= 128 * 1024 * 1024
    for call in (stats, out):
        assert call["vmem_bytes_per_step"] <= call["vmem_limit_bytes"]


def test_matmul_softmax_maxkernel_small_instance_is_correct(worker, tmp_path):
    task = {"form": "maxkernel", "dir": task_path("generate", "maxkernel_mm_softmax")}
    r = _generate(worker, task)
    assert r["class"] == "matmul_row_reduction"
    _evaluate(worker, task, r, tmp_path)


def test_matmul_logsumexp_minus_mean_small_instance_is_correct(worker, tmp_path):
    task = _infile("mm_lse_mean.py")
    r = _generate(worker, task)
    assert r["class"] == "matmul_row_reduction"
    # The mean divides by the tile's row length, not by a baked-in 512.
    assert "row_len" in r["source"] and "/ 512" not in r["source"]
    _evaluate(worker, task, r, tmp_path)


def test_row_mean_follows_the_row_length_at_a_shrunk_instance(worker, tmp_path):
    """Generated at N=1024, run at N=128: the mean must divide by the row it sees."""
    task = _infile("mm_lse_mean.py", ("M, K, N = 128, 256, 512", "M, K, N = 1024, 1024, 1024"))
    r = _generate(worker, task)
    ev = _evaluate(worker, task, r, tmp_path, shrink={"factor": 8, "min_dim": 64})
    assert ev["instance"]["kind"] == "shrunk", ev["instance"]


def test_layernorm_variance_follows_the_row_length_at_a_shrunk_instance(worker, tmp_path):
    """jnp.var divides by `N - ddof`, a literal in the jaxpr: generated at N=1024 and run at
    N=128, the kernel must divide by the row it holds."""
    task = _infile("mm_layernorm.py")
    r = _generate(worker, task)
    assert r["class"] == "matmul_row_reduction"
    assert "1024.0" not in r["source"], r["source"]
    ev = _evaluate(worker, task, r, tmp_path, seeds=SEEDS[:1], shrink={"factor": 8, "min_dim": 64})
    assert ev["instance"]["kind"] == "shrunk", ev["instance"]


def test_matmul_logsumexp_full_size_lowers(worker, tmp_path):
    task = _infile("mm_lse_mean.py", ("M, K, N = 128, 256, 512", "M, K, N = 4096, 4096, 4096"))
    r = _generate(worker, task)
    assert r["class"] == "matmul_row_reduction"
    call = _lower_again(worker, task, r, tmp_path)
    assert call["operands"][-1]["array_shape"] == [4096, 1]  # one value per row


def test_row_that_does_not_fit_vmem_is_written_in_two_phases(worker, tmp_path):
    """A log-softmax over a 128256-column row with K = 8192: no whole row and no one-pass tiled
    row fits, the two-phase form does (it was refused before)."""
    task = _infile("refuse/mm_wide_row.py")
    r = _generate(worker, task)
    assert r["class"] == "matmul_row_reduction"
    assert any("two phases over the row (N=128256)" in n for n in r["notes"]), r["notes"]
    _lower_again(worker, task, r, tmp_path, calls=2)


def test_smaller_vmem_target_gives_smaller_tiles(worker):
    task = _infile("mm_bias_gelu.py", FULL_MM)
    big = _generate(worker, task)
    small = _generate(worker, task, target={"name": "tiny", "vmem_limit_bytes": 4 * 1024 * 1024})

    def tile(r):
        consts = {}
        for n in ast.parse(r["source"]).body:
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name):
                consts[n.targets[0].id] = getattr(n.value, "value", None)
        return consts["BLOCK_M"] * consts["BLOCK_N"] + consts["BLOCK_N"] * consts["BLOCK_K"]
    assert tile(small) < tile(big)
    assert small["target"]["vmem_limit_bytes"] == 4 * 1024 * 1024


@pytest.mark.parametrize("name, prim", [("refuse/mm_cumsum.py", "cumsum")])
def test_epilogue_op_without_emitter_is_refused(worker, name, prim):
    r = worker.request("generate", task=_infile(name), timeout=300)
    assert r["ok"] is False
    err = r["error"]
    assert err["kind"] == "no_template"
    assert err["primitives"] == [prim]
    assert err["locations"] and err["locations"][0]["line"] == 7, err
    assert err["file"].endswith(name.split("/")[-1])


def test_cross_entropy_with_integer_labels_is_correct(worker, tmp_path):
    task = _infile("mm_cross_entropy.py")
    r = _generate(worker, task)
    assert r["class"] == "matmul_row_reduction"
    assert "broadcasted_iota" in r["source"] and "labels_in = labels.reshape(m, 1)" in r["source"]
    _evaluate(worker, task, r, tmp_path)


def test_tunables_run_under_the_autotuner_with_several_tiles(worker, tmp_path):
    """The generated constants are what autotune substitutes; with small tiles the position mask
    (iota offset by the tile's place) must still be right on every tile."""
    task = _infile("mm_causal_mask.py")
    r = _generate(worker, task)
    assert 64 in r["tunables"]["BLOCK_M"] and 128 in r["tunables"]["BLOCK_N"], r["tunables"]
    f = tmp_path / "generated_kernel.py"
    f.write_text(r["source"], encoding="utf-8")
    at = worker.request("autotune", task=task, source=r["source"], filename=str(f),
                        kernel=r["entry"], space={"BLOCK_M": [64], "BLOCK_N": [128]},
                        seeds=SEEDS, timing={"min_runs": 1, "min_seconds": 0.0, "max_seconds": 0.5},
                        timeout=300)
    assert at["ok"] is True, at.get("error")
    res = at["results"][0]
    assert res["status"] == "ok" and res["correct"] is True, res
    assert res["grid"] == [[256 // 64, 256 // 128, 1]]


def test_per_head_bias_over_flattened_batch_is_correct(worker, tmp_path):
    task = _infile("bmm_head_bias_softmax.py")
    r = _generate(worker, task)
    assert r["class"] == "matmul_row_reduction"
    assert "bias.reshape(1, batch[1], 1, n)" in r["source"]
    _evaluate(worker, task, r, tmp_path, seeds=SEEDS[:1])  # 4 grid steps of a softmax: slow


def test_row_sum_of_broadcast_values_is_correct(worker, tmp_path):
    task = _infile("mm_sum_broadcast.py")
    r = _generate(worker, task)
    assert r["class"] == "matmul_row_reduction"
    assert "jnp.broadcast_to(" in r["source"].split("def _matmul_kernel")[1].split("o_ref[...]")[0]
    _evaluate(worker, task, r, tmp_path, seeds=SEEDS[:1])


def test_cross_entropy_with_take_along_axis_is_correct(worker, tmp_path):
    task = _infile("mm_cross_entropy_take.py")
    r = _generate(worker, task)
    assert r["class"] == "matmul_row_reduction" and "gather" in r["primitives"]
    assert "labels + row_len" in r["source"]  # jnp's negative-index wrap follows the row
    _evaluate(worker, task, r, tmp_path, seeds=SEEDS[:1])
