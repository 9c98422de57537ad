"""Sum over each row (JAXBench layout: the XLA reference)."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "row_sum", "M": 32, "N": 256, "dtype": jnp.float32}
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def create_inputs(dtype=CONFIG["dtype"]):
    return (jax.random.normal(jax.random.key(1), (CONFIG["M"], CONFIG["N"]), dtype),)


def workload(x):
    return jnp.sum(x, axis=1, keepdims=True)
