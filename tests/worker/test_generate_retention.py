"""generate: retention references (attention without a softmax, the scores weighted by a
per-head causal decay gamma_h ** (query - key)) -> a chunked kernel with the decayed scores in
VMEM, the decay's log and window scalar-prefetched.

At FULL size (batch 2, 8 heads, seq 4096) the module lowers for TPU; generated for a small
instance it is correct in interpret mode with 128-long blocks, so that kv blocks are summed,
blocks above the diagonal skipped and (with a fast decay) blocks beyond the decay's window
skipped too. A causal linear attention (gamma = 1) in bf16 and (batch, seq, heads, dim); look-
alikes (a decay that is not causal, a decay before a softmax) are refused with the reason."""

import importlib.util

import generate_rows_helpers as H
import pytest
from worker_harness import WorkerProcess

RETNET = "retention_decay.py"
FULL = ("B, H, S, D = 1, 2, 384, 128", "B, H, S, D = 2, 8, 4096, 128")
RETNET_GAMMA = "gamma = 1.0 - 2.0 ** (-5.0 - jnp.arange(heads, dtype=jnp.float32))"
FAST_GAMMA = (RETNET_GAMMA, "gamma = 0.5 + 0.2 * jnp.arange(heads, dtype=jnp.float32)")


def small_blocks(source: str) -> str:
    return H.set_constant(H.set_constant(source, "BLOCK_Q", 128), "BLOCK_K", 128)


def test_retention_full_size_lowers(worker, tmp_path):
    task = H.infile(RETNET, FULL)
    r = H.generate(worker, task)
    assert r["class"] == "retention", r["class"]
    assert r["description"].startswith("retention (batch 2, 8 q heads, seq 4096x4096, head_dim 128, "
                                        "float32"), r["description"]
    src = r["source"]
    # The decay read from the reference's weights: gamma_h = 1 - 2 ** (-5 - h).
    ld = [float(x) for x in src.split("LOG_DECAY = (")[1].split(")")[0].split(",")]
    assert ld == pytest.approx([__import__("math").log(1 - 2.0 ** (-5 - h)) for h in range(8)],
                               rel=1e-5)
    assert "DECAY_WINDOW = (3464, " in src  # head 0: 0.96875 ** 3465 is 0 in float32
    assert any("1 of 8 heads decay to 0" in n for n in r["notes"]), r["notes"]
    call = H.lower_again(worker, task, r, tmp_path)
    assert call["dimension_semantics"] == ["parallel", "parallel", "parallel", "arbitrary"]
    bq = call["operands"][0]["block_shape"][2]
    bk = call["operands"][1]["block_shape"][2]
    assert call["grid"] == [2, 8, 4096 // bq, 4096 // bk]
    # The log-decay and the window are scalar-prefetched (SMEM); one f32 accumulator.
    assert "num_scalar_prefetch=2," in src and ")(log_decay, window, q, k_, v)" in src
    assert [s["shape"] for s in call["scratch"]] == [[bq, 128]]
    assert call["vmem_bytes_per_step"] <= call["vmem_limit_bytes"] <= 128 * 1024 * 1024


RAGGED = ("B, H, S, D = 1, 2, 384, 128", "B, H, S, D = 1, 2, 300, 64")


@pytest.mark.parametrize("replace", [None, FAST_GAMMA, RAGGED], ids=["retnet", "window", "ragged"])
def test_retention_small_instance_is_correct(worker, tmp_path, replace):
    task = H.infile(RETNET, replace)
    r = H.generate(worker, task)
    assert r["class"] == "retention"
    if replace is FAST_GAMMA:  # windows of 158 and 308 positions in 384: blocks are skipped
        assert "DECAY_WINDOW = (158, 308)" in r["source"]
    H.evaluate(worker, task, r, tmp_path, source=small_blocks(r["source"]), seeds=[3])


def test_causal_linear_attention_bf16_bshd_is_correct(worker, tmp_path):
    task = H.infile("linear_attn_causal_bf16.py")
    r = H.generate(worker, task)
    assert r["class"] == "retention"
    assert "LOG_DECAY = (0.0, 0.0)" in r["source"] and "DECAY_WINDOW = (1073741824, 1073741824)" in r["source"]
    assert "q/k/v bshd/bshd/bshd -> bshd" in r["description"]
    H.evaluate(worker, task, r, tmp_path, source=small_blocks(r["source"]), seeds=[3])


@pytest.mark.parametrize("old, new, words", [
    ("jnp.where(dist >= 0, gamma[:, None, None] ** dist.astype(jnp.float32), 0.0)",
     "gamma[:, None, None] ** jnp.abs(dist).astype(jnp.float32)",
     "not 0 above the diagonal"),
    ("return jnp.einsum(\"bhqk,bhkd->bhqd\", scores * decay, v)",
     "return jnp.einsum(\"bhqk,bhkd->bhqd\", jax.nn.softmax(scores * decay, axis=-1), v)",
     "position-dependent weight before the softmax"),
], ids=["bidirectional", "decay_then_softmax"])
def test_what_retention_does_not_cover_is_refused_with_the_reason(worker, old, new, words):
    err = H.refusal(worker, H.infile(RETNET, (old, new)))
    assert words in err["message"], err["message"]


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_the_full_size_kernel_compiles_for_tpu(tmp_path):
    task = H.infile(RETNET, (FULL[0], "B, H, S, D = 1, 8, 2048, 128"))
    w = WorkerProcess(extra_env={"MAXKERNEL_TPU_COMPILE": "1"})
    try:
        r = H.generate(w, task)
        assert r["class"] == "retention"
        H.assert_compiles_with_cycles(w, task, r, tmp_path)
    finally:
        w.close()


SPREAD_GAMMA = (RETNET_GAMMA, "gamma = jnp.exp(-jnp.exp(jnp.linspace(jnp.log(1 / 32), jnp.log(1 / 512), heads)))")


def test_a_decay_spread_over_the_heads_is_read_for_each_head_count(worker, tmp_path):
    # The decays depend on how many heads there are: the module written at 8 heads carries a
    # table per head count (read by tracing the reference again), so it is still right on a
    # 2-head instance, where a prefix of the 8-head decays would be wrong.
    full = H.infile(RETNET, SPREAD_GAMMA)
    full["source"] = full["source"].replace(*FULL)
    r = H.generate(worker, full)
    assert r["class"] == "retention"
    src = r["source"]
    assert "LOG_DECAY = {\n    1: (" in src and "\n    8: (" in src, src[:3000]
    assert "log_decay = jnp.asarray(LOG_DECAY[heads], jnp.float32)" in src
    small = H.infile(RETNET, SPREAD_GAMMA)
    H.evaluate(worker, small, r, tmp_path, source=small_blocks(src), seeds=[3])


def test_a_decay_that_changes_with_the_sequence_length_is_refused(worker):
    err = H.refusal(worker, H.infile(RETNET, (RETNET_GAMMA, "gamma = 1.0 - 8.0 / seq + 0.0 * jnp.arange(heads)")))
    assert "changes with the sequence's length" in err["message"], err["message"]
