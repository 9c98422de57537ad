"""generate tests (attention refusal): looks like attention, but the softmax normalises over the
QUERY axis (axis=-2); it must not get the attention template."""
import jax
import jax.numpy as jnp


def reference(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) * 0.125
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-2), v)


def make_inputs(key):
    kq, kk, kv = jax.random.split(key, 3)
    shape = (1, 2, 128, 64)
    return (jax.random.normal(kq, shape, jnp.float32), jax.random.normal(kk, shape, jnp.float32),
            jax.random.normal(kv, shape, jnp.float32))
