# corpus-requires: jax<0.4.36 (dict compiler_params; rejected by 0.6.x and 0.10.2)
"""Oldest compiler_params spelling: `dict(mosaic=dict(dimension_semantics=...))`."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

M, N = 4096, 4096
BM, BN = 256, 512


def _relu_kernel(x_ref, o_ref):
    o_ref[...] = jnp.maximum(x_ref[...], 0)


def relu(x):
    return pl.pallas_call(
        _relu_kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        grid=(M // BM, N // BN),
        in_specs=[pl.BlockSpec((BM, BN), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j: (i, j)),
        compiler_params=dict(mosaic=dict(dimension_semantics=("parallel", "parallel"))),  # noqa: C408
    )(x)


def corpus_entry():
    return relu, (jax.ShapeDtypeStruct((M, N), jnp.float32),)
