"""Test kernel for the debugger on the TPU compiler's errors (tests/optimize/test_optimize_debug.py):
out = 2x + 1 over (256, 2048) f32 row blocks of a (2048, 2048) input, double-buffered in and out:
8 MiB of VMEM per step, inside v5e's 16 MiB scoped limit. One 2048-row block (or two 1024-row
blocks) lowers (jax.export accepts it) but needs 32 MiB, and the TPU compiler (libtpu) refuses it:
CompileTimeScopedVmemOom."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 2048, 2048
BLOCK_ROWS = 256
TOLERANCES = {"rtol": 1e-6, "atol": 1e-6}


def reference(x):
    return 2.0 * x + 1.0


def make_inputs(key):
    return (jax.random.normal(key, (ROWS, COLS), jnp.float32),)


def _affine(x_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...] + 1.0


def candidate(x):
    rows, cols = x.shape
    return pl.pallas_call(
        _affine,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(rows, BLOCK_ROWS),),
        in_specs=[pl.BlockSpec((BLOCK_ROWS, cols), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((BLOCK_ROWS, cols), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x)
