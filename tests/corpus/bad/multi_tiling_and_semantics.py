"""Several independent mistakes in one kernel: an unaligned lane tile (MK001),
a bf16 8-row tile (MK002), and a semantics tuple shorter than the grid (MK004)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CONFIG = {"rows": 1024, "cols": 4096}
BLOCK = {"rows": 8, "cols": 200}


def _silu_kernel(x_ref, o_ref, z_ref):
    x = x_ref[...].astype(jnp.float32)
    y = x * jax.nn.sigmoid(x)
    o_ref[...] = y[:, : o_ref.shape[1]].astype(o_ref.dtype)
    z_ref[...] = y[: z_ref.shape[0], :].astype(z_ref.dtype)


def silu(x):
    rows, cols = CONFIG["rows"], CONFIG["cols"]
    return pl.pallas_call(
        _silu_kernel,
        out_shape=(
            jax.ShapeDtypeStruct((rows, cols), jnp.float32),
            jax.ShapeDtypeStruct((rows, cols), jnp.bfloat16),
        ),
        grid=(rows // 256, cols // 512),
        in_specs=[pl.BlockSpec((256, 512), lambda i, j: (i, j))],
        out_specs=(
            pl.BlockSpec((256, BLOCK["cols"]), lambda i, j: (i, j)),  # expect: MK001
            pl.BlockSpec((BLOCK["rows"], 512), lambda i, j: (i, j)),  # expect: MK002
        ),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),  # expect: MK004
    )(x)


def corpus_entry():
    return silu, (jax.ShapeDtypeStruct((CONFIG["rows"], CONFIG["cols"]), jnp.float32),)
