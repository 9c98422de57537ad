"""generate: the paged_attention template (decode attention over a paged KV cache: the page
table and the lengths scalar-prefetched, K/V pages picked by the index maps, an online softmax
across steps of pages). Correct in interpret mode at lengths that end mid-page, a length of 1,
steps that do not divide the table, GQA and MHA, in bf16; refused with the reason where it does
not apply; and at full size the kernel compiles with the TPU compiler (libtpu, no TPU)."""

import importlib.util

import generate_rows_helpers as H
import pytest
from worker_harness import WorkerProcess

NAME = "paged_attention.py"
SIZES = "BATCH, HEADS, KV_HEADS, HEAD_DIM = 3, 4, 2, 128"
PAGES = "PAGE_SIZE, PAGES_PER_SEQ, TOTAL_PAGES = 16, 5, 20"
MASK = "    keep = jnp.arange(k.shape[2])[None, :] < lengths[:, None]\n"
SCORES = "    scores = jnp.where(keep[:, None, None, :], scores, -jnp.inf)\n"


def _task(sizes=None, pages=None, lengths=(1, 37, 80), dtype="float32", replace=()):
    text = H.read_task(H.DIR, NAME)
    for old, new in ((SIZES, sizes or SIZES), (PAGES, pages or PAGES),
                     ("LENGTHS = (1, 37, 80)", f"LENGTHS = {tuple(lengths)!r}"),
                     ("DTYPE = jnp.float32", f"DTYPE = jnp.{dtype}"), *replace):
        assert old in text, old
        text = text.replace(old, new)
    return {"form": "infile", "source": text, "filename": H.task_path(H.DIR, NAME)}


CASES = [
    # GQA (2 query heads a kv head); a length of 1, one ending mid-page, one filling the table;
    # 2 pages a step over a 5-page table (the last step half past the table)
    ({}, 2),
    # bf16, 4 query heads a kv head, 32-position pages, lengths ending mid-page
    ({"sizes": "BATCH, HEADS, KV_HEADS, HEAD_DIM = 2, 8, 2, 128",
      "pages": "PAGE_SIZE, PAGES_PER_SEQ, TOTAL_PAGES = 32, 4, 9", "lengths": (45, 128),
      "dtype": "bfloat16"}, None),
    # one query head a kv head (MHA), 3 pages a step over 7, a sequence of one page's worth;
    # the scale spelled as a division by a traced sqrt of a constant (folded by the matcher)
    ({"sizes": "BATCH, HEADS, KV_HEADS, HEAD_DIM = 2, 2, 2, 128",
      "pages": "PAGE_SIZE, PAGES_PER_SEQ, TOTAL_PAGES = 16, 7, 14", "lengths": (16, 100),
      "replace": [(" * d ** -0.5\n", " / jnp.sqrt(float(d))\n")]}, 3),
]


@pytest.mark.parametrize("kw, pages_per_step", CASES, ids=["gqa-f32", "bf16-group4", "mha"])
def test_paged_attention_is_correct_at_ragged_lengths(worker, tmp_path, kw, pages_per_step):
    task = _task(**kw)
    r = H.generate(worker, task)
    assert r["class"] == "paged_attention", r["class"]
    src = r["source"]
    assert "PrefetchScalarGridSpec" in src and "table[bi * pages_per_seq + j]" in src
    if pages_per_step is not None:
        src = H.set_constant(src, "PAGES_PER_STEP", pages_per_step)
    H.evaluate(worker, task, r, tmp_path, source=src, seeds=[5])


@pytest.mark.parametrize("replace, words, prims", [
    ((MASK, MASK.replace(" < ", " <= ")), "`le` is not covered", ["le"]),
    ((SCORES, SCORES + "    scores = 30.0 * jnp.tanh(scores / 30.0)\n"),
     "`tanh` is not covered", ["tanh"]),
], ids=["mask-le", "soft-cap"])
def test_what_the_paged_attention_template_does_not_cover_is_refused(worker, replace, words,
                                                                     prims):
    err = H.refusal(worker, _task(replace=[replace]))
    assert "paged_attention" in err["message"] and words in err["message"], err["message"]
    assert err["primitives"] == prims, err


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_the_full_size_kernel_compiles_for_tpu(tmp_path):
    # 32 heads on 8 kv heads, 16-position pages, 2k positions a sequence, bf16; batch 4 keeps the
    # compile short (libtpu's static profile grows with the grid: batch 32 at 4k positions ran
    # past 600 s). For v6e: libtpu 0.0.42.1's static cycle profile aborts a v5e compile on the
    # scalar prefetch's DMA into SMEM ("Unsupported DMA direction: 10 on VL/VLP").
    task = _task(sizes="BATCH, HEADS, KV_HEADS, HEAD_DIM = 4, 32, 8, 128",
                 pages="PAGE_SIZE, PAGES_PER_SEQ, TOTAL_PAGES = 16, 128, 512",
                 lengths=(2048, 1, 1000, 1500), dtype="bfloat16")
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        r = H.generate(w, task)
        assert r["class"] == "paged_attention"
        H.assert_compiles_with_cycles(w, task, r, tmp_path, "v6e")
    finally:
        w.close()
