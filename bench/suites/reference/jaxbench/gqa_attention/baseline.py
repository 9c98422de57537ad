"""Grouped-query attention without a mask: 32 query heads share 8 key/value heads."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "gqa_attention", "batch": 2, "q_heads": 32, "kv_heads": 8, "seq_len": 2048,
          "head_dim": 128}


def create_inputs(dtype=jnp.float32):
    kq, kk, kv = jax.random.split(jax.random.key(109), 3)
    b, s, d = CONFIG["batch"], CONFIG["seq_len"], CONFIG["head_dim"]
    q = jax.random.normal(kq, (b, CONFIG["q_heads"], s, d), dtype=dtype)
    k = jax.random.normal(kk, (b, CONFIG["kv_heads"], s, d), dtype=dtype)
    v = jax.random.normal(kv, (b, CONFIG["kv_heads"], s, d), dtype=dtype)
    return q, k, v


def workload(q, k, v):
    group = q.shape[1] // k.shape[1]
    k = jnp.repeat(k, group, axis=1)
    v = jnp.repeat(v, group, axis=1)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) * (q.shape[-1] ** -0.5)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v)


def get_flops():
    b, h, s, d = (CONFIG[k] for k in ("batch", "q_heads", "seq_len", "head_dim"))
    return 4 * b * h * s * s * d
