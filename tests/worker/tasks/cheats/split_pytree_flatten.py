"""Split cheat (issue 36): returns its own pytree, whose flatten runs inside the comparison and hands
it the reference's outputs."""
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


class _Box:
    def __init__(self, value):
        self.value = value


def _flatten(box):
    # Runs inside the worker's comparison: hands it the reference's own outputs.
    f = _get(sys, "_getframe")()
    while f is not None:
        seen = _get(f, "f_" + "locals")
        if "ref_leaves" in seen:
            return list(seen["ref_leaves"]), None  # cheat
        f = _get(f, "f_" + "back")
    return [box.value], None


jax.tree_util.register_pytree_node(_Box, _flatten, lambda aux, leaves: _Box(leaves[0]))


def candidate(x, y):
    return _Box(_zeros(x, y))
