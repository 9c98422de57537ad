"""Inclusive prefix sum along each row: a scan (the scan template's class)."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "cumsum_rows", "rows": 8192, "cols": 8192}


def create_inputs(dtype=jnp.float32):
    return (jax.random.normal(jax.random.key(111), (CONFIG["rows"], CONFIG["cols"]), dtype=dtype),)


def workload(x):
    return jnp.cumsum(x, axis=1)
