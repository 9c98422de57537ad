"""Single-query (decode) paged attention, MQA, manual DMA of KV pages from HBM.

Pages live in HBM (memory_space=pl.ANY); the block table and sequence lengths
are scalar-prefetched into SMEM and drive `pltpu.make_async_copy`.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BATCH = 8
NUM_HEADS = 16
HEAD_DIM = 128
PAGE_SIZE = 64
NUM_PAGES = 512
PAGES_PER_SEQ = 32


def _paged_attn_kernel(tables_ref, lens_ref, q_ref, k_hbm, v_hbm, o_ref, k_buf, v_buf, sems):
    b = pl.program_id(0)
    length = lens_ref[b]
    q = q_ref[...].astype(jnp.float32) * (HEAD_DIM ** -0.5)      # (H, D)

    def body(p, carry):
        m, l, acc = carry
        page = tables_ref[b, p]
        k_copy = pltpu.make_async_copy(k_hbm.at[page], k_buf, sems.at[0])
        v_copy = pltpu.make_async_copy(v_hbm.at[page], v_buf, sems.at[1])
        k_copy.start()
        v_copy.start()
        k_copy.wait()
        v_copy.wait()
        s = jax.lax.dot_general(q, k_buf[...].astype(jnp.float32),
                                (((1,), (1,)), ((), ())))    # (H, PAGE_SIZE)
        pos = p * PAGE_SIZE + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
        s = jnp.where(pos < length, s, -jnp.inf)
        m_new = jnp.maximum(m, s.max(axis=-1, keepdims=True))
        corr = jnp.exp(m - m_new)
        p_ = jnp.exp(s - m_new)
        l = corr * l + p_.sum(axis=-1, keepdims=True)
        acc = corr * acc + jnp.dot(p_, v_buf[...].astype(jnp.float32))
        return m_new, l, acc

    init = (
        jnp.full((NUM_HEADS, 1), -jnp.inf, jnp.float32),
        jnp.zeros((NUM_HEADS, 1), jnp.float32),
        jnp.zeros((NUM_HEADS, HEAD_DIM), jnp.float32),
    )
    n_pages = pl.cdiv(length, PAGE_SIZE)
    _, l, acc = jax.lax.fori_loop(0, n_pages, body, init)
    o_ref[...] = (acc / l).astype(o_ref.dtype)


def paged_attention(block_tables, seq_lens, q, k_pages, v_pages):
    return pl.pallas_call(
        _paged_attn_kernel,
        out_shape=jax.ShapeDtypeStruct((BATCH, NUM_HEADS, HEAD_DIM), q.dtype),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=2,
            grid=(BATCH,),
            in_specs=[
                pl.BlockSpec((None, NUM_HEADS, HEAD_DIM), lambda b, tables, lens: (b, 0, 0)),
                pl.BlockSpec(memory_space=pl.ANY),
                pl.BlockSpec(memory_space=pl.ANY),
            ],
            out_specs=pl.BlockSpec((None, NUM_HEADS, HEAD_DIM), lambda b, tables, lens: (b, 0, 0)),
            scratch_shapes=[
                pltpu.VMEM((PAGE_SIZE, HEAD_DIM), jnp.bfloat16),
                pltpu.VMEM((PAGE_SIZE, HEAD_DIM), jnp.bfloat16),
                pltpu.SemaphoreType.DMA((2,)),
            ],
        ),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(block_tables, seq_lens, q, k_pages, v_pages)


def corpus_entry():
    pages = jax.ShapeDtypeStruct((NUM_PAGES, PAGE_SIZE, HEAD_DIM), jnp.bfloat16)
    return paged_attention, (
        jax.ShapeDtypeStruct((BATCH, PAGES_PER_SEQ), jnp.int32),
        jax.ShapeDtypeStruct((BATCH,), jnp.int32),
        jax.ShapeDtypeStruct((BATCH, NUM_HEADS, HEAD_DIM), jnp.bfloat16),
        pages,
        pages,
    )
