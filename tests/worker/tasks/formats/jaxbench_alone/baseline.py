"""A JAXBench-layout baseline with no Pallas version beside it."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "gelu_bias", "rows": 64, "cols": 256}


def create_inputs(dtype=jnp.float32):
    k1, k2 = jax.random.split(jax.random.key(0))
    x = jax.random.normal(k1, (CONFIG["rows"], CONFIG["cols"]), dtype=dtype)
    b = jax.random.normal(k2, (CONFIG["cols"],), dtype=dtype)
    return x, b


def workload(x, b):
    with jax.named_scope("bench_kernel"):
        return jax.nn.gelu(x + b)


def get_flops():
    return 10 * CONFIG["rows"] * CONFIG["cols"]
