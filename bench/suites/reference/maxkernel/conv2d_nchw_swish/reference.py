# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, c_in, c_out, size = 2, 32, 64, 1024
    kx, kw, kb = jax.random.split(jax.random.key(411), 3)
    x = jax.random.normal(kx, (batch, c_in, size, size), dtype=dtype)
    w = jax.random.normal(kw, (c_out, c_in, 3, 3), dtype=dtype) * (9 * c_in) ** -0.5
    b = jax.random.normal(kb, (1, c_out, 1, 1), dtype=dtype) * 0.1
    dynamic_args = [x, w, b]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW")) + b
    return y * jax.nn.sigmoid(y)
