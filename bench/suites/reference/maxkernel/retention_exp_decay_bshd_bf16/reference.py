# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.bfloat16):
    batch, seq_len, heads, head_dim = 2, 4096, 16, 128
    kq, kk, kv = jax.random.split(jax.random.key(77), 3)
    q = 0.5 * jax.random.normal(kq, (batch, seq_len, heads, head_dim), dtype=dtype)
    k = 0.5 * jax.random.normal(kk, (batch, seq_len, heads, head_dim), dtype=dtype)
    v = jax.random.normal(kv, (batch, seq_len, heads, head_dim), dtype=dtype)
    dynamic_args = [q, k, v]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(q, k, v):
    seq_len, heads = q.shape[1], q.shape[2]
    # Decay rates spread log-uniformly over the heads, from fast (1/32) to slow (1/512).
    rate = jnp.exp(jnp.linspace(jnp.log(1.0 / 32), jnp.log(1.0 / 512), heads))
    t = jnp.arange(seq_len, dtype=jnp.float32)
    gap = t[:, None] - t[None, :]
    # exp of the clamped gap: above the diagonal exp(+rate * gap) would overflow (inf * 0 = NaN).
    decay = jnp.exp(-rate[:, None, None] * jnp.maximum(gap, 0.0)) * (gap >= 0)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) * decay
    out = jnp.einsum("bhqk,bkhd->bqhd", scores.astype(v.dtype), v)
    return out
