"""Test kernel for `maxkernel optimize`: out = x * scale + bias, tiled over rows with a small
block, so block-size moves change the predicted time (grid steps) and stay correct."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 256, 256
BLOCK_ROWS = 8
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def reference(x, b):
    return x * 3.0 + b


def make_inputs(key):
    kx, kb = jax.random.split(key)
    return (jax.random.normal(kx, (ROWS, COLS), jnp.float32),
            jax.random.normal(kb, (ROWS, COLS), jnp.float32))


def _kernel(x_ref, b_ref, o_ref):
    o_ref[...] = x_ref[...] * 3.0 + b_ref[...]


def candidate(x, b):
    spec = pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),
        grid=(ROWS // BLOCK_ROWS,),
        in_specs=[spec, spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, b)
