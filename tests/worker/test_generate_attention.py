"""generate: attention references -> a flash-attention kernel (online softmax over kv blocks).

At FULL size (batch 4, 32 heads, seq 4096, head_dim 128) the module lowers for TPU; generated
for a SMALL instance it passes evaluate in interpret mode, mostly with 128-long q and kv blocks
so that the online softmax runs over several kv blocks and (causal) a block above the diagonal is
skipped. The TPU interpreter (faithful: NaN-filled buffers, out-of-bounds checks) takes 15-25 s
for one of these on two busy cores, so the causal case and the shrunk instance run under it and
the three others under the faster HLO interpreter (`interpret_mode: hlo`). Causal, GQA (jnp.repeat and jax.nn.dot_product_attention's grouping), both layouts, a
non-causal one; look-alikes (softmax over the query axis, a sliding window) are refused.
"""

import importlib.util

import generate_rows_helpers as H
import pytest
from worker_harness import WorkerProcess

CAUSAL_FULL = ("B, H, S, D = 1, 2, 256, 128", "B, H, S, D = 4, 32, 4096, 128")
SMALL_BLOCKS = (("BLOCK_Q", 128), ("BLOCK_K", 128))
ONE_SEED = [5]  # the TPU interpreter is slow: one input set (run twice, in both orders)


def small_blocks(source: str) -> str:
    for name, value in SMALL_BLOCKS:
        source = H.set_constant(source, name, value)
    return source


