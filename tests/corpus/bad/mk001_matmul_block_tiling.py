"""MK001: a 100-row tile on a (1024, 1024) f32 array: 100 is neither a multiple
of 8 nor the full dim.  The same BlockSpec object is used for input and output."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M, N = 1024, 1024
BM, BN = 100, 128


def _bias_relu_kernel(x_ref, b_ref, o_ref):
    o_ref[...] = jnp.maximum(x_ref[...] + b_ref[...], 0.0)


def bias_relu(x, b):
    tile = pl.BlockSpec((BM, BN), lambda i, j: (i, j))  # expect: MK001
    return pl.pallas_call(
        _bias_relu_kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        grid=(pl.cdiv(M, BM), N // BN),
        in_specs=[tile, pl.BlockSpec((1, BN), lambda i, j: (0, j))],
        out_specs=tile,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(x, b)


def corpus_entry():
    return bias_relu, (
        jax.ShapeDtypeStruct((M, N), jnp.float32),
        jax.ShapeDtypeStruct((1, N), jnp.float32),
    )
