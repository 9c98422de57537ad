# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.bfloat16):
    batch, height, width, channels = 2, 1024, 1024, 128
    x = jax.random.normal(jax.random.key(375), (batch, height, width, channels), dtype=dtype)
    dynamic_args = [x]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x):
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))
