"""Bad block shape: rows per block (12) is not a multiple of 8.

reference / make_inputs define the task; `candidate` is the kernel under
test (the worker's default entry for the infile form).
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 64, 128
BLOCK_ROWS = 12  # not a multiple of 8: TPU lowering rejects it
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(x, y):
    return 2.0 * x + y


def make_inputs(key):
    kx, ky = jax.random.split(key)
    x = jax.random.normal(kx, (ROWS, COLS), jnp.float32)
    y = jax.random.uniform(ky, (ROWS, COLS), jnp.float32, minval=-1.0, maxval=1.0)
    return x, y


def _kernel(x_ref, y_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...] + y_ref[...]


def candidate(x, y):
    spec = pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0))
    return pl.pallas_call(  # PALLAS_CALL_LINE
        _kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(ROWS // BLOCK_ROWS,),
        in_specs=[spec, spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        cost_estimate=pl.CostEstimate(flops=2 * ROWS * COLS, transcendentals=0,
                                      bytes_accessed=3 * ROWS * COLS * 4),
    )(x, y)
