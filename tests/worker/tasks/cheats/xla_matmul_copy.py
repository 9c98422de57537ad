"""Cheat: the whole matmul runs in XLA and the pallas_call only copies its result (correct, and a
time model that counts only the kernel ranks it far ahead). `honest` is the tiled kernel."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

M = N = K = 64
BLOCK = 32
TOLERANCES = {"rtol": 1e-4, "atol": 1e-4}


def reference(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32)


def make_inputs(key):
    ka, kb = jax.random.split(key)
    return (jax.random.normal(ka, (M, K), jnp.float32), jax.random.normal(kb, (K, N), jnp.float32))


def _copy(c_ref, o_ref):
    o_ref[...] = c_ref[...]


def candidate(a, b):
    c = jnp.dot(a, b, preferred_element_type=jnp.float32)  # cheat
    spec = pl.BlockSpec((BLOCK, N), lambda i: (i, 0))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32), grid=(M // BLOCK,),
                          in_specs=[spec], out_specs=spec)(c)


def _matmul(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)


def honest(a, b):
    return pl.pallas_call(
        _matmul, out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32), grid=(M // BLOCK, N // BLOCK),
        in_specs=[pl.BlockSpec((BLOCK, K), lambda i, j: (i, 0)), pl.BlockSpec((K, BLOCK), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((BLOCK, BLOCK), lambda i, j: (i, j)))(a, b)
