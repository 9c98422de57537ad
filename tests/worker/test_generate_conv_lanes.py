"""generate: a 2-D convolution of an image XLA keeps with W in the lanes (channels not a multiple
of 128) is written on that layout (templates/conv_lanes.py). Correct in interpret mode with a
ragged last row tile, for SAME, VALID, a 5x5 window, uneven padding and bf16; and compiled for
v5e by the TPU compiler (libtpu, no TPU) the program is the kernel: no copy of the image before
it or of the output after it."""

import importlib.util

import generate_rows_helpers as H
import pytest
from worker_harness import WorkerProcess, read_task, task_path

DIR = "generate_conv"
NAME = "conv2d_nhwc_lanes.py"


def _task(**lines):
    text = read_task(DIR, NAME)
    for start, new in lines.items():
        start = start.replace("__", ", ")
        hits = [ln for ln in text.splitlines() if ln.startswith(start + " = ")]
        assert len(hits) == 1, start
        text = text.replace(hits[0], f"{start} = {new}")
    return {"form": "infile", "source": text, "filename": task_path(DIR, NAME)}


CASES = {
    # 10 or 11 rows in tiles of 4: the last tile is ragged, its rows past the image zeroed
    "same": {},
    "valid": {"N__H__W__CIN__COUT__KH__KW": "2, 11, 256, 8, 16, 3, 3", "PADDING": '"VALID"'},
    "5x5": {"N__H__W__CIN__COUT__KH__KW": "1, 10, 384, 8, 8, 5, 5"},
    "uneven-pad": {"PADDING": "((0, 2), (2, 0))"},
    "bf16": {"N__H__W__CIN__COUT__KH__KW": "2, 10, 256, 16, 16, 3, 3", "DTYPE": "jnp.bfloat16",
             "TOLERANCES": '{"rtol": 2e-2, "atol": 2e-2}'},
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_lanes_form_is_correct_with_a_ragged_last_tile(worker, tmp_path, case):
    task = _task(**CASES[case])
    r = H.generate(worker, task)
    assert r["class"] == "conv2d" and "W in the lanes" in r["description"], r["description"]
    H.evaluate(worker, task, r, tmp_path, source=H.set_constant(r["source"], "BLOCK_ROWS", 4),
               seeds=[5])


def test_channels_that_fill_the_lanes_keep_the_implicit_gemm(worker):
    r = H.generate(worker, _task(N__H__W__CIN__COUT__KH__KW="1, 8, 16, 128, 128, 3, 3"))
    assert r["class"] == "conv2d" and "implicit GEMM" in r["description"], r["description"]


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_compiled_for_tpu_the_program_is_the_kernel_with_no_copies(tmp_path):
    task = _task(N__H__W__CIN__COUT__KH__KW="1, 256, 512, 32, 32, 3, 3")
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        r = H.generate(w, task)
        assert "W in the lanes" in r["description"]
        cand = H.assert_compiles_with_cycles(w, task, r, tmp_path)
    finally:
        w.close()
    # the kernel and the weight's and bias's small rearrangements, nothing the size of the image
    kernel = max(cand["ops"].values())
    assert sum(cand["ops"].values()) - kernel < 0.05 * kernel, cand["ops"]
