"""A gated score head: sigmoid(x @ W + b), scaled, reduced per row with logsumexp."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "linear_sigmoid_scale_logsumexp", "rows": 8192, "d_in": 2048, "d_out": 4096,
          "scale": 4.0}


def create_inputs(dtype=jnp.float32):
    kx, kw, kb = jax.random.split(jax.random.key(372), 3)
    x = jax.random.normal(kx, (CONFIG["rows"], CONFIG["d_in"]), dtype=dtype)
    w = jax.random.normal(kw, (CONFIG["d_in"], CONFIG["d_out"]), dtype=dtype) * 0.03
    b = jax.random.normal(kb, (CONFIG["d_out"],), dtype=dtype)
    return x, w, b


def workload(x, w, b):
    return jax.nn.logsumexp(jax.nn.sigmoid(x @ w + b) * CONFIG["scale"], axis=-1)


def get_flops():
    return 2 * CONFIG["rows"] * CONFIG["d_in"] * CONFIG["d_out"]
