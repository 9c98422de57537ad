"""AXPY on 1-D vectors with 1-D blocks.

Rank-1 TPU blocks must equal the array length, be a multiple of 8*128 = 1024
elements, or be a power of two >= 128 * (32 / bitwidth).
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

N = 1 << 22
CHUNK = 64 * 1024          # multiple of 1024


def _axpy_kernel(alpha_ref, x_ref, y_ref, o_ref):
    o_ref[...] = alpha_ref[0] * x_ref[...] + y_ref[...]


def axpy(alpha, x, y):
    vec = pl.BlockSpec((CHUNK,), lambda i: (i,))
    return pl.pallas_call(
        _axpy_kernel,
        out_shape=jax.ShapeDtypeStruct((N,), jnp.float32),
        grid=(N // CHUNK,),
        in_specs=[pl.BlockSpec(memory_space=pltpu.SMEM), vec, vec],
        out_specs=vec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(alpha, x, y)


def corpus_entry():
    return axpy, (
        jax.ShapeDtypeStruct((1,), jnp.float32),
        jax.ShapeDtypeStruct((N,), jnp.float32),
        jax.ShapeDtypeStruct((N,), jnp.float32),
    )
