"""generate tests: linear + bias, BatchNorm in training form (statistics over the batch rows,
affine), then ReLU (matmul_batch_norm). The sizes line is replaced by the tests."""
import jax
import jax.numpy as jnp

M, K, C = 64, 256, 256
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(x, w, b, gamma, beta, eps):
    y = x @ w + b
    mean = jnp.mean(y, axis=0)
    var = jnp.var(y, axis=0)
    return jax.nn.relu((y - mean) / jnp.sqrt(var + eps) * gamma + beta)


def make_inputs(key):
    kx, kw, kb, kg, kt = jax.random.split(key, 5)
    x = jax.random.normal(kx, (M, K), jnp.float32) + 0.5
    w = jax.random.normal(kw, (K, C), jnp.float32) * 0.05
    b = jax.random.normal(kb, (C,), jnp.float32)
    gamma = 1.0 + 0.1 * jax.random.normal(kg, (C,), jnp.float32)
    beta = 0.1 * jax.random.normal(kt, (C,), jnp.float32)
    return x, w, b, gamma, beta, 1e-5
