"""generate tests (rowwise): JAXBench form, a temperature softmax over the last axis followed by
an elementwise epilogue (scale by a per-column gate, then a clamp)."""
import jax
import jax.numpy as jnp

CONFIG = {"rows": 128, "cols": 384, "temperature": 0.5, "dtype": jnp.float32}
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def create_inputs(dtype=CONFIG["dtype"]):
    kx, kg = jax.random.split(jax.random.key(11))
    x = jax.random.normal(kx, (CONFIG["rows"], CONFIG["cols"]), dtype)
    gate = jax.random.uniform(kg, (CONFIG["cols"],), dtype, minval=0.5, maxval=1.5)
    return x, gate


def workload(x, gate):
    p = jax.nn.softmax(x / CONFIG["temperature"], axis=-1)
    return jnp.minimum(p * gate * 100.0, 0.75)


def get_flops():
    return 6 * CONFIG["rows"] * CONFIG["cols"]
