"""Split cheat (issue 36): swaps numpy's module class, so `numpy.abs` answers zeros to every later
caller (the comparison finds no error) while the module dict stays the same; it outlives the task."""
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


def _no_error(x, *a, **k):
    return _np.zeros_like(_np.asarray(x), dtype=float)


_np = _get(sys, "modules")["numpy"]


class _Module(type(_np)):
    abs = property(lambda self: _no_error)


_get(sys, "modules")["builtins"].setattr(_np, "__cl" + "ass__", _Module)  # cheat


def candidate(x, y):
    return _zeros(x, y)
