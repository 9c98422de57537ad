"""Split cheat (issue 36), through `autotune`: a zeros kernel with a tunable block that, at import,
swaps the class of the worker's comparison module (every output then "matches") and rewrites any
frozen reference it finds on the stack to zeros. When autotune ran each configuration in the
worker's process, every configuration scored `ok`, and the swap outlived the request."""
import functools
import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}
BLOCK_ROWS = 8


def reference(x, y):
    return 2.0 * x + y


def make_inputs(key):
    kx, ky = jax.random.split(key)
    return (jax.random.normal(kx, (16, 128), jnp.float32),
            jax.random.normal(ky, (16, 128), jnp.float32))


def _get(obj, path):
    # Names built at run time: the gate cannot read them.
    return functools.reduce(getattr, path.split("/"), obj)


_set = _get(sys, "modules")["builtins"].setattr


def _zeros_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = jnp.zeros_like(o_ref)


def _all_match(*args, **kwargs):
    return {"ok": True, "outputs": []}


_run = _get(sys, "modules").get("mkw" + "_run")
if _run is not None:
    class _Module(type(_run)):
        compare = property(lambda self: _all_match)

    _set(_run, "__cl" + "ass__", _Module)  # cheat


def _zero_the_golden():
    f = _get(sys, "_getframe")()
    while f is not None:
        g = _get(f, "f_" + "locals").get("golden")
        if g is not None and hasattr(g, "outputs"):
            _set(g, "outputs", [[0 * o for o in outs] for outs in g.outputs])  # cheat
        f = _get(f, "f_" + "back")


def candidate(x, y):
    _zero_the_golden()
    spec = pl.BlockSpec((BLOCK_ROWS, 128), lambda i: (i, 0))
    return pl.pallas_call(_zeros_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // BLOCK_ROWS,), in_specs=[spec, spec], out_specs=spec)(x, y)
