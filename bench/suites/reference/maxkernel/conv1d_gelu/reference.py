# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, length, channels, width = 8, 8192, 128, 5
    kx, kw = jax.random.split(jax.random.key(214))
    x = jax.random.normal(kx, (batch, length, channels), dtype=dtype)
    w = jax.random.normal(kw, (width, channels, channels), dtype=dtype) * (1.0 / (width * channels) ** 0.5)
    dynamic_args = [x, w]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w):
    y = jax.lax.conv_general_dilated(x, w, window_strides=(1,), padding="SAME",
                                     dimension_numbers=("NWC", "WIO", "NWC"))
    return jax.nn.gelu(y)
