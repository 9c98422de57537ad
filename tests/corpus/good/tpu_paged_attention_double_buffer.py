"""Paged decode attention (GQA) with double-buffered page DMAs.

The next page's DMA is started before the current one is consumed.  KV pages
use memory_space=pltpu.HBM (equivalent to pl.ANY for a full, untiled block).
"""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BATCH, KV_HEADS, GROUP, HEAD_DIM = 4, 4, 8, 128
PAGE_SIZE, TOTAL_PAGES, PAGES_PER_SEQ = 128, 256, 16


def _kernel(tables_ref, lens_ref, q_ref, k_hbm, v_hbm, o_ref, kbuf, vbuf, sem, *, scale):
    b, h = pl.program_id(0), pl.program_id(1)
    n_pages = pl.cdiv(lens_ref[b], PAGE_SIZE)

    def copies(p, slot):
        page = tables_ref[b, p]
        return (
            pltpu.make_async_copy(k_hbm.at[h, page], kbuf.at[slot], sem.at[0, slot]),
            pltpu.make_async_copy(v_hbm.at[h, page], vbuf.at[slot], sem.at[1, slot]),
        )

    for c in copies(0, 0):
        c.start()

    q = q_ref[...].astype(jnp.float32) * scale                   # (GROUP, D)

    def body(p, carry):
        m, l, acc = carry
        slot = p % 2

        @pl.when(p + 1 < n_pages)
        def _prefetch_next():
            for c in copies(p + 1, 1 - slot):
                c.start()

        for c in copies(p, slot):
            c.wait()
        k = kbuf[slot].astype(jnp.float32)
        v = vbuf[slot].astype(jnp.float32)
        s = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())))
        pos = p * PAGE_SIZE + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
        s = jnp.where(pos < lens_ref[b], s, -1e30)
        m_new = jnp.maximum(m, s.max(-1, keepdims=True))
        a = jnp.exp(m - m_new)
        e = jnp.exp(s - m_new)
        return m_new, a * l + e.sum(-1, keepdims=True), a * acc + jnp.dot(e, v)

    init = (jnp.full((GROUP, 1), -1e30, jnp.float32),
            jnp.zeros((GROUP, 1), jnp.float32),
            jnp.zeros((GROUP, HEAD_DIM), jnp.float32))
    _, l, acc = jax.lax.fori_loop(0, n_pages, body, init)
    o_ref[...] = (acc / l).astype(o_ref.dtype)


@jax.jit
def paged_attention_gqa(block_tables, lengths, q, k_pages, v_pages):
    q_spec = pl.BlockSpec((None, None, GROUP, HEAD_DIM), lambda b, h, t, n: (b, h, 0, 0))
    return pl.pallas_call(
        functools.partial(_kernel, scale=HEAD_DIM ** -0.5),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=2,
            grid=(BATCH, KV_HEADS),
            in_specs=[q_spec,
                      pl.BlockSpec(memory_space=pltpu.HBM),
                      pl.BlockSpec(memory_space=pltpu.HBM)],
            out_specs=q_spec,
            scratch_shapes=[
                pltpu.VMEM((2, PAGE_SIZE, HEAD_DIM), jnp.bfloat16),
                pltpu.VMEM((2, PAGE_SIZE, HEAD_DIM), jnp.bfloat16),
                pltpu.SemaphoreType.DMA((2, 2)),
            ],
        ),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "arbitrary")),
    )(block_tables, lengths, q, k_pages, v_pages)


def corpus_entry():
    kv = jax.ShapeDtypeStruct((KV_HEADS, TOTAL_PAGES, PAGE_SIZE, HEAD_DIM), jnp.bfloat16)
    return paged_attention_gqa, (
        jax.ShapeDtypeStruct((BATCH, PAGES_PER_SEQ), jnp.int32),
        jax.ShapeDtypeStruct((BATCH,), jnp.int32),
        jax.ShapeDtypeStruct((BATCH, KV_HEADS, GROUP, HEAD_DIM), jnp.bfloat16),
        kv, kv,
    )
