"""3x3 convolution (NHWC, same padding) + bias + ReLU: no kernel template covers a convolution."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "conv2d_bias_relu", "batch": 8, "height": 1024, "width": 1024, "channels": 32,
          "kernel": 3}


def create_inputs(dtype=jnp.float32):
    kx, kw, kb = jax.random.split(jax.random.key(110), 3)
    c, r = CONFIG["channels"], CONFIG["kernel"]
    x = jax.random.normal(kx, (CONFIG["batch"], CONFIG["height"], CONFIG["width"], c), dtype=dtype)
    w = jax.random.normal(kw, (r, r, c, c), dtype=dtype) * (1.0 / (r * r * c) ** 0.5)
    b = jax.random.normal(kb, (c,), dtype=dtype) * 0.1
    return x, w, b


def workload(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y + b)
