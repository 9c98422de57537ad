"""generate: a 3-D convolution whose channels are not a multiple of 128 is written on the layout
XLA keeps the volume in, a spatial axis in the lanes (templates/conv_lanes3d.py). Correct in
interpret mode with a ragged last row tile: the depth in the lanes (NDHWC, a bitcast), the width
in the lanes, PyTorch's NCDHW where XLA keeps the channels above the spatial axes (the entry
transposes: a copy), and bf16; compiled for v5e by the TPU compiler (libtpu, no TPU), a
256-deep volume of 16 channels (a quarter of the suite's) has cycles and its program is the
kernel alone (libtpu's profile of the 1024-deep one needs more than 8 GiB here)."""


import generate_rows_helpers as H
import pytest

DIR = "generate_conv"
NAME = "conv3d_bias_relu.py"


def _task(size, **lines):
    return H.infile_lines(DIR, NAME, N__CIN__D__H__W__COUT=size, **lines)


CASES = {
    # 5 rows along H in tiles of 2: the last tile is ragged, its rows past the volume zeroed
    "depth-in-lanes": ("1, 8, 256, 5, 6, 8", {}, "D in the lanes", "a bitcast"),
    "width-in-lanes": ("2, 8, 5, 6, 256, 16", {}, "W in the lanes", "a bitcast"),
    # 16 columns tie with 8 channels for the sublanes: XLA keeps (N, C, H, W, D)
    "ncdhw-copied": ("1, 8, 128, 5, 16, 8", {"LAYOUT": '"NCDHW"'}, "D in the lanes", "a copy"),
    "bf16": ("1, 16, 128, 5, 6, 16", {"DTYPE": "jnp.bfloat16",
                                        "TOLERANCES": '{"rtol": 2e-2, "atol": 2e-2}'},
             "D in the lanes", "a bitcast"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_3d_lanes_form_is_correct_with_a_ragged_last_tile(worker, tmp_path, case):
    size, lines, lanes, view = CASES[case]
    task = _task(size, **lines)
    r = H.generate(worker, task)
    assert r["class"] == "conv3d" and lanes in r["description"], r["description"]
    (into,) = [ln for ln in r["source"].splitlines() if "(N, R1, R2, C, L)" in ln]
    assert view in into, into
    H.evaluate(worker, task, r, tmp_path, source=H.set_constant(r["source"], "BLOCK_ROWS", 2),
               seeds=[5])


def test_a_kernel_written_for_one_depth_is_correct_at_another(worker, tmp_path):
    # the lane shifts are the kernel's own width's (a shrunk instance has another)
    r = H.generate(worker, _task("1, 8, 384, 5, 6, 8"))
    assert "D in the lanes" in r["description"], r["description"]
    H.evaluate(worker, _task("1, 8, 256, 5, 6, 8"), r, tmp_path, seeds=[5])


@H.needs_libtpu
def test_a_deep_narrow_volume_compiles_for_tpu_with_cycles_and_no_copies(tmp_path):
    _, cand = H.generate_and_compile(_task("1, 16, 256, 32, 32, 32"), tmp_path,
                                     words="D in the lanes")
    kernel = max(cand["ops"].values())
    assert sum(cand["ops"].values()) - kernel < 0.05 * kernel, cand["ops"]
