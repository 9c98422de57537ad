# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, depth, height, width, cin, cout = 1, 1024, 16, 16, 32, 16
    kx, kw, kb = jax.random.split(jax.random.key(433), 3)
    x = jax.random.normal(kx, (batch, depth, height, width, cin), dtype=dtype)
    w = jax.random.normal(kw, (3, 3, 3, cin, cout), dtype=dtype) * (1.0 / (27 * cin / 8) ** 0.5)
    b = jax.random.normal(kb, (cout,), dtype=dtype) * 0.1
    dynamic_args = [x, w, b]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w, b):
    y = jax.lax.conv_transpose(x, w, strides=(2, 2, 2), padding="SAME",
                               dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))
    return jax.nn.silu(y + b)
