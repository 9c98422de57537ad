# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    rows, cols = 4096, 8192
    x = jax.random.normal(jax.random.key(213), (rows, cols), dtype=dtype)
    dynamic_args = [x]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x):
    # Sorting is no template's computation: an honest refusal is the expected answer.
    return jnp.sort(x, axis=-1)
