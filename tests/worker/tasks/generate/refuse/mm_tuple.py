"""generate tests: a matmul whose reference returns a tuple (refused, not half-written)."""
import jax
import jax.numpy as jnp


def reference(x, w):
    y = x @ w
    return y, jnp.tanh(y)


def make_inputs(key):
    kx, kw = jax.random.split(key)
    return jax.random.normal(kx, (64, 128)), jax.random.normal(kw, (128, 128))
