"""PyTorch's ConvTranspose2d(32, 16, kernel 4, stride 2, padding 1) in JAX (NCHW input, weight
(in, out, kh, kw) flipped into a stride-1 convolution of the 2x-dilated input) + bias + ReLU:
the upsampling step of a decoder."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "conv_transpose2d_nchw_bias_relu", "batch": 2, "in_channels": 32,
          "out_channels": 16, "height": 1024, "width": 1024, "kernel": 4, "stride": 2, "padding": 1}


def create_inputs(dtype=jnp.float32):
    kx, kw, kb = jax.random.split(jax.random.key(412), 3)
    ci, co, k = CONFIG["in_channels"], CONFIG["out_channels"], CONFIG["kernel"]
    x = jax.random.normal(kx, (CONFIG["batch"], ci, CONFIG["height"], CONFIG["width"]), dtype=dtype)
    w = jax.random.normal(kw, (ci, co, k, k), dtype=dtype) * (k * k * ci / 4) ** -0.5
    b = jax.random.normal(kb, (co,), dtype=dtype) * 0.1
    return x, w, b


def workload(x, w, b):
    k, s, p = CONFIG["kernel"], CONFIG["stride"], CONFIG["padding"]
    w_oihw = jnp.flip(w, (2, 3)).transpose(1, 0, 2, 3)
    y = jax.lax.conv_general_dilated(x, w_oihw, window_strides=(1, 1),
                                     padding=((k - 1 - p, k - 1 - p), (k - 1 - p, k - 1 - p)),
                                     lhs_dilation=(s, s), dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return jax.nn.relu(y + b.reshape(1, -1, 1, 1))
