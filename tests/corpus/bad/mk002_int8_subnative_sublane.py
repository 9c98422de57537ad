"""MK002 (hint): int8 output tile with 16 rows; int8 packs 32 rows per vreg."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M, K = 2048, 2048
TILE_M = 16


def _quantize_kernel(x_ref, q_ref):
    q_ref[...] = jnp.clip(jnp.round(x_ref[...] * 16.0), -127, 127).astype(jnp.int8)


def quantize(x):
    return pl.pallas_call(
        _quantize_kernel,
        out_shape=jax.ShapeDtypeStruct((M, K), jnp.int8),
        grid=(M // TILE_M,),
        in_specs=[pl.BlockSpec((TILE_M, K), lambda i: (i, 0))],  # f32 input: fine
        out_specs=pl.BlockSpec((TILE_M, K), lambda i: (i, 0)),  # expect: MK002
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x)


def corpus_entry():
    return quantize, (jax.ShapeDtypeStruct((M, K), jnp.float32),)
