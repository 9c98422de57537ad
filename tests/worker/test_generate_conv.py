"""generate: the convolution family beyond a stride-1 2-D convolution (conv1d, conv3d, strided
convolutions rewritten over space-to-depth phase images). Correct in interpret mode at sizes no
row tile divides (the last tile ragged), in both layouts, in bf16; refused with the reason where
it does not apply; and at full size the kernels compile for a v5e with the TPU compiler (libtpu,
no TPU). The stride-1 2-D cases are in test_generate_fused.py."""

import importlib.util
import re

import generate_rows_helpers as H
import pytest
from worker_harness import WorkerProcess

DIR = "generate_conv"


def _task(name, fixed_dir=DIR, **lines):
    return H.infile_lines(fixed_dir, name, **lines)


def _conv1d(size="2, 8, 37, 16, 5", **lines):
    return _task("conv1d_bias_gelu.py", N__CIN__L__COUT__K=size, **lines)


def _padded_1d(padding):
    task = _conv1d()
    assert 'padding="SAME"' in task["source"]
    task["source"] = task["source"].replace('padding="SAME"', f"padding={padding}")
    return task


def _conv3d(size="1, 4, 5, 7, 6, 8", **lines):
    return _task("conv3d_bias_relu.py", N__CIN__D__H__W__COUT=size, **lines)


def _conv2d_strided(size="1, 4, 11, 9, 8"):
    task = _task("conv2d_bias_silu.py", "generate_fused", N__CIN__H__W__COUT=size)
    assert "window_strides=(1, 1)" in task["source"]
    task["source"] = task["source"].replace("window_strides=(1, 1)", "window_strides=(2, 2)")
    return task


BF16 = {"DTYPE": "jnp.bfloat16", "TOLERANCES": '{"rtol": 2e-2, "atol": 2e-2}'}

CASES = [
    # (task, class, BLOCK_PIXELS): every case's last row tile is partial
    (lambda: _conv1d(), "conv1d", 16),  # 37 positions in tiles of 16 (+ a 16-row halo)
    (lambda: _conv1d(LAYOUT='"NCW"'), "conv1d", 16),
    (lambda: _conv1d(**BF16), "conv1d", 16),
    (lambda: _conv1d(STRIDE="2"), "conv1d", 16),  # 19 positions: window 3 over 2 phases
    (lambda: _conv1d("2, 8, 10, 16, 5"), "conv1d", 16),  # shorter than one tile
    (lambda: _padded_1d("((4, 1),)"), "conv1d", 16),  # all of the window's reach before the row
    (lambda: _padded_1d("((0, 3),)"), "conv1d", 16),  # VALID on the left, past the end on the right
    (lambda: _conv3d(), "conv3d", 2 * 7 * 6),  # 5 depth slices in tiles of 2
    (lambda: _conv3d(LAYOUT='"NCDHW"'), "conv3d", 2 * 7 * 6),
    (lambda: _conv3d("1, 3, 7, 7, 6, 8", STRIDE="2"), "conv3d", 3 * 4 * 3),  # 4 slices in 3s
    (lambda: _conv2d_strided(), "conv2d", 4 * 5),  # 6 output rows of 5 in tiles of 4
]


@pytest.mark.parametrize("make, kclass, pixels", CASES,
                         ids=["1d-nwc", "1d-ncw", "1d-bf16", "1d-stride2", "1d-short", "1d-pad-4-1",
                              "1d-pad-0-3", "3d-ndhwc", "3d-ncdhw",
                              "3d-stride2", "2d-stride2"])
def test_convolutions_are_correct_with_ragged_tiles(worker, tmp_path, make, kclass, pixels):
    task = make()
    r = H.generate(worker, task)
    assert r["class"] == kclass, r["class"]
    src = r["source"]
    assert "acc_ref[...] += jnp.dot(patch" in src and "pl.cdiv(" in src
    strided = "STRIDE = 2" in task["source"] or "window_strides=(2, 2)" in task["source"]
    assert ("space-to-depth" in src) == strided
    H.evaluate(worker, task, r, tmp_path, source=H.set_constant(src, "BLOCK_PIXELS", pixels),
               seeds=[5])


def _replace_conv(task, new_call):
    old = [ln for ln in task["source"].splitlines() if "jax.lax.conv_general_dilated" in ln]
    assert len(old) == 1
    start = task["source"].index(old[0])
    end = task["source"].index("\n", task["source"].index("dimension_numbers=spec)", start))
    task["source"] = task["source"][:start] + new_call + task["source"][end:]
    return task


def _transposed_1d(size, stride, padding, **lines):
    return _replace_conv(_conv1d(size, **lines), f"    y = jax.lax.conv_transpose(x, w, ({stride},), "
                                                 f"{padding}, dimension_numbers=spec)")


