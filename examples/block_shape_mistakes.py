"""Three mistakes the static checks catch before anything runs (open it in the editor, or run
`maxkernel check examples/block_shape_mistakes.py`)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

M, N = 1024, 1024
BM, BN = 100, 256  # 100 rows: not a multiple of 8 (MK001)


def scale_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def scale(x):
    return pl.pallas_call(
        scale_kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        grid=(pl.cdiv(M, BM), N // BN),
        in_specs=[pl.BlockSpec((BM, BN), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((BM, BN), lambda i: (i, 0)),  # one index for a 2-D grid (MK003)
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),  # (MK004)
    )(x)
