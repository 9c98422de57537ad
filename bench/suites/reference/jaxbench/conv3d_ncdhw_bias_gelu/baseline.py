"""3x3x3 convolution in PyTorch's layout (NCDHW input, OIDHW weight, padding 1) + bias given as
(1, C, 1, 1, 1) + exact GELU (a deep volume of small slices)."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "conv3d_ncdhw_bias_gelu", "batch": 1, "in_channels": 16, "out_channels": 32,
          "depth": 1024, "height": 32, "width": 32}


def create_inputs(dtype=jnp.float32):
    kx, kw, kb = jax.random.split(jax.random.key(373), 3)
    ci, co = CONFIG["in_channels"], CONFIG["out_channels"]
    x = jax.random.normal(kx, (CONFIG["batch"], ci, CONFIG["depth"], CONFIG["height"],
                               CONFIG["width"]), dtype=dtype)
    w = jax.random.normal(kw, (co, ci, 3, 3, 3), dtype=dtype) * (27 * ci) ** -0.5
    b = jax.random.normal(kb, (1, co, 1, 1, 1), dtype=dtype) * 0.1
    return x, w, b


def workload(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, window_strides=(1, 1, 1), padding=((1, 1),) * 3,
                                     dimension_numbers=("NCDHW", "OIDHW", "NCDHW"))
    return jax.nn.gelu(y + b, approximate=False)
