"""Multi-scale retention (RetNet's parallel form): each head decays its past by its own gamma,
o = ((q k^T / sqrt(d)) * D) v with D[h, i, j] = gamma_h ** (i - j) for i >= j, else 0."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "retention_multiscale_decay", "batch": 2, "heads": 8, "seq_len": 4096,
          "head_dim": 128}


def create_inputs(dtype=jnp.float32):
    kq, kk, kv = jax.random.split(jax.random.key(311), 3)
    shape = (CONFIG["batch"], CONFIG["heads"], CONFIG["seq_len"], CONFIG["head_dim"])
    return (jax.random.normal(kq, shape, dtype=dtype), jax.random.normal(kk, shape, dtype=dtype),
            jax.random.normal(kv, shape, dtype=dtype))


def workload(q, k, v):
    h, s = q.shape[1], q.shape[2]
    gammas = 1.0 - jnp.exp2(-5.0 - jnp.arange(h, dtype=jnp.float32))
    n = jnp.arange(s)
    gap = (n[:, None] - n[None, :]).astype(jnp.float32)
    decay = jnp.where(gap >= 0, jnp.power(gammas[:, None, None], gap), 0.0)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(q.shape[-1]))
    return jnp.einsum("bhqk,bhkd->bhqd", scores * decay[None], v)


def get_flops():
    b, h, s, d = (CONFIG[k] for k in ("batch", "heads", "seq_len", "head_dim"))
    return 4 * b * h * s * s * d
