"""Test kernel for the debugger on wrong results (tests/optimize/test_optimize_debug.py): each row
scaled to unit length, with a guard for a zero row (the task's inputs have one, row 5).
fixtures/make_debug_chain.py derives a variant that multiplies by rsqrt of the squared sum with
no guard: row 5 becomes 0 * inf = NaN."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 64, 128
BLOCK_ROWS = 8
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def reference(x):
    norm = jnp.sqrt(jnp.sum(x * x, axis=1, keepdims=True))
    return x / jnp.maximum(norm, 1e-6)


def make_inputs(key):
    x = jax.random.normal(key, (ROWS, COLS), jnp.float32)
    return (x.at[5].set(0.0),)


def _kernel(x_ref, o_ref):
    x = x_ref[...]
    norm = jnp.sqrt(jnp.sum(x * x, axis=1, keepdims=True))
    o_ref[...] = x / jnp.maximum(norm, 1e-6)


def candidate(x):
    spec = pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),
        grid=(ROWS // BLOCK_ROWS,),
        in_specs=[spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x)
