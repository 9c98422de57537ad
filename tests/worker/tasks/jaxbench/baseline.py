"""JAXBench-style baseline: RMS norm of rows, scaled by a weight row.

create_inputs takes no key (like JAXBench): the worker draws fresh inputs
with the same shapes, dtypes and value ranges for every seed.
"""
import jax
import jax.numpy as jnp

CONFIG = {"M": 64, "N": 128, "dtype": jnp.float32, "eps": 1e-6}
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def create_inputs(dtype=CONFIG["dtype"]):
    kx, kw = jax.random.split(jax.random.key(42))
    x = jax.random.normal(kx, (CONFIG["M"], CONFIG["N"]), dtype)
    w = jax.random.uniform(kw, (1, CONFIG["N"]), dtype, minval=0.5, maxval=1.5)
    return x, w


def workload(x, w):
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    return x * jax.lax.rsqrt(ms + CONFIG["eps"]) * w


def get_flops():
    return 4 * CONFIG["M"] * CONFIG["N"]
