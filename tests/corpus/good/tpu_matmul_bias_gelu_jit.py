"""Fused dense layer: (x @ w + b) -> gelu, jitted with static tile sizes."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _dense_gelu_kernel(x_ref, w_ref, b_ref, o_ref, acc_ref, *, n_k: int):
    kk = pl.program_id(2)

    @pl.when(kk == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    @pl.when(kk == n_k - 1)
    def _():
        h = acc_ref[...] + b_ref[...].astype(jnp.float32)
        o_ref[...] = jax.nn.gelu(h, approximate=True).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("bm", "bn", "bk"))
def dense_gelu(x, w, b, *, bm=128, bn=256, bk=512):
    m, k = x.shape
    _, n = w.shape
    n_k = k // bk
    return pl.pallas_call(
        functools.partial(_dense_gelu_kernel, n_k=n_k),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, n_k),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
            pl.BlockSpec((1, bn), lambda i, j, kk: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=(pltpu.PARALLEL, pltpu.PARALLEL, pltpu.ARBITRARY),
            vmem_limit_bytes=32 * 1024 * 1024,
        ),
    )(x, w, b)


def corpus_entry():
    return dense_gelu, (
        jax.ShapeDtypeStruct((512, 2048), jnp.bfloat16),
        jax.ShapeDtypeStruct((2048, 1024), jnp.bfloat16),
        jax.ShapeDtypeStruct((1, 1024), jnp.bfloat16),
    )
