# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.bfloat16):
    batch, seq, d_model, d_ff = 8, 1024, 2048, 8192
    kx, kg, ku = jax.random.split(jax.random.key(414), 3)
    x = jax.random.normal(kx, (batch, seq, d_model), dtype=dtype)
    w_gate = jax.random.normal(kg, (d_model, d_ff), dtype=dtype) * 0.02
    w_up = jax.random.normal(ku, (d_model, d_ff), dtype=dtype) * 0.02
    dynamic_args = [x, w_gate, w_up]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w_gate, w_up):
    return jax.nn.gelu(x @ w_gate, approximate=True) * (x @ w_up)
