"""Cheat: right while it is checked, wrong once it is timed. A host callback counts the calls; from
the fifth on (two input sets x two run orders are checked) the kernel is handed an offset."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback
from jax.experimental import pallas as pl

TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}
_CALLS = [0]


def reference(x, y):
    return 2.0 * x + y


def make_inputs(key):
    kx, ky = jax.random.split(key)
    return (jax.random.normal(kx, (16, 128), jnp.float32),
            jax.random.normal(ky, (16, 128), jnp.float32))


def _offset():
    _CALLS[0] += 1
    return np.full((1, 128), 0.0 if _CALLS[0] <= 4 else 1.0, np.float32)


def _kernel(x_ref, y_ref, s_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...] + y_ref[...] + s_ref[...]


def candidate(x, y):
    s = io_callback(_offset, jax.ShapeDtypeStruct((1, 128), jnp.float32), ordered=True)  # cheat
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                          in_specs=[spec, spec, pl.BlockSpec((1, 128), lambda i: (0, 0))],
                          out_specs=spec)(x, y, s)
