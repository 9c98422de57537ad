"""1x1 (pointwise) convolution, NHWC, channel expansion 128 -> 256, bias, GELU."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "conv2d_pointwise_gelu", "batch": 1, "height": 1024, "width": 1024,
          "c_in": 128, "c_out": 256}


def create_inputs(dtype=jnp.float32):
    kx, kw, kb = jax.random.split(jax.random.key(311), 3)
    ci, co = CONFIG["c_in"], CONFIG["c_out"]
    x = jax.random.normal(kx, (CONFIG["batch"], CONFIG["height"], CONFIG["width"], ci), dtype=dtype)
    w = jax.random.normal(kw, (1, 1, ci, co), dtype=dtype) * ci ** -0.5
    b = jax.random.normal(kb, (co,), dtype=dtype) * 0.1
    return x, w, b


def workload(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.gelu(y + b)
