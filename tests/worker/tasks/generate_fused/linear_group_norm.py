"""generate tests: linear + bias, GroupNorm over groups of channels (affine), then SiLU
(matmul_group_norm). The sizes line is replaced by the tests (full size; a ragged size)."""
import jax
import jax.numpy as jnp

M, K, C, GROUPS = 64, 256, 512, 8
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, b, gamma, beta, eps):
    y = x @ w + b
    g = y.reshape(y.shape[0], GROUPS, -1)
    mean = jnp.mean(g, axis=-1, keepdims=True)
    var = jnp.var(g, axis=-1, keepdims=True)
    g = (g - mean) / jnp.sqrt(var + eps)
    y = g.reshape(y.shape) * gamma + beta
    return jax.nn.silu(y)


def make_inputs(key):
    kx, kw, kb, kg, kt = jax.random.split(key, 5)
    x = jax.random.normal(kx, (M, K), jnp.float32)
    w = jax.random.normal(kw, (K, C), jnp.float32) * 0.05
    b = jax.random.normal(kb, (C,), jnp.float32)
    gamma = 1.0 + 0.1 * jax.random.normal(kg, (C,), jnp.float32)
    beta = 0.1 * jax.random.normal(kt, (C,), jnp.float32)
    return x, w, b, gamma, beta, 1e-5
