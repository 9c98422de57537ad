"""Flash attention forward with per-sequence lengths delivered by scalar prefetch.

q, k, v: (batch, heads, seq, head_dim).  Key blocks entirely past a sequence's
length are skipped, and their DMA is suppressed by clamping the index_map.
"""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BATCH, HEADS, SEQ, HEAD_DIM = 4, 8, 2048, 128
BLOCK_Q = 256
BLOCK_K = 512
NUM_LANES = 128
MASK_VALUE = -0.7 * float(jnp.finfo(jnp.float32).max)


def _flash_kernel(lens_ref, q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, *, sm_scale):
    b, kv_idx = pl.program_id(0), pl.program_id(3)
    seq_len = lens_ref[b]

    @pl.when(kv_idx == 0)
    def _init():
        m_ref[...] = jnp.full_like(m_ref, MASK_VALUE)
        l_ref[...] = jnp.zeros_like(l_ref)
        acc_ref[...] = jnp.zeros_like(acc_ref)

    @pl.when(kv_idx * BLOCK_K < seq_len)
    def _compute():
        q = q_ref[...]
        k = k_ref[...]
        s = jax.lax.dot_general(
            q, k, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32
        ) * sm_scale
        cols = kv_idx * BLOCK_K + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
        s = jnp.where(cols < seq_len, s, MASK_VALUE)

        m_prev = m_ref[...]                                   # (BQ, 128)
        m_cur = jnp.max(s, axis=1, keepdims=True)             # (BQ, 1)
        m_next = jnp.maximum(m_prev, m_cur)                   # (BQ, 128)
        alpha = jnp.exp(m_prev - m_next)
        p = jnp.exp(s - m_next[:, :1])
        l_ref[...] = alpha * l_ref[...] + jnp.sum(p, axis=1, keepdims=True)
        m_ref[...] = m_next
        pv = jnp.dot(p.astype(v_ref.dtype), v_ref[...], preferred_element_type=jnp.float32)
        acc_ref[...] = acc_ref[...] * alpha[:, :1] + pv

    @pl.when(kv_idx == pl.num_programs(3) - 1)
    def _finalize():
        inv_l = pl.reciprocal(l_ref[...][:, :1], approx=True)
        o_ref[...] = (acc_ref[...] * inv_l).astype(o_ref.dtype)


def _kv_index_map(b, h, qi, ki, lens_ref):
    # Re-use the last valid block once past the sequence end: no extra DMA.
    last = (lens_ref[b] - 1) // BLOCK_K
    return (b, h, jnp.minimum(ki, last), 0)


def flash_attention(seq_lens, q, k, v):
    sm_scale = HEAD_DIM ** -0.5
    grid = (BATCH, HEADS, SEQ // BLOCK_Q, SEQ // BLOCK_K)
    q_spec = pl.BlockSpec((None, None, BLOCK_Q, HEAD_DIM), lambda b, h, qi, ki, lens: (b, h, qi, 0))
    kv_spec = pl.BlockSpec((None, None, BLOCK_K, HEAD_DIM), _kv_index_map)
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1,
        grid=grid,
        in_specs=[q_spec, kv_spec, kv_spec],
        out_specs=pl.BlockSpec((None, None, BLOCK_Q, HEAD_DIM), lambda b, h, qi, ki, lens: (b, h, qi, 0)),
        scratch_shapes=[
            pltpu.VMEM((BLOCK_Q, NUM_LANES), jnp.float32),
            pltpu.VMEM((BLOCK_Q, NUM_LANES), jnp.float32),
            pltpu.VMEM((BLOCK_Q, HEAD_DIM), jnp.float32),
        ],
    )
    return pl.pallas_call(
        functools.partial(_flash_kernel, sm_scale=sm_scale),
        grid_spec=grid_spec,
        out_shape=jax.ShapeDtypeStruct((BATCH, HEADS, SEQ, HEAD_DIM), q.dtype),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")
        ),
    )(seq_lens, q, k, v)


def corpus_entry():
    qkv = jax.ShapeDtypeStruct((BATCH, HEADS, SEQ, HEAD_DIM), jnp.bfloat16)
    return flash_attention, (jax.ShapeDtypeStruct((BATCH,), jnp.int32), qkv, qkv, qkv)
