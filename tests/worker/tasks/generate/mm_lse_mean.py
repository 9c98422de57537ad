"""generate tests: matmul + bias, then per row logsumexp plus the row mean
(matmul_row_reduction with a (rows,) output)."""
import jax
import jax.numpy as jnp

M, K, N = 128, 256, 512
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, b):
    y = x @ w + b
    return jax.scipy.special.logsumexp(y, axis=-1) - jnp.mean(y, axis=-1)


def make_inputs(key):
    kx, kw, kb = jax.random.split(key, 3)
    return (jax.random.normal(kx, (M, K), jnp.float32),
            jax.random.normal(kw, (K, N), jnp.float32) * 0.1,
            jax.random.normal(kb, (1, N), jnp.float32))
