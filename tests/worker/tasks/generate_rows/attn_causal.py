"""generate tests (attention): causal multi-head attention, (batch, heads, seq, head_dim) float32,
einsum scores scaled by 1/sqrt(head_dim), a tril mask and jax.nn.softmax."""
import math

import jax
import jax.numpy as jnp

B, H, S, D = 1, 2, 256, 128
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(q, k, v):
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
    mask = jnp.tril(jnp.ones((q.shape[2], k.shape[2]), dtype=bool))
    scores = jnp.where(mask, scores, -jnp.inf)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v)


def make_inputs(key):
    kq, kk, kv = jax.random.split(key, 3)
    shape = (B, H, S, D)
    return (jax.random.normal(kq, shape, jnp.float32), jax.random.normal(kk, shape, jnp.float32),
            jax.random.normal(kv, shape, jnp.float32))
