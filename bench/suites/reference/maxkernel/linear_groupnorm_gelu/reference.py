# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, d_in, d_out = 4096, 4096, 4096
    ks = jax.random.split(jax.random.key(403), 5)
    x = jax.random.normal(ks[0], (batch, d_in), dtype=dtype)
    w = jax.random.normal(ks[1], (d_in, d_out), dtype=dtype) * 0.015
    b = jax.random.normal(ks[2], (d_out,), dtype=dtype) * 0.1
    gamma = jax.random.uniform(ks[3], (d_out,), dtype=dtype, minval=0.5, maxval=1.5)
    beta = jax.random.normal(ks[4], (d_out,), dtype=dtype) * 0.1
    num_groups = 16
    eps = 1e-5
    dynamic_args = [x, w, b, gamma, beta]
    static_args = [num_groups, eps]
    return dynamic_args, static_args


# Computation
def computation(x, w, b, gamma, beta, num_groups, eps):
    y = jnp.dot(x, w) + b
    n, c = y.shape
    g = y.reshape(n, num_groups, c // num_groups)
    mean = jnp.mean(g, axis=2, keepdims=True)
    var = jnp.var(g, axis=2, keepdims=True)
    g = (g - mean) / jnp.sqrt(var + eps)
    return jax.nn.gelu(g.reshape(n, c) * gamma + beta, approximate=False)
