# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, d_in, d_out = 4096, 4096, 4096
    ks = jax.random.split(jax.random.key(405), 2)
    x = jax.random.normal(ks[0], (batch, d_in), dtype=dtype) + 0.25
    w = jax.random.normal(ks[1], (d_in, d_out), dtype=dtype) * 0.015
    scale = 2.0
    dynamic_args = [x, w]
    static_args = [scale]
    return dynamic_args, static_args


# Computation
def computation(x, w, scale):
    y = x @ w
    y = (y - jnp.mean(y, axis=0)) / jnp.sqrt(jnp.var(y, axis=0) + 1e-5)
    return jax.nn.sigmoid(y) * scale
