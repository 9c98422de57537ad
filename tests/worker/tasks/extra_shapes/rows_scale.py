"""Extra shapes (docs/tasks.md): an in-file task whose sizes are multiples of 128, and two
kernels over 256-row blocks. `drops_remainder` sizes its grid with floor division, so it is
correct at the task's 512 rows but leaves the last rows of a ragged 384-row input unwritten;
`masked` sizes it with pl.cdiv and Pallas masks the edge block, so it is correct at every size.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

ROWS, COLS = 512, 128
BLOCK_ROWS = 256
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(x):
    return 3.0 * x + 1.0


def make_inputs(key):
    return (jax.random.normal(key, (ROWS, COLS), jnp.float32),)


def _kernel(x_ref, o_ref):
    o_ref[...] = 3.0 * x_ref[...] + 1.0


def _call(x, grid_rows):
    rows, cols = x.shape
    spec = pl.BlockSpec((BLOCK_ROWS, cols), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((rows, cols), x.dtype),
        grid=(grid_rows,),
        in_specs=[spec],
        out_specs=spec,
    )(x)


def drops_remainder(x):
    return _call(x, x.shape[0] // BLOCK_ROWS)  # the remainder rows are never written


def masked(x):
    return _call(x, pl.cdiv(x.shape[0], BLOCK_ROWS))


def fixed_rows(x):
    # Reads its sizes from the task's constants, not from its inputs: right at 512 rows only.
    spec = pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), x.dtype),
        grid=(ROWS // BLOCK_ROWS,),
        in_specs=[spec],
        out_specs=spec,
    )(x)
