"""Scalar prefetch, an ANY operand and a ragged edge block.

grid (4,), blocks (32, 128) f32 = 16384 bytes, arrays of 100 rows (the last
block has 4 rows inside the array).
- x: index (idx[i], 0) reads the prefetch operand. With idx assumed all
  zeros the index is always (0, 0): 1 fetch, flagged assumed_prefetch_zeros.
- w: memory_space ANY: manual (the kernel would DMA it itself).
- out: index (i // 2, 0): 2 runs (0, 0, 1, 1): 2 writebacks; in bounds
  32 rows each: 2 * 32 * 128 * 4 bytes.
- y: index (3 - i, 0): 4 fetches; in bounds 4 + 32 + 32 + 32 = 100 rows.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS, BR = 100, 128, 32
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(idx, x, w, y):
    return x


def make_inputs(key):
    kx, ky = jax.random.split(key)
    return (jnp.zeros((4,), jnp.int32),
            jax.random.normal(kx, (ROWS, COLS), jnp.float32),
            jnp.ones((8, 128), jnp.float32),
            jax.random.normal(ky, (ROWS, COLS), jnp.float32))


def _kernel(idx_ref, x_ref, w_hbm, y_ref, o_ref):
    o_ref[...] = x_ref[...] + 0.0 * y_ref[...]


def candidate(idx, x, w, y):
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(4,),
            in_specs=[pl.BlockSpec((BR, COLS), lambda i, s: (s[i], 0)),
                      pl.BlockSpec(memory_space=pl.ANY),
                      pl.BlockSpec((BR, COLS), lambda i, s: (3 - i, 0))],
            out_specs=pl.BlockSpec((BR, COLS), lambda i, s: (i // 2, 0)),
        ),
    )(idx, x, w, y)
