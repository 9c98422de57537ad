"""generate tests: matmul + bias row + tanh-gelu (matmul_epilogue). The sizes line is
replaced by the tests to make the full-size instance."""
import jax
import jax.numpy as jnp

M, K, N = 256, 512, 384
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, b):
    return jax.nn.gelu(x @ w + b)


def make_inputs(key):
    kx, kw, kb = jax.random.split(key, 3)
    x = jax.random.normal(kx, (M, K), jnp.float32)
    w = jax.random.normal(kw, (K, N), jnp.float32) * 0.05
    b = jax.random.normal(kb, (N,), jnp.float32)
    return x, w, b
