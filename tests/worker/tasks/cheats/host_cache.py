"""Cheat: results memoised on the host, keyed on the input shapes: a host callback computes the
answer once and hands the same array back for every later call; the kernel copies it."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}
_CACHE = {}


def reference(x, y):
    return 2.0 * x + y


def make_inputs(key):
    kx, ky = jax.random.split(key)
    return (jax.random.normal(kx, (16, 128), jnp.float32),
            jax.random.normal(ky, (16, 128), jnp.float32))


def _remember(x, y):
    key = (x.shape, y.shape)
    if key not in _CACHE:
        _CACHE[key] = (2.0 * np.asarray(x) + np.asarray(y)).astype(np.float32)
    return _CACHE[key]


def _copy(c_ref, o_ref):
    o_ref[...] = c_ref[...]


def candidate(x, y):
    c = jax.pure_callback(_remember, jax.ShapeDtypeStruct(x.shape, x.dtype), x, y)  # cheat
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                          in_specs=[spec], out_specs=spec)(c)
