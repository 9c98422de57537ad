"""The first half of a SwiGLU MLP alone: silu(x @ W_gate) * (x @ W_up), the hidden activations."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "swiglu_gate_proj", "tokens": 8192, "d_model": 2048, "d_ff": 5632}


def create_inputs(dtype=jnp.float32):
    kx, kg, ku = jax.random.split(jax.random.key(303), 3)
    t, d, f = CONFIG["tokens"], CONFIG["d_model"], CONFIG["d_ff"]
    x = jax.random.normal(kx, (t, d), dtype=dtype)
    w_gate = jax.random.normal(kg, (d, f), dtype=dtype) * d ** -0.5
    w_up = jax.random.normal(ku, (d, f), dtype=dtype) * d ** -0.5
    return x, w_gate, w_up


def workload(x, w_gate, w_up):
    return jax.nn.silu(jnp.dot(x, w_gate)) * jnp.dot(x, w_up)
