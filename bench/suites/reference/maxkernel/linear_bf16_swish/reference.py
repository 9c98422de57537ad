# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.bfloat16):
    tokens, d_in, d_out = 8192, 4096, 4096
    kx, kw = jax.random.split(jax.random.key(203))
    x = jax.random.normal(kx, (tokens, d_in), dtype=dtype)
    w = (jax.random.normal(kw, (d_in, d_out), dtype=jnp.float32) * 0.015).astype(dtype)
    dynamic_args = [x, w]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w):
    y = jnp.dot(x, w, preferred_element_type=jnp.float32)
    return (y * jax.nn.sigmoid(y)).astype(x.dtype)
