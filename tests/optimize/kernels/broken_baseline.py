"""Test kernel whose baseline fails TPU lowering (a block of 12 rows breaks the (8, 128) rule),
so `maxkernel optimize` must stop with the lowering error instead of searching."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

ROWS, COLS = 48, 256
BLOCK_ROWS = 12


def reference(x):
    return x + 1.0


def make_inputs(key):
    return (jax.random.normal(key, (ROWS, COLS), jnp.float32),)


def _kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] + 1.0


def candidate(x):
    spec = pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),
        grid=(ROWS // BLOCK_ROWS,),
        in_specs=[spec],
        out_specs=spec,
    )(x)
