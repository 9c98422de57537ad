"""Cheat: only the first row block of the output is ever written."""
import jax
from jax.experimental import pallas as pl

ROWS, COLS, BLOCK_ROWS = 64, 128, 16


def _kernel(x_ref, y_ref, o_ref):
    @pl.when(pl.program_id(0) == 0)
    def _():
        o_ref[...] = 2.0 * x_ref[...] + y_ref[...]


def candidate(x, y):
    spec = pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(ROWS // BLOCK_ROWS,), in_specs=[spec, spec], out_specs=spec)(x, y)
