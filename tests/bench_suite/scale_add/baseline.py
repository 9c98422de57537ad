"""Elementwise 2x + y (JAXBench layout: the XLA reference)."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "scale_add", "M": 64, "N": 128, "dtype": jnp.float32}


def create_inputs(dtype=CONFIG["dtype"]):
    kx, ky = jax.random.split(jax.random.key(0))
    x = jax.random.normal(kx, (CONFIG["M"], CONFIG["N"]), dtype)
    y = jax.random.normal(ky, (CONFIG["M"], CONFIG["N"]), dtype)
    return x, y


def workload(x, y):
    return 2.0 * x + y
