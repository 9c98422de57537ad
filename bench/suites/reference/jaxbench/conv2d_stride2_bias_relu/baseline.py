"""Downsampling 3x3 convolution, stride 2, SAME padding (NHWC, HWIO), doubling the channels,
+ bias + ReLU."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "conv2d_stride2_bias_relu", "batch": 4, "in_channels": 32, "out_channels": 64,
          "height": 1024, "width": 1024}


def create_inputs(dtype=jnp.float32):
    kx, kw, kb = jax.random.split(jax.random.key(372), 3)
    ci, co = CONFIG["in_channels"], CONFIG["out_channels"]
    x = jax.random.normal(kx, (CONFIG["batch"], CONFIG["height"], CONFIG["width"], ci), dtype=dtype)
    w = jax.random.normal(kw, (3, 3, ci, co), dtype=dtype) * (9 * ci) ** -0.5
    b = jax.random.normal(kb, (co,), dtype=dtype) * 0.1
    return x, w, b


def workload(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, window_strides=(2, 2), padding="SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y + b)
