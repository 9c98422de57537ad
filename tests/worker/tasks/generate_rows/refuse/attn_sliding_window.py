"""generate tests (attention refusal): a causal sliding-window mask (each query sees the last 64
keys); the template covers causal or no mask only and must say so."""
import jax
import jax.numpy as jnp


def reference(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) * 0.125
    i = jnp.arange(q.shape[2])[:, None]
    j = jnp.arange(k.shape[2])[None, :]
    s = jnp.where((i >= j) & (i - j < 64), s, -1e9)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)


def make_inputs(key):
    kq, kk, kv = jax.random.split(key, 3)
    shape = (1, 2, 256, 128)
    return (jax.random.normal(kq, shape, jnp.float32), jax.random.normal(kk, shape, jnp.float32),
            jax.random.normal(kv, shape, jnp.float32))
