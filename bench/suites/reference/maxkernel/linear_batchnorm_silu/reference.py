# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    tokens, d_in, d_out = 4096, 8192, 4096
    keys = jax.random.split(jax.random.key(202), 6)
    x = jax.random.normal(keys[0], (tokens, d_in), dtype=dtype)
    w = jax.random.normal(keys[1], (d_in, d_out), dtype=dtype) * 0.01
    running_mean = jax.random.normal(keys[2], (d_out,), dtype=dtype) * 0.1
    running_var = jax.random.uniform(keys[3], (d_out,), dtype=dtype, minval=0.5, maxval=2.0)
    gamma = jax.random.uniform(keys[4], (d_out,), dtype=dtype, minval=0.8, maxval=1.2)
    beta = jax.random.normal(keys[5], (d_out,), dtype=dtype) * 0.1
    eps = 1e-5
    dynamic_args = [x, w, running_mean, running_var, gamma, beta]
    static_args = [eps]
    return dynamic_args, static_args


# Computation
def computation(x, w, running_mean, running_var, gamma, beta, eps):
    y = x @ w
    y = (y - running_mean) * jax.lax.rsqrt(running_var + eps) * gamma + beta
    return jax.nn.silu(y)
