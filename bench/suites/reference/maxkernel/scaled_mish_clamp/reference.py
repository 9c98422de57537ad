# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    rows, cols = 8192, 8192
    x = jax.random.normal(jax.random.key(210), (rows, cols), dtype=dtype) * 2.0
    scale, lower, upper = 1.7, -2.0, 4.0
    dynamic_args = [x]
    static_args = [scale, lower, upper]
    return dynamic_args, static_args


# Computation
def computation(x, scale, lower, upper):
    mish = x * jnp.tanh(jax.nn.softplus(x))
    return jnp.clip(mish * scale, lower, upper)
