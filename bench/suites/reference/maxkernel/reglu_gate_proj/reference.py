# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    tokens, d_model, d_ff = 4096, 4096, 8192
    kx, kg, ku = jax.random.split(jax.random.key(402), 3)
    x = jax.random.normal(kx, (tokens, d_model), dtype=dtype)
    w_gate = jax.random.normal(kg, (d_model, d_ff), dtype=dtype) * 0.015
    w_up = jax.random.normal(ku, (d_model, d_ff), dtype=dtype) * 0.015
    dynamic_args = [x, w_gate, w_up]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w_gate, w_up):
    return jnp.maximum(x @ w_gate, 0.0) * (x @ w_up)
