# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    tokens, d_model = 16384, 2048
    kx, kr, kw = jax.random.split(jax.random.key(208), 3)
    x = jax.random.normal(kx, (tokens, d_model), dtype=dtype)
    residual = jax.random.normal(kr, (tokens, d_model), dtype=dtype)
    w = jax.random.uniform(kw, (d_model,), dtype=dtype, minval=0.5, maxval=1.5)
    eps = 1e-6
    dynamic_args = [x, residual, w]
    static_args = [eps]
    return dynamic_args, static_args


# Computation
def computation(x, residual, w, eps):
    h = x + residual
    return h * jax.lax.rsqrt(jnp.mean(h * h, axis=-1, keepdims=True) + eps) * w
