# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    tokens, d_model = 8192, 4096
    kx, kg, kb = jax.random.split(jax.random.key(207), 3)
    x = jax.random.normal(kx, (tokens, d_model), dtype=dtype) * 1.5 + 0.3
    gamma = jax.random.uniform(kg, (d_model,), dtype=dtype, minval=0.5, maxval=1.5)
    beta = jax.random.normal(kb, (d_model,), dtype=dtype) * 0.1
    eps = 1e-5
    dynamic_args = [x, gamma, beta]
    static_args = [eps]
    return dynamic_args, static_args


# Computation
def computation(x, gamma, beta, eps):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * gamma + beta
