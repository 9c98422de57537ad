"""generate: a 2-D convolution of an image XLA keeps with W in the lanes (channels not a multiple
of 128) is written on that layout (templates/conv_lanes.py). Correct in interpret mode with a
ragged last row tile, for SAME, VALID, a 5x5 window, uneven padding and bf16, and with strides
(2 both ways, along one axis only, 3, with windows that read a phase before or past the edge),
and for NCHW, where XLA keeps the channels above H and the entry transposes (copies); a
transposed convolution as its output phases' stride-1 form, in PyTorch's and lax's spellings;
and compiled for v5e by the TPU compiler (libtpu, no TPU) the program is the kernel: no copy of
the image before it or of the output after it, stride 2 included."""


import generate_rows_helpers as H
import pytest

DIR = "generate_conv"
NAME = "conv2d_nhwc_lanes.py"


def _task(**lines):
    return H.infile_lines(DIR, NAME, **lines)


CASES = {
    # 10 or 11 rows in tiles of 4: the last tile is ragged, its rows past the image zeroed
    "same": {},
    "valid": {"N__H__W__CIN__COUT__KH__KW": "2, 11, 256, 8, 16, 3, 3", "PADDING": '"VALID"'},
    "5x5": {"N__H__W__CIN__COUT__KH__KW": "1, 10, 384, 8, 8, 5, 5"},
    "uneven-pad": {"PADDING": "((0, 2), (2, 0))"},
    "bf16": {"N__H__W__CIN__COUT__KH__KW": "2, 10, 256, 16, 16, 3, 3", "DTYPE": "jnp.bfloat16",
             "TOLERANCES": '{"rtol": 2e-2, "atol": 2e-2}'},
    # strided: 11 rows make 6 output rows, tiles of 4 (a ragged last tile reading past the image)
    "s2-same": {"N__H__W__CIN__COUT__KH__KW": "2, 11, 256, 8, 16, 3, 3", "STRIDES": "(2, 2)"},
    # 126 output columns of a 128-lane phase; taps 2 and 4 read a phase one and two lanes on
    "s2-valid-5x5": {"N__H__W__CIN__COUT__KH__KW": "1, 13, 256, 8, 8, 5, 5", "PADDING": '"VALID"',
                     "STRIDES": "(2, 2)"},
    "s2-rows-only": {"N__H__W__CIN__COUT__KH__KW": "2, 11, 256, 8, 16, 3, 3", "STRIDES": "(2, 1)"},
    # two columns of left padding: taps 0 and 1 read the lane before, masked at the edge
    "s2-columns-uneven-pad": {"STRIDES": "(1, 2)", "PADDING": "((0, 2), (2, 0))"},
    "s2-bf16": {"N__H__W__CIN__COUT__KH__KW": "2, 11, 256, 16, 16, 3, 3", "STRIDES": "(2, 2)",
                "DTYPE": "jnp.bfloat16", "TOLERANCES": '{"rtol": 2e-2, "atol": 2e-2}'},
    # NCHW with 16 rows: H ties with the 8 channels for the sublanes and XLA keeps (N, C, H, W),
    # so the entry transposes into (N, H, C, W) and back (copies); 14 rows in tiles of 4
    "nchw-copied": {"N__H__W__CIN__COUT__KH__KW": "2, 16, 256, 8, 16, 3, 3", "PADDING": '"VALID"',
                    "LAYOUT": '"NCHW"'},
    "nchw-s2": {"N__H__W__CIN__COUT__KH__KW": "1, 16, 256, 8, 8, 3, 3", "LAYOUT": '"NCHW"',
                "STRIDES": "(2, 2)"},
    # 24 channels do not divide 128: one row a transpose
    "s3-24ch": {"N__H__W__CIN__COUT__KH__KW": "1, 10, 384, 24, 8, 3, 3", "STRIDES": "(3, 3)"},
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_lanes_form_is_correct_with_a_ragged_last_tile(worker, tmp_path, case):
    task = _task(**CASES[case])
    r = H.generate(worker, task)
    assert r["class"] == "conv2d" and "W in the lanes" in r["description"], r["description"]
    strides = CASES[case].get("STRIDES", "(1, 1)")
    assert ("_phase_split" in r["source"]) == (not strides.endswith(" 1)")), strides
    (into,) = [ln for ln in r["source"].splitlines() if "(N, H, C, W):" in ln]
    assert ("a copy" in into) == (case.startswith("nchw")), into
    H.evaluate(worker, task, r, tmp_path, source=H.set_constant(r["source"], "BLOCK_ROWS", 4),
               seeds=[5])


CT2D = "conv_transpose2d_bias_relu.py"
TRANSPOSED = {
    # PyTorch's spelling, k4 s2 p1: every phase a 3x3 window; 10 rows in tiles of 4 (ragged)
    "torch-k4s2p1": {"N__CIN__H__W__COUT__K": "2, 8, 10, 256, 8, 4"},
    # k3 s2 p1 with an output padding: phases of unequal windows (1 and 2 taps)
    "torch-k3s2-outpad": {"N__CIN__H__W__COUT__K": "1, 8, 9, 128, 16, 3",
                          "STRIDE__PAD__OUT_PAD": "2, 1, 1"},
    # lax.conv_transpose's spelling (NHWC, HWIO), bf16
    "lax-same-bf16": {"N__CIN__H__W__COUT__K": "1, 16, 10, 256, 16, 4", "LAYOUT": '"NHWC"',
                      "DTYPE": "jnp.bfloat16", "TOLERANCES": '{"rtol": 2e-2, "atol": 2e-2}'},
}


@pytest.mark.parametrize("case", list(TRANSPOSED))
def test_a_transposed_convolution_is_the_lanes_form_over_its_output_phases(worker, tmp_path,
                                                                           case):
    # Its (phase, channel) stride-1 form on the undilated image, W in the lanes; the phases are
    # interleaved after the kernel.
    task = H.infile_lines(DIR, CT2D, **TRANSPOSED[case])
    r = H.generate(worker, task)
    assert r["class"] == "conv_transpose2d" and "W in the lanes" in r["description"], r
    assert "lhs_dilation" not in r["source"] and "w_phases" in r["source"]
    H.evaluate(worker, task, r, tmp_path, source=H.set_constant(r["source"], "BLOCK_ROWS", 4),
               seeds=[5])


@pytest.mark.parametrize("full, small, lines", [
    ("1, 10, 384, 8, 8, 5, 5", "1, 10, 256, 8, 8, 5, 5", {"PADDING": '"VALID"'}),
    ("1, 10, 768, 8, 8, 3, 3", "1, 10, 256, 8, 8, 3, 3", {"STRIDES": "(2, 2)"}),
])
def test_a_kernel_written_for_one_width_is_correct_at_another(worker, tmp_path, full, small,
                                                              lines):
    # The shrunk instance and the extra shapes run the module written for the task's own size:
    # its shifts and its output width must be the kernel's own (a 1020-wide VALID output sliced
    # at 1020 failed a 124-wide shrunk instance).
    r = H.generate(worker, _task(N__H__W__CIN__COUT__KH__KW=full, **lines))
    assert "W in the lanes" in r["description"], r["description"]
    H.evaluate(worker, _task(N__H__W__CIN__COUT__KH__KW=small, **lines), r, tmp_path, seeds=[5])


def test_channels_that_fill_the_lanes_keep_the_implicit_gemm(worker):
    r = H.generate(worker, _task(N__H__W__CIN__COUT__KH__KW="1, 8, 16, 128, 128, 3, 3"))
    assert r["class"] == "conv2d" and "implicit GEMM" in r["description"], r["description"]


@H.needs_libtpu
@pytest.mark.parametrize("strides,cout", [("(1, 1)", 32), ("(2, 2)", 64)])
def test_compiled_for_tpu_the_program_is_the_kernel_with_no_copies(tmp_path, strides, cout):
    task = _task(N__H__W__CIN__COUT__KH__KW=f"1, 256, 512, 32, {cout}, 3, 3", STRIDES=strides)
    _, cand = H.generate_and_compile(task, tmp_path, words="W in the lanes")
    # the kernel and the weight's and bias's small rearrangements, nothing the size of the image
    kernel = max(cand["ops"].values())
    assert sum(cand["ops"].values()) - kernel < 0.05 * kernel, cand["ops"]


@H.needs_libtpu
def test_a_transposed_convolution_compiles_for_tpu_with_cycles(tmp_path):
    # PyTorch's NCHW upsampling step (k4 s2 p1, 32 -> 16 channels): the kernel, the input's copy
    # into (N, H, C, W) and the phases' interleave; libtpu profiles it (the implicit GEMM's
    # narrow-channel patches did not profile at the suite's size).
    task = H.infile_lines(DIR, CT2D, N__CIN__H__W__COUT__K="1, 32, 128, 512, 16, 4")
    r, cand = H.generate_and_compile(task, tmp_path, words="W in the lanes")
    assert r["class"] == "conv_transpose2d"
    # the kernel, the copies (counted at the bytes they move) and the weight's and bias's small
    # rearrangements: nothing else computes at the image's size
    kernel = max(cand["ops"].values())
    rest = sum(c for op, c in cand["ops"].items() if op not in cand["zero_cycle_ops"]) - kernel
    assert kernel > 0 and rest < 0.1 * kernel, cand["ops"]
    assert not any("convolution" in op for op in cand["ops"]), cand["ops"]
