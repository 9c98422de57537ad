"""Triton-backend (GPU) tiled matmul.  (16, 32)-style tiles are normal on GPU
but would violate TPU (8, 128) tiling: this kernel must be classified as GPU."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

M, N, K = 512, 512, 256
BLOCK_M, BLOCK_N, BLOCK_K = 16, 32, 32


def _matmul_kernel(x_ref, y_ref, o_ref, *, block_k: int):
    # x_ref: (BLOCK_M, K), y_ref: (K, BLOCK_N): walk K in BLOCK_K chunks.
    def body(kk, acc):
        x = x_ref[:, pl.ds(kk * block_k, block_k)]
        y = y_ref[pl.ds(kk * block_k, block_k), :]
        return acc + jnp.dot(x, y, preferred_element_type=jnp.float32)

    acc = jnp.zeros((BLOCK_M, BLOCK_N), jnp.float32)
    acc = jax.lax.fori_loop(0, K // block_k, body, acc)
    o_ref[...] = acc.astype(o_ref.dtype)


@jax.jit
def matmul(x, y):
    return pl.pallas_call(
        functools.partial(_matmul_kernel, block_k=BLOCK_K),
        out_shape=jax.ShapeDtypeStruct((M, N), x.dtype),
        grid=(M // BLOCK_M, N // BLOCK_N),
        in_specs=[
            pl.BlockSpec((BLOCK_M, K), lambda i, j: (i, 0)),
            pl.BlockSpec((K, BLOCK_N), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((BLOCK_M, BLOCK_N), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(x, y)


def corpus_entry():
    return matmul, (
        jax.ShapeDtypeStruct((M, K), jnp.float16),
        jax.ShapeDtypeStruct((K, N), jnp.float16),
    )
