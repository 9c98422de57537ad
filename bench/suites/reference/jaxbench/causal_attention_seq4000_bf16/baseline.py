"""Causal self-attention over 4000 tokens (no power-of-two tile divides the sequence), bfloat16
q/k/v with float32 scores and softmax."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "causal_attention_seq4000_bf16", "batch": 1, "heads": 32, "seq_len": 4000,
          "head_dim": 128}


def create_inputs(dtype=jnp.bfloat16):
    kq, kk, kv = jax.random.split(jax.random.key(232), 3)
    shape = (CONFIG["batch"], CONFIG["heads"], CONFIG["seq_len"], CONFIG["head_dim"])
    return tuple(jax.random.normal(k, shape, dtype=dtype) for k in (kq, kk, kv))


def workload(q, k, v):
    n = q.shape[2]
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k, preferred_element_type=jnp.float32)
    s = s * (q.shape[-1] ** -0.5)
    keep = jnp.arange(n)[:, None] >= jnp.arange(n)[None, :]
    s = jnp.where(keep, s, -1e30)
    p = jax.nn.softmax(s, axis=-1).astype(v.dtype)
    return jnp.einsum("bhqk,bhkd->bhqd", p, v)


def get_flops():
    b, h, s, d = (CONFIG[k] for k in ("batch", "heads", "seq_len", "head_dim"))
    return 2 * b * h * s * s * d
