"""generate tests: a SwiGLU MLP block (gated_mlp), silu(x @ w_gate) * (x @ w_up) @ w_down. The
sizes line is replaced by the tests (full size; a ragged size)."""
import jax
import jax.numpy as jnp

T, D, F = 64, 256, 384
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w_gate, w_up, w_down):
    h = jax.nn.silu(x @ w_gate) * (x @ w_up)
    return h @ w_down


def make_inputs(key):
    kx, kg, ku, kd = jax.random.split(key, 4)
    x = jax.random.normal(kx, (2, T, D), jnp.float32)
    w_gate = jax.random.normal(kg, (D, F), jnp.float32) * 0.05
    w_up = jax.random.normal(ku, (D, F), jnp.float32) * 0.05
    w_down = jax.random.normal(kd, (F, D), jnp.float32) * 0.05
    return x, w_gate, w_up, w_down
