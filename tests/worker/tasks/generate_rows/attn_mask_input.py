"""Attention with a key-padding mask given as an input: (batch, query, key) booleans, True where
the key may be attended; masked scores filled with finfo.min."""
import jax
import jax.numpy as jnp


def reference(q, k, v, mask):
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(q.shape[-1]))
    scores = jnp.where(mask[:, None], scores, jnp.finfo(jnp.float32).min)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v)


def make_inputs(key):
    B, H, S, D = 2, 2, 384, 128
    kq, kk, kv, km = jax.random.split(key, 4)
    lengths = jax.random.randint(km, (B,), S // 3, S + 1)
    mask = jnp.broadcast_to(jnp.arange(S)[None, None, :] < lengths[:, None, None], (B, S, S))
    return (jax.random.normal(kq, (B, H, S, D), jnp.float32),
            jax.random.normal(kk, (B, H, S, D), jnp.float32),
            jax.random.normal(kv, (B, H, S, D), jnp.float32), mask)
