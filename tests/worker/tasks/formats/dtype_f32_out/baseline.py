"""bfloat16 inputs and reference output; the Pallas version returns float32 (JAXBench's harness
accepts that, compared at 1e-2)."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "bf16_scale_add", "rows": 32, "cols": 256}


def create_inputs(dtype=jnp.bfloat16):
    k1, k2 = jax.random.split(jax.random.key(5))
    x = jax.random.normal(k1, (CONFIG["rows"], CONFIG["cols"]), dtype=dtype)
    y = jax.random.normal(k2, (CONFIG["rows"], CONFIG["cols"]), dtype=dtype)
    return x, y


def workload(x, y):
    return 1.5 * x + y
