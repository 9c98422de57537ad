# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    rows = 64
    cols = 256
    key = jax.random.key(3)
    x = jax.random.normal(key, (rows, cols), dtype=dtype)
    dynamic_args = [x]
    static_args = [1e-6, 2.0]
    return dynamic_args, static_args


# Computation
def computation(x, eps, scale):
    norm = jnp.sqrt(jnp.sum(x * x, axis=-1, keepdims=True) + eps)
    return scale * x / norm
