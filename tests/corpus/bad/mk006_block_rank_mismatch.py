"""MK006: output is (B, S, D) but its block is 2-D (the batch dim was forgotten
instead of being squeezed with None)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

B, S, D = 8, 1024, 512
TS = 256


def _scale_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def scale(x):
    return pl.pallas_call(
        _scale_kernel,
        out_shape=jax.ShapeDtypeStruct((B, S, D), jnp.float32),
        grid=(B, S // TS),
        in_specs=[pl.BlockSpec((None, TS, D), lambda b, s: (b, s, 0))],
        out_specs=pl.BlockSpec((TS, D), lambda b, s: (s, 0)),  # expect: MK006
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(x)


def corpus_entry():
    return scale, (jax.ShapeDtypeStruct((B, S, D), jnp.float32),)
