"""Test kernel for extra shapes (tests/optimize/test_optimize_shapes.py): out = 3x + 1 over
128-row blocks, its grid sized with floor division (rows // BLOCK_ROWS). It reads its sizes from
its input, so it is correct at any multiple of 128 rows; a variant with 256-row blocks is correct
at the task's 512 rows but drops the last half block of the ragged 384-row shape."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 512, 128
BLOCK_ROWS = 128
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(x):
    return 3.0 * x + 1.0


def make_inputs(key):
    return (jax.random.normal(key, (ROWS, COLS), jnp.float32),)


def _kernel(x_ref, o_ref):
    o_ref[...] = 3.0 * x_ref[...] + 1.0


def candidate(x):
    rows, cols = x.shape
    spec = pl.BlockSpec((BLOCK_ROWS, cols), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((rows, cols), x.dtype),
        grid=(rows // BLOCK_ROWS,),
        in_specs=[spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x)
