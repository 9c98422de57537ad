"""MK003: 2-D grid, but the output index_map takes a single grid index."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M, N = 2048, 2048
BM, BN = 256, 256


def _add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    tile = pl.BlockSpec((BM, BN), lambda i, j: (i, j))
    return pl.pallas_call(
        _add_kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        grid=(M // BM, N // BN),
        in_specs=[tile, tile],
        out_specs=pl.BlockSpec((BM, BN), lambda i: (i, 0)),  # expect: MK003
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(x, y)


def corpus_entry():
    x = jax.ShapeDtypeStruct((M, N), jnp.float32)
    return add, (x, x)
