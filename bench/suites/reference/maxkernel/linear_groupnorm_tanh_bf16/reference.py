# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.bfloat16):
    batch, d_in, d_out = 8192, 4096, 4096
    ks = jax.random.split(jax.random.key(412), 3)
    x = jax.random.normal(ks[0], (batch, d_in), dtype=dtype)
    w = jax.random.normal(ks[1], (d_in, d_out), dtype=dtype) * 0.015
    gamma = jax.random.uniform(ks[2], (d_out,), dtype=dtype, minval=0.5, maxval=1.5)
    dynamic_args = [x, w, gamma]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w, gamma):
    y = (x @ w).astype(jnp.float32)
    g = y.reshape(y.shape[0], 8, -1)
    g = (g - jnp.mean(g, axis=-1, keepdims=True)) * jax.lax.rsqrt(jnp.var(g, axis=-1, keepdims=True) + 1e-5)
    return jnp.tanh(g.reshape(y.shape) * gamma).astype(x.dtype)
