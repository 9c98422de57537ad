"""Causal multi-head self-attention (prefill): softmax(q k^T / sqrt(d) + mask) v."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "causal_attention", "batch": 2, "heads": 16, "seq_len": 4096, "head_dim": 128}


def create_inputs(dtype=jnp.float32):
    kq, kk, kv = jax.random.split(jax.random.key(108), 3)
    shape = (CONFIG["batch"], CONFIG["heads"], CONFIG["seq_len"], CONFIG["head_dim"])
    return (jax.random.normal(kq, shape, dtype=dtype), jax.random.normal(kk, shape, dtype=dtype),
            jax.random.normal(kv, shape, dtype=dtype))


def workload(q, k, v):
    s = q.shape[2]
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    causal = jnp.arange(s)[:, None] >= jnp.arange(s)[None, :]
    scores = jnp.where(causal, scores, -1e30)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v)


def get_flops():
    b, h, s, d = (CONFIG[k] for k in ("batch", "heads", "seq_len", "head_dim"))
    return 4 * b * h * s * s * d
