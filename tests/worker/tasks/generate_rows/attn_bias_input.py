"""Attention with a relative-position bias given as an input (T5-style, one (query, key) table per
head), added to the scaled scores before the softmax; no mask."""
import jax
import jax.numpy as jnp


def reference(q, k, v, bias):
    head_dim = q.shape[-1]
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) * head_dim ** -0.5
    scores = scores + bias[None]
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v)


def make_inputs(key):
    B, H, S, D = 2, 2, 384, 128
    kq, kk, kv, kb = jax.random.split(key, 4)
    return (jax.random.normal(kq, (B, H, S, D), jnp.float32),
            jax.random.normal(kk, (B, H, S, D), jnp.float32),
            jax.random.normal(kv, (B, H, S, D), jnp.float32),
            jax.random.normal(kb, (H, S, S), jnp.float32))
