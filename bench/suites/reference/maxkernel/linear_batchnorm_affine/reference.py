# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, d_in, d_out = 2048, 8192, 8192
    ks = jax.random.split(jax.random.key(404), 5)
    x = jax.random.normal(ks[0], (batch, d_in), dtype=dtype)
    w = jax.random.normal(ks[1], (d_in, d_out), dtype=dtype) * 0.01
    b = jax.random.normal(ks[2], (d_out,), dtype=dtype)
    gamma = jax.random.uniform(ks[3], (d_out,), dtype=dtype, minval=0.5, maxval=1.5)
    beta = jax.random.normal(ks[4], (d_out,), dtype=dtype) * 0.1
    eps = 1e-5
    dynamic_args = [x, w, b, gamma, beta]
    static_args = [eps]
    return dynamic_args, static_args


# Computation
def computation(x, w, b, gamma, beta, eps):
    y = x @ w + b
    mean = y.mean(axis=0)
    centered = y - mean
    var = (centered * centered).mean(axis=0)
    return centered * jax.lax.rsqrt(var + eps) * gamma + beta
