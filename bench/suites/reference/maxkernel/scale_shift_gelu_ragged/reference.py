# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    rows, cols = 4097, 5000
    kx, ks, kb = jax.random.split(jax.random.key(233), 3)
    x = jax.random.normal(kx, (rows, cols), dtype=dtype)
    scale = 1.0 + 0.1 * jax.random.normal(ks, (cols,), dtype=dtype)
    shift = 0.1 * jax.random.normal(kb, (cols,), dtype=dtype)
    dynamic_args = [x, scale, shift]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, scale, shift):
    return jax.nn.gelu(x * scale + shift, approximate=False)
