"""generate tests: row reductions after a matmul whose row is tiled over N (online statistics).
REDUCTION picks the epilogue; the test sets it and the sizes (N = 300: tiles of 128 leave a
ragged last tile of 44 columns). The weight's scale puts logits near +-100, where exp overflows
f32 unless the running shift is right."""
import jax
import jax.numpy as jnp

M, K, N = 40, 64, 300
REDUCTION = "logsumexp"
TOLERANCES = {"rtol": 2e-4, "atol": 2e-4}


def reference(x, w, b, labels):
    y = jnp.dot(x, w, preferred_element_type=jnp.float32)
    if REDUCTION == "logsumexp":
        return jax.nn.logsumexp(y, axis=-1, keepdims=True)
    if REDUCTION == "softmax":
        return jax.nn.softmax(y, axis=-1)
    if REDUCTION == "log_softmax_bias":
        return jax.nn.log_softmax(y + b, axis=-1)
    if REDUCTION == "cross_entropy":
        lse = jax.nn.logsumexp(y, axis=-1)
        return lse - jnp.take_along_axis(y, labels[:, None], axis=-1)[:, 0]
    if REDUCTION == "sigmoid_logsumexp":  # one matmul, an exp after it: not attention
        return jax.nn.logsumexp(jax.nn.sigmoid(y + b), axis=-1)
    if REDUCTION == "sigmoid_scale_logsumexp":
        return jax.nn.logsumexp(jax.nn.sigmoid(y + b) * 2.5, axis=1, keepdims=True)
    if REDUCTION == "tied_sigmoid_logsumexp":  # two chained matmuls, no softmax between them
        return jax.nn.logsumexp(jax.nn.sigmoid(y + b) @ w.T, axis=-1)
    if REDUCTION == "l2norm":
        return y * jax.lax.rsqrt(jnp.sum(y * y, axis=-1, keepdims=True) + 1e-6)
    raise ValueError(REDUCTION)


def make_inputs(key):
    kx, kw, kb, kl = jax.random.split(key, 4)
    return (jax.random.normal(kx, (M, K), jnp.float32),
            jax.random.normal(kw, (K, N), jnp.float32) * 3.0,
            jax.random.normal(kb, (N,), jnp.float32),
            jax.random.randint(kl, (M,), 0, N))
