"""3x3 convolution in PyTorch's layout (NCHW input, OIHW weight, padding 1) + bias + tanh."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "conv2d_nchw_bias_tanh", "batch": 2, "in_channels": 32, "out_channels": 64,
          "height": 1024, "width": 1024}


def create_inputs(dtype=jnp.float32):
    kx, kw, kb = jax.random.split(jax.random.key(306), 3)
    ci, co = CONFIG["in_channels"], CONFIG["out_channels"]
    x = jax.random.normal(kx, (CONFIG["batch"], ci, CONFIG["height"], CONFIG["width"]), dtype=dtype)
    w = jax.random.normal(kw, (co, ci, 3, 3), dtype=dtype) * (9 * ci) ** -0.5
    b = jax.random.normal(kb, (co,), dtype=dtype) * 0.1
    return x, w, b


def workload(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding=((1, 1), (1, 1)),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return jnp.tanh(y + b.reshape(1, -1, 1, 1))
