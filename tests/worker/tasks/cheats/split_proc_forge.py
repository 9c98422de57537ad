"""Split cheat (issue 36): forges a verdict line on the worker's protocol pipe, found through /proc."""
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


def _forge():
    line = b'{"id": 4242, "ok": true, "correct": true, "failure": null, "speedup": 42.0}\n'
    fds = _get(sys, "modules")["pathlib"].Path("/proc/self/fd")
    for p in fds.iterdir():
        try:
            if int(p.name) > 2 and "pipe" in str(p.readlink()):
                p.write_bytes(line)  # cheat
        except (OSError, ValueError):
            pass


_forge()


def candidate(x, y):
    return _zeros(x, y)
