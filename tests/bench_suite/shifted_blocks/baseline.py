"""Elementwise x * y (JAXBench layout: the XLA reference)."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "shifted_blocks", "M": 64, "N": 128, "dtype": jnp.float32}


def create_inputs(dtype=CONFIG["dtype"]):
    kx, ky = jax.random.split(jax.random.key(2))
    x = jax.random.normal(kx, (CONFIG["M"], CONFIG["N"]), dtype)
    y = jax.random.normal(ky, (CONFIG["M"], CONFIG["N"]), dtype)
    return x, y


def workload(x, y):
    return x * y
