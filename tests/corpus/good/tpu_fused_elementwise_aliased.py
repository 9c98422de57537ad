"""In-place fused bias + SiLU + residual over a flattened activation (1-D grid).

The activation buffer is donated: input 0 aliases output 0.
"""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 16384, 1024
ROW_BLOCK = 256


def _fused_kernel(act_ref, bias_ref, res_ref, out_ref):
    h = act_ref[...].astype(jnp.float32) + bias_ref[...].astype(jnp.float32)
    h = h * jax.nn.sigmoid(h)
    out_ref[...] = (h + res_ref[...].astype(jnp.float32)).astype(out_ref.dtype)


@functools.partial(jax.jit, donate_argnums=(0,))
def fused_bias_silu_residual(act, bias, residual):
    row = pl.BlockSpec((ROW_BLOCK, COLS), lambda i: (i, 0))
    return pl.pallas_call(
        _fused_kernel,
        out_shape=jax.ShapeDtypeStruct(act.shape, act.dtype),
        grid=(ROWS // ROW_BLOCK,),
        in_specs=[row, pl.BlockSpec((1, COLS), lambda i: (0, 0)), row],
        out_specs=row,
        input_output_aliases={0: 0},
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(act, bias, residual)


def corpus_entry():
    return fused_bias_silu_residual, (
        jax.ShapeDtypeStruct((ROWS, COLS), jnp.bfloat16),
        jax.ShapeDtypeStruct((1, COLS), jnp.bfloat16),
        jax.ShapeDtypeStruct((ROWS, COLS), jnp.bfloat16),
    )
