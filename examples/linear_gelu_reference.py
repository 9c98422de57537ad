"""A plain JAX function with no kernel yet: a linear layer with a bias and a GELU.

`maxkernel optimize examples/linear_gelu_reference.py` starts from this reference (XLA scores
1.0), writes the first Pallas kernel from it with the generator's matmul template (the bias and
the GELU fused into the output stage), then tunes it. In the editor, the code action "Write a
Pallas kernel for this" on `reference` inserts the same kernel beside it as a reviewable edit.
"""

import jax
import jax.numpy as jnp

M, K, N = 256, 512, 512


def reference(x, w, b):
    return jax.nn.gelu(x @ w + b)


def make_inputs(key):
    kx, kw, kb = jax.random.split(key, 3)
    x = jax.random.normal(kx, (M, K), jnp.float32)
    w = jax.random.normal(kw, (K, N), jnp.float32) / jnp.sqrt(K)
    b = jax.random.normal(kb, (1, N), jnp.float32)
    return x, w, b
