"""RMSNorm over a narrow hidden size (96): the block's last dim equals the full
array dim, so it is legal although 96 is not a multiple of 128."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TOKENS = 16384
HIDDEN = 96
BLOCK_TOKENS = 512        # bf16: multiple of 16


def rmsnorm_kernel(x_ref, g_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    y = x * jax.lax.rsqrt(ms + eps) * g_ref[...].astype(jnp.float32)
    o_ref[...] = y.astype(o_ref.dtype)


def rmsnorm(x, gamma):
    return pl.pallas_call(
        functools.partial(rmsnorm_kernel, eps=1e-5),
        out_shape=jax.ShapeDtypeStruct((TOKENS, HIDDEN), jnp.bfloat16),
        grid=(TOKENS // BLOCK_TOKENS,),
        in_specs=[
            pl.BlockSpec((BLOCK_TOKENS, HIDDEN), lambda i: (i, 0)),
            pl.BlockSpec((1, HIDDEN), lambda i: (0, 0)),
        ],
        out_specs=pl.BlockSpec((BLOCK_TOKENS, HIDDEN), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, gamma)


def corpus_entry():
    return rmsnorm, (
        jax.ShapeDtypeStruct((TOKENS, HIDDEN), jnp.bfloat16),
        jax.ShapeDtypeStruct((1, HIDDEN), jnp.bfloat16),
    )
