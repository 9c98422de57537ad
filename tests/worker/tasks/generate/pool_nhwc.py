"""generate tests: pooling over non-overlapping windows of a channels-last image (the pool
class). POOL picks the spelling; the tests set it, the shape and the dtype."""
import jax
import jax.numpy as jnp

SHAPE = (2, 16, 16, 128)
DTYPE = jnp.float32
POOL = "max_reshape"
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def reference(x):
    n, h, w, c = x.shape
    if POOL == "max_reshape":
        return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))
    if POOL == "mean_reshape_3x2":
        return x.reshape(n, h // 3, 3, w // 2, 2, c).mean(axis=(2, 4))
    if POOL == "avg_reduce_window":
        return jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
    if POOL == "max_overlapping":
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "VALID")
    if POOL == "max_nchw":
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    if POOL == "relu_then_max":
        return jnp.maximum(x, 0.0).reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))
    raise ValueError(POOL)


def make_inputs(key):
    return (jax.random.normal(key, SHAPE, jnp.float32).astype(DTYPE),)
