"""generate tests: linear (no bias), BatchNorm in training form without affine, then sigmoid
scaled by a static factor (matmul_batch_norm): the suite task linear_batchnorm_sigmoid's
program. The sizes line is replaced by the tests."""
import jax
import jax.numpy as jnp

M, K, C = 64, 256, 256
TOLERANCES = {"rtol": 1e-2, "atol": 1e-2}


def reference(x, w, scale):
    y = x @ w
    y = (y - jnp.mean(y, axis=0)) / jnp.sqrt(jnp.var(y, axis=0) + 1e-5)
    return jax.nn.sigmoid(y) * scale


def make_inputs(key):
    kx, kw = jax.random.split(key, 2)
    x = jax.random.normal(kx, (M, K), jnp.float32) + 0.25
    w = jax.random.normal(kw, (K, C), jnp.float32) * 0.015
    return x, w, 2.0
