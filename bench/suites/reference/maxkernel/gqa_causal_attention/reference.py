# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, q_heads, kv_heads, seq_len, head_dim = 1, 32, 8, 4096, 128
    kq, kk, kv = jax.random.split(jax.random.key(212), 3)
    q = jax.random.normal(kq, (batch, seq_len, q_heads, head_dim), dtype=dtype)
    k = jax.random.normal(kk, (batch, seq_len, kv_heads, head_dim), dtype=dtype)
    v = jax.random.normal(kv, (batch, seq_len, kv_heads, head_dim), dtype=dtype)
    dynamic_args = [q, k, v]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(q, k, v):
    b, s, hq, d = q.shape
    hkv = k.shape[2]
    qg = q.reshape(b, s, hkv, hq // hkv, d)
    logits = jnp.einsum("bqhgd,bkhd->bhgqk", qg, k) / jnp.sqrt(jnp.float32(d))
    mask = jnp.tril(jnp.ones((s, s), dtype=bool))
    logits = jnp.where(mask, logits, jnp.finfo(logits.dtype).min)
    out = jnp.einsum("bhgqk,bkhd->bqhgd", jax.nn.softmax(logits, axis=-1), v)
    return out.reshape(b, s, hq, d)
