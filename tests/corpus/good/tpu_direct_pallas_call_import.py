"""LayerNorm with `pallas_call` / `BlockSpec` / `CompilerParams` imported by name."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental.pallas import BlockSpec, pallas_call
from jax.experimental.pallas.tpu import CompilerParams

TOKENS, HIDDEN = 4096, 768
TILE = 128


def _layernorm_kernel(x_ref, w_ref, b_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    mu = jnp.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = jnp.mean(xc * xc, axis=-1, keepdims=True)
    y = xc * jax.lax.rsqrt(var + eps)
    o_ref[...] = (y * w_ref[...] + b_ref[...]).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("eps",))
def layernorm(x, w, b, eps=1e-6):
    row = BlockSpec((TILE, HIDDEN), lambda i: (i, 0))
    vec = BlockSpec((1, HIDDEN), lambda i: (0, 0))
    return pallas_call(
        functools.partial(_layernorm_kernel, eps=eps),
        out_shape=jax.ShapeDtypeStruct((TOKENS, HIDDEN), x.dtype),
        grid=(TOKENS // TILE,),
        in_specs=[row, vec, vec],
        out_specs=row,
        compiler_params=CompilerParams(
            dimension_semantics=("parallel",), vmem_limit_bytes=24 * 1024 * 1024
        ),
    )(x, w, b)


def corpus_entry():
    return layernorm, (
        jax.ShapeDtypeStruct((TOKENS, HIDDEN), jnp.bfloat16),
        jax.ShapeDtypeStruct((1, HIDDEN), jnp.float32),
        jax.ShapeDtypeStruct((1, HIDDEN), jnp.float32),
    )
