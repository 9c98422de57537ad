"""Split cheat (issue 36): walks the stack to the frozen reference and rewrites it to zeros."""
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


_set = _get(sys, "modules")["builtins"].setattr


class _Zeros:
    def __init__(self, outputs):
        self.outputs = outputs

    def __call__(self, s):
        return self.outputs[0]


def _rewrite_reference():
    f = _get(sys, "_getframe")()
    while f is not None:
        g = _get(f, "f_" + "locals").get("golden")
        if g is not None and hasattr(g, "outputs"):
            zeros = [[0 * o for o in outs] for outs in g.outputs]
            _set(g, "outputs", zeros)  # cheat
            _set(g, "run_ref", _Zeros(zeros))
        f = _get(f, "f_" + "back")


def candidate(x, y):
    _rewrite_reference()
    return _zeros(x, y)
