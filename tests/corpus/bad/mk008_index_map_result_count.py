"""MK008: the block is 2-D but the index_map returns a single block index."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 4096, 512
TR = 256


def _softplus_kernel(x_ref, o_ref):
    o_ref[...] = jax.nn.softplus(x_ref[...])


def softplus(x):
    return pl.pallas_call(
        _softplus_kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),
        grid=(ROWS // TR,),
        in_specs=[pl.BlockSpec((TR, COLS), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((TR, COLS), lambda i: (i,)),  # expect: MK008
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x)


def corpus_entry():
    return softplus, (jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),)
