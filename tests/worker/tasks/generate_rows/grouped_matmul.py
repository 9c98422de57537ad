"""generate tests: a grouped (ragged) matmul, MoE expert style (the grouped_matmul template).
The lines below are replaced by the tests (ragged sizes, group sizes with empty groups, bf16,
an epilogue)."""
import jax
import jax.numpy as jnp

M, K, N = 200, 300, 200
GROUP_SIZES = (70, 0, 45, 85)
DTYPE = jnp.float32
TOLERANCES = {"rtol": 2e-2, "atol": 2e-2}


def reference(x, w, group_sizes):
    return jax.lax.ragged_dot(x, w, group_sizes)


def make_inputs(key):
    kx, kw = jax.random.split(key)
    x = jax.random.normal(kx, (M, K), DTYPE)
    w = (jax.random.normal(kw, (len(GROUP_SIZES), K, N), jnp.float32) * K ** -0.5).astype(DTYPE)
    return x, w, jnp.array(GROUP_SIZES, jnp.int32)
