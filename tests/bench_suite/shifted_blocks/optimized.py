"""Deliberately wrong: x's index map reads the NEXT block of rows (off by one block), so the
output does not match the reference. `maxkernel bench` must report this task as incorrect."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CONFIG = {"name": "shifted_blocks_pallas", "M": 64, "N": 128, "dtype": jnp.float32}
BLOCK_ROWS = 16


def create_inputs(dtype=CONFIG["dtype"]):
    kx, ky = jax.random.split(jax.random.key(2))
    x = jax.random.normal(kx, (CONFIG["M"], CONFIG["N"]), dtype)
    y = jax.random.normal(ky, (CONFIG["M"], CONFIG["N"]), dtype)
    return x, y


def _multiply_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] * y_ref[...]


def workload(x, y):
    rows, cols = x.shape
    blocks = rows // BLOCK_ROWS
    shifted = pl.BlockSpec((BLOCK_ROWS, cols), lambda i: ((i + 1) % blocks, 0))  # the bug
    spec = pl.BlockSpec((BLOCK_ROWS, cols), lambda i: (i, 0))
    return pl.pallas_call(
        _multiply_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(blocks,),
        in_specs=[shifted, spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, y)
