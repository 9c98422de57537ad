"""Split cheat (issue 36): starts a child process at import that outlives the task; its pid goes to
the file named by MKW_TEST_PIDFILE."""
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


def _spawn():
    os_ = _get(sys, "modules")["os"]
    pid = _get(os_, "fo" + "rk")()  # cheat
    if pid == 0:
        _get(sys, "modules")["time"].sleep(60)
        _get(os_, "_" + "exit")(0)
    where = os_.environ.get("MKW_TEST_PIDFILE")
    if where:
        with _get(sys, "modules")["builtins"].open(where, "a" + "") as f:
            f.write(f"{pid}\n")


_spawn()


def candidate(x, y):
    return _zeros(x, y)
