"""generate tests (rowwise): several per-row results at once (logsumexp, max, L2 norm) of a
float32 matrix: outputs with one value per row."""
import jax
import jax.numpy as jnp

M, N = 64, 256
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def reference(x):
    lse = jax.scipy.special.logsumexp(x, axis=-1)
    return lse, jnp.max(x, axis=-1), jnp.linalg.norm(x, axis=-1, keepdims=True)


def make_inputs(key):
    return (2.0 * jax.random.normal(key, (M, N), jnp.float32),)
