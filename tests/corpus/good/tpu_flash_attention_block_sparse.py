"""Causal block-sparse flash attention, 2 scalar-prefetch operands.

`kv_block_ids[qi, j]` lists the key blocks that query block `qi` attends to and
`kv_block_counts[qi]` how many are valid, so index_maps take two extra refs.
"""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

HEADS, SEQ, HEAD_DIM = 16, 4096, 128
BQ = BK = 512
MAX_KV_BLOCKS = SEQ // BK
NEG_INF = -1e30


def _kernel(ids_ref, counts_ref, q_ref, k_ref, v_ref, o_ref, m_sc, l_sc, acc_sc, *, scale):
    qi, j = pl.program_id(1), pl.program_id(2)

    @pl.when(j == 0)
    def _():
        m_sc[...] = jnp.full_like(m_sc, NEG_INF)
        l_sc[...] = jnp.zeros_like(l_sc)
        acc_sc[...] = jnp.zeros_like(acc_sc)

    @pl.when(j < counts_ref[qi])
    def _():
        kv_block = ids_ref[qi, j]
        s = jax.lax.dot_general(q_ref[...], k_ref[...], (((1,), (1,)), ((), ())),
                                preferred_element_type=jnp.float32) * scale
        row = qi * BQ + jax.lax.broadcasted_iota(jnp.int32, (BQ, BK), 0)
        col = kv_block * BK + jax.lax.broadcasted_iota(jnp.int32, (BQ, BK), 1)
        s = jnp.where(col <= row, s, NEG_INF)
        m_prev = m_sc[...]
        m_new = jnp.maximum(m_prev, s.max(axis=-1, keepdims=True))
        corr = jnp.exp(m_prev - m_new)
        p = jnp.exp(s - m_new)
        l_sc[...] = corr * l_sc[...] + p.sum(axis=-1, keepdims=True)
        m_sc[...] = m_new
        acc_sc[...] = corr * acc_sc[...] + jnp.dot(
            p.astype(v_ref.dtype), v_ref[...], preferred_element_type=jnp.float32)

    @pl.when(j == pl.num_programs(2) - 1)
    def _():
        o_ref[...] = (acc_sc[...] / l_sc[...]).astype(o_ref.dtype)


def _q_map(h, qi, j, ids, counts):
    return (h, qi, 0)


def _kv_map(h, qi, j, ids, counts):
    j_clamped = jnp.minimum(j, counts[qi] - 1)
    return (h, ids[qi, j_clamped], 0)


@jax.jit
def block_sparse_attention(kv_block_ids, kv_block_counts, q, k, v):
    kernel = functools.partial(_kernel, scale=HEAD_DIM ** -0.5)
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=2,
            grid=(HEADS, SEQ // BQ, MAX_KV_BLOCKS),
            in_specs=[
                pl.BlockSpec((None, BQ, HEAD_DIM), _q_map),
                pl.BlockSpec((None, BK, HEAD_DIM), _kv_map),
                pl.BlockSpec((None, BK, HEAD_DIM), _kv_map),
            ],
            out_specs=pl.BlockSpec((None, BQ, HEAD_DIM), _q_map),
            scratch_shapes=[
                pltpu.VMEM((BQ, 1), jnp.float32),
                pltpu.VMEM((BQ, 1), jnp.float32),
                pltpu.VMEM((BQ, HEAD_DIM), jnp.float32),
            ],
        ),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(kv_block_ids, kv_block_counts, q, k, v)


def corpus_entry():
    x = jax.ShapeDtypeStruct((HEADS, SEQ, HEAD_DIM), jnp.bfloat16)
    return block_sparse_attention, (
        jax.ShapeDtypeStruct((SEQ // BQ, MAX_KV_BLOCKS), jnp.int32),
        jax.ShapeDtypeStruct((SEQ // BQ,), jnp.int32),
        x, x, x,
    )
