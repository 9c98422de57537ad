"""Causal self-attention with ALiBi (a per-head linear distance bias instead of position
embeddings): softmax(q k^T / sqrt(d) + m_h * (j - i) + mask) v, slopes m_h = 2^(-8 (h+1) / H)."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "alibi_causal_attention_bf16", "batch": 2, "heads": 16, "seq_len": 4096,
          "head_dim": 128}


def create_inputs(dtype=jnp.bfloat16):
    kq, kk, kv = jax.random.split(jax.random.key(419), 3)
    shape = (CONFIG["batch"], CONFIG["seq_len"], CONFIG["heads"], CONFIG["head_dim"])
    return (jax.random.normal(kq, shape, dtype=dtype), jax.random.normal(kk, shape, dtype=dtype),
            jax.random.normal(kv, shape, dtype=dtype))


def workload(q, k, v):
    s, h, d = q.shape[1], q.shape[2], q.shape[3]
    slopes = jnp.exp2(-8.0 * jnp.arange(1, h + 1, dtype=jnp.float32) / h)
    pos = jnp.arange(s, dtype=jnp.float32)
    distance = pos[None, :] - pos[:, None]
    logits = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32) * d ** -0.5
    logits = logits + slopes[:, None, None] * distance
    logits = jnp.where(distance <= 0, logits, jnp.finfo(jnp.float32).min)
    probs = jax.nn.softmax(logits, axis=-1).astype(v.dtype)
    return jnp.einsum("bhqk,bkhd->bqhd", probs, v)


def get_flops():
    b, h, s, d = (CONFIG[k] for k in ("batch", "heads", "seq_len", "head_dim"))
    return 4 * b * h * s * s * d
