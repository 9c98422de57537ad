# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, length, cin, cout, width = 8, 16384, 128, 256, 4
    kx, kw = jax.random.split(jax.random.key(374))
    x = jax.random.normal(kx, (batch, length, cin), dtype=dtype)
    w = jax.random.normal(kw, (width, cin, cout), dtype=dtype) * (1.0 / (width * cin) ** 0.5)
    dynamic_args = [x, w]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w):
    y = jax.lax.conv_general_dilated(x, w, window_strides=(2,), padding=((1, 1),),
                                     dimension_numbers=("NWC", "WIO", "NWC"))
    return jax.nn.relu(y)
