# corpus-requires: jax<0.8 (plgpu.TritonCompilerParams was removed in 0.8.0)
"""GPU row softmax with the pre-0.8 `plgpu.TritonCompilerParams` spelling.

One row per program; (1, 512) blocks are fine on GPU but not TPU-tileable.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

ROWS, COLS = 8192, 512


def _softmax_row_kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    o_ref[...] = (e / jnp.sum(e, axis=-1, keepdims=True)).astype(o_ref.dtype)


def softmax(x):
    return pl.pallas_call(
        _softmax_row_kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), x.dtype),
        grid=(ROWS,),
        in_specs=[pl.BlockSpec((1, COLS), lambda r: (r, 0))],
        out_specs=pl.BlockSpec((1, COLS), lambda r: (r, 0)),
        compiler_params=plgpu.TritonCompilerParams(num_warps=4, num_stages=3),
    )(x)


def corpus_entry():
    return softmax, (jax.ShapeDtypeStruct((ROWS, COLS), jnp.float16),)
