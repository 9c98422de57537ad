# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    rows, d_in, d_out = 4096, 4096, 8192
    kx, kw = jax.random.split(jax.random.key(204))
    x = jax.random.normal(kx, (rows, d_in), dtype=dtype)
    w = jax.random.normal(kw, (d_in, d_out), dtype=dtype) * 0.02
    dynamic_args = [x, w]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w):
    return jax.nn.logsumexp(x @ w, axis=1, keepdims=True)
