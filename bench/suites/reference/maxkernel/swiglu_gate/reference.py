# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    tokens, d_ff = 8192, 14336
    kg, ku = jax.random.split(jax.random.key(209))
    gate = jax.random.normal(kg, (tokens, d_ff), dtype=dtype) * 2.0
    up = jax.random.normal(ku, (tokens, d_ff), dtype=dtype)
    dynamic_args = [gate, up]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(gate, up):
    return jax.nn.silu(gate) * up
