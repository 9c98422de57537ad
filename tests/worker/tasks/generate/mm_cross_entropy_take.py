"""generate tests: per-token loss = logsumexp(logits) - logits[label], the target picked with
jnp.take_along_axis (a gather), after logits = h @ w (matmul_row_reduction)."""
import jax
import jax.numpy as jnp

M, K, V = 64, 128, 256
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(h, w, labels):
    logits = jnp.dot(h, w)
    lse = jax.nn.logsumexp(logits, axis=-1)
    target = jnp.take_along_axis(logits, labels[:, None], axis=-1)[:, 0]
    return lse - target


def make_inputs(key):
    kh, kw, kl = jax.random.split(key, 3)
    return (jax.random.normal(kh, (M, K), jnp.float32),
            jax.random.normal(kw, (K, V), jnp.float32) * 0.1,
            jax.random.randint(kl, (M,), 0, V))
