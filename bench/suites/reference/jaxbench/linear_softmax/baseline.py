"""Scores of a classifier head, normalised over the classes: softmax(x @ W) per row."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "linear_softmax", "rows": 4096, "d_in": 4096, "classes": 8192}


def create_inputs(dtype=jnp.float32):
    kx, kw = jax.random.split(jax.random.key(103))
    x = jax.random.normal(kx, (CONFIG["rows"], CONFIG["d_in"]), dtype=dtype)
    w = jax.random.normal(kw, (CONFIG["d_in"], CONFIG["classes"]), dtype=dtype) * 0.02
    return x, w


def workload(x, w):
    return jax.nn.softmax(x @ w, axis=-1)


def get_flops():
    return 2 * CONFIG["rows"] * CONFIG["d_in"] * CONFIG["classes"]
