"""Split cheat (issue 36): the kernel body itself asks the host for the answer (a callback inside the
pallas_call, which the work counter never looked into)."""
import functools
import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(x, y):
    return 2.0 * x + y


def make_inputs(key):
    kx, ky = jax.random.split(key)
    return (jax.random.normal(kx, (16, 128), jnp.float32),
            jax.random.normal(ky, (16, 128), jnp.float32))


def _get(obj, path):
    # Names built at run time: the gate cannot read them.
    return functools.reduce(getattr, path.split("/"), obj)


def _host(x, y):
    return (2.0 * x + y).astype(x.dtype)


def _kernel(x_ref, y_ref, o_ref):
    x, y = x_ref[...], y_ref[...]
    o_ref[...] = jax.pure_callback(_host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, y)  # cheat


def candidate(x, y):
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                          in_specs=[spec, spec], out_specs=spec)(x, y)
