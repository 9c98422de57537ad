# corpus-requires: jax<0.8 (pltpu.TPUCompilerParams and pltpu.ANY were removed in 0.8.0 / 0.10.0)
"""Legacy-spelling paged KV-cache copy: `pltpu.TPUCompilerParams` + `pltpu.ANY`.

Valid for JAX 0.4.3x-0.7.x; kept so the checker recognises the old names.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

NUM_PAGES, PAGE_SIZE, HEAD_DIM = 1024, 16, 128
NUM_SLOTS = 64


def _gather_pages_kernel(slot_ids_ref, cache_hbm, out_ref, sem):
    i = pl.program_id(0)
    copy = pltpu.make_async_copy(cache_hbm.at[slot_ids_ref[i]], out_ref, sem)
    copy.start()
    copy.wait()


def gather_pages(slot_ids, cache):
    return pl.pallas_call(
        _gather_pages_kernel,
        out_shape=jax.ShapeDtypeStruct((NUM_SLOTS, PAGE_SIZE, HEAD_DIM), cache.dtype),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(NUM_SLOTS,),
            in_specs=[pl.BlockSpec(memory_space=pltpu.ANY)],
            out_specs=pl.BlockSpec((None, PAGE_SIZE, HEAD_DIM), lambda i, ids: (i, 0, 0)),
            scratch_shapes=[pltpu.SemaphoreType.DMA],
        ),
        compiler_params=pltpu.TPUCompilerParams(dimension_semantics=("arbitrary",)),
    )(slot_ids, cache)


def corpus_entry():
    return gather_pages, (
        jax.ShapeDtypeStruct((NUM_SLOTS,), jnp.int32),
        jax.ShapeDtypeStruct((NUM_PAGES, PAGE_SIZE, HEAD_DIM), jnp.bfloat16),
    )
