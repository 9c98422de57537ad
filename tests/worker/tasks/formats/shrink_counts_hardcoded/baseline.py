"""A reference that hard-codes its batch (8 per-sequence scales): its batch, a count axis, cannot
shrink, so the shrunk instance shrinks only the large sizes (512 -> 128 at factor 4) and says why."""
import jax
import jax.numpy as jnp


def create_inputs(dtype=jnp.float32):
    return (jax.random.normal(jax.random.key(3), (8, 512, 128), dtype),)


def workload(x):
    scale = jnp.arange(1.0, 9.0)[:, None, None]  # hard-coded batch of 8
    return jnp.tanh(x) * scale
