"""A reference that hard-codes a size (CONFIG["rows"]) instead of reading it from its input:
it cannot run at a shrunk instance, and must say so clearly."""
import jax
import jax.numpy as jnp

CONFIG = {"rows": 512, "cols": 256}


def create_inputs(dtype=jnp.float32):
    return (jax.random.normal(jax.random.key(0), (CONFIG["rows"] * CONFIG["cols"],), dtype),)


def workload(x):
    return jnp.sum(x.reshape(CONFIG["rows"], CONFIG["cols"]), axis=1)  # hard-coded size
