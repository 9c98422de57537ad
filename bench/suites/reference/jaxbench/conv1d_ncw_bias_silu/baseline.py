"""1-D convolution in PyTorch's layout (NCW input, OIW weight, width 3, padding 1) + bias + SiLU."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "conv1d_ncw_bias_silu", "batch": 8, "in_channels": 256, "out_channels": 256,
          "length": 8192, "width": 3}


def create_inputs(dtype=jnp.float32):
    kx, kw, kb = jax.random.split(jax.random.key(371), 3)
    ci, co, k = CONFIG["in_channels"], CONFIG["out_channels"], CONFIG["width"]
    x = jax.random.normal(kx, (CONFIG["batch"], ci, CONFIG["length"]), dtype=dtype)
    w = jax.random.normal(kw, (co, ci, k), dtype=dtype) * (k * ci) ** -0.5
    b = jax.random.normal(kb, (co,), dtype=dtype) * 0.1
    return x, w, b


def workload(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, window_strides=(1,), padding=((1, 1),),
                                     dimension_numbers=("NCW", "OIW", "NCW"))
    return jax.nn.silu(y + b[None, :, None])
