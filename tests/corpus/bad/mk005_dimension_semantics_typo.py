"""MK005: misspelt dimension semantic ("paralel")."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 8192, 1024
TR = 512


def _rmsnorm_kernel(x_ref, o_ref):
    x = x_ref[...]
    o_ref[...] = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)


def rmsnorm(x):
    return pl.pallas_call(
        _rmsnorm_kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),
        grid=(ROWS // TR,),
        in_specs=[pl.BlockSpec((TR, COLS), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((TR, COLS), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("paralel",)),  # expect: MK005
    )(x)


def corpus_entry():
    return rmsnorm, (jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),)
