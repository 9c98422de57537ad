# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.bfloat16):
    batch, d_in, d_out = 4096, 4096, 8192
    ks = jax.random.split(jax.random.key(413), 4)
    x = jax.random.normal(ks[0], (batch, d_in), dtype=dtype)
    w = jax.random.normal(ks[1], (d_in, d_out), dtype=dtype) * 0.015
    gamma = jax.random.uniform(ks[2], (d_out,), dtype=dtype, minval=0.5, maxval=1.5)
    beta = jax.random.normal(ks[3], (d_out,), dtype=dtype) * 0.1
    eps = 1e-3
    dynamic_args = [x, w, gamma, beta]
    static_args = [eps]
    return dynamic_args, static_args


# Computation
def computation(x, w, gamma, beta, eps):
    y = jnp.dot(x, w, preferred_element_type=jnp.float32)
    mean = jnp.mean(y, axis=0)
    var = jnp.mean(jnp.square(y - mean), axis=0)
    out = (y - mean) * jax.lax.rsqrt(var + eps) * gamma + beta
    return out.astype(jnp.bfloat16)
