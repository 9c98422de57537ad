"""Cheat: a pallas_call whose result is thrown away; the output is plain jnp."""
import jax
from jax.experimental import pallas as pl


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def candidate(x, y):
    pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    return 2.0 * x + y
