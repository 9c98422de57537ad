"""A fused elementwise chain: tanh(a) * sigmoid(b) + 0.1 * c (a gated activation with a skip)."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "gated_tanh_chain", "rows": 8192, "cols": 8192}


def create_inputs(dtype=jnp.float32):
    ka, kb, kc = jax.random.split(jax.random.key(107), 3)
    shape = (CONFIG["rows"], CONFIG["cols"])
    return (jax.random.normal(ka, shape, dtype=dtype), jax.random.normal(kb, shape, dtype=dtype),
            jax.random.normal(kc, shape, dtype=dtype))


def workload(a, b, c):
    return jnp.tanh(a) * jax.nn.sigmoid(b) + 0.1 * c
