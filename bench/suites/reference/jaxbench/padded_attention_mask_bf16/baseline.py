"""Batched attention over padded sequences: a (batch, query, key) boolean mask input lets each
query see only its sequence's real keys (lengths differ per batch row); bf16 inputs."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "padded_attention_mask_bf16", "batch": 4, "heads": 16, "seq_len": 2048,
          "head_dim": 128}


def create_inputs(dtype=jnp.bfloat16):
    kq, kk, kv, kl = jax.random.split(jax.random.key(631), 4)
    b, h, s, d = (CONFIG[k] for k in ("batch", "heads", "seq_len", "head_dim"))
    lengths = jax.random.randint(kl, (b,), s // 4, s + 1)
    valid = jnp.arange(s)[None, None, :] < lengths[:, None, None]
    mask = jnp.broadcast_to(valid, (b, s, s))
    return (jax.random.normal(kq, (b, h, s, d), dtype=dtype),
            jax.random.normal(kk, (b, h, s, d), dtype=dtype),
            jax.random.normal(kv, (b, h, s, d), dtype=dtype), mask)


def workload(q, k, v, mask):
    logits = jnp.einsum("bhqd,bhkd->bhqk", q, k, preferred_element_type=jnp.float32)
    logits = logits * q.shape[-1] ** -0.5
    logits = jnp.where(mask[:, None, :, :], logits, jnp.finfo(jnp.float32).min)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(logits, axis=-1).astype(v.dtype), v)


def get_flops():
    b, h, s, d = (CONFIG[k] for k in ("batch", "heads", "seq_len", "head_dim"))
    return 4 * b * h * s * s * d
