"""generate tests: row sums of values the reference broadcast to the matmul's shape (a column,
a constant, a bias row): the emitter keeps broadcasts narrow, so a sum over the row must widen
them first (N * c, N, sum(b))."""
import jax
import jax.numpy as jnp

TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, c, b):
    y = x @ w
    s1 = jnp.sum(jnp.broadcast_to(c, y.shape), axis=-1, keepdims=True)
    s2 = jnp.sum(jnp.ones_like(y), axis=-1, keepdims=True)
    s3 = jnp.sum(jnp.broadcast_to(b, y.shape), axis=-1, keepdims=True)
    return y + s1 + s2 + s3


def make_inputs(key):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return (jax.random.normal(k1, (64, 128), jnp.float32),
            jax.random.normal(k2, (128, 256), jnp.float32) * 0.1,
            jax.random.normal(k3, (64, 1), jnp.float32),
            jax.random.normal(k4, (256,), jnp.float32))
