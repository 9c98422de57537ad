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


def _task(reduction, sizes=SIZES):
    text = read_task("generate", "mm_online_rows.py")
    text = text.replace('REDUCTION = "logsumexp"', f'REDUCTION = "{reduction}"')
    text = text.replace("M, K, N = 40, 64, 300", sizes)
    return {"form": "infile", "source": text,
            "filename": task_path("generate", "mm_online_rows.py")}


@pytest.mark.parametrize("reduction, stats", [
    ("logsumexp", 2), ("cross_entropy", 3), ("softmax", 2), ("log_softmax_bias", 2),
    ("l2norm", 1)])
def test_row_tiled_over_n_with_a_ragged_last_tile_is_correct(worker, tmp_path, reduction, stats):
    task = _task(reduction)
    r = H.generate(worker, task)
    assert r["class"] == "matmul_row_reduction"
    assert any(f"is tiled: {stats} running statistic" in n for n in r["notes"]), r["notes"]
    src = r["source"]
    assert "BLOCK_N" in r["tunables"] and "if ragged:" in src
    if reduction != "l2norm":  # the max's mask and start: a large finite negative, not -inf
        assert "jnp.where(valid, x0, jnp.finfo(jnp.float32).min)" in src
    src = H.set_constant(src, "BLOCK_N", 128)
    src = H.set_constant(src, "BLOCK_M", 16)
    H.evaluate(worker, task, r, tmp_path, source=src, seeds=[5])


def test_full_row_output_kept_in_the_output_block_is_correct(worker, tmp_path):
    """N a multiple of the tile: the raw f32 tiles wait in the output block itself (no scratch
    row), the normalising pass runs over whole tiles only."""
    task = _task("softmax", "M, K, N = 40, 64, 384")
    r = H.generate(worker, task)
    src = H.set_constant(H.set_constant(r["source"], "BLOCK_N", 128), "BLOCK_M", 16)
    H.evaluate(worker, task, r, tmp_path, source=src, seeds=[5])
