"""Grouped-query attention for the count-axis shrink tests: at {"factor": 4, "min_dim": 16} the
sequence (64) shrinks by the size rule, batch 4 -> 2, query heads 16 -> 4 and kv heads 4 -> 2 as
count axes (a group of 2 query heads per kv head stays), head_dim 32 (contracted) stays."""
import jax
import jax.numpy as jnp

CONFIG = {"batch": 4, "q_heads": 16, "kv_heads": 4, "seq_len": 64, "head_dim": 32}


def create_inputs(dtype=jnp.float32):
    kq, kk, kv = jax.random.split(jax.random.key(5), 3)
    b, s, d = CONFIG["batch"], CONFIG["seq_len"], CONFIG["head_dim"]
    q = jax.random.normal(kq, (b, CONFIG["q_heads"], s, d), dtype)
    k = jax.random.normal(kk, (b, CONFIG["kv_heads"], s, d), dtype)
    v = jax.random.normal(kv, (b, CONFIG["kv_heads"], s, d), dtype)
    return q, k, v


def workload(q, k, v):
    group = q.shape[1] // k.shape[1]
    k = jnp.repeat(k, group, axis=1)
    v = jnp.repeat(v, group, axis=1)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) * (q.shape[-1] ** -0.5)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v)
