"""generate tests: JAXBench form, an elementwise mix of two inputs with a narrow last dim
(lane-dense view), a log1p of a square and an integer power (elementwise)."""
import jax
import jax.numpy as jnp

CONFIG = {"shape": (128, 32, 16), "dtype": jnp.float32}


def create_inputs(dtype=CONFIG["dtype"]):
    k1, k2 = jax.random.split(jax.random.key(3))
    return (jax.random.normal(k1, CONFIG["shape"], dtype), jax.random.normal(k2, CONFIG["shape"], dtype))


def workload(a, b):
    return jnp.maximum(a, b) ** 3 - jnp.log1p(b * b) / 2.0
