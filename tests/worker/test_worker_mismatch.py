"""The correctness report (tpu/worker/mkworker/judge/mismatch.py): the patterns it names on planted wrong
outputs (in process, numpy only), and the report a real evaluate attaches to its failure."""

import os
import sys

import numpy as np
from worker_harness import ROOT

sys.path.insert(0, os.path.join(ROOT, "tpu", "worker"))

from mkworker.judge import mismatch

TOL = lambda dtype: (1e-5, 1e-5)


def _report(cand, ref, blocks=None):
    return mismatch.report([cand], [ref], TOL, seed=3, order="candidate_first",
                               input_shapes=[list(ref.shape)], blocks=blocks)


def _ref(shape=(384, 128)):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32) + 2.0


def _kinds(rep):
    return {p["kind"]: p for p in rep["outputs"][0]["patterns"]}


def test_a_partial_last_block_left_unwritten():
    ref = _ref()
    cand = ref.copy()
    cand[256:] = np.nan
    rep = _report(cand, ref, blocks={0: [256, 128]})
    out = rep["outputs"][0]
    assert out["wrong"] == out["nonfinite"] == 128 * 128
    assert out["first"][0]["index"] == [256, 0] and out["first"][0]["candidate"] == "nan"
    k = _kinds(rep)
    assert k["rows"]["whole"] and k["rows"]["ranges"] == [[256, 383]]
    assert "columns" not in k  # every column: not a pattern
    assert k["blocks"]["wrong_blocks"] == [[1, 0]] and k["blocks"]["block_edge"]
    assert "only the last, partial block is wrong (384 is not a multiple of 256" in k["blocks"]["detail"]
    assert "every wrong element is NaN/Inf" in rep["text"] and "seed 3" in rep["text"]


def test_block_aligned_rows_a_constant_offset_and_zeros():
    ref = _ref((256, 128))
    cand = ref.copy()
    cand[128:] += 1.5
    k = _kinds(_report(cand, ref, blocks={0: [128, 128]}))
    assert "candidate = reference + 1.5" in k["offset"]["detail"]
    assert "starts and ends on block edges (multiples of 128)" in k["blocks"]["detail"]
    cand = ref.copy()
    cand[:, 64:] = 0
    k = _kinds(_report(cand, ref))
    assert "zeros" in k and k["columns"]["whole"] and k["columns"]["ranges"] == [[64, 127]]


def test_a_scaled_block_a_transposed_result_and_the_first_row_of_every_block():
    ref = _ref((256, 256))
    cand = ref.copy()
    cand[:128, :128] *= 2
    k = _kinds(_report(cand, ref, blocks={0: [128, 128]}))
    assert "candidate = 2 x reference" in k["scaled"]["detail"]
    assert k["blocks"]["wrong_blocks"] == [[0, 0]] and k["blocks"]["filled"]
    assert "transposed" in _kinds(_report(ref.T.copy(), ref))
    cand = ref.copy()
    cand[::64] = -cand[::64]
    k = _kinds(_report(cand, ref, blocks={0: [64, 256]}))
    assert "only offsets 0 within each block of 64 are wrong (a block edge)" in k["blocks"]["detail"]


def test_right_outputs_and_integer_outputs_make_no_entry():
    ref = _ref((16, 128))
    assert _report(ref.copy(), ref)["outputs"] == []
    ints = np.arange(8)
    assert _report(ints + 1, ints)["outputs"] == []  # exact compares say it already


def test_the_text_is_bounded():
    ref = _ref((64, 4096))
    cand = ref.copy()
    cand[:, ::2] = 0
    rep = mismatch.report([cand] * 12, [ref] * 12, TOL, seed=1, order="reference_first",
                              input_shapes=[[64, 4096]])
    assert len(rep["text"]) <= mismatch.MAX_TEXT and rep["text"].endswith("[... report cut]")


def test_evaluate_attaches_the_report_to_its_failure(worker):
    import make_debug_chain as chain  # the NaN-row kernel of the debugger's recordings

    path = os.path.join(ROOT, "tests", "optimize", "kernels", "rows_unit_norm.py")
    r = worker.request("evaluate", task={"form": "infile", "path": path}, source=chain.NORM_RSQRT,
                       filename=path, timing=False, seeds=[11])
    assert r["ok"] and r["correct"] is False, r
    rep = r["failure"]["report"]
    assert rep["seed"] == 11 and rep["input_shapes"] == [[64, 128]]
    k = _kinds(rep)
    assert k["rows"]["whole"] and k["rows"]["ranges"] == [[5, 5]] and "nonfinite" in k
    assert k["blocks"]["block"] == [32, 128]
    assert "[5, 0] candidate nan, reference 0" in rep["text"]


sys.path.insert(0, os.path.join(ROOT, "tests", "optimize", "fixtures"))
