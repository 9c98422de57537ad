"""generate: a row reduction after a matmul with the row tiled over N (running statistics in
VMEM scratch, flash style). Generated at a small size, the block constants set so the row spans
several N tiles with a ragged last one (N = 300: 128 + 128 + 44) and a ragged last M tile, the
module must be correct in interpret mode: per-row outputs (logsumexp, cross-entropy with
take_along_axis) from one pass, full-row outputs (softmax, log-softmax with a bias, row L2 norm)
normalised at the row's last tile; logits near +-100, where exp overflows without the right
running shift."""

import generate_rows_helpers as H
import pytest
from worker_harness import read_task, task_path

SIZES = "M, K, N = 40, 64, 300"
# A full-row output is tiled only where the whole-row plan does not fit (on v5e's 128 MiB: rows
# too wide for any M block). A small VMEM target makes that so at a CPU-sized instance.
FULL_ROW_SIZES = "M, K, N = 16, 64, 2000"
SMALL_VMEM = {"name": "v5e", "vmem_limit_bytes": 1024 * 1024}


def _task(reduction, sizes=SIZES):
    text = read_task("generate", "mm_online_rows.py")
    text = text.replace('REDUCTION = "logsumexp"', f'REDUCTION = "{reduction}"')
    text = text.replace("M, K, N = 40, 64, 300", sizes)
    return {"form": "infile", "source": text,
            "filename": task_path("generate", "mm_online_rows.py")}


@pytest.mark.parametrize("reduction, stats, full_row", [
    ("logsumexp", 2, False), ("cross_entropy", 3, False), ("softmax", 2, True),
    ("log_softmax_bias", 2, True), ("l2norm", 1, True)])
def test_row_tiled_over_n_with_a_ragged_last_tile_is_correct(worker, tmp_path, reduction, stats,
                                                             full_row):
    task = _task(reduction, FULL_ROW_SIZES if full_row else SIZES)
    r = H.generate(worker, task, **({"target": SMALL_VMEM} if full_row else {}))
    assert r["class"] == "matmul_row_reduction"
    assert any(f"is tiled: {stats} running statistic" in n for n in r["notes"]), r["notes"]
    src = r["source"]
    assert "BLOCK_N" in r["tunables"] and "if ragged:" in src
    if reduction != "l2norm":  # the max's mask and start: a large finite negative, not -inf
        assert "jnp.where(valid, x0, jnp.finfo(jnp.float32).min)" in src
    # Several N tiles, the last one ragged (300 = 2 x 128 + 44, 2000 = 15 x 128 + 80), and a
    # ragged last M tile for the per-row outputs (40 = 2 x 16 + 8).
    src = H.set_constant(src, "BLOCK_N", 128)
    src = H.set_constant(src, "BLOCK_M", 8 if full_row else 16)
    H.evaluate(worker, task, r, tmp_path, source=src, seeds=[5])


def test_full_row_output_kept_in_the_output_block_is_correct(worker, tmp_path):
    """N a multiple of the tile: the raw f32 tiles wait in the output block itself (no scratch
    row), the normalising pass runs over whole tiles only."""
    task = _task("softmax", "M, K, N = 16, 64, 2048")
    r = H.generate(worker, task, target=SMALL_VMEM)
    assert any("is tiled" in n for n in r["notes"]), r["notes"]
    assert "keep = n % bn != 0" in r["source"]
    src = H.set_constant(H.set_constant(r["source"], "BLOCK_N", 128), "BLOCK_M", 8)
    H.evaluate(worker, task, r, tmp_path, source=src, seeds=[5])


def test_whole_row_plan_is_kept_for_a_full_row_output_where_it_fits(worker):
    """A full-row output whose whole-row plan fits keeps it (BN = N): on the TPU compiler's
    cycles the tiled form never won for a full-row output (bench/RESULTS.md, issue 35)."""
    r = H.generate(worker, _task("softmax", FULL_ROW_SIZES))
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
