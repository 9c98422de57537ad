# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, height, width, c_in, c_out = 2, 1024, 1024, 32, 32
    kx, kw, kb = jax.random.split(jax.random.key(406), 3)
    x = jax.random.normal(kx, (batch, height, width, c_in), dtype=dtype)
    w = jax.random.normal(kw, (3, 3, c_in, c_out), dtype=dtype) * 0.04
    b = jax.random.normal(kb, (c_out,), dtype=dtype) * 0.1
    dynamic_args = [x, w, b]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jnp.maximum(y + b, 0.0)
