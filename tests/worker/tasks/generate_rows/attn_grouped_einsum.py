"""generate tests (attention): causal GQA written with grouped einsums on (batch, seq, heads,
head_dim) float32: q split into (kv_heads, group), an einsum that jnp lowers with k as the first
matmul operand and a transpose after it, a scale computed as jnp.sqrt(d), finfo.min as the fill."""
import jax
import jax.numpy as jnp

B, S, HQ, HKV, D = 1, 256, 4, 2, 128
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(q, k, v):
    b, s, hq, d = q.shape
    hkv = k.shape[2]
    qg = q.reshape(b, s, hkv, hq // hkv, d)
    logits = jnp.einsum("bqhgd,bkhd->bhgqk", qg, k) / jnp.sqrt(jnp.float32(d))
    mask = jnp.tril(jnp.ones((s, s), dtype=bool))
    logits = jnp.where(mask, logits, jnp.finfo(logits.dtype).min)
    out = jnp.einsum("bhgqk,bkhd->bqhgd", jax.nn.softmax(logits, axis=-1), v)
    return out.reshape(b, s, hq, d)


def make_inputs(key):
    kq, kk, kv = jax.random.split(key, 3)
    return (jax.random.normal(kq, (B, S, HQ, D), jnp.float32),
            jax.random.normal(kk, (B, S, HKV, D), jnp.float32),
            jax.random.normal(kv, (B, S, HKV, D), jnp.float32))
