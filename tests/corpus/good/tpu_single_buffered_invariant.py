"""Add a per-position bias table to every sequence in a batch.

The bias block's index_map is constant, so it is fetched once; pl.Buffered(1)
drops its second pipeline buffer.  (JAX 0.10.2 TPU pallas_call accepts only
buffer_count 1 or 2.)
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BATCH, SEQ, HIDDEN = 64, 512, 1024


def _add_pos_bias_kernel(x_ref, bias_ref, o_ref):
    o_ref[...] = (x_ref[...].astype(jnp.float32) + bias_ref[...]).astype(o_ref.dtype)


def add_pos_bias(x, bias):
    return pl.pallas_call(
        _add_pos_bias_kernel,
        out_shape=jax.ShapeDtypeStruct((BATCH, SEQ, HIDDEN), jnp.bfloat16),
        grid=(BATCH,),
        in_specs=[
            pl.BlockSpec((None, SEQ, HIDDEN), lambda b: (b, 0, 0)),
            pl.BlockSpec((SEQ, HIDDEN), lambda b: (0, 0), pipeline_mode=pl.Buffered(1)),
        ],
        out_specs=pl.BlockSpec((None, SEQ, HIDDEN), lambda b: (b, 0, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, bias)


def corpus_entry():
    return add_pos_bias, (
        jax.ShapeDtypeStruct((BATCH, SEQ, HIDDEN), jnp.bfloat16),
        jax.ShapeDtypeStruct((SEQ, HIDDEN), jnp.float32),
    )
