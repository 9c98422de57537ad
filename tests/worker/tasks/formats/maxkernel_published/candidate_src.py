import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BLOCK_ROWS = 16


def computation(x, eps, scale):
    # eps and scale arrive as Python floats (static), so they fold into the kernel body.
    def kernel(x_ref, o_ref):
        v = x_ref[...]
        o_ref[...] = scale * v / jnp.sqrt(jnp.sum(v * v, axis=-1, keepdims=True) + eps)

    rows, cols = x.shape
    spec = pl.BlockSpec((BLOCK_ROWS, cols), lambda i: (i, 0))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(rows // BLOCK_ROWS,), in_specs=[spec], out_specs=spec)(x)
