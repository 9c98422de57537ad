"""Cross-entropy with integer labels indexing the vocabulary: at a shrunk vocabulary the labels
must be rescaled into the new range (an out-of-range label would read garbage)."""
import jax
import jax.numpy as jnp

CONFIG = {"tokens": 256, "vocab": 1024}


def create_inputs(dtype=jnp.float32):
    k1, k2 = jax.random.split(jax.random.key(2))
    logits = jax.random.normal(k1, (CONFIG["tokens"], CONFIG["vocab"]), dtype)
    labels = jax.random.randint(k2, (CONFIG["tokens"],), 0, CONFIG["vocab"], jnp.int32)
    return logits, labels


def workload(logits, labels):
    lse = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, labels[:, None], axis=-1, mode="fill", fill_value=jnp.nan)[:, 0]
    return lse - picked
