"""Causal attention with ALiBi: the scores get slope_h * (key - query), slopes 2 ** (-8 (h + 1) / heads)."""
import jax
import jax.numpy as jnp


def reference(q, k, v):
    batch, heads, seq, head_dim = q.shape
    slopes = 2.0 ** (-8.0 * jnp.arange(1, heads + 1, dtype=jnp.float32) / heads)
    pos = jnp.arange(seq)
    rel = (pos[None, :] - pos[:, None]).astype(jnp.float32)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(head_dim))
    scores = scores + slopes[:, None, None] * rel
    scores = jnp.where(rel <= 0, scores, -1e30)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v)


def make_inputs(key):
    B, H, S, D = 1, 2, 384, 128
    kq, kk, kv = jax.random.split(key, 3)
    return (jax.random.normal(kq, (B, H, S, D), jnp.float32),
            jax.random.normal(kk, (B, H, S, D), jnp.float32),
            jax.random.normal(kv, (B, H, S, D), jnp.float32))
