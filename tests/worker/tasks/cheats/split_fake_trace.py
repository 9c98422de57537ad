"""Split cheat (issue 36): the entry is an object with .trace/.lower: the checks read an honest
kernel's trace while plain XLA runs."""
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


def _zeros_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = jnp.zeros_like(o_ref)


def _zeros(x, y):
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    return pl.pallas_call(_zeros_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                          in_specs=[spec, spec], out_specs=spec)(x, y)


def _kernel(x_ref, y_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...] + y_ref[...]


def _honest(x, y):
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                          in_specs=[spec, spec], out_specs=spec)(x, y)


def _plain(x, y):
    return 2.0 * x + y


class _Traced:
    """What the checks compile: plain XLA behind an honest kernel's trace."""

    def __init__(self, args):
        self.args = args

    def lower(self, *a, **k):
        return jax.jit(_plain).trace(*self.args).lower()


class _Entry:
    def __init__(self):
        self.traces = 0

    def trace(self, *args, **kwargs):
        self.traces += 1
        if self.traces == 1:
            return jax.jit(_honest).trace(*args)
        return _Traced(args)  # cheat

    def lower(self, *args, **kwargs):
        return jax.jit(_honest).lower(*args)

    def __call__(self, x, y):
        return _plain(x, y)


candidate = _Entry()
