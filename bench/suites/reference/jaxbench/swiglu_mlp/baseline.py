"""Llama-style MLP block: silu(x @ W_gate) * (x @ W_up) @ W_down, bfloat16."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "swiglu_mlp", "tokens": 4096, "d_model": 4096, "d_ff": 14336}


def create_inputs(dtype=jnp.bfloat16):
    kx, kg, ku, kd = jax.random.split(jax.random.key(301), 4)
    t, d, f = CONFIG["tokens"], CONFIG["d_model"], CONFIG["d_ff"]
    x = jax.random.normal(kx, (t, d), dtype=dtype)
    w_gate = (jax.random.normal(kg, (d, f), dtype=jnp.float32) * d ** -0.5).astype(dtype)
    w_up = (jax.random.normal(ku, (d, f), dtype=jnp.float32) * d ** -0.5).astype(dtype)
    w_down = (jax.random.normal(kd, (f, d), dtype=jnp.float32) * f ** -0.5).astype(dtype)
    return x, w_gate, w_up, w_down


def workload(x, w_gate, w_up, w_down):
    hidden = jax.nn.silu(x @ w_gate) * (x @ w_up)
    return hidden @ w_down


def get_flops():
    return 6 * CONFIG["tokens"] * CONFIG["d_model"] * CONFIG["d_ff"]