def _transposed_3d(size, stride):
    return _replace_conv(_conv3d(size), f"    y = jax.lax.conv_transpose(x, w, ({stride},) * 3, "
                                        "'SAME', dimension_numbers=spec)")


CT2D = "conv_transpose2d_bias_relu.py"
TRANSPOSED = [
    # (task, class, BLOCK_PIXELS): every case's last row tile is partial
    # PyTorch's spelling: NCHW, the (in, out, kh, kw) weight flipped and transposed in the
    # reference; k4 s2 p1 over a 9 x 7 image (window 3x3 for every phase)
    (lambda: _task(CT2D), "conv_transpose2d", 4 * 7),
    (lambda: _task(CT2D, LAYOUT='"NHWC"', **BF16), "conv_transpose2d", 4 * 7),  # lax's, bf16
    # k3 s2 p1 with an output padding: 18 x 14 outputs, phases of unequal windows
    (lambda: _task(CT2D, STRIDE__PAD__OUT_PAD="2, 1, 1", N__CIN__H__W__COUT__K="1, 5, 9, 7, 6, 3"),
     "conv_transpose2d", 2 * 7),
    (lambda: _transposed_1d("2, 8, 21, 16, 5", 3, "'VALID'", LAYOUT='"NCW"'), "conv_transpose1d", 16),
    (lambda: _transposed_3d("1, 3, 3, 5, 4, 8", 2), "conv_transpose3d", 2 * 5 * 4),
]


@pytest.mark.parametrize("make, kclass, pixels", TRANSPOSED,
                         ids=["2d-torch-k4s2p1", "2d-lax-same-bf16", "2d-k3s2-outpad", "1d-s3-ncw",
                              "3d-s2"])
def test_transposed_convolutions_are_correct_without_multiplying_the_dilations_zeros(
        worker, tmp_path, make, kclass, pixels):
    task = make()
    r = H.generate(worker, task)
    assert r["class"] == kclass, r["class"]
    src = r["source"]
    # the kernel is the stride-1 conv kernel over the undilated input: no dilation anywhere
    # (the input's pad has no interior zeros)
    pad_line = next(ln for ln in src.splitlines() if "x_pad = jax.lax.pad(" in ln)
    assert "lhs_dilation" not in src
    assert all(c.strip() == "0" for c in re.findall(r"\([^()]*, [^()]*, ([^()]*)\)", pad_line))
    assert "w_phases" in src and any(n.startswith("transposed: the ") for n in r["notes"])
    H.evaluate(worker, task, r, tmp_path, source=H.set_constant(src, "BLOCK_PIXELS", pixels),
               seeds=[5])


@pytest.mark.parametrize("call, words", [
    (("    y = jax.lax.conv_general_dilated(x, w, (2,), ((1, 2),), lhs_dilation=(2,), "
      "dimension_numbers=spec)"), "both input dilation (2,) and window strides (2,)"),
    (("    y = jax.lax.conv_general_dilated(x, w, (1,), 'SAME', rhs_dilation=(2,), "
     "dimension_numbers=spec)"), "kernel dilation (2,)"),
    (("    y = jax.lax.reduce_window(jax.lax.conv_general_dilated(x, w, (1,), 'SAME', "
     "dimension_numbers=spec), 0.0, jax.lax.add, (1, 2, 1), (1, 2, 1), 'VALID')"),
     "a reduction (`reduce_window_sum`) after the convolution (a norm or pooling)"),
], ids=["dilated-and-strided", "dilated", "pooling"])
def test_what_the_conv_family_does_not_cover_is_refused_with_the_reason(worker, call, words):
    task = _replace_conv(_conv1d("2, 8, 32, 16, 4"), call)
    err = H.refusal(worker, task)
    assert "it looks like conv" in err["message"] and words in err["message"], err["message"]


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_the_full_size_1d_kernels_compile_for_tpu(tmp_path):
    """The 1-D form reads its window as a tile with a halo block on either side (sublane-dim
    blocks) from the input as it lies, with no padded copy before the kernel: f32 and bf16 at
    the suite's size. (The 3-D and strided 2-D forms keep the 2-D form's `pl.Element` row
    windows; their full-size compiles take minutes, so they are not run here.)"""
    full = [_conv1d("8, 128, 8192, 128, 5"), _conv1d("8, 128, 8192, 128, 5", **BF16)]
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        for task in full:
            r = H.generate(w, task)
            assert r["class"] == "conv1d" and "before_ref, x_ref, after_ref" in r["source"]
            cand = H.assert_compiles_with_cycles(w, task, r, tmp_path)
            assert len(cand["ops"]) == 1, cand["ops"]  # the kernel alone: no pad or copy before it
    finally:
        w.close()
