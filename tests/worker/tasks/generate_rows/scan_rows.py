"""generate tests: an inclusive prefix sum along the last axis (the scan template). The sizes
line is replaced by the tests (ragged sizes, a reversed scan, bf16)."""
import jax
import jax.numpy as jnp

SHAPE = (4, 64, 512)
REVERSE = False
DTYPE = jnp.float32
TOLERANCES = {"rtol": 2e-2, "atol": 2e-2}


def reference(x):
    if REVERSE:
        return jax.lax.cumsum(x, axis=x.ndim - 1, reverse=True)
    return jnp.cumsum(x, axis=-1)


def make_inputs(key):
    return (jax.random.normal(key, SHAPE, DTYPE),)
