# Imports
import jax
import jax.numpy as jnp


# Initialization
def get_inputs(dtype=jnp.bfloat16):
    tokens, hidden, vocab = 2048, 768, 50257
    kh, kw, kl = jax.random.split(jax.random.key(231), 3)
    h = jax.random.normal(kh, (tokens, hidden), dtype=dtype)
    w = (jax.random.normal(kw, (hidden, vocab), dtype=jnp.float32) * 0.03).astype(dtype)
    labels = jax.random.randint(kl, (tokens,), 0, vocab, dtype=jnp.int32)
    dynamic_args = [h, w, labels]
    static_args = []
    return dynamic_args, static_args


# Computation
def computation(h, w, labels):
    logits = jnp.dot(h, w, preferred_element_type=jnp.float32)
    lse = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, labels[:, None], axis=-1)[:, 0]
    return lse - picked
