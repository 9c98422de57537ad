# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.bfloat16):
    batch, seq, d_model, d_ff = 2, 2048, 4096, 11008
    kx, kg, ku, kd = jax.random.split(jax.random.key(401), 4)
    x = jax.random.normal(kx, (batch, seq, d_model), dtype=dtype)
    w_gate = jax.random.normal(kg, (d_model, d_ff), dtype=dtype) * 0.02
    w_up = jax.random.normal(ku, (d_model, d_ff), dtype=dtype) * 0.02
    w_down = jax.random.normal(kd, (d_ff, d_model), dtype=dtype) * 0.01
    dynamic_args = [x, w_gate, w_up, w_down]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(x, w_gate, w_up, w_down):
    gate = x @ w_gate
    up = x @ w_up
    return (gate * jax.nn.sigmoid(gate) * up) @ w_down
