# generate tests (attention): MaxKernel's published layout, causal GQA with jnp.repeat of the kv
# heads, an iota-built causal mask with a finite fill, softmax in float32, scale passed static.
import jax
import jax.numpy as jnp


def get_inputs(dtype=jnp.bfloat16):
    batch, heads, kv_heads, seq, head_dim = 1, 4, 2, 256, 128
    kq, kk, kv = jax.random.split(jax.random.key(8), 3)
    q = jax.random.normal(kq, (batch, heads, seq, head_dim), dtype=dtype)
    k = jax.random.normal(kk, (batch, kv_heads, seq, head_dim), dtype=dtype)
    v = jax.random.normal(kv, (batch, kv_heads, seq, head_dim), dtype=dtype)
    dynamic_args = [q, k, v]
    static_args = [0.088388]
    return dynamic_args, static_args


def computation(query, key, value, scale):
    group = query.shape[1] // key.shape[1]
    key = jnp.repeat(key, group, axis=1)
    value = jnp.repeat(value, group, axis=1)
    logits = jnp.einsum("bhqd,bhkd->bhqk", query, key).astype(jnp.float32) * scale
    seq = query.shape[2]
    causal = jnp.arange(seq)[:, None] >= jnp.arange(seq)[None, :]
    logits = jnp.where(causal[None, None], logits, -1e30)
    probs = jax.nn.softmax(logits, axis=-1).astype(value.dtype)
    return jnp.einsum("bhqk,bhkd->bhqd", probs, value)
