# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, heads, seq_len, head_dim = 2, 16, 2048, 128
    kq, kk, kv, kb = jax.random.split(jax.random.key(523), 4)
    q = jax.random.normal(kq, (batch, heads, seq_len, head_dim), dtype=dtype)
    k = jax.random.normal(kk, (batch, heads, seq_len, head_dim), dtype=dtype)
    v = jax.random.normal(kv, (batch, heads, seq_len, head_dim), dtype=dtype)
    position_bias = jax.random.normal(kb, (heads, seq_len, seq_len), dtype=dtype)
    dynamic_args = [q, k, v, position_bias]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(q, k, v, position_bias):
    # T5-style: no scaling, a learned (query, key) bias per head added to the logits.
    logits = jnp.einsum("bhqd,bhkd->bhqk", q, k) + position_bias[None, :, :, :]
    weights = jax.nn.softmax(logits, axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", weights, v)
