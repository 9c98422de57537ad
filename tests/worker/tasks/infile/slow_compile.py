"""In-file task whose kernel takes the TPU compiler minutes: 65,536 grid steps of (8, 128) f32
blocks (libtpu's static profile walks every step). For the compile cancel test; compile-only,
never run."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

ROWS, COLS = 524288, 128
BLOCK_ROWS = 8
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(x):
    return 2.0 * x


def make_inputs(key):
    return (jax.random.normal(key, (ROWS, COLS), jnp.float32),)


def _kernel(x_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...]


def candidate(x):
    spec = pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(ROWS // BLOCK_ROWS,),
        in_specs=[spec],
        out_specs=spec,
    )(x)
