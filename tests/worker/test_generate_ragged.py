"""generate: sizes that are not multiples of 8 / 128, per template class. The module is generated
at the ragged size, its block constants set so the last tile along the independent axes is
partial (what a tile that divides nothing gives), and evaluate in interpret mode must find it
correct: Pallas masks the out-of-bounds part of the last block (the grid is pl.cdiv)."""

import generate_rows_helpers as H
import pytest
from worker_harness import read_task, task_path


def _task(folder, name, old, new):
    text = read_task(folder, name)
    assert old in text, old
    return {"form": "infile", "source": text.replace(old, new), "filename": task_path(folder, name)}


CASES = [
    # (class, folder, file, sizes line, ragged sizes line, block constants, grid dims ragged)
    ("matmul_epilogue", "generate", "mm_bias_gelu.py", "M, K, N = 256, 512, 384",
     "M, K, N = 300, 256, 200", {"BLOCK_M": 128, "BLOCK_N": 128}),
    ("matmul_row_reduction", "generate", "mm_cross_entropy.py", "M, K, V = 64, 128, 256",
     "M, K, V = 100, 128, 300", {"BLOCK_M": 64}),
    ("elementwise", "generate", "ew_gate.py", "B, R, C = 4, 64, 256", "B, R, C = 3, 37, 200",
     {"BLOCK_ROWS": 32, "BLOCK_COLS": 128}),
    ("rowwise", "generate_rows", "rmsnorm.py", "B, S, H = 2, 32, 256", "B, S, H = 3, 33, 200",
     {"BLOCK_ROWS": 32}),
    ("attention", "generate_rows", "attn_causal.py", "B, H, S, D = 1, 2, 256, 128",
     "B, H, S, D = 1, 2, 100, 128", {"BLOCK_Q": 64}),
]


@pytest.mark.parametrize("kclass, folder, name, old, new, blocks", CASES,
                         ids=[c[0] for c in CASES])
def test_ragged_sizes_are_correct(worker, tmp_path, kclass, folder, name, old, new, blocks):
    task = _task(folder, name, old, new)
    r = H.generate(worker, task)
    assert r["class"] == kclass
    src = r["source"]
    assert "_ragged_block(" in src and "pl.cdiv(" in src
    for const, value in blocks.items():
        src = H.set_constant(src, const, value)
    H.evaluate(worker, task, r, tmp_path, source=src, seeds=[5])
