"""Kernel body with a shape error: found while tracing."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

ROWS, COLS = 64, 128


def reference(x):
    return x * 3.0


def make_inputs(key):
    return (jax.random.normal(key, (ROWS, COLS), jnp.float32),)


def _kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] @ jnp.ones((3, 5), jnp.float32)  # TRACE_ERROR_LINE


def candidate(x):
    spec = pl.BlockSpec((16, COLS), lambda i: (i, 0))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(ROWS // 16,), in_specs=[spec], out_specs=spec)(x)
