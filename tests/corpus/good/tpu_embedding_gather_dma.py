"""Embedding lookup: token ids are scalar-prefetched, rows DMA'd from an HBM table."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

VOCAB = 32000
EMBED_DIM = 1024
NUM_TOKENS = 2048
TOKENS_PER_STEP = 32   # int32 ids, f32 rows: 32 rows x 1024 lanes per step


def _gather_kernel(ids_ref, table_hbm, out_ref, sem):
    base = pl.program_id(0) * TOKENS_PER_STEP

    def issue(t, _):
        row = ids_ref[base + t]
        pltpu.make_async_copy(
            table_hbm.at[pl.ds(row, 1)], out_ref.at[pl.ds(t, 1)], sem
        ).start()
        return _

    def drain(t, _):
        # All copies have the same size, so any descriptor can wait for one.
        pltpu.make_async_copy(
            table_hbm.at[pl.ds(0, 1)], out_ref.at[pl.ds(t, 1)], sem
        ).wait()
        return _

    jax.lax.fori_loop(0, TOKENS_PER_STEP, issue, None)
    jax.lax.fori_loop(0, TOKENS_PER_STEP, drain, None)


def embed(ids, table):
    return pl.pallas_call(
        _gather_kernel,
        out_shape=jax.ShapeDtypeStruct((NUM_TOKENS, EMBED_DIM), table.dtype),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(NUM_TOKENS // TOKENS_PER_STEP,),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec((TOKENS_PER_STEP, EMBED_DIM), lambda i, ids: (i, 0)),
            scratch_shapes=[pltpu.SemaphoreType.DMA],
        ),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary",)),
    )(ids, table)


def corpus_entry():
    return embed, (
        jax.ShapeDtypeStruct((NUM_TOKENS,), jnp.int32),
        jax.ShapeDtypeStruct((VOCAB, EMBED_DIM), jnp.float32),
    )
