"""Split cheat (issue 36): the answer comes from a host callback in a `while` body, one row per
trip (counted once), outside the kernel (which writes zeros)."""
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


def _host_rows(x, y, i):
    return (2.0 * x[i] + y[i]).astype(x.dtype)


def candidate(x, y):
    out = _zeros(x, y)
    row = jax.ShapeDtypeStruct(x.shape[1:], x.dtype)
    rows = x.shape[0] + 0 * x[0, 0].astype(jnp.int32)  # a bound the tracer cannot see

    def body(carry):
        i, o = carry
        r = jax.pure_callback(_host_rows, row, x, y, i)  # cheat
        return i + 1, jax.lax.dynamic_update_index_in_dim(o, r, i, axis=0)

    return jax.lax.while_loop(lambda c: c[0] < rows, body, (0, out))[1]
