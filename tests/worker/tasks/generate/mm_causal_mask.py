"""generate tests: a matmul whose output is masked by position (iota in the epilogue): the
kernel must offset its row/column iota by the tile's place, which only shows with several tiles."""
import jax
import jax.numpy as jnp

M, K, N = 256, 128, 256
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w):
    y = x @ w
    row = jnp.arange(y.shape[0])[:, None]
    col = jnp.arange(y.shape[1])[None, :]
    return jnp.where(col <= row, y, -1.0)


def make_inputs(key):
    kx, kw = jax.random.split(key)
    return jax.random.normal(kx, (M, K), jnp.float32), jax.random.normal(kw, (K, N), jnp.float32) * 0.1
