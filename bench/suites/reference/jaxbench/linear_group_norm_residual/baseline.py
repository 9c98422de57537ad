"""Linear layer, GroupNorm (8 groups, no affine), plus a residual input."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "linear_group_norm_residual", "rows": 8192, "d_in": 2048, "d_out": 4096,
          "groups": 8}


def create_inputs(dtype=jnp.float32):
    kx, kw, kr = jax.random.split(jax.random.key(312), 3)
    n, k, c = CONFIG["rows"], CONFIG["d_in"], CONFIG["d_out"]
    x = jax.random.normal(kx, (n, k), dtype=dtype)
    w = jax.random.normal(kw, (k, c), dtype=dtype) * k ** -0.5
    residual = jax.random.normal(kr, (n, c), dtype=dtype)
    return x, w, residual


def workload(x, w, residual):
    y = x @ w
    g = y.reshape(y.shape[0], CONFIG["groups"], -1)
    g = (g - g.mean(-1, keepdims=True)) / jnp.sqrt(g.var(-1, keepdims=True) + 1e-6)
    return g.reshape(y.shape) + residual