def test_causal_attention_full_size_lowers(worker, tmp_path):
    task = H.infile("attn_causal.py", CAUSAL_FULL)
    r = H.generate(worker, task)
    assert r["class"] == "attention"
    assert r["description"].startswith("causal attention (batch 4, 32 q heads, seq 4096x4096, "
                                        "head_dim 128, float32")
    src = r["source"]
    # Blocks above the diagonal skipped; the mask built only on blocks crossing it.
    assert "first_col <= first_row + bq - 1))" in src
    assert "@pl.when(first_col + bk - 1 <= first_row)" in src
    assert src.count("keep=cols <= rows") == 1 and "-jnp.inf" not in src
    assert "jnp.minimum(ki, jax.lax.div((qi + 1) * bq - 1, bk))" in src  # ...and not fetched
    assert "sm_scale = head_dim ** -0.5" in src
    for name, dim, align in (("BLOCK_Q", 4096, 8), ("BLOCK_K", 4096, 128)):
        assert r["tunables"][name] and all(b % align == 0 and dim % b == 0
                                           for b in r["tunables"][name]), r["tunables"]
    call = H.lower_again(worker, task, r, tmp_path)
    assert call["dimension_semantics"] == ["parallel", "parallel", "parallel", "arbitrary"]
    bq = call["operands"][0]["block_shape"][2]
    bk = call["operands"][1]["block_shape"][2]
    assert call["grid"] == [4, 32, 4096 // bq, 4096 // bk]
    assert bk == 512  # short kv blocks: more of them above the diagonal are skipped
    assert call["operands"][0]["block_shape"] == [None, None, bq, 128]
    # Lane-dense m / l statistics: (bq, 128), not (bq, 1).
    assert [s["shape"] for s in call["scratch"]] == [[bq, 128], [bq, 128], [bq, 128]]
    assert all(s["dtype"] == "float32" for s in call["scratch"])
    # The kernel sets vmem_limit_bytes from its plan, within v5e's 128 MiB: the static
    # analysis' per-step VMEM fits under it.
    assert call["vmem_limit_bytes"] <= 128 * 1024 * 1024
    assert call["vmem_bytes_per_step"] <= call["vmem_limit_bytes"]


def test_causal_attention_small_instance_is_correct(worker, tmp_path):
    task = H.infile("attn_causal.py")
    r = H.generate(worker, task)
    assert r["class"] == "attention"
    H.evaluate(worker, task, r, tmp_path, source=small_blocks(r["source"]), seeds=ONE_SEED)


GQA_FULL = ("batch, heads, kv_heads, seq, head_dim = 1, 4, 2, 256, 128",
            "batch, heads, kv_heads, seq, head_dim = 4, 32, 8, 4096, 128")


def test_gqa_repeat_maxkernel_full_size_lowers(worker, tmp_path):
    task = H.maxkernel(tmp_path, "maxkernel_gqa", GQA_FULL)
    r = H.generate(worker, task)
    assert r["class"] == "attention" and r["entry"] == "computation"
    assert r["description"].startswith("causal GQA attention (batch 4, 32 q heads / 8 kv heads")
    src = r["source"]
    assert "def computation(query, key, value, scale):" in src
    assert "sm_scale = scale" in src  # the static scale, not its value baked in
    assert "jax.lax.div(hi, group)" in src  # q head h reads kv head h // group
    assert any("h // 4" in n for n in r["notes"]), r["notes"]
    call = H.lower_again(worker, task, r, tmp_path)
    assert call["grid"][:2] == [4, 32]
    assert call["operands"][1]["array_shape"] == [4, 8, 4096, 128]  # kv heads are not repeated
    assert [o["dtype"] for o in call["operands"]] == ["bfloat16"] * 4


def test_gqa_repeat_maxkernel_small_instance_is_correct(worker, tmp_path):
    task = H.maxkernel(tmp_path, "maxkernel_gqa")
    r = H.generate(worker, task)
    assert r["class"] == "attention"
    H.evaluate(worker, task, r, tmp_path, source=small_blocks(r["source"]), seeds=ONE_SEED,
               interpret_mode="hlo")


DPA_FULL = ("B, S, H, KVH, D = 1, 128, 2, 1, 128", "B, S, H, KVH, D = 4, 4096, 32, 8, 128")


def test_dot_product_attention_bshd_full_size_lowers(worker, tmp_path):
    task = H.infile("attn_dpa_gqa.py", DPA_FULL)
    r = H.generate(worker, task)
    assert r["class"] == "attention"
    assert "bshd/bshd/bshd -> bshd" in r["description"]
    call = H.lower_again(worker, task, r, tmp_path)
    # (batch, seq, heads, dim) is read as (batch, seq, heads*dim): one lane-dense head per block
    bq = call["operands"][0]["block_shape"][1]
    assert call["operands"][0]["array_shape"] == [4, 4096, 32 * 128]
    assert call["operands"][0]["block_shape"] == [None, bq, 128]
    assert call["operands"][1]["array_shape"] == [4, 4096, 8 * 128]


def test_dot_product_attention_small_instance_is_correct(worker, tmp_path):
    task = H.infile("attn_dpa_gqa.py")
    r = H.generate(worker, task)
    assert "GQA" in r["description"]
    H.evaluate(worker, task, r, tmp_path, seeds=ONE_SEED, interpret_mode="hlo")


NONCAUSAL_FULL = ('CONFIG = {"batch": 1, "heads": 2, "seq": 256',
                  'CONFIG = {"batch": 4, "heads": 32, "seq": 4096')


def test_noncausal_jaxbench_full_size_lowers(worker, tmp_path):
    task = H.jaxbench("jaxbench_attention", NONCAUSAL_FULL)
    r = H.generate(worker, task)
    assert r["class"] == "attention" and r["entry"] == "workload"
    assert r["description"].startswith("attention (batch 4, 32 q heads")
    assert "-> bs(hd)" in r["description"]
    src = r["source"]
    # No mask built, nothing skipped.
    assert "first_col" not in src and "broadcasted_iota" not in src and "keep=cols" not in src
    call = H.lower_again(worker, task, r, tmp_path)
    assert call["operands"][-1]["array_shape"] == [4, 4096, 32 * 128]  # merged heads output
    # No causal blocks to skip: the longest kv block that fits (each kv step rescales the
    # running output; 512-long blocks read 0.76x of XLA's program at 2048 x 2048, 2048-long
    # 1.43x on v5e's compiler), where a causal kernel keeps 512 (test above).
    assert call["operands"][1]["block_shape"][2] == 2048, call["operands"][1]


def test_noncausal_jaxbench_small_instance_is_correct(worker, tmp_path):
    task = H.jaxbench("jaxbench_attention")
    r = H.generate(worker, task)
    H.evaluate(worker, task, r, tmp_path, source=small_blocks(r["source"]), seeds=ONE_SEED,
               interpret_mode="hlo")


def test_larger_module_runs_at_a_shrunk_instance(worker, tmp_path):
    """Generated at seq 1024 (512-long blocks), run by evaluate at seq 256: blocks are fitted
    to the shapes at trace time."""
    task = H.infile("attn_causal.py", ("B, H, S, D = 1, 2, 256, 128", "B, H, S, D = 1, 2, 1024, 128"))
    r = H.generate(worker, task)
    assert "BLOCK_Q = 512" in r["source"]
    ev = H.evaluate(worker, task, r, tmp_path, seeds=ONE_SEED, shrink={"factor": 4, "min_dim": 128})
    assert ev["instance"]["kind"] == "shrunk", ev["instance"]


def test_softmax_over_the_query_axis_is_not_attention(worker):
    r = worker.request("generate", task=H.infile("refuse/attn_wrong_axis.py"), timeout=300)
    assert r.get("class") != "attention"
    assert r["ok"] is False and r["error"]["kind"] == "no_template", r
    assert "not a softmax over the key axis" in r["error"]["message"]


def test_sliding_window_mask_is_refused(worker):
    err = H.refusal(worker, H.infile("refuse/attn_sliding_window.py"))
    assert "neither causal" in err["message"] and "sliding" in err["message"]


def test_dot_product_attention_without_mask_is_correct(worker, tmp_path):
    """Without a mask, jax.nn.dot_product_attention moves a unit dim inside its softmax (a
    transpose between the max and the subtraction): still the same rows."""
    task = H.infile("attn_dpa_gqa.py", ("is_causal=True", "scale=0.05"))
    r = H.generate(worker, task)
    assert r["class"] == "attention" and not r["description"].startswith("causal")
    assert "sm_scale = 0.05" in r["source"]
    H.evaluate(worker, task, r, tmp_path, seeds=ONE_SEED, interpret_mode="hlo")


def test_grouped_einsum_with_k_first_is_correct(worker, tmp_path):
    """jnp puts k first in the scores matmul here (and transposes after it); the scale is a
    computed constant (jnp.sqrt(d)); the fill is finfo.min."""
    task = H.infile("attn_grouped_einsum.py")
    r = H.generate(worker, task)
    assert r["class"] == "attention"
    assert r["description"].startswith("causal GQA attention (batch 1, 4 q heads / 2 kv heads")
    assert "sm_scale = head_dim ** -0.5" in r["source"]
    H.evaluate(worker, task, r, tmp_path, source=small_blocks(r["source"]), seeds=ONE_SEED,
               interpret_mode="hlo")


ALIBI = "attn_alibi.py"
ALIBI_FULL = ("B, H, S, D = 1, 2, 384, 128", "B, H, S, D = 2, 8, 2048, 128")


def test_alibi_is_computed_in_the_kernel_and_its_slopes_follow_the_head_count(worker, tmp_path):
    """ALiBi (slope_h * (key - query) added to the scores, slopes 2 ** (-8 (h + 1) / heads)):
    the bias comes from iotas in the kernel, the slopes (scalar-prefetched) are read per head
    count, so the module written at 8 heads is right on the 2-head instance."""
    full = H.infile(ALIBI, ALIBI_FULL)
    r = H.generate(worker, full)
    assert r["class"] == "attention" and r["description"].endswith("ALiBi bias from iotas")
    src = r["source"]
    assert "    2: (0.0625, 0.00390625)," in src and "    8: (0.5, 0.25, 0.125," in src
    assert "bias = slope_ref[pl.program_id(1)] * (cols - rows).astype(jnp.float32)" in src
    call = H.lower_again(worker, full, r, tmp_path)
    assert call["grid"][:2] == [2, 8]
    H.evaluate(worker, H.infile(ALIBI), r, tmp_path, source=small_blocks(src), seeds=ONE_SEED,
               interpret_mode="hlo")


def test_symmetric_alibi_without_a_mask_is_correct(worker, tmp_path):
    task = H.infile(ALIBI, ("    scores = jnp.where(rel <= 0, scores, -1e30)\n", ""))
    task["source"] = task["source"].replace("slopes[:, None, None] * rel", "-slopes[:, None, None] * jnp.abs(rel)")
    r = H.generate(worker, task)
    assert r["class"] == "attention" and not r["description"].startswith("causal")
    assert "-jnp.abs(cols - rows)" in r["source"]
    H.evaluate(worker, task, r, tmp_path, source=small_blocks(r["source"]), seeds=ONE_SEED,
               interpret_mode="hlo")


@pytest.mark.parametrize("old, new, words", [
    ("slopes[:, None, None] * rel", "slopes[:, None, None] * rel * rel",
     "neither a 0/-inf mask nor ALiBi"),
    ("scores = jnp.where(rel <= 0, scores, -1e30)", "scores = jnp.where(rel <= 0, scores, -1e30) * 0.5",
     "scaled after a position bias"),
], ids=["quadratic", "scaled_after"])
def test_a_bias_alibi_does_not_cover_is_refused(worker, old, new, words):
    err = H.refusal(worker, H.infile(ALIBI, (old, new)))
    assert words in err["message"], err["message"]


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_the_kernels_with_a_bias_or_mask_compile_for_tpu(tmp_path):
    """ALiBi's scalar-prefetched slopes, a bias input's f32 tiles and a mask input's int8 tiles:
    each kernel compiles for v5e with cycles at (1, 8, 2048, 128)."""
    small = "B, H, S, D = 2, 2, 384, 128"
    tasks = [H.infile(ALIBI, (ALIBI_FULL[0], "B, H, S, D = 1, 8, 2048, 128")),
             H.infile("attn_bias_input.py", (small, "B, H, S, D = 1, 8, 2048, 128")),
             H.infile("attn_mask_input.py", (small, "B, H, S, D = 1, 8, 2048, 128"))]
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        for task in tasks:
            r = H.generate(w, task)
            H.assert_compiles_with_cycles(w, task, r, tmp_path)
    finally:
        w.close()


BIAS = "attn_bias_input.py"
CAUSAL_BIAS = ("    scores = scores + bias[None]\n",
               ("    scores = scores + bias[None]\n"
                "    scores = jnp.where(jnp.tril(jnp.ones(scores.shape[-2:], bool)), scores, -1e30)\n"))


@pytest.mark.parametrize("replace", [None, CAUSAL_BIAS], ids=["bias", "bias_causal"])
def test_a_bias_input_on_the_scores_is_read_a_tile_a_step(worker, tmp_path, replace):
    """A (heads, query, key) bias given as an input (T5's relative-position bias): the kernel
    reads its (q block, kv block) tile with the kv index clamped like k and v's."""
    task = H.infile(BIAS, replace)
    r = H.generate(worker, task)
    assert r["class"] == "attention" and r["description"].endswith("a bias input on the scores")
    assert any("(axes h, s, t)" in n for n in r["notes"]), r["notes"]
    src = r["source"]
    assert "_flash_kernel(q_ref, k_ref, v_ref, bias_ref, o_ref" in src
    assert "bias=bias_ref[...].astype(jnp.float32)" in src
    H.evaluate(worker, task, r, tmp_path, source=small_blocks(src), seeds=ONE_SEED,
               interpret_mode="hlo")


@pytest.mark.parametrize("spelled, words", [
    ("jnp.flip(bias, 2)[None]", "covered only as a bias added to them, reached through layout ops"),
    ("jnp.swapaxes(bias, 1, 2)[None]", "last two axes are not (query, key)"),
], ids=["flipped", "key_first"])
def test_a_bias_input_not_indexed_by_query_then_key_is_refused(worker, spelled, words):
    err = H.refusal(worker, H.infile(BIAS, ("scores + bias[None]", f"scores + {spelled}")))
    assert words in err["message"], err["message"]


MASK = "attn_mask_input.py"
CAUSAL_MASK = ("    return jnp.einsum",
               ("    scores = jnp.where(jnp.tril(jnp.ones(scores.shape[-2:], bool)), scores, -1e30)\n"
                "    return jnp.einsum"))


@pytest.mark.parametrize("replace", [None, CAUSAL_MASK], ids=["mask", "mask_causal"])
def test_a_mask_input_on_the_scores_is_read_a_tile_a_step(worker, tmp_path, replace):
    """A (batch, query, key) boolean mask given as an input (key padding here): read as int8
    tiles (converted in the entry), combined with the causal mask on the diagonal blocks."""
    task = H.infile(MASK, replace)
    r = H.generate(worker, task)
    assert r["class"] == "attention" and r["description"].endswith("a mask input on the scores")
    src = r["source"]
    assert "mask.astype(jnp.int8)" in src and "keep=mask_ref[...] != 0" in src
    if replace:
        assert "keep=jnp.logical_and(mask_ref[...] != 0, cols <= rows))" in src
    H.evaluate(worker, task, r, tmp_path, source=small_blocks(src), seeds=ONE_SEED,
               interpret_mode="hlo")


def test_rows_fully_masked_by_the_input_give_no_nan(worker, tmp_path):
    """Batch row 0 has no valid key: every score of its rows is masked. The reference (finfo.min
    fill) averages v uniformly there; the kernel's large finite mask value gives the same, where
    -inf would give NaN."""
    task = H.infile(MASK, ("lengths = jax.random.randint(km, (B,), S // 3, S + 1)",
                           "lengths = jnp.array([0, S])"))
    r = H.generate(worker, task)
    H.evaluate(worker, task, r, tmp_path, source=small_blocks(r["source"]), seeds=ONE_SEED,
               interpret_mode="hlo")


def test_a_mask_input_with_a_fill_that_is_not_large_negative_is_refused(worker):
    err = H.refusal(worker, H.infile(MASK, ("jnp.finfo(jnp.float32).min)", "0.0)")))
    assert "scores masked by an input are filled with 0.0" in err["message"], err["message"]
