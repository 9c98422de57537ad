"""In-file task for compile-ranked autotuning: out = 2 * x + y over (2048, 1024) f32, tiled over
rows by the module constant BLOCK_ROWS. Every block size that divides the rows is correct, and the
interpreter runs the largest fastest (fewest steps); for v5e the TPU compiler refuses blocks of 1024
rows or more (in, in and out double-buffered exceed the 16 MiB scoped VMEM) and predicts the fewest
cycles for a middle size."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 2048, 1024
BLOCK_ROWS = 64
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
    )(x, y)
