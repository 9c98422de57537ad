"""Paged decode attention for the count-axis shrink tests.  At {"factor": 4, "min_dim": 16}: the
page pool (64 pages) shrinks by the size rule and the page table's values follow it; batch 4 and
heads 16 shrink as count axes while pages per sequence, also 4, is contracted and stays (the page
table keeps it), so pages_per_seq * page_size still bounds the lengths."""
import jax
import jax.numpy as jnp

CONFIG = {"batch": 4, "heads": 16, "kv_heads": 2, "head_dim": 32, "page_size": 8, "pages_per_seq": 4,
          "total_pages": 64}


def create_inputs(dtype=jnp.float32):
    kq, kk, kv, kt, kl = jax.random.split(jax.random.key(7), 5)
    b, h, kvh, d = CONFIG["batch"], CONFIG["heads"], CONFIG["kv_heads"], CONFIG["head_dim"]
    s, pps, total = CONFIG["page_size"], CONFIG["pages_per_seq"], CONFIG["total_pages"]
    q = jax.random.normal(kq, (b, h, d), dtype)
    k_pages = jax.random.normal(kk, (kvh, total, s, d), dtype)
    v_pages = jax.random.normal(kv, (kvh, total, s, d), dtype)
    page_table = jax.random.randint(kt, (b, pps), 0, total, dtype=jnp.int32)
    lengths = jax.random.randint(kl, (b,), 1, pps * s + 1, dtype=jnp.int32)
    return q, k_pages, v_pages, page_table, lengths


def workload(q, k_pages, v_pages, page_table, lengths):
    b, h, d = q.shape
    kvh = k_pages.shape[0]
    keys = k_pages[:, page_table].reshape(kvh, b, -1, d)
    values = v_pages[:, page_table].reshape(kvh, b, -1, d)
    qg = q.reshape(b, kvh, h // kvh, d)
    logits = jnp.einsum("bkgd,kbtd->bkgt", qg, keys)
    valid = jnp.arange(keys.shape[2])[None, :] < lengths[:, None]
    logits = jnp.where(valid[:, None, None, :], logits, -jnp.inf)
    return jnp.einsum("bkgt,kbtd->bkgd", jax.nn.softmax(logits, axis=-1), values).reshape(b, h, d)
