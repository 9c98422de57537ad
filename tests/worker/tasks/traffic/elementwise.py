"""out = x * y, grid (8,), blocks (8, 128) f32 = 4096 bytes.

Each operand's block index (i, 0) changes every step: 8 fetches of x, 8 of
y, 8 writebacks of out.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

ROWS, COLS, BR = 64, 128, 8
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(x, y):
    return x * y


def make_inputs(key):
    kx, ky = jax.random.split(key)
    return (jax.random.normal(kx, (ROWS, COLS), jnp.float32),
            jax.random.normal(ky, (ROWS, COLS), jnp.float32))


def _kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] * y_ref[...]


def candidate(x, y):
    spec = pl.BlockSpec((BR, COLS), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),
        grid=(ROWS // BR,),
        in_specs=[spec, spec],
        out_specs=spec,
    )(x, y)
