# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.float32):
    batch, heads, seq_len, head_dim = 4, 16, 2048, 64
    kq, kk, kv = jax.random.split(jax.random.key(211), 3)
    shape = (batch, heads, seq_len, head_dim)
    q = jax.random.normal(kq, shape, dtype=dtype)
    k = jax.random.normal(kk, shape, dtype=dtype)
    v = jax.random.normal(kv, shape, dtype=dtype)
    sm_scale = 0.125
    dynamic_args = [q, k, v]
    static_args = [sm_scale]
    return dynamic_args, static_args


# Computation
def computation(q, k, v, sm_scale):
    logits = jnp.einsum("bhqd,bhkd->bhqk", q, k) * sm_scale
    weights = jax.nn.softmax(logits, axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", weights, v)
