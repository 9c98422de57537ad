"""generate tests (attention): the library call jax.nn.dot_product_attention, causal, grouped
query attention (the q heads share one kv head), (batch, seq, heads, head_dim) bfloat16."""
import jax
import jax.numpy as jnp

B, S, H, KVH, D = 1, 128, 2, 1, 128
TOLERANCES = {"rtol": 2e-2, "atol": 2e-2}


def reference(q, k, v):
    return jax.nn.dot_product_attention(q, k, v, is_causal=True)


def make_inputs(key):
    kq, kk, kv = jax.random.split(key, 3)
    q = jax.random.normal(kq, (B, S, H, D), jnp.float32).astype(jnp.bfloat16)
    k = jax.random.normal(kk, (B, S, KVH, D), jnp.float32).astype(jnp.bfloat16)
    v = jax.random.normal(kv, (B, S, KVH, D), jnp.float32).astype(jnp.bfloat16)
    return q, k, v
