"""generate tests: paged attention in decode form (the paged_attention template): one query token
per sequence, K/V in pages picked by a page table, positions past each sequence's length masked.
The lines below are replaced by the tests (ragged lengths, GQA, bf16)."""
import jax
import jax.numpy as jnp

BATCH, HEADS, KV_HEADS, HEAD_DIM = 3, 4, 2, 128
PAGE_SIZE, PAGES_PER_SEQ, TOTAL_PAGES = 16, 5, 20
LENGTHS = (1, 37, 80)
DTYPE = jnp.float32
TOLERANCES = {"rtol": 2e-2, "atol": 2e-2}


def reference(q, k_pages, v_pages, page_table, lengths):
    b, h, d = q.shape
    kvh, _, _s, _ = k_pages.shape
    k = k_pages[:, page_table].reshape(kvh, b, -1, d)  # (kv_heads, batch, positions, head_dim)
    v = v_pages[:, page_table].reshape(kvh, b, -1, d)
    qg = q.reshape(b, kvh, h // kvh, d)
    scores = jnp.einsum("bkgd,kbtd->bkgt", qg, k).astype(jnp.float32) * d ** -0.5
    keep = jnp.arange(k.shape[2])[None, :] < lengths[:, None]
    scores = jnp.where(keep[:, None, None, :], scores, -jnp.inf)
    p = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bkgt,kbtd->bkgd", p.astype(v.dtype), v)
    return out.reshape(b, h, d)


def make_inputs(key):
    kq, kk, kv, kt = jax.random.split(key, 4)
    q = jax.random.normal(kq, (BATCH, HEADS, HEAD_DIM), DTYPE)
    k = jax.random.normal(kk, (KV_HEADS, TOTAL_PAGES, PAGE_SIZE, HEAD_DIM), DTYPE)
    v = jax.random.normal(kv, (KV_HEADS, TOTAL_PAGES, PAGE_SIZE, HEAD_DIM), DTYPE)
    table = jax.random.permutation(kt, TOTAL_PAGES)[:BATCH * PAGES_PER_SEQ]
    return q, k, v, table.reshape(BATCH, PAGES_PER_SEQ).astype(jnp.int32), jnp.array(LENGTHS, jnp.int32)
