"""Test kernel for the diagnosis (tests/optimize/test_optimize_diagnosis.py): an elementwise add
with 8-row blocks over a tall array, so the grid's per-step cost dominates (grid-overhead-bound)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 8192, 128
BLOCK_ROWS = 8
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(x, y):
    return x + y


def make_inputs(key):
    kx, ky = jax.random.split(key)
    return (jax.random.normal(kx, (ROWS, COLS), jnp.float32),
            jax.random.normal(ky, (ROWS, COLS), jnp.float32))


def _add(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def candidate(x, y):
    rows, cols = x.shape
    spec = pl.BlockSpec((BLOCK_ROWS, cols), lambda i: (i, 0))
    return pl.pallas_call(
        _add,
        out_shape=jax.ShapeDtypeStruct((rows, cols), jnp.float32),
        grid=(rows // BLOCK_ROWS,),
        in_specs=[spec, spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, y)
