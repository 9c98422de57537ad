"""Dense layer of a transformer MLP: x @ W + b followed by GELU (tanh form)."""
import jax
import jax.numpy as jnp

CONFIG = {
    "name": "linear_bias_gelu",
    "tokens": 4096,
    "d_in": 8192,
    "d_out": 8192,
}


def create_inputs(dtype=jnp.float32):
    kx, kw, kb = jax.random.split(jax.random.key(101), 3)
    x = jax.random.normal(kx, (CONFIG["tokens"], CONFIG["d_in"]), dtype=dtype)
    w = jax.random.normal(kw, (CONFIG["d_in"], CONFIG["d_out"]), dtype=dtype) * 0.02
    b = jax.random.normal(kb, (CONFIG["d_out"],), dtype=dtype) * 0.1
    return x, w, b


def workload(x, w, b):
    return jax.nn.gelu(jnp.dot(x, w) + b, approximate=True)


def get_flops():
    return 2 * CONFIG["tokens"] * CONFIG["d_in"] * CONFIG["d_out"]
