"""Residual add + scale built from a pre-configured `functools.partial(pl.pallas_call, ...)`."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 8192, 2048
BLOCK_ROWS, BLOCK_COLS = 512, 512


def _residual_scale_kernel(x_ref, r_ref, o_ref):
    o_ref[...] = (x_ref[...] + r_ref[...]) * 0.5


_tile = pl.BlockSpec((BLOCK_ROWS, BLOCK_COLS), lambda i, j: (i, j))

# The call is configured once; out_shape is bound at call time.
_residual_call = functools.partial(
    pl.pallas_call,
    _residual_scale_kernel,
    grid=(ROWS // BLOCK_ROWS, COLS // BLOCK_COLS),
    in_specs=[_tile, _tile],
    out_specs=_tile,
    compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
)


def residual_scale(x, r):
    return _residual_call(out_shape=jax.ShapeDtypeStruct((ROWS, COLS), x.dtype))(x, r)


def corpus_entry():
    x = jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32)
    return residual_scale, (x, x)
