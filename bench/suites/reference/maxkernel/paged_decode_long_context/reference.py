# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.bfloat16):
    batch, heads, kv_heads, head_dim = 8, 32, 8, 128
    page_size, pages_per_seq, total_pages = 64, 128, 4096
    kq, kk, kv, kt, kl = jax.random.split(jax.random.key(359), 5)
    q = jax.random.normal(kq, (batch, heads, head_dim), dtype=dtype)
    k_pages = jax.random.normal(kk, (kv_heads, total_pages, page_size, head_dim), dtype=dtype)
    v_pages = jax.random.normal(kv, (kv_heads, total_pages, page_size, head_dim), dtype=dtype)
    page_table = jax.random.randint(kt, (batch, pages_per_seq), 0, total_pages, dtype=jnp.int32)
    # Long contexts: between 2k positions and the table's 8k.
    lengths = jax.random.randint(kl, (batch,), 2048, page_size * pages_per_seq + 1, dtype=jnp.int32)
    dynamic_args = [q, k_pages, v_pages, page_table, lengths]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(q, k_pages, v_pages, page_table, lengths):
    batch, heads, head_dim = q.shape
    kv_heads, _, page_size, _ = k_pages.shape
    positions = page_table.shape[1] * page_size
    k = k_pages[:, page_table].reshape(kv_heads, batch, positions, head_dim)
    v = v_pages[:, page_table].reshape(kv_heads, batch, positions, head_dim)
    q = q.reshape(batch, kv_heads, heads // kv_heads, head_dim)
    scores = jnp.einsum("bkgd,kbtd->bkgt", q, k).astype(jnp.float32) / jnp.sqrt(float(head_dim))
    in_context = jnp.arange(positions)[None, None, None, :] < lengths[:, None, None, None]
    probs = jax.nn.softmax(jnp.where(in_context, scores, -jnp.inf), axis=-1)
    out = jnp.einsum("bkgt,kbtd->bkgd", probs.astype(v.dtype), v)
    return out.reshape(batch, heads, head_dim)
