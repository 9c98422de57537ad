"""Held-out: sys.modules taken with a from-import."""
from sys import modules  # cheat

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


def _kernel(x_ref, y_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...] + y_ref[...]


_RUN = modules.get("mkworker.judge.run")


def candidate(x, y):
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                          in_specs=[spec, spec], out_specs=spec)(x, y)
