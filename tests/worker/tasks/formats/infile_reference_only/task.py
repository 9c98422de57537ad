"""An in-file task with only the reference and its inputs (no kernel yet)."""
import jax
import jax.numpy as jnp


def reference(x, y):
    return jnp.tanh(x) * y


def make_inputs(key):
    kx, ky = jax.random.split(key)
    return (jax.random.normal(kx, (32, 128), jnp.float32),
            jax.random.normal(ky, (32, 128), jnp.float32))
