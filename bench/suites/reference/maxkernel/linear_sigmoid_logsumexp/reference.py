# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    rows, d_in, d_out = 4096, 2048, 8192
    kx, kw, kb = jax.random.split(jax.random.key(371), 3)
    x = jax.random.normal(kx, (rows, d_in), dtype=dtype)
    w = jax.random.normal(kw, (d_in, d_out), dtype=dtype) * 0.03
    b = jax.random.normal(kb, (d_out,), dtype=dtype)
    dynamic_args = [x, w, b]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w, b):
    return jax.nn.logsumexp(jax.nn.sigmoid(x @ w + b), axis=1, keepdims=True)
