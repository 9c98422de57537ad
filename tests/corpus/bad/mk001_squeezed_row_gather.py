"""MK001: squeezing the second-to-last dim (a `None` row) makes the block's sublane
extent 1, which is neither a multiple of 8 nor the output's 512 rows.  (The fix is
to gather TOKENS_PER_STEP >= 8 rows per step.)"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

VOCAB, DIM, TOKENS = 32000, 1024, 512


def _gather_row_kernel(ids_ref, table_hbm, o_ref, sem):
    t = pl.program_id(0)
    copy = pltpu.make_async_copy(table_hbm.at[ids_ref[t]], o_ref, sem)
    copy.start()
    copy.wait()


def embed(ids, table):
    return pl.pallas_call(
        _gather_row_kernel,
        out_shape=jax.ShapeDtypeStruct((TOKENS, DIM), jnp.float32),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(TOKENS,),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec((None, DIM), lambda t, ids: (t, 0)),  # expect: MK001
            scratch_shapes=[pltpu.SemaphoreType.DMA],
        ),
    )(ids, table)


def corpus_entry():
    return embed, (
        jax.ShapeDtypeStruct((TOKENS,), jnp.int32),
        jax.ShapeDtypeStruct((VOCAB, DIM), jnp.float32),
    )
