"""generate tests: a matmul epilogue with an op the emitter lacks (a cumulative sum)."""
import jax
import jax.numpy as jnp


def reference(x, w):
    return jnp.cumsum(x @ w, axis=-1)  # line 7: the cumsum


def make_inputs(key):
    kx, kw = jax.random.split(key)
    return jax.random.normal(kx, (64, 128)), jax.random.normal(kw, (128, 128))
