"""generate: the pool template (max / average pooling over non-overlapping windows of a
channels-last image, spelled as a reshape + reduction or as lax.reduce_window). Correct in
interpret mode with a ragged last row tile, in bf16 with a 3x2 window; refused with the reason
where it does not apply; and at full size the kernel compiles for a v5e with the TPU compiler
(libtpu, no TPU)."""

import importlib.util

import generate_rows_helpers as H
import pytest
from worker_harness import WorkerProcess, read_task, task_path


def _pool_task(pool, shape=(2, 16, 16, 128), dtype="float32"):
    text = read_task("generate", "pool_nhwc.py").replace("SHAPE = (2, 16, 16, 128)",
                                                         f"SHAPE = {shape!r}")
    text = text.replace('POOL = "max_reshape"', f'POOL = "{pool}"')
    text = text.replace("DTYPE = jnp.float32", f"DTYPE = jnp.{dtype}")
    return {"form": "infile", "source": text, "filename": task_path("generate", "pool_nhwc.py")}


CASES = [
    # (pool, shape, dtype, description words): rows = N * H / kh never a multiple of the
    # 4-row tile the test sets, so the last tile is ragged.
    ("max_reshape", (3, 14, 10, 24), "float32", "max pooling over 2x2 windows"),
    ("avg_reduce_window", (3, 14, 10, 24), "float32", "average pooling over 2x2 windows"),
    ("mean_reshape_3x2", (2, 15, 12, 40), "bfloat16", "average pooling over 3x2 windows"),
    # XLA keeps these with W in the lanes: the transposed form, its last 128-lane chunk partial
    # (192 and 150 output columns)
    ("avg_reduce_window", (3, 14, 384, 24), "float32",
     "average pooling over 2x2 windows of 3x14x384x24 float32 (channels last, C in the sublanes"),
    ("mean_reshape_3x2", (2, 15, 300, 48), "bfloat16",
     "average pooling over 3x2 windows of 2x15x300x48 bfloat16 (channels last, C in the sublanes"),
    # XLA keeps these row-major (C = 128 in the lanes): a window's columns from the sublanes,
    # strided (f32, 3x2 windows) or as the halves of a packed word (bf16, 2x2)
    ("mean_reshape_3x2", (2, 15, 24, 128), "float32",
     "average pooling over 3x2 windows of 2x15x24x128 float32 (channels last, row-major"),
    ("max_reshape", (3, 14, 32, 128), "bfloat16",
     "max pooling over 2x2 windows of 3x14x32x128 bfloat16 (channels last, row-major"),
    ("mean_reshape_3x2", (3, 15, 48, 256), "bfloat16",
     "average pooling over 3x2 windows of 3x15x48x256 bfloat16 (channels last, row-major"),
]


@pytest.mark.parametrize("pool, shape, dtype, words", CASES,
                         ids=["max", "avg-window", "mean-bf16", "avg-w-lanes", "mean-bf16-w-lanes",
                              "mean-strided", "max-bf16-packed", "avg-bf16-packed"])
def test_pooling_is_correct_with_a_ragged_last_tile(worker, tmp_path, pool, shape, dtype, words):
    task = _pool_task(pool, shape, dtype)
    r = H.generate(worker, task)
    assert r["class"] == "pool" and r["description"].startswith(words), r["description"]
    H.evaluate(worker, task, r, tmp_path, source=H.set_constant(r["source"], "BLOCK_ROWS", 4),
               seeds=[5])


@pytest.mark.parametrize("pool, words, prims", [
    ("max_overlapping", "non-overlapping windows", ["reduce_window_max"]),
    ("max_nchw", "pools other axes than the two before the last", ["reduce_window_max"]),
    ("relu_then_max", "work before the pooling is not covered", ["reduce_max"]),
], ids=["overlapping", "nchw", "prologue"])
def test_what_the_pool_template_does_not_cover_is_refused_with_the_reason(worker, pool, words,
                                                                          prims):
    err = H.refusal(worker, _pool_task(pool))
    assert "it looks like pool" in err["message"] and words in err["message"], err["message"]
    assert err["primitives"] == prims, err


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_the_full_size_kernel_compiles_for_tpu(tmp_path):
    task = _pool_task("max_reshape", (16, 128, 128, 256))
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        r = H.generate(w, task)
        assert r["class"] == "pool"
        H.assert_compiles_with_cycles(w, task, r, tmp_path)
    finally:
        w.close()


# Tasks XLA lays out two ways, each read as it lies: the compiled program is the kernel alone.
NO_COPY = [
    # C = 64: XLA puts W in the lanes. The kernel reads it transposed, a bitcast (the first form
    # had a copy of the input before it and of the output after it, 2.4x the kernel's cycles).
    ("avg_reduce_window", (2, 256, 512, 64), "float32", "W in the lanes"),
    # C = 128: XLA keeps the array row-major. The first form's (W/2, 2C) view made XLA copy the
    # input first (2.5x the kernel's cycles); the packed (bf16) and strided (f32) forms do not.
    ("max_reshape", (2, 256, 512, 128), "bfloat16", "row-major as XLA lays it out"),
    ("max_reshape", (2, 256, 512, 128), "float32", "row-major as XLA lays it out"),
]


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
@pytest.mark.parametrize("pool, shape, dtype, words", NO_COPY,
                         ids=["w-in-lanes", "row-major-bf16", "row-major-f32"])
def test_an_input_is_pooled_in_xlas_layout_with_no_copy(tmp_path, pool, shape, dtype, words):
    task = _pool_task(pool, shape, dtype)
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        r = H.generate(w, task)
        assert words in r["description"], r["description"]
        cand = H.assert_compiles_with_cycles(w, task, r, tmp_path)
        assert len(cand["ops"]) == 1, cand["ops"]
    finally:
        w.close()
