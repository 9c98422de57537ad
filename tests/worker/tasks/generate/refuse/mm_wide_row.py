"""generate tests: a log-softmax over a vocabulary-sized matmul row that does not fit VMEM whole
(refused until the two-phase form: statistics, then each tile normalised)."""
import jax
import jax.numpy as jnp


def reference(h, w):
    return jax.nn.log_softmax(h @ w, axis=-1)


def make_inputs(key):
    kh, kw = jax.random.split(key)
    return (jax.random.normal(kh, (4096, 8192), jnp.float32),
            jax.random.normal(kw, (8192, 128256), jnp.float32))
