"""Language-model loss per token: logits = h @ W_vocab, loss = logsumexp(logits) - logits[label]."""
import jax
import jax.numpy as jnp

CONFIG = {"name": "linear_cross_entropy", "tokens": 4096, "hidden": 2048, "vocab": 32768}


def create_inputs(dtype=jnp.float32):
    kh, kw, kl = jax.random.split(jax.random.key(104), 3)
    h = jax.random.normal(kh, (CONFIG["tokens"], CONFIG["hidden"]), dtype=dtype)
    w = jax.random.normal(kw, (CONFIG["hidden"], CONFIG["vocab"]), dtype=dtype) * 0.02
    labels = jax.random.randint(kl, (CONFIG["tokens"],), 0, CONFIG["vocab"], dtype=jnp.int32)
    return h, w, labels


def workload(h, w, labels):
    logits = jnp.dot(h, w)
    lse = jax.nn.logsumexp(logits, axis=-1)
    target = jnp.take_along_axis(logits, labels[:, None], axis=-1)[:, 0]
    return lse - target


def get_flops():
    return 2 * CONFIG["tokens"] * CONFIG["hidden"] * CONFIG["vocab"]
