"""out = x + bias, grid (4,): x tiled (8, 128) per step, bias's block index
is always (0, 0).

By hand: x 4 fetches, bias 1 fetch (its index never changes), out 4
writebacks; blocks are 8*128*4 = 4096 bytes.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

ROWS, COLS, BR = 32, 128, 8
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(x, bias):
    return x + jnp.tile(bias, (ROWS // BR, 1))


def make_inputs(key):
    kx, kb = jax.random.split(key)
    return (jax.random.normal(kx, (ROWS, COLS), jnp.float32),
            jax.random.normal(kb, (BR, COLS), jnp.float32))


def _kernel(x_ref, b_ref, o_ref):
    o_ref[...] = x_ref[...] + b_ref[...]


def candidate(x, bias):
    spec = pl.BlockSpec((BR, COLS), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),
        grid=(ROWS // BR,),
        in_specs=[spec, pl.BlockSpec((BR, COLS), lambda i: (0, 0))],
        out_specs=spec,
    )(x, bias)
