"""generate tests: a degenerate task. An InstanceNorm over the (1, 1) spatial dims of a linear
layer's output is x - mean(x) = 0: the matmul never reaches the output."""
import jax
import jax.numpy as jnp

M, K, C = 64, 128, 256
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w):
    y = (x @ w).reshape(M, C, 1, 1)
    mean = jnp.mean(y, axis=(2, 3), keepdims=True)
    var = jnp.var(y, axis=(2, 3), keepdims=True)
    return ((y - mean) / jnp.sqrt(var + 1e-5)).reshape(M, C)


def make_inputs(key):
    kx, kw = jax.random.split(key)
    return (jax.random.normal(kx, (M, K), jnp.float32),
            jax.random.normal(kw, (K, C), jnp.float32) * 0.05)
