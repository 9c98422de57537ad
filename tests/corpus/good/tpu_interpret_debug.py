"""Debug build of a tiled transpose-add kernel: `interpret=True` runs it on CPU.

The BlockSpecs are still written to be TPU-legal so flipping `INTERPRET` off
gives a real Mosaic kernel.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

INTERPRET = True
N = 1024
T = 128


def _transpose_add_kernel(a_ref, b_ref, o_ref):
    o_ref[...] = a_ref[...].T + b_ref[...]


def transpose_add(a, b):
    return pl.pallas_call(
        _transpose_add_kernel,
        out_shape=jax.ShapeDtypeStruct((N, N), jnp.float32),
        grid=(N // T, N // T),
        in_specs=[
            pl.BlockSpec((T, T), lambda i, j: (j, i)),
            pl.BlockSpec((T, T), lambda i, j: (i, j)),
        ],
        out_specs=pl.BlockSpec((T, T), lambda i, j: (i, j)),
        interpret=INTERPRET,
    )(a, b)


def corpus_entry():
    x = jax.ShapeDtypeStruct((N, N), jnp.float32)
    return transpose_add, (x, x)
