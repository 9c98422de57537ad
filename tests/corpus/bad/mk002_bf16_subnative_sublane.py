"""MK002 (hint): bf16 blocks with 8 rows. Legal (8 | 8) but a bf16 vreg holds
16 rows, so half of every vreg is wasted and packing relayouts are inserted."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 4096, 1024
ROW_TILE = 8


def _scale_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * jnp.bfloat16(0.5)


def scale(x):
    spec = pl.BlockSpec((ROW_TILE, COLS), lambda i: (i, 0))  # expect: MK002
    return pl.pallas_call(
        _scale_kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.bfloat16),
        grid=(ROWS // ROW_TILE,),
        in_specs=[spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x)


def corpus_entry():
    return scale, (jax.ShapeDtypeStruct((ROWS, COLS), jnp.bfloat16),)
