"""Elementwise 2x + y as a Pallas kernel over blocks of rows."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CONFIG = {"name": "scale_add_pallas", "M": 64, "N": 128, "dtype": jnp.float32}
BLOCK_ROWS = 16


def create_inputs(dtype=CONFIG["dtype"]):
    kx, ky = jax.random.split(jax.random.key(0))
    x = jax.random.normal(kx, (CONFIG["M"], CONFIG["N"]), dtype)
    y = jax.random.normal(ky, (CONFIG["M"], CONFIG["N"]), dtype)
    return x, y


def _scale_add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...] + y_ref[...]


def workload(x, y):
    rows, cols = x.shape
    spec = pl.BlockSpec((BLOCK_ROWS, cols), lambda i: (i, 0))
    return pl.pallas_call(
        _scale_add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(rows // BLOCK_ROWS,),
        in_specs=[spec, spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, y)
