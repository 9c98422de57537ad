"""generate: the scan template (a prefix sum along the last axis as triangular matmuls with a
running row total). Correct in interpret mode at sizes no tile divides (both grid axes ragged),
reversed, in bf16 and on a 1-D input; refused with the reason where it does not apply; and at
full size the kernel compiles for a v5e with the TPU compiler (libtpu, no TPU)."""

import importlib.util

import generate_rows_helpers as H
import pytest
from worker_harness import WorkerProcess

SHAPE_LINE = "SHAPE = (4, 64, 512)"


def _scan_task(shape, reverse=False, dtype="float32", body=None):
    text = H.read_task(H.DIR, "scan_rows.py").replace(SHAPE_LINE, f"SHAPE = {shape!r}")
    text = text.replace("REVERSE = False", f"REVERSE = {reverse}")
    text = text.replace("DTYPE = jnp.float32", f"DTYPE = jnp.{dtype}")
    if body is not None:
        old = "    if REVERSE:\n        return jax.lax.cumsum(x, axis=x.ndim - 1, reverse=True)\n    return jnp.cumsum(x, axis=-1)\n"
        assert old in text
        text = text.replace(old, body)
    return {"form": "infile", "source": text, "filename": H.task_path(H.DIR, "scan_rows.py")}


CASES = [
    # (shape, reverse, dtype, block constants): every case has a partial last tile on both axes
    ((3, 37, 300), False, "float32", {"BLOCK_ROWS": 32, "BLOCK_COLS": 128}),
    ((300, 1000), True, "float32", {"BLOCK_ROWS": 64, "BLOCK_COLS": 128}),
    ((50, 300), False, "bfloat16", {"BLOCK_ROWS": 16, "BLOCK_COLS": 128}),
    ((1000,), True, "float32", {"BLOCK_COLS": 256}),
]


@pytest.mark.parametrize("shape, reverse, dtype, blocks", CASES,
                         ids=["ragged-3d", "reversed", "bf16", "1d-reversed"])
def test_prefix_sums_are_correct_with_ragged_tiles(worker, tmp_path, shape, reverse, dtype, blocks):
    task = _scan_task(shape, reverse, dtype)
    r = H.generate(worker, task)
    assert r["class"] == "scan", r["class"]
    src = r["source"]
    assert "precision=jax.lax.Precision.HIGHEST" in src and "pl.cdiv(" in src
    assert ("nj - 1 - j" in src) == reverse
    for name, value in blocks.items():
        src = H.set_constant(src, name, value)
    H.evaluate(worker, task, r, tmp_path, source=src, seeds=[5])


@pytest.mark.parametrize("body, words, prims", [
    ("    return jnp.cumsum(x, axis=0)\n", "covers the last axis only", ["cumsum"]),
    ("    return jax.lax.cumprod(x, axis=x.ndim - 1)\n", "`cumprod` is not covered", ["cumprod"]),
    ("    return jnp.exp(jnp.cumsum(x, axis=-1))\n", "operations around the cumsum", ["exp"]),
], ids=["axis0", "cumprod", "epilogue"])
def test_what_the_scan_template_does_not_cover_is_refused_with_the_reason(worker, body, words, prims):
    err = H.refusal(worker, _scan_task((64, 256), body=body))
    assert "it looks like scan" in err["message"] and words in err["message"], err["message"]
    assert err["primitives"] == prims, err


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_the_full_size_kernel_compiles_for_tpu(tmp_path):
    task = _scan_task((8192, 8192))
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        r = H.generate(w, task)
        assert r["class"] == "scan" and "BLOCK_COLS = 128" in r["source"]
        H.assert_compiles_with_cycles(w, task, r, tmp_path)
    finally:
        w.close()
