"""generate: a row reduction after a matmul with the row tiled over N (running statistics in
VMEM scratch, flash style). Generated at a small size, the block constants set so the row spans
several N tiles with a ragged last one (N = 300: 128 + 128 + 44) and a ragged last M tile, the
module must be correct in interpret mode: per-row outputs (logsumexp, cross-entropy with
take_along_axis) from one pass, full-row outputs (softmax, log-softmax with a bias, row L2 norm)
normalised at the row's last tile; logits near +-100, where exp overflows without the right
running shift."""

import importlib.util

import generate_rows_helpers as H
import pytest
from worker_harness import WorkerProcess, read_task, task_path

SIZES = "M, K, N = 40, 64, 300"
# A full-row output is tiled only where the whole-row plan does not fit (on v5e's 128 MiB: rows
# too wide for any M block). A small VMEM target makes that so at a CPU-sized instance.
FULL_ROW_SIZES = "M, K, N = 37, 100, 2000"
SMALL_VMEM = {"name": "v5e", "vmem_limit_bytes": 1024 * 1024}


def _task(reduction, sizes=SIZES):
    text = read_task("generate", "mm_online_rows.py")
    text = text.replace('REDUCTION = "logsumexp"', f'REDUCTION = "{reduction}"')
    text = text.replace("M, K, N = 40, 64, 300", sizes)
    return {"form": "infile", "source": text,
            "filename": task_path("generate", "mm_online_rows.py")}


@pytest.mark.parametrize("reduction, stats", [("logsumexp", 2), ("cross_entropy", 3)])
def test_row_tiled_over_n_with_a_ragged_last_tile_is_correct(worker, tmp_path, reduction, stats):
    task = _task(reduction)
    r = H.generate(worker, task)
    assert r["class"] == "matmul_row_reduction"
    assert any(f"is tiled: {stats} running statistic" in n for n in r["notes"]), r["notes"]
    src = r["source"]
    assert "BLOCK_N" in r["tunables"] and "if ragged:" in src
    # the max's mask and start: a large finite negative, not -inf
    assert "jnp.where(valid, x0, jnp.finfo(jnp.float32).min)" in src
    # Three N tiles, the last one ragged (300 = 2 x 128 + 44), a ragged last M tile (40 = 2 x 16 + 8).
    src = H.set_constant(H.set_constant(src, "BLOCK_N", 128), "BLOCK_M", 16)
    H.evaluate(worker, task, r, tmp_path, source=src, seeds=[5])


def _dtype(task, dtype):
    if dtype != "float32":
        text = task["source"].replace("(M, K), jnp.float32", f"(M, K), jnp.{dtype}")
        task["source"] = text.replace("(K, N), jnp.float32", f"(K, N), jnp.{dtype}")
    return task


@pytest.mark.parametrize("reduction, stats, dtype, phases, block_m", [
    ("softmax", 2, "float32", "recompute", 16), ("softmax", 2, "bfloat16", "logits", 16),
    ("log_softmax_bias", 2, "float32", "logits", 16), ("log_softmax_bias", 2, "bfloat16", "recompute", 32),
    ("l2norm", 1, "float32", "recompute", 8)])
def test_full_row_output_in_two_phases_on_ragged_sizes_is_correct(worker, tmp_path, reduction,
                                                                  stats, dtype, phases, block_m):
    """Phase 1 the statistics over N tiles, phase 2 each tile normalised (the logits recomputed
    or read back), at M, K, N off every tile multiple: 37 rows (a ragged last M tile), a
    100-deep K, 2000 columns (15 x 128 + 80), under a 1 MiB VMEM target where the whole row
    does not fit."""
    task = _dtype(_task(reduction, FULL_ROW_SIZES), dtype)
    r = H.generate(worker, task, target=SMALL_VMEM)
    assert r["class"] == "matmul_row_reduction"
    assert any(f"two phases over the row (N=2000): {stats} running" in n for n in r["notes"]), \
        r["notes"]
    assert set(r["tunables"]["PHASES"]) == {"recompute", "logits"}, r["tunables"]
    src = H.set_constant(r["source"], "PHASES", phases)
    src = H.set_constant(H.set_constant(src, "BLOCK_N", 128), "BLOCK_M", block_m)
    H.evaluate(worker, task, r, tmp_path, source=src, seeds=[5])


@pytest.mark.parametrize("phases", ["recompute", "logits"])
def test_full_row_softmax_over_a_vocabulary_row_in_two_phases_is_correct(worker, tmp_path, phases):
    """A 50257-column row (vocabulary-sized): 13 tiles of 4096, the last 1105 columns; 24-row
    tiles walked in strips of 8 rows (the strip holds about 64K elements)."""
    task = _task("softmax", "M, K, N = 24, 64, 50257")
    r = H.generate(worker, task, target=SMALL_VMEM)
    assert any("two phases" in n for n in r["notes"]), r["notes"]
    src = H.set_constant(H.set_constant(r["source"], "BLOCK_N", 4096), "BLOCK_M", 24)
    H.evaluate(worker, task, r, tmp_path, source=H.set_constant(src, "PHASES", phases), seeds=[5])


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_two_phase_softmax_compiles_for_v5e_with_cycles(tmp_path):
    """Both calls through the TPU compiler (libtpu, no TPU) at 512 x 2048 @ 2048 x 8192: within
    v5e's 128 MiB of VMEM (each call's limit from its own phase), with static cycles."""
    task = _task("softmax", "M, K, N = 512, 2048, 8192")
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        r = H.generate(w, task)
        assert any("two phases over the row (N=8192)" in n for n in r["notes"]), r["notes"]
        H.assert_compiles_with_cycles(w, task, r, tmp_path)
    finally:
        w.close()


def test_whole_row_plan_is_kept_for_a_small_full_row_output_where_it_fits(worker):
    """A full-row output whose whole-row plan fits and is modelled cheaper keeps it (BN = N): at
    16 rows a second phase only adds steps."""
    r = H.generate(worker, _task("softmax", "M, K, N = 16, 64, 2000"))
    assert "BLOCK_N" not in r["tunables"], r["notes"]
    assert any("row fits" in n for n in r["notes"]), r["notes"]


@pytest.mark.parametrize("reduction, dtype", [
    ("sigmoid_logsumexp", "float32"), ("sigmoid_scale_logsumexp", "bfloat16")])
def test_sigmoid_then_logsumexp_is_a_row_reduction_not_attention(worker, tmp_path, reduction,
                                                                 dtype):
    """A matmul, a sigmoid, a logsumexp: exp and reduce_sum after a matmul, but one matmul."""
    task = _task(reduction)
    if dtype != "float32":
        text = task["source"].replace("(M, K), jnp.float32", f"(M, K), jnp.{dtype}")
        task["source"] = text.replace("(K, N), jnp.float32", f"(K, N), jnp.{dtype}")
    r = H.generate(worker, task)
    assert r["class"] == "matmul_row_reduction", r["class"]
    src = H.set_constant(H.set_constant(r["source"], "BLOCK_N", 128), "BLOCK_M", 16)
    H.evaluate(worker, task, r, tmp_path, source=src, seeds=[5])


def test_two_chained_matmuls_with_a_logsumexp_after_are_not_called_attention(worker):
    """matmul, sigmoid, matmul, logsumexp: the second matmul reads no softmax of the first, so
    the refusal names the structure, not an attention part that is missing."""
    err = H.refusal(worker, _task("tied_sigmoid_logsumexp"))
    assert "attention" not in err["message"], err["message"]
    assert "dot_general x2" in err["message"] and "logistic" in err["message"], err["message"]
