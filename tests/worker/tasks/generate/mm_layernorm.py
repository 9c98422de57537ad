"""generate tests: a linear layer then LayerNorm written with jnp.var (whose divisor jnp writes
as the literal `N - ddof`) and a gelu (matmul_row_reduction); generated at one size, the module
must normalise by the row it sees at another."""
import jax
import jax.numpy as jnp

M, K, N = 1024, 1024, 1024
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, gamma, beta):
    y = x @ w
    mu = jnp.mean(y, axis=-1, keepdims=True)
    var = jnp.var(y, axis=-1, keepdims=True)
    return jax.nn.gelu((y - mu) / jnp.sqrt(var + 1e-5) * gamma + beta)


def make_inputs(key):
    kx, kw, kg, kb = jax.random.split(key, 4)
    return (jax.random.normal(kx, (M, K), jnp.float32),
            jax.random.normal(kw, (K, N), jnp.float32) * 0.05,
            jax.random.uniform(kg, (N,), jnp.float32, minval=0.5, maxval=1.5),
            jax.random.normal(kb, (N,), jnp.float32))
