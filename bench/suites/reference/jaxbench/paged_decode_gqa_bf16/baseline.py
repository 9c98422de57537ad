"""One decode step of attention over a paged KV cache: each sequence's K/V pages named by a page
table, positions past its length masked; 32 query heads on 8 kv heads (GQA), bfloat16."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "paged_decode_gqa_bf16", "batch": 32, "heads": 32, "kv_heads": 8,
          "head_dim": 128, "page_size": 64, "pages_per_seq": 32, "total_pages": 2048}


def create_inputs(dtype=jnp.bfloat16):
    kq, kk, kv, kt, kl = jax.random.split(jax.random.key(353), 5)
    b, h, kvh, d = CONFIG["batch"], CONFIG["heads"], CONFIG["kv_heads"], CONFIG["head_dim"]
    s, pps, total = CONFIG["page_size"], CONFIG["pages_per_seq"], CONFIG["total_pages"]
    q = jax.random.normal(kq, (b, h, d), dtype=dtype)
    k_pages = jax.random.normal(kk, (kvh, total, s, d), dtype=dtype)
    v_pages = jax.random.normal(kv, (kvh, total, s, d), dtype=dtype)
    # Any page of the pool may serve any sequence (shared prefixes reuse pages).
    page_table = jax.random.randint(kt, (b, pps), 0, total, dtype=jnp.int32)
    lengths = jax.random.randint(kl, (b,), 1, pps * s + 1, dtype=jnp.int32)
    return q, k_pages, v_pages, page_table, lengths


def workload(q, k_pages, v_pages, page_table, lengths):
    b, h, d = q.shape
    kvh = k_pages.shape[0]
    keys = k_pages[:, page_table].reshape(kvh, b, -1, d)
    values = v_pages[:, page_table].reshape(kvh, b, -1, d)
    qg = q.reshape(b, kvh, h // kvh, d) * (d ** -0.5)
    logits = jnp.einsum("bkgd,kbtd->bkgt", qg, keys, preferred_element_type=jnp.float32)
    valid = jnp.arange(keys.shape[2])[None, :] < lengths[:, None]
    logits = jnp.where(valid[:, None, None, :], logits, -jnp.inf)
    weights = jax.nn.softmax(logits, axis=-1).astype(values.dtype)
    return jnp.einsum("bkgt,kbtd->bkgd", weights, values).reshape(b, h, d)
