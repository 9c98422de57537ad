"""Row sums as a Pallas kernel: each grid step reduces a block of whole rows."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CONFIG = {"name": "row_sum_pallas", "M": 32, "N": 256, "dtype": jnp.float32}
BLOCK_ROWS = 8


def create_inputs(dtype=CONFIG["dtype"]):
    return (jax.random.normal(jax.random.key(1), (CONFIG["M"], CONFIG["N"]), dtype),)


def _row_sum_kernel(x_ref, o_ref):
    o_ref[...] = jnp.sum(x_ref[...], axis=1, keepdims=True)


def workload(x):
    rows, cols = x.shape
    return pl.pallas_call(
        _row_sum_kernel,
        out_shape=jax.ShapeDtypeStruct((rows, 1), x.dtype),
        grid=(rows // BLOCK_ROWS,),
        in_specs=[pl.BlockSpec((BLOCK_ROWS, cols), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((BLOCK_ROWS, 1), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x)
