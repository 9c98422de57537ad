"""RetNet's parallel retention: per-head decay gamma_h = 1 - 2 ** (-5 - h), causal."""
import jax
import jax.numpy as jnp


def reference(q, k, v):
    batch, heads, seq, head_dim = q.shape
    gamma = 1.0 - 2.0 ** (-5.0 - jnp.arange(heads, dtype=jnp.float32))
    pos = jnp.arange(seq)
    dist = pos[:, None] - pos[None, :]
    decay = jnp.where(dist >= 0, gamma[:, None, None] ** dist.astype(jnp.float32), 0.0)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) * head_dim ** -0.5
    return jnp.einsum("bhqk,bhkd->bhqd", scores * decay, v)


def make_inputs(key):
    B, H, S, D = 1, 2, 384, 128
    kq, kk, kv = jax.random.split(key, 3)
    return (jax.random.normal(kq, (B, H, S, D), jnp.float32),
            jax.random.normal(kk, (B, H, S, D), jnp.float32),
            jax.random.normal(kv, (B, H, S, D), jnp.float32))
