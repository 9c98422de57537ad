"""Causal linear attention (no softmax, no decay), (batch, seq, heads, dim), bf16."""
import jax
import jax.numpy as jnp


def reference(q, k, v):
    seq = q.shape[1]
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k)
    scores = jnp.where(jnp.tril(jnp.ones((seq, seq), dtype=bool)), scores, 0.0)
    return jnp.einsum("bhqk,bkhd->bqhd", scores, v)


def make_inputs(key):
    B, S, H, D = 1, 256, 2, 128
    kq, kk, kv = jax.random.split(key, 3)
    scale = 0.25
    return (scale * jax.random.normal(kq, (B, S, H, D), jnp.bfloat16),
            scale * jax.random.normal(kk, (B, S, H, D), jnp.bfloat16),
            scale * jax.random.normal(kv, (B, S, H, D), jnp.bfloat16))
