"""generate tests: scores of a 4-D batched matmul (batch, heads) plus a per-head bias row,
softmax over each row (matmul_row_reduction; the bias is broadcast over the batch dim but not
over the heads, so its index map unflattens the grid's batch index)."""
import jax
import jax.numpy as jnp

B, H, S, T, D = 2, 2, 16, 128, 32
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(q, k, bias):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(D)) + bias
    return jax.nn.softmax(s, axis=-1)


def make_inputs(key):
    kq, kk, kb = jax.random.split(key, 3)
    return (jax.random.normal(kq, (B, H, S, D), jnp.float32),
            jax.random.normal(kk, (B, H, T, D), jnp.float32),
            jax.random.normal(kb, (1, H, 1, T), jnp.float32))
