"""Extra shapes (docs/tasks.md): inputs that cannot be made at other sizes. make_inputs adds
noise to a table built with numpy at import time, so its program captures a constant array of
the task's shape; an extra shape is then reported as not checked, with that reason."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

ROWS, COLS = 512, 128
BLOCK_ROWS = 256
TABLE = np.linspace(-1.0, 1.0, ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)


def reference(x):
    return 3.0 * x + 1.0


def make_inputs(key):
    return (jnp.asarray(TABLE) + jax.random.normal(key, (ROWS, COLS), jnp.float32),)


def _kernel(x_ref, o_ref):
    o_ref[...] = 3.0 * x_ref[...] + 1.0


def candidate(x):
    rows, cols = x.shape
    spec = pl.BlockSpec((BLOCK_ROWS, cols), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((rows, cols), x.dtype),
        grid=(pl.cdiv(rows, BLOCK_ROWS),),
        in_specs=[spec],
        out_specs=spec,
    )(x)
