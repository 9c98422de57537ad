"""Cheat: a kernel that writes a constant."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(x_ref, y_ref, o_ref):
    o_ref[...] = jnp.full(o_ref.shape, 0.5, o_ref.dtype)


def candidate(x, y):
    spec = pl.BlockSpec((16, 128), lambda i: (i, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(4,), in_specs=[spec, spec], out_specs=spec)(x, y)
