"""generate tests: logits = h @ w, then the cross-entropy of integer labels through a one-hot
(matmul_row_reduction with an int operand and an iota)."""
import jax
import jax.numpy as jnp

M, K, V = 64, 128, 256
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(h, w, labels):
    logits = h @ w
    onehot = jax.nn.one_hot(labels, logits.shape[-1])
    return -jnp.sum(onehot * jax.nn.log_softmax(logits, axis=-1), axis=-1)


def make_inputs(key):
    kh, kw, kl = jax.random.split(key, 3)
    return (jax.random.normal(kh, (M, K), jnp.float32),
            jax.random.normal(kw, (K, V), jnp.float32) * 0.1,
            jax.random.randint(kl, (M,), 0, V))
